#pragma once
/// \file
/// The data of one transform layer (its kind, unique level and liveness). The stack of layers
/// and the interpreters that act on them live in dispatch/.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace xfunc {

/// The kind of a transform layer.
enum class transform_kind : std::uint8_t { grad, jvp, vmap, functionalize };

/// What random ops do under vmap: throw, draw one value for the batch, or one per example.
enum class randomness : std::uint8_t { error, same, different };

namespace detail {

// NOTE: [Levels and life handles]
// Every transform call pushes a layer with a fresh level from a process-wide counter: levels
// are never reused and are unique across threads, so a wrapper can always tell which call made
// it. A wrapper names its layer and records the level it was made at (the life handle); when
// the transform returns, the layer is marked dead and any wrapper that escaped is treated as the
// plain value it wraps. Inner layers always have higher levels than outer ones, so "the highest
// live level among an op's arguments" is the layer that must handle the op first. Perturbation
// confusion cannot happen: a tensor captured from an outer transform carries the outer level only.
//
// Layer objects are never freed: a finished transform's layer goes back to a free list and is
// reused by a later call, with a new level. So wrappers can point at their layer without
// owning it (layer_ptr is a non-owning shared_ptr, whose copies count no references: an atomic
// count pair per wrapper saved in a multithreaded process), and a wrapper is live only while
// its layer is alive *and* still at the level the wrapper recorded.
struct layer {
  transform_kind kind = transform_kind::grad;
  // Atomics because a wrapper that escaped to another thread may read them while this layer is
  // being reused: `alive` is stored last (release) when a layer is reused, so a reader that sees
  // it true also sees the new level.
  std::atomic<std::uint64_t> level{0};
  std::atomic<bool> alive{false};
  // vmap layers
  std::int64_t batch_size = 0;
  xfunc::randomness rand = xfunc::randomness::error;
  // functionalize layers: whether view ops give copies (remove::mutations_and_views)
  bool remove_views = false;
};

/// The process-wide level counter: the level of the newest layer ever made.
inline std::atomic<std::uint64_t> level_counter{0};

inline std::uint64_t next_level() { return ++level_counter; }

/// Stamped on every tensor when it is made: a tensor was made inside layer L's transform call
/// iff its stamp is at least L's level (levels only grow; NOTE: [Tensors created inside transforms]).
inline std::uint64_t creation_stamp() { return level_counter.load(std::memory_order_relaxed); }

using layer_ptr = std::shared_ptr<layer>;

/// The process-wide free list of finished layers (see NOTE: [Levels and life handles]). Its size
/// is bounded by the most transform calls ever active at once.
class layer_pool {
 public:
  /// A live layer with a fresh level.
  static layer_ptr acquire(transform_kind k, std::int64_t batch_size, xfunc::randomness r) {
    layer* l = nullptr;
    {
      std::lock_guard<std::mutex> lock(instance().m_);
      if (!instance().free_.empty()) {
        l = instance().free_.back();
        instance().free_.pop_back();
      }
    }
    if (!l) l = new layer;  // never deleted
    l->kind = k;
    l->batch_size = batch_size;
    l->rand = r;
    l->remove_views = false;
    l->level.store(next_level(), std::memory_order_relaxed);
    l->alive.store(true, std::memory_order_release);
    return layer_ptr(layer_ptr(), l);  // aliasing an empty owner: no reference count
  }
  /// Marks l dead and returns it to the free list.
  static void release(layer* l) {
    l->alive.store(false, std::memory_order_release);
    std::lock_guard<std::mutex> lock(instance().m_);
    instance().free_.push_back(l);
  }

 private:
  static layer_pool& instance() {
    static layer_pool* p = new layer_pool;  // never destroyed: wrappers may outlive main
    return *p;
  }
  std::mutex m_;
  std::vector<layer*> free_;
};

}  // namespace detail
}  // namespace xfunc
