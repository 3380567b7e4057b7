#pragma once
// The data of one transform layer (its kind, unique level and liveness). The stack of layers
// and the interpreters that act on them live in dispatch/.
#include <atomic>
#include <cstdint>
#include <memory>

namespace xfunc {

/// The kind of a transform layer.
enum class transform_kind : std::uint8_t { grad, jvp, vmap, functionalize };

/// What random ops do under vmap: throw, draw one value for the batch, or one per example.
enum class randomness : std::uint8_t { error, same, different };

namespace detail {

// NOTE: [Levels and life handles]
// Every transform call pushes a layer with a fresh level from a process-wide counter: levels
// are never reused and are unique across threads, so a wrapper can always tell which call made
// it. Wrappers hold a shared_ptr to their layer (the life handle); when the transform returns,
// the layer is marked dead and any wrapper that escaped is treated as the plain value it wraps.
// Inner layers always have higher levels than outer ones, so "the highest live level among an
// op's arguments" is the layer that must handle the op first. Perturbation confusion cannot
// happen: a tensor captured from an outer transform carries the outer level only.
struct layer {
  transform_kind kind;
  std::uint64_t level;
  bool alive = true;
  // vmap layers
  std::int64_t batch_size = 0;
  xfunc::randomness rand = xfunc::randomness::error;
  // functionalize layers: whether view ops give copies (remove::mutations_and_views)
  bool remove_views = false;
};

inline std::uint64_t next_level() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

using layer_ptr = std::shared_ptr<layer>;

}  // namespace detail
}  // namespace xfunc
