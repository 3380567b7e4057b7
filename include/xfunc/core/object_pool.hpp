#pragma once
// make_pooled<T>(...): std::make_shared through per-thread free lists, for the small objects
// that every op call creates and destroys (tensor impls, storages, grad nodes).
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

#include <xfunc/core/sanitizer.hpp>

namespace xfunc::detail {

// NOTE: [Small-object pool]
// A 1-element op under grad makes and frees four small objects (the result's impl and storage,
// the grad node and the wrapper impl); with the C allocator each malloc/free pair costs a few
// dozen nanoseconds, a large share of the per-level overhead. The pool keeps freed blocks in
// per-thread lists by 64-byte size class, so reuse is a pointer pop and push without locks or
// checks. Blocks come from ::operator new and go back to ::operator delete when a list is full
// or the thread ends, so a block freed on another thread than the one that allocated it (a
// tensor handed between threads) simply joins that thread's list. std::pmr pools cannot do this
// (a block must return to the resource that made it). Under AddressSanitizer the pool is off so
// that use-after-free stays detectable.
#ifndef XFUNC_DETAIL_OBJECT_POOL  // (a build may also turn it off by defining it 0)
#define XFUNC_DETAIL_OBJECT_POOL (!XFUNC_DETAIL_ASAN)
#endif

struct small_object_pool {
  static constexpr std::size_t granule = 64;
  static constexpr std::size_t classes = 16;  // blocks up to 1 KiB
  static constexpr int max_per_class = 64;
  struct free_block {
    free_block* next;
  };
  // Trivially destructible, so it can be used during thread exit; `drainer` empties it.
  struct lists {
    free_block* head[classes];
    int count[classes];
    bool registered;
    bool dead;  // this thread's drainer has run: allocate and free directly
  };
  static inline thread_local lists tls{};

  struct drainer {
    ~drainer() {
      for (std::size_t c = 0; c < classes; ++c)
        while (free_block* b = tls.head[c]) {
          tls.head[c] = b->next;
          ::operator delete(b);
        }
      tls.dead = true;
    }
  };
  static inline thread_local drainer tls_drainer;

  static std::size_t class_of(std::size_t bytes) { return (bytes + granule - 1) / granule - 1; }

  static void* allocate(std::size_t bytes) {
    const std::size_t c = class_of(bytes);
    if (!XFUNC_DETAIL_OBJECT_POOL || c >= classes || tls.dead) return ::operator new(bytes);
    if (free_block* b = tls.head[c]) {
      tls.head[c] = b->next;
      --tls.count[c];
      return b;
    }
    if (!tls.registered) {
      (void)&tls_drainer;  // constructs this thread's drainer, so the lists are emptied at exit
      tls.registered = true;
    }
    return ::operator new((c + 1) * granule);
  }
  static void deallocate(void* p, std::size_t bytes) {
    const std::size_t c = class_of(bytes);
    if (!XFUNC_DETAIL_OBJECT_POOL || c >= classes || tls.dead || !tls.registered ||
        tls.count[c] == max_per_class) {
      ::operator delete(p);
      return;
    }
    auto* b = static_cast<free_block*>(p);
    b->next = tls.head[c];
    tls.head[c] = b;
    ++tls.count[c];
  }
};

template <class T>
struct pool_allocator {
  using value_type = T;
  pool_allocator() = default;
  template <class U>
  pool_allocator(const pool_allocator<U>&) {}  // NOLINT: rebinding is implicit
  T* allocate(std::size_t n) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "pooled objects are not over-aligned");
    return static_cast<T*>(small_object_pool::allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) { small_object_pool::deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const pool_allocator<U>&) const { return true; }
};

/// std::make_shared<T>(args...) with the object and its control block from the pool.
template <class T, class... A>
std::shared_ptr<T> make_pooled(A&&... args) {
  return std::allocate_shared<T>(pool_allocator<T>{}, std::forward<A>(args)...);
}

}  // namespace xfunc::detail
