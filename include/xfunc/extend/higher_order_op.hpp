#pragma once
/// \file
/// xf::higher_order_op<Sig>: an operator (typically one that takes functions) with a dense
/// implementation and one rule per transform kind, each rule written against xf::interpreter.
#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <xfunc/extend/context.hpp>
#include <xfunc/extend/interpreter.hpp>

namespace xfunc {

// NOTE: [Higher-order ops]
// Ordinary ops go to the highest layer among their tensor arguments (NOTE: [Dispatch]). A
// higher-order op cannot: the tensors it works on may hide inside the functions it takes
// (captured by closures), so it consults the top of the layer stack instead. With no active
// layer the dense implementation runs; otherwise the rule registered for the top layer's kind
// runs with an xf::interpreter of that layer. A rule either
//   * runs the computation at this layer (ops called on this layer's tensors record / batch /
//     propagate themselves, so the rule only decides *what* to compute), or
//   * unwraps the arguments, opens `auto g = interp.lower();` and calls the op (or any ops) on
//     the unwrapped values, which then sees the next layer down, and wraps the results.
// A grad rule states its derivative with xf::autograd::single_level_function, which is allowed
// only while such a rule runs (tracked in detail::tls_in_hop_grad_rule). Rules are per op
// object; registration takes a lock, calls read the rule table without one.
template <class Sig>
class higher_order_op;

namespace detail {
/// Marks, for single_level_function, whether a higher-order op's grad rule is running: one level
/// deeper in a grad rule, reset to none while a dense implementation or another kind's rule runs.
class hop_rule_scope {
 public:
  explicit hop_rule_scope(bool grad_rule) : saved_(tls_in_hop_grad_rule) {
    tls_in_hop_grad_rule = grad_rule ? saved_ + 1 : 0;
  }
  ~hop_rule_scope() { tls_in_hop_grad_rule = saved_; }
  hop_rule_scope(const hop_rule_scope&) = delete;
  hop_rule_scope& operator=(const hop_rule_scope&) = delete;

 private:
  int saved_;
};
}  // namespace detail

/// A higher-order operator with signature Sig (e.g. `xf::tensor(const xf::tensor&, double)`,
/// parameters may be `std::function`s). `op(args...)` runs `dense_impl` outside transforms and
/// the rule of the innermost active layer otherwise; a layer kind without a rule throws an
/// xf::error naming the op and the transform.
template <class R, class... Args>
class higher_order_op<R(Args...)> {
 public:
  /// The implementation that runs with no transform active.
  using dense_fn = std::function<R(Args...)>;
  /// A rule: runs when the op is called with a layer of its kind on top of the stack.
  using rule_fn = std::function<R(interpreter&, Args...)>;

  /// An op named `name` ("ns::name", used in error messages) computing `dense_impl`.
  higher_order_op(std::string name, dense_fn dense_impl) : name_(std::move(name)), dense_(std::move(dense_impl)) {
    if (!dense_) detail::fail(name_, ": higher_order_op needs a dense implementation");
  }
  higher_order_op(const higher_order_op&) = delete;
  higher_order_op& operator=(const higher_order_op&) = delete;

  /// Registers (or replaces) the rule for transform kind `k`; returns *this for chaining.
  higher_order_op& impl(transform_kind k, rule_fn rule) {
    if (!rule) detail::fail(name_, ": op.impl(", detail::kind_name(k), ", rule) was given an empty rule");
    std::lock_guard<std::mutex> lock(mu_);
    // Replaced rules stay owned (a call on another thread may still be running one).
    owned_.push_back(std::make_unique<const rule_fn>(std::move(rule)));
    rules_[index(k)].store(owned_.back().get(), std::memory_order_release);
    return *this;
  }

  /// Whether a rule for kind `k` is registered.
  bool has_impl(transform_kind k) const { return rules_[index(k)].load(std::memory_order_acquire) != nullptr; }
  /// The op's name.
  const std::string& name() const { return name_; }

  /// Runs the op: dense_impl outside transforms, else the innermost layer's rule.
  R operator()(Args... args) const {
    auto& ls = detail::current_stack().layers;
    if (ls.empty()) {
      detail::hop_rule_scope scope(false);
      return dense_(std::forward<Args>(args)...);
    }
    interpreter interp(ls.back());  // holds the layer alive for the call
    const rule_fn* rule = rules_[index(interp.kind())].load(std::memory_order_acquire);
    if (!rule)
      detail::fail(name_, ": no rule for the ", detail::kind_name(interp.kind()),
                   " transform; this higher-order op cannot run under ", detail::kind_name(interp.kind()),
                   " (register one with op.impl(xf::transform_kind::", detail::kind_name(interp.kind()), ", rule))");
    detail::hop_rule_scope scope(interp.kind() == transform_kind::grad);
    return (*rule)(interp, std::forward<Args>(args)...);
  }

 private:
  static std::size_t index(transform_kind k) { return static_cast<std::size_t>(k); }

  std::string name_;
  dense_fn dense_;
  std::array<std::atomic<const rule_fn*>, 4> rules_{};
  std::mutex mu_;
  std::vector<std::unique_ptr<const rule_fn>> owned_;
};

}  // namespace xfunc
