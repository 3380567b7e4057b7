#pragma once
/// \file
/// The caching allocator for device memory (NOTE: [Caching allocator]): blocks are reused per
/// device and stream instead of being returned to the driver, whose allocation calls are slow and
/// synchronise the device.
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <xfunc/core/error.hpp>
#include <xfunc/cuda/driver.hpp>

namespace xfunc::detail::cuda {

// NOTE: [Caching allocator]
// cuMemAlloc and cuMemFree cost tens of microseconds and cuMemFree synchronises the device, so an
// op that allocated its result with them would stall every pipeline. The allocator keeps freed
// blocks and hands them out again:
//  - sizes are rounded up to 512 bytes (so that close sizes share blocks, and every block is
//    aligned for any element type and vector access);
//  - a freed block goes to the free list of the (device, stream) it was used on, and is reused
//    only for that device and stream: work on one stream runs in order, so the next user of the
//    block cannot start before the last one finished (using a block on another stream would need
//    an event, which callers must then record);
//  - the best fit is taken (the smallest cached block that is large enough), but never a block
//    more than twice the request, so that a huge cached block is not tied up by a small tensor;
//  - when the driver has no memory left, every cached block of that device is given back and the
//    allocation retried once; if it fails again, xf::error says "out of memory" with the bytes,
//    the device, and what is in use and cached.
// The driver calls are behind `raw_memory` (allocate: nullptr when out of memory, throw on any
// other error), so the bookkeeping is tested on the host with a fake device (tests/cuda).

/// Where the caching allocator gets and returns device memory.
struct raw_memory {
  /// `bytes` on `device`, or nullptr when the device has no memory left.
  void* (*allocate)(void* context, int device, std::size_t bytes) = nullptr;
  /// Gives back what allocate returned.
  void (*release)(void* context, int device, void* ptr) = nullptr;
  void* context = nullptr;
};

/// Device memory with a cache of freed blocks per device and stream (thread-safe).
class caching_allocator {
 public:
  /// Blocks are rounded up to a multiple of this many bytes.
  static constexpr std::size_t granularity = 512;

  /// What the allocator holds, in bytes and counts.
  struct stats_t {
    std::size_t in_use_bytes = 0;   ///< handed out and not yet freed
    std::size_t cached_bytes = 0;   ///< freed, kept for reuse
    std::int64_t driver_allocations = 0;  ///< calls of raw allocate that succeeded
    std::int64_t reuses = 0;        ///< allocations served from the cache
    std::int64_t cache_flushes = 0; ///< times the cache was given back to retry an allocation
  };

  explicit caching_allocator(raw_memory raw) : raw_(raw) {}
  caching_allocator(const caching_allocator&) = delete;
  caching_allocator& operator=(const caching_allocator&) = delete;
  /// Gives every cached block back (blocks still in use belong to their tensors, which must be
  /// gone by now: the process allocator lives until exit).
  ~caching_allocator() { empty_cache(); }

  /// `bytes` (rounded up to the granularity; 0 gives nullptr) on `device` for use on `stream`.
  /// Throws xf::error ("out of memory", naming the bytes and the device) when the device has no
  /// memory even after the cache is given back.
  void* allocate(int device, std::uintptr_t stream, std::size_t bytes) {
    if (bytes == 0) return nullptr;
    if (bytes > SIZE_MAX - granularity) fail_oom(device, bytes, stats());
    const std::size_t size = (bytes + granularity - 1) / granularity * granularity;
    std::lock_guard<std::mutex> lock(m_);
    auto& pool = free_[{device, stream}];
    if (auto it = pool.lower_bound(size); it != pool.end() && it->first <= 2 * size) {
      void* p = it->second;
      const std::size_t got = it->first;
      pool.erase(it);
      stats_.cached_bytes -= got;
      stats_.in_use_bytes += got;
      ++stats_.reuses;
      live_[p] = {device, stream, got};
      return p;
    }
    void* p = raw_.allocate(raw_.context, device, size);
    if (!p) {  // give this device's cache back and try once more
      release_cached(device);
      ++stats_.cache_flushes;
      p = raw_.allocate(raw_.context, device, size);
      if (!p) fail_oom(device, size, stats_);
    }
    ++stats_.driver_allocations;
    stats_.in_use_bytes += size;
    live_[p] = {device, stream, size};
    return p;
  }

  /// Returns a block to the cache of the device and stream it was allocated for (nullptr is
  /// ignored; a pointer this allocator did not hand out is an error).
  void free(void* p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(m_);
    const auto it = live_.find(p);
    if (it == live_.end())
      fail("xf: cuda caching allocator: free of a pointer it did not allocate (or freed twice)");
    const block b = it->second;
    live_.erase(it);
    free_[{b.device, b.stream}].emplace(b.size, p);
    stats_.in_use_bytes -= b.size;
    stats_.cached_bytes += b.size;
  }

  /// Gives every cached block of every device back to the driver.
  void empty_cache() {
    std::lock_guard<std::mutex> lock(m_);
    release_cached(-1);
  }

  /// A snapshot of what the allocator holds.
  stats_t stats() const {
    std::lock_guard<std::mutex> lock(m_);
    return stats_;
  }

 private:
  struct block {
    int device;
    std::uintptr_t stream;
    std::size_t size;
  };

  // Gives the cached blocks of `device` (-1: every device) back; m_ is held.
  void release_cached(int device) {
    for (auto& [key, pool] : free_) {
      if (device >= 0 && key.first != device) continue;
      for (const auto& [size, p] : pool) {
        raw_.release(raw_.context, key.first, p);
        stats_.cached_bytes -= size;
      }
      pool.clear();
    }
  }

  [[noreturn]] static void fail_oom(int device, std::size_t bytes, const stats_t& s) {
    fail("xf: out of memory allocating ", bytes, " bytes on cuda:", device, " (", s.in_use_bytes,
         " bytes in use by tensors; the cached blocks were given back and the allocation retried); free tensors "
         "or use smaller ones");
  }

  raw_memory raw_;
  mutable std::mutex m_;
  std::map<std::pair<int, std::uintptr_t>, std::multimap<std::size_t, void*>> free_;
  std::unordered_map<void*, block> live_;
  stats_t stats_;
};

/// raw_memory over the driver: cuMemAlloc / cuMemFree in the device's primary context.
/// CUDA_ERROR_OUT_OF_MEMORY is nullptr (the allocator then flushes its cache and retries); any
/// other error throws, naming the call.
inline raw_memory driver_memory() {
  raw_memory r;
  r.allocate = [](void*, int device, std::size_t bytes) -> void* {
    const driver_api& d = usable_driver("xf: cuda allocation");
    make_current(d, device, "xf: cuda allocation");
    CUdeviceptr p = 0;
    const CUresult res = d.mem_alloc(&p, bytes);
    if (res == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    check(d, res, "xf: cuMemAlloc");
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
  };
  r.release = [](void*, int device, void* p) {
    const driver_api& d = driver();
    make_current(d, device, "xf: cuda free");
    d.mem_free(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p)));  // at exit: nothing to report to
  };
  return r;
}

/// The process's allocator for device memory.
inline caching_allocator& device_allocator() {
  static caching_allocator a(driver_memory());
  return a;
}

}  // namespace xfunc::detail::cuda
