#pragma once
/// \file
/// Running work on a GPU: the per-thread stream of each device, xfunc's kernel module (the
/// fatbinary embedded in xfunc::cuda), kernel launches and the copies between host and device.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <xfunc/core/error.hpp>
#include <xfunc/cuda/caching_allocator.hpp>
#include <xfunc/cuda/driver.hpp>

/// The fatbinary of xfunc's CUDA kernels (src/cuda/kernels.cu), embedded in the xfunc::cuda
/// library (src/cuda/fatbin.cpp) and loaded into each device on first use.
extern "C" const unsigned char xfunc_cuda_fatbin[];

namespace xfunc::detail::cuda {

// NOTE: [Streams and errors]
// Each thread queues its work on its own stream per device (made on first use; a thread that
// ends gives it back to a pool for the next thread, so blocks the allocator cached for it stay
// usable), as API.md section 7 asks: threads do not serialise each other, and the allocator can
// reuse a block on its stream without events (NOTE: [Caching allocator]). Launches return at
// once; a kernel that faults is reported by the driver at the next synchronising call (a copy
// to the host, item(), printing, cuda_synchronize), which throws xf::error naming that call and
// the last op this thread launched, since the fault happened in it or before it.

/// One Handle per thread and device (a stream, a cuBLAS handle), made on a thread's first use
/// and given back to a pool when the thread ends, for the next thread that needs one; handles
/// are never destroyed (the process may still use them after main returns).
template <class Handle>
class per_thread_pool {
 public:
  /// The calling thread's handle on `device`; `make()` creates one when the pool has none.
  template <class Make>
  Handle get(int device, Make&& make) {
    thread_local holder mine{this, {}};
    if (static_cast<std::size_t>(device) >= mine.handles.size()) mine.handles.resize(static_cast<std::size_t>(device) + 1);
    Handle& h = mine.handles[static_cast<std::size_t>(device)];
    if (!h) h = take(device, make);
    return h;
  }
  /// The process's pool for Handle (never destroyed: threads may end after main returns).
  static per_thread_pool& instance() {
    static per_thread_pool* p = new per_thread_pool;
    return *p;
  }

 private:
  struct holder {
    per_thread_pool* pool;
    std::vector<Handle> handles;
    ~holder() {
      for (std::size_t i = 0; i < handles.size(); ++i)
        if (handles[i]) pool->give_back(static_cast<int>(i), handles[i]);
    }
  };
  template <class Make>
  Handle take(int device, Make& make) {
    {
      std::lock_guard<std::mutex> lock(m_);
      auto& free = free_[device];
      if (!free.empty()) {
        Handle h = free.back();
        free.pop_back();
        return h;
      }
    }
    return make();
  }
  void give_back(int device, Handle h) {
    std::lock_guard<std::mutex> lock(m_);
    free_[device].push_back(h);
  }
  std::mutex m_;
  std::unordered_map<int, std::vector<Handle>> free_;
};

/// The calling thread's stream on `device` (whose context is made current).
inline CUstream current_stream(const driver_api& d, int device, const char* what) {
  make_current(d, device, what);
  return per_thread_pool<CUstream>::instance().get(device, [&] {
    CUstream s = nullptr;
    check(d, d.stream_create(&s, CU_STREAM_NON_BLOCKING), what);
    return s;
  });
}

/// The last op this thread launched work for (named when a later call reports a fault).
inline thread_local const char* tls_last_op = "no op yet";

/// Throws xf::error for a failed synchronising call `what`, naming this thread's last op.
inline void check_sync(const driver_api& d, CUresult r, const char* what) {
  if (r != CUDA_SUCCESS)
    fail(what, ": the CUDA driver returned ", result_text(d, r), "; a kernel launched by ", tls_last_op,
         " or an op before it failed on the device");
}

/// Everything an op needs to run on one device: the driver, the device's index and this
/// thread's stream there.
struct device_context {
  const driver_api* driver;
  int index;
  CUstream stream;
};

/// The context for running op `what` on cuda device `index`; throws "not available" when CUDA
/// cannot be used and "does not exist" for a bad index.
inline device_context context_for(int index, const char* what) {
  const driver_api& d = usable_driver(what);
  return {&d, index, current_stream(d, index, what)};
}

/// Waits for this thread's work on the device.
inline void synchronize(const device_context& c, const char* what) {
  check_sync(*c.driver, c.driver->stream_synchronize(c.stream), what);
}

/// The kernels of xfunc's module on each device, loaded on first use and looked up by name.
class kernel_module {
 public:
  /// The kernel `name` on the context's device; throws naming `what` when the module lacks it.
  CUfunction function(const device_context& c, const std::string& name, const char* what) {
    std::lock_guard<std::mutex> lock(m_);
    auto& dev = devices_[c.index];
    if (!dev.module) check(*c.driver, c.driver->module_load_data(&dev.module, xfunc_cuda_fatbin), what);
    auto it = dev.functions.find(name);
    if (it != dev.functions.end()) return it->second;
    CUfunction f = nullptr;
    const CUresult r = c.driver->module_get_function(&f, dev.module, name.c_str());
    if (r != CUDA_SUCCESS)
      fail(what, ": xfunc's CUDA module has no kernel ", name, " (", result_text(*c.driver, r),
           "); this op does not support these dtypes on cuda yet (docs/cuda.md)");
    dev.functions.emplace(name, f);
    return f;
  }
  static kernel_module& instance() {
    static kernel_module* m = new kernel_module;  // never destroyed, as the driver's modules
    return *m;
  }

 private:
  struct per_device {
    CUmodule module = nullptr;
    std::unordered_map<std::string, CUfunction> functions;
  };
  std::mutex m_;
  std::unordered_map<int, per_device> devices_;
};

/// Threads per block of every launch; blocks are capped (grid-stride loops cover the rest).
inline constexpr unsigned threads_per_block = 256;
inline constexpr long long max_blocks = 65535;

/// Launches kernel `name` over `n` work items with `args` (its one parameter) on the context's
/// stream; `op` names the op in errors.
template <class Args>
void launch(const device_context& c, const std::string& name, long long n, const Args& args, const char* op) {
  if (n <= 0) return;
  CUfunction f = kernel_module::instance().function(c, name, op);
  const long long blocks = std::min<long long>((n + threads_per_block - 1) / threads_per_block, max_blocks);
  void* params[] = {const_cast<Args*>(&args)};
  tls_last_op = op;
  check(*c.driver,
        c.driver->launch_kernel(f, static_cast<unsigned>(blocks), 1, 1, threads_per_block, 1, 1, 0, c.stream, params, nullptr),
        op);
}

/// Copies `bytes` from the host to the device, queued on the context's stream. The host buffer
/// is pageable memory, which the driver copies to a staging buffer before the call returns
/// (CUDA's "API synchronization behavior"), so it may be freed right after.
inline void copy_to_device(const device_context& c, void* dst, const void* src, std::size_t bytes, const char* what) {
  if (bytes == 0) return;
  check(*c.driver,
        c.driver->memcpy_htod_async(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(dst)), src, bytes, c.stream),
        what);
}
/// Copies `bytes` from the device to the host, after the work queued before it.
inline void copy_to_host(const device_context& c, void* dst, const void* src, std::size_t bytes, const char* what) {
  if (bytes == 0) return synchronize(c, what);
  const CUresult r =
      c.driver->memcpy_dtoh_async(dst, static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(src)), bytes, c.stream);
  check_sync(*c.driver, r, what);
  synchronize(c, what);
}

}  // namespace xfunc::detail::cuda
