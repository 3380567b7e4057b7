// The caching allocator's bookkeeping on a fake device (NOTE: [Caching allocator]): reuse per
// device and stream, rounding, best fit within 2x, flushing the cache and retrying when the
// device is full, "out of memory" after that, and the counts, from several threads too.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <xfunc/cuda/caching_allocator.hpp>

namespace xc = xfunc::detail::cuda;
using Catch::Contains;

namespace {

/// A device with `capacity` bytes per device index, backed by host memory; it counts its calls
/// and checks that what is given back was handed out.
struct fake_device {
  std::size_t capacity;
  std::mutex m;
  std::map<int, std::size_t> used;
  std::map<void*, std::pair<int, std::size_t>> outstanding;
  int allocations = 0, releases = 0, refusals = 0;

  explicit fake_device(std::size_t cap) : capacity(cap) {}
  ~fake_device() {
    for (auto& [p, info] : outstanding) std::free(p);
  }
  xc::raw_memory raw() {
    xc::raw_memory r;
    r.context = this;
    r.allocate = [](void* self, int device, std::size_t bytes) -> void* {
      auto& f = *static_cast<fake_device*>(self);
      std::lock_guard<std::mutex> lock(f.m);
      if (f.used[device] + bytes > f.capacity) {
        ++f.refusals;
        return nullptr;
      }
      void* p = std::malloc(bytes);
      f.used[device] += bytes;
      f.outstanding[p] = {device, bytes};
      ++f.allocations;
      return p;
    };
    r.release = [](void* self, int device, void* p) {
      auto& f = *static_cast<fake_device*>(self);
      std::lock_guard<std::mutex> lock(f.m);
      const auto it = f.outstanding.find(p);
      REQUIRE(it != f.outstanding.end());
      REQUIRE(it->second.first == device);
      f.used[device] -= it->second.second;
      f.outstanding.erase(it);
      std::free(p);
      ++f.releases;
    };
    return r;
  }
};

constexpr std::uintptr_t stream_a = 0, stream_b = 7;

}  // namespace

TEST_CASE("freed blocks are reused on their device and stream, not given back", "[cuda][allocator]") {
  fake_device dev(1 << 20);
  xc::caching_allocator a(dev.raw());
  void* p = a.allocate(0, stream_a, 1000);
  REQUIRE(p != nullptr);
  CHECK(a.stats().in_use_bytes == 1024);  // rounded up to 512 bytes
  a.free(p);
  CHECK(dev.releases == 0);
  CHECK(a.stats().cached_bytes == 1024);
  CHECK(a.allocate(0, stream_a, 900) == p);  // the same block again, no driver call
  CHECK(dev.allocations == 1);
  CHECK(a.stats().reuses == 1);
  a.free(p);
  SECTION("another stream or device gets a block of its own") {
    void* q = a.allocate(0, stream_b, 1000);
    void* r = a.allocate(1, stream_a, 1000);
    CHECK(q != p);
    CHECK(r != p);
    CHECK(dev.allocations == 3);
    a.free(q);
    a.free(r);
  }
  SECTION("best fit, but never a block more than twice the request") {
    void* big = a.allocate(0, stream_a, 64 * 1024);
    a.free(big);
    void* small = a.allocate(0, stream_a, 600);  // 1024 rounded: the 1024-byte block fits, the 64 KiB one is too big
    CHECK(small == p);
    void* small2 = a.allocate(0, stream_a, 600);  // only the 64 KiB block is cached: not used for 1 KiB
    CHECK(small2 != big);
    void* mid = a.allocate(0, stream_a, 40 * 1024);  // 64 KiB <= 2 x 40 KiB: reused
    CHECK(mid == big);
    a.free(small);
    a.free(small2);
    a.free(mid);
  }
  SECTION("empty_cache gives everything back") {
    a.empty_cache();
    CHECK(a.stats().cached_bytes == 0);
    CHECK(dev.outstanding.empty());
  }
  CHECK(a.allocate(0, stream_a, 0) == nullptr);
}

TEST_CASE("a full device: the cache is given back and the allocation retried, then out of memory",
          "[cuda][allocator]") {
  fake_device dev(8 * 1024);
  xc::caching_allocator a(dev.raw());
  void* p = a.allocate(0, stream_b, 6 * 1024);
  a.free(p);  // cached on stream b: 6 KiB of the 8 held
  void* q = a.allocate(0, stream_a, 4 * 1024);  // does not fit next to the cached block: flush, retry
  REQUIRE(q != nullptr);
  CHECK(a.stats().cache_flushes == 1);
  CHECK(a.stats().cached_bytes == 0);
  CHECK(dev.releases == 1);
  CHECK_THROWS_WITH(a.allocate(0, stream_a, 6 * 1024),
                    Contains("out of memory") && Contains("6144 bytes") && Contains("cuda:0") && Contains("4096 bytes in use"));
  // a full device 0 leaves device 1's cache alone
  void* r = a.allocate(1, stream_a, 1024);
  a.free(r);
  CHECK_THROWS_WITH(a.allocate(0, stream_a, 8 * 1024), Contains("out of memory"));
  CHECK(a.stats().cached_bytes == 1024);
  a.free(q);
  CHECK_THROWS_WITH(a.allocate(0, stream_a, SIZE_MAX - 3), Contains("out of memory"));
}

TEST_CASE("freeing what it did not allocate is an error", "[cuda][allocator]") {
  fake_device dev(1 << 20);
  xc::caching_allocator a(dev.raw());
  int x = 0;
  CHECK_THROWS_WITH(a.free(&x), Contains("did not allocate"));
  void* p = a.allocate(0, stream_a, 10);
  a.free(p);
  CHECK_THROWS_WITH(a.free(p), Contains("freed twice"));
  a.free(nullptr);  // ignored
}

TEST_CASE("threads allocate and free concurrently, and the counts add up", "[cuda][allocator]") {
  fake_device dev(64 << 20);
  {
    xc::caching_allocator a(dev.raw());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&a, t] {
        std::vector<void*> held;
        for (int i = 0; i < 2000; ++i) {
          held.push_back(a.allocate(t % 2, static_cast<std::uintptr_t>(t), static_cast<std::size_t>(512 * (1 + i % 7))));
          if (held.size() > 5) {
            a.free(held.front());
            held.erase(held.begin());
          }
        }
        for (void* p : held) a.free(p);
      });
    for (auto& th : threads) th.join();
    const auto s = a.stats();
    CHECK(s.in_use_bytes == 0);
    CHECK(s.driver_allocations + s.reuses == 4 * 2000);
    CHECK(s.reuses > 7000);  // after the first few, blocks come from the cache
    CHECK(static_cast<std::size_t>(s.cached_bytes) > 0);
  }
  CHECK(dev.outstanding.empty());  // the destructor gave the cache back
}
