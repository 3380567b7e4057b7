#pragma once
/// \file
/// The thread-local stack of active transform layers, RAII guards to push and lower it, and
/// xf::layers::depth().
#include <algorithm>
#include <cstddef>
#include <vector>

#include <xfunc/core/layer.hpp>
#include <xfunc/core/linkage.hpp>

namespace xfunc {
namespace detail {

struct layer_stack {
  std::vector<layer_ptr> layers;  // innermost (highest level) last
};

// Header-only, ODR-safe: one instance per thread across all translation units.
inline thread_local layer_stack tls_layers;

inline layer_stack& current_stack() { return tls_layers; }

/// Pushes a fresh layer for the lifetime of one transform call; pops it and marks it dead on
/// exit (also when f throws), so escaped wrappers become plain values.
class layer_guard {
 public:
  explicit layer_guard(transform_kind k, std::int64_t batch_size = 0,
                       xfunc::randomness r = xfunc::randomness::error);
  ~layer_guard();
  layer_guard(const layer_guard&) = delete;
  layer_guard& operator=(const layer_guard&) = delete;
  const layer_ptr& get() const { return layer_; }

 private:
  layer_ptr layer_;
};

#if XFUNC_RUNTIME_DEFINITIONS  // NOTE: [Compiled runtime]
XFUNC_RUNTIME layer_guard::layer_guard(transform_kind k, std::int64_t batch_size, xfunc::randomness r)
    : layer_(layer_pool::acquire(k, batch_size, r)) {
  current_stack().layers.push_back(layer_);
}
XFUNC_RUNTIME layer_guard::~layer_guard() {
  auto& ls = current_stack().layers;
  auto it = std::find(ls.begin(), ls.end(), layer_);
  if (it != ls.end()) ls.erase(it);
  layer_pool::release(layer_.get());
}
#endif

/// While alive, layers at `level` and above are hidden: calls go to the layers below.
class lower_guard {
 public:
  explicit lower_guard(std::uint64_t level) {
    auto& ls = current_stack().layers;
    while (!ls.empty() && ls.back()->level >= level) {
      hidden_.push_back(ls.back());
      ls.pop_back();
    }
  }
  ~lower_guard() {
    auto& ls = current_stack().layers;
    for (auto it = hidden_.rbegin(); it != hidden_.rend(); ++it) ls.push_back(*it);
  }
  lower_guard(const lower_guard&) = delete;
  lower_guard& operator=(const lower_guard&) = delete;

 private:
  std::vector<layer_ptr> hidden_;
};

/// The innermost vmap layer on the stack, or null.
inline layer* innermost_vmap() {
  auto& ls = current_stack().layers;
  for (auto it = ls.rbegin(); it != ls.rend(); ++it)
    if ((*it)->kind == transform_kind::vmap) return it->get();
  return nullptr;
}

}  // namespace detail

/// The transform layers active on this thread: how many (depth()) and the innermost (top()).
namespace layers {
/// Number of transform layers active on this thread (0 outside any transform).
inline std::size_t depth() { return detail::current_stack().layers.size(); }
}  // namespace layers
}  // namespace xfunc
