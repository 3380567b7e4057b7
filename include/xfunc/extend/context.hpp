#pragma once
/// \file
/// xf::autograd::context: what a custom op's or custom function's setup_context hands to its
/// backward and jvp (saved tensors, marks, flags, typed non-tensor state), and xf::vmap_info.
#include <any>
#include <map>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include <xfunc/core/error.hpp>
#include <xfunc/core/layer.hpp>
#include <xfunc/core/tensor.hpp>

namespace xfunc {
namespace detail {
struct context_access;
/// > 0 while a higher-order op's grad rule runs on this thread (where single_level_function may
/// be applied).
inline thread_local int tls_in_hop_grad_rule = 0;
}  // namespace detail

/// Custom derivative rules: autograd::function, autograd::single_level_function and the
/// context their setup_context, backward and jvp share (as torch.autograd.Function).
namespace autograd {

/// State shared between setup_context, backward and jvp of one call of a custom op or function.
/// The tensors it sees are the call's inputs and outputs one layer below the transform that
/// differentiates the call, so formulas written with xfunc ops on them stay differentiable.
class context {
 public:
  /// Saves tensors for backward; `saved_tensors()` returns them in order.
  template <class... T>
  void save_for_backward(const T&... ts) {
    saved_.clear();
    (saved_.push_back(ts), ...);
  }
  /// Saves tensors for jvp; inside jvp, `saved_tensors()` returns these.
  template <class... T>
  void save_for_forward(const T&... ts) {
    saved_forward_.clear();
    (saved_forward_.push_back(ts), ...);
  }
  /// The saved tensors (inside jvp: those given to save_for_forward).
  const std::vector<tensor>& saved_tensors() const { return in_jvp_ ? saved_forward_ : saved_; }

  /// Declares inputs that forward modified in place (and returned): they may alias outputs.
  template <class... T>
  void mark_dirty(const T&... ts) {
    (dirty_.push_back(ts.impl()), ...);
  }
  /// Declares outputs that have no derivative (integer results, indices, masks).
  template <class... T>
  void mark_non_differentiable(const T&... ts) {
    (non_differentiable_.push_back(ts.impl()), ...);
  }
  /// With true (the default) backward gets zeros for outputs nobody differentiated; with false,
  /// undefined tensors.
  void set_materialize_grads(bool on) { materialize_grads_ = on; }
  /// Whether forward argument i (counting every parameter) needs a gradient in this call.
  bool needs_input_grad(std::size_t i) const { return i < needs_input_grad_.size() && needs_input_grad_[i]; }

  /// Stores a non-tensor value under `key`.
  template <class T>
  void set(const std::string& key, T value) {
    state_[key] = std::move(value);
  }
  /// The value stored under `key`; throws if there is none or it was stored with another type.
  template <class T>
  const T& get(std::string_view key) const {
    auto it = state_.find(std::string(key));
    if (it == state_.end())
      detail::fail("xf::autograd::context::get: no value stored under \"", key, "\"; store it with ctx.set(\"", key,
                   "\", value) in setup_context");
    const T* v = std::any_cast<T>(&it->second);
    if (!v)
      detail::fail("xf::autograd::context::get: the value under \"", key, "\" was stored as ",
                   it->second.type().name(), ", not as the requested ", typeid(T).name());
    return *v;
  }

 private:
  friend struct detail::context_access;
  std::vector<tensor> saved_, saved_forward_;
  std::vector<const detail::tensor_impl*> dirty_, non_differentiable_;
  std::vector<bool> needs_input_grad_;
  std::map<std::string, std::any> state_;
  // generated vmap rules: per vmap layer (innermost first) the batch dims of the saved tensors
  std::vector<std::vector<std::int64_t>> saved_bdims_, saved_forward_bdims_;
  bool materialize_grads_ = true;
  bool in_jvp_ = false;
};

}  // namespace autograd

/// What a vmap rule learns about the vmap layer it runs at.
class vmap_info {
 public:
  /// Made by xfunc for the rule it calls.
  vmap_info(std::int64_t batch_size, xfunc::randomness r) : batch_size_(batch_size), randomness_(r) {}
  /// The size of the mapped dimension.
  std::int64_t batch_size() const { return batch_size_; }
  /// The randomness option of the vmap layer (how random ops inside behave).
  xfunc::randomness randomness() const { return randomness_; }

 private:
  std::int64_t batch_size_;
  xfunc::randomness randomness_;
};

namespace detail {
/// The library's own access to a context's internals.
struct context_access {
  static std::vector<tensor>& saved(autograd::context& c) { return c.saved_; }
  static std::vector<tensor>& saved_forward(autograd::context& c) { return c.saved_forward_; }
  static std::vector<std::vector<std::int64_t>>& saved_bdims(autograd::context& c) { return c.saved_bdims_; }
  static std::vector<std::vector<std::int64_t>>& saved_forward_bdims(autograd::context& c) {
    return c.saved_forward_bdims_;
  }
  static void mark_non_differentiable(autograd::context& c, const tensor_impl* p) { c.non_differentiable_.push_back(p); }
  static void mark_dirty(autograd::context& c, const tensor_impl* p) { c.dirty_.push_back(p); }
  static std::vector<bool>& needs_input_grad(autograd::context& c) { return c.needs_input_grad_; }
  static bool materialize(const autograd::context& c) { return c.materialize_grads_; }
  static bool& in_jvp(autograd::context& c) { return c.in_jvp_; }
  static bool is_dirty(const autograd::context& c, const tensor_impl* p) {
    for (auto* d : c.dirty_)
      if (d == p) return true;
    return false;
  }
  static bool is_non_differentiable(const autograd::context& c, const tensor_impl* p) {
    for (auto* d : c.non_differentiable_)
      if (d == p) return true;
    return false;
  }
};
}  // namespace detail
}  // namespace xfunc
