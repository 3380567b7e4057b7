#pragma once
/// \file
/// xf::optim: functional optimizers over pytrees (SGD, Adam, AdamW) and global-norm clipping, in
/// the style of optax, with torch.optim's update rules (docs/optimizers.md).
// An optimizer is a small value holding its hyper-parameters; `init(params)` makes a state (a
// pytree of tensors) and `update(params, grads, state)` returns new parameters and a new state.
// Updates are out of place and written only in xfunc ops, so they can be differentiated
// (meta-learning) and vmapped (ensembles) like any other function.
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/string.hpp>
#include <boost/hana/tuple.hpp>

#include <xfunc/core/dtype.hpp>
#include <xfunc/core/diagnostics.hpp>
#include <xfunc/core/error.hpp>
#include <xfunc/core/pytree.hpp>
#include <xfunc/core/tensor.hpp>
#include <xfunc/core/tensor_io.hpp>
#include <xfunc/ops/comparison.hpp>
#include <xfunc/ops/creation.hpp>
#include <xfunc/ops/pointwise.hpp>
#include <xfunc/ops/reduction.hpp>
#include <xfunc/ops/view.hpp>

/// Functional optimizers: `init(params)` → state, `update(params, grads, state)` → `{params, state}`.
namespace xfunc::optim {

/// State of xf::optim::sgd for parameters of pytree type `Params`; itself a pytree of tensors
/// (a Boost.Hana struct), so it can be passed through grad, vmap and jvp like the parameters.
template <class Params>
struct sgd_state {
  /// Number of updates applied so far, as a 0-d float64 tensor (torch.optim.SGD keeps no count).
  tensor step;
  /// Momentum buffer of each parameter leaf (torch's `state['momentum_buffer']`): zeros after
  /// `init`, then `momentum * buffer + grad`; it stays zero when the momentum is 0.
  Params momentum_buffer;
};

/// State of xf::optim::adam and xf::optim::adamw for parameters of pytree type `Params`; itself a
/// pytree of tensors (a Boost.Hana struct), so it can be passed through grad, vmap and jvp.
template <class Params>
struct adam_state {
  /// Number of updates applied so far, as a 0-d float64 tensor (torch's `state['step']`).
  tensor step;
  /// First-moment estimate of each parameter leaf (torch's `state['exp_avg']`), zeros after `init`.
  Params exp_avg;
  /// Second-moment estimate of each parameter leaf (torch's `state['exp_avg_sq']`), zeros after
  /// `init`.
  Params exp_avg_sq;
};

namespace detail {

using xfunc::detail::fail;

// Hyper-parameter checks: every message names the optimizer and the parameter, and contains
// "optim".
inline void require_nonnegative(const char* who, const char* name, double v, const char* hint) {
  if (!(v >= 0.0) || !std::isfinite(v))
    fail(who, ": ", name, " must be a finite number >= 0, got ", v, "; ", hint);
}
inline void require_beta(const char* who, const char* name, double v, const char* hint) {
  if (!(v >= 0.0 && v < 1.0)) fail(who, ": ", name, " must be in [0, 1), got ", v, "; ", hint);
}

// Sizes of the std::vectors met while walking a pytree, in flattening order: two trees of one
// C++ type have the same structure exactly when these agree.
template <class T>
void vector_sizes(const T& v, std::vector<std::size_t>& out) {
  using xfunc::detail::is_hana_struct_v;
  using xfunc::detail::is_std_tuple;
  using xfunc::detail::is_std_vector;
  if constexpr (is_std_tuple<T>::value) {
    std::apply([&](const auto&... e) { (vector_sizes(e, out), ...); }, v);
  } else if constexpr (is_std_vector<T>::value) {
    out.push_back(v.size());
    for (const auto& e : v) vector_sizes(e, out);
  } else if constexpr (is_hana_struct_v<T>) {
    boost::hana::for_each(boost::hana::accessors<T>(),
                          [&](auto pair) { vector_sizes(boost::hana::second(pair)(v), out); });
  }
}

// The tensor leaves of `params`, each checked to be a defined floating tensor.
template <class P>
std::vector<tensor> param_leaves(const char* who, const P& params) {
  std::vector<tensor> leaves = xfunc::detail::tree_leaves(params);
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].defined())
      fail(who, ": leaf ", i, " of params is an undefined tensor; every tensor leaf of params needs a value");
    if (!is_floating(leaves[i].dtype()))
      fail(who, ": leaf ", i, " of params has dtype ", leaves[i].dtype(),
           "; an optimizer updates floating tensors only (convert it with .to(xf::f32) or keep it out of params)");
  }
  return leaves;
}

// The tensor leaves of `other` (grads, or a part of the state), checked to mirror `params`: the same
// pytree structure, and at each leaf index the same shape and dtype.
template <class P>
std::vector<tensor> matching_leaves(const char* who, const P& params, const std::vector<tensor>& pl, const P& other,
                                    const char* name) {
  std::vector<tensor> ol = xfunc::detail::tree_leaves(other);
  std::vector<std::size_t> sp, so;
  vector_sizes(params, sp);
  vector_sizes(other, so);
  if (ol.size() != pl.size() || sp != so)
    fail(who, ": ", name, " does not have the pytree structure of params (", ol.size(), " tensor leaves against ",
         pl.size(), ", or std::vector entries of other sizes); pass ", name,
         " for these same params (grads from xf::grad with respect to params, state from init(params))");
  for (std::size_t i = 0; i < ol.size(); ++i) {
    if (!ol[i].defined())
      fail(who, ": leaf ", i, " of ", name, " is an undefined tensor; it must match leaf ", i, " of params");
    if (ol[i].shape() != pl[i].shape())
      fail(who, ": leaf ", i, " of ", name, " has shape ", ol[i].shape(), " but leaf ", i, " of params has shape ",
           pl[i].shape(), "; ", name, " must mirror params leaf by leaf");
    if (ol[i].dtype() != pl[i].dtype())
      fail(who, ": leaf ", i, " of ", name, " has dtype ", ol[i].dtype(), " but leaf ", i, " of params has dtype ",
           pl[i].dtype(), "; ", name, " must mirror params leaf by leaf");
  }
  return ol;
}

// The step counter of a state must be the 0-d floating tensor that init made.
inline void check_step(const char* who, const tensor& step) {
  if (!step.defined() || step.dim() != 0 || !is_floating(step.dtype()))
    fail(who, ": state.step must be a 0-d floating tensor (the count of updates); pass the state that init(params) "
         "or a previous update returned");
}

// A copy of `like` whose tensor leaves are `leaves`, in flattening order (tree_map visits leaves in
// the order tree_leaves lists them).
template <class P>
P rebuild(const P& like, const std::vector<tensor>& leaves) {
  std::size_t i = 0;
  return xfunc::detail::tree_map(like, [&](const tensor&) { return leaves[i++]; });
}

// A 0-d float64 zero on the device of the first tensor leaf (cpu when there is none).
template <class P>
tensor zero_step(const P& params) {
  device dev = cpu;
  bool found = false;
  xfunc::detail::tree_for_each(params, [&](const tensor& t) {
    if (!found && t.defined()) dev = t.device(), found = true;
  });
  return zeros({}, dtype::float64, dev);
}

template <class T, class U>
inline constexpr bool same_tree_v = std::is_same_v<std::remove_cvref_t<T>, std::remove_cvref_t<U>>;

// Adam's initial state, shared by adam and adamw: step 0, zero moment estimates.
template <class P>
adam_state<P> adam_init(const char* who, const P& params) {
  (void)param_leaves(who, params);
  const auto zeros_of = [](const tensor& p) { return zeros_like(p); };
  return {zero_step(params), xfunc::detail::tree_map(params, zeros_of), xfunc::detail::tree_map(params, zeros_of)};
}

// Adam's update, shared by adam (weight_decay 0) and adamw, following torch.optim's
// _single_tensor_adamw: p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g g;
// p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps).
template <class P>
std::pair<P, adam_state<P>> adam_update(const char* who, double lr, double b1, double b2, double eps, double wd,
                                        const P& params, const P& grads, const adam_state<P>& state) {
  const std::vector<tensor> pl = param_leaves(who, params);
  const std::vector<tensor> gl = matching_leaves(who, params, pl, grads, "grads");
  const std::vector<tensor> ml = matching_leaves(who, params, pl, state.exp_avg, "state.exp_avg");
  const std::vector<tensor> vl = matching_leaves(who, params, pl, state.exp_avg_sq, "state.exp_avg_sq");
  check_step(who, state.step);
  const tensor step = state.step + 1.0;
  // the bias corrections are scalars computed in float64, as torch computes them in Python floats;
  // the count is not differentiable (its tangent would meet log(b) = -inf when b is 0)
  const tensor t = stop_gradient(step).to(dtype::float64);
  const tensor step_size = lr / (1.0 - pow(b1, t));
  const tensor bc2_sqrt = sqrt(1.0 - pow(b2, t));
  std::vector<tensor> np, nm, nv;
  np.reserve(pl.size()), nm.reserve(pl.size()), nv.reserve(pl.size());
  for (std::size_t i = 0; i < pl.size(); ++i) {
    const tensor& g = gl[i];
    const tensor p = wd != 0.0 ? pl[i] * (1.0 - lr * wd) : pl[i];  // decoupled weight decay (AdamW)
    const tensor m = ml[i] * b1 + (1.0 - b1) * g;
    const tensor v = vl[i] * b2 + (1.0 - b2) * g * g;
    const tensor denom = sqrt(v) / bc2_sqrt.to(p.dtype()) + eps;
    np.push_back(p - step_size.to(p.dtype()) * m / denom);
    nm.push_back(m);
    nv.push_back(v);
  }
  return {rebuild(params, np), adam_state<P>{step, rebuild(state.exp_avg, nm), rebuild(state.exp_avg_sq, nv)}};
}

}  // namespace detail

/// Stochastic gradient descent with optional momentum, as torch.optim.SGD (dampening 0, no
/// Nesterov, no weight decay): `buf = grad` on the first step, then `buf = momentum * buf + grad`,
/// and `param -= lr * buf` (`param -= lr * grad` when momentum is 0).
///
///     xf::optim::sgd opt(0.1, 0.9);
///     auto state = opt.init(params);
///     auto [new_params, new_state] = opt.update(params, grads, state);
class sgd {
 public:
  /// An SGD optimizer with learning rate `lr` >= 0 and momentum >= 0; throws xf::error ("optim")
  /// for a negative or non-finite value.
  explicit sgd(double lr, double momentum = 0.0) : lr_(lr), momentum_(momentum) {
    detail::require_nonnegative("xf::optim::sgd", "lr", lr, "pass a learning rate such as 0.01");
    detail::require_nonnegative("xf::optim::sgd", "momentum", momentum, "pass 0 (none) or a value such as 0.9");
  }

  /// The learning rate.
  double lr() const { return lr_; }
  /// The momentum factor (0: plain SGD).
  double momentum() const { return momentum_; }

  /// The initial state for `params` (any pytree of floating tensors): step 0 and zero momentum
  /// buffers shaped like the parameter leaves.
  template <class Params>
  sgd_state<Params> init(const Params& params) const {
    constexpr bool is_pytree = xfunc::detail::has_tensor_leaves<Params>();
    static_assert(is_pytree, XFUNC_MSG_OPTIM_SGD_INIT_PARAMS);
    if constexpr (is_pytree) {
      (void)detail::param_leaves("xf::optim::sgd::init", params);
      return {detail::zero_step(params), xfunc::detail::tree_map(params, [](const tensor& p) { return zeros_like(p); })};
    } else {
      return {};  // (the static_assert has said what is wrong)
    }
  }

  /// One SGD step: returns `{new_params, new_state}` and changes nothing in place. `grads` must
  /// have the type, structure, leaf shapes and dtypes of `params`, and `state` must come from
  /// `init(params)` or an earlier update (else xf::error naming the leaf).
  template <class Params, class Grads, class State>
  std::pair<Params, sgd_state<Params>> update(const Params& params, const Grads& grads, const State& state) const {
    constexpr bool grads_ok = detail::same_tree_v<Grads, Params>;
    constexpr bool state_ok = std::is_same_v<std::remove_cvref_t<State>, sgd_state<Params>>;
    static_assert(grads_ok, XFUNC_MSG_OPTIM_SGD_UPDATE_GRADS);
    static_assert(state_ok, XFUNC_MSG_OPTIM_SGD_UPDATE_STATE);
    if constexpr (grads_ok && state_ok) return update_impl(params, grads, state);
    else return {};  // (the static_asserts have said what is wrong)
  }

 private:
  template <class Params>
  std::pair<Params, sgd_state<Params>> update_impl(const Params& params, const Params& grads,
                                                   const sgd_state<Params>& state) const {
    constexpr const char* who = "xf::optim::sgd::update";
    const std::vector<tensor> pl = detail::param_leaves(who, params);
    const std::vector<tensor> gl = detail::matching_leaves(who, params, pl, grads, "grads");
    const std::vector<tensor> bl = detail::matching_leaves(who, params, pl, state.momentum_buffer,
                                                           "state.momentum_buffer");
    detail::check_step(who, state.step);
    std::vector<tensor> np, nb;
    np.reserve(pl.size()), nb.reserve(pl.size());
    for (std::size_t i = 0; i < pl.size(); ++i) {
      tensor d = gl[i], buf = bl[i];
      if (momentum_ != 0.0) {
        // torch starts the buffer at grad; a zero buffer gives exactly that: momentum * 0 + grad
        buf = buf * momentum_ + d;
        d = buf;
      }
      np.push_back(pl[i] - lr_ * d);
      nb.push_back(buf);
    }
    return {detail::rebuild(params, np),
            sgd_state<Params>{state.step + 1.0, detail::rebuild(state.momentum_buffer, nb)}};
  }

  double lr_, momentum_;
};

/// Adam, as torch.optim.Adam (no weight decay, no amsgrad): `m = b1 m + (1 - b1) g`,
/// `v = b2 v + (1 - b2) g²`, `param -= lr / (1 - b1^t) · m / (sqrt(v) / sqrt(1 - b2^t) + eps)`
/// with t the step count after the increment (eps is added after the bias-corrected square root).
class adam {
 public:
  /// An Adam optimizer; lr >= 0, b1 and b2 in [0, 1), eps >= 0 (finite), else xf::error ("optim").
  explicit adam(double lr, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8)
      : lr_(lr), b1_(b1), b2_(b2), eps_(eps) {
    detail::require_nonnegative("xf::optim::adam", "lr", lr, "pass a learning rate such as 0.001");
    detail::require_beta("xf::optim::adam", "b1", b1, "the default is 0.9");
    detail::require_beta("xf::optim::adam", "b2", b2, "the default is 0.999");
    detail::require_nonnegative("xf::optim::adam", "eps", eps, "the default is 1e-8");
  }

  /// The learning rate.
  double lr() const { return lr_; }
  /// The decay rate of the first-moment estimate (torch's betas[0]).
  double b1() const { return b1_; }
  /// The decay rate of the second-moment estimate (torch's betas[1]).
  double b2() const { return b2_; }
  /// The term added to the denominator.
  double eps() const { return eps_; }

  /// The initial state for `params` (any pytree of floating tensors): step 0 and zero moment
  /// estimates shaped like the parameter leaves.
  template <class Params>
  adam_state<Params> init(const Params& params) const {
    constexpr bool is_pytree = xfunc::detail::has_tensor_leaves<Params>();
    static_assert(is_pytree, XFUNC_MSG_OPTIM_ADAM_INIT_PARAMS);
    if constexpr (is_pytree) return detail::adam_init("xf::optim::adam::init", params);
    else return {};  // (the static_assert has said what is wrong)
  }

  /// One Adam step: returns `{new_params, new_state}` and changes nothing in place. `grads` must
  /// have the type, structure, leaf shapes and dtypes of `params`, and `state` must come from
  /// `init(params)` or an earlier update (else xf::error naming the leaf).
  template <class Params, class Grads, class State>
  std::pair<Params, adam_state<Params>> update(const Params& params, const Grads& grads, const State& state) const {
    constexpr bool grads_ok = detail::same_tree_v<Grads, Params>;
    constexpr bool state_ok = std::is_same_v<std::remove_cvref_t<State>, adam_state<Params>>;
    static_assert(grads_ok, XFUNC_MSG_OPTIM_ADAM_UPDATE_GRADS);
    static_assert(state_ok, XFUNC_MSG_OPTIM_ADAM_UPDATE_STATE);
    if constexpr (grads_ok && state_ok)
      return detail::adam_update("xf::optim::adam::update", lr_, b1_, b2_, eps_, 0.0, params, grads, state);
    else
      return {};  // (the static_asserts have said what is wrong)
  }

 private:
  double lr_, b1_, b2_, eps_;
};

/// AdamW, as torch.optim.AdamW (no amsgrad): decoupled weight decay `param *= 1 - lr ·
/// weight_decay`, then the Adam step of xf::optim::adam. Defaults are torch's.
class adamw {
 public:
  /// An AdamW optimizer; lr >= 0, b1 and b2 in [0, 1), eps >= 0, weight_decay >= 0 (finite), else
  /// xf::error ("optim").
  explicit adamw(double lr, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8, double weight_decay = 0.01)
      : lr_(lr), b1_(b1), b2_(b2), eps_(eps), weight_decay_(weight_decay) {
    detail::require_nonnegative("xf::optim::adamw", "lr", lr, "pass a learning rate such as 0.001");
    detail::require_beta("xf::optim::adamw", "b1", b1, "the default is 0.9");
    detail::require_beta("xf::optim::adamw", "b2", b2, "the default is 0.999");
    detail::require_nonnegative("xf::optim::adamw", "eps", eps, "the default is 1e-8");
    detail::require_nonnegative("xf::optim::adamw", "weight_decay", weight_decay, "the default is 0.01");
  }

  /// The learning rate.
  double lr() const { return lr_; }
  /// The decay rate of the first-moment estimate (torch's betas[0]).
  double b1() const { return b1_; }
  /// The decay rate of the second-moment estimate (torch's betas[1]).
  double b2() const { return b2_; }
  /// The term added to the denominator.
  double eps() const { return eps_; }
  /// The decoupled weight-decay factor.
  double weight_decay() const { return weight_decay_; }

  /// The initial state for `params`, as xf::optim::adam::init.
  template <class Params>
  adam_state<Params> init(const Params& params) const {
    constexpr bool is_pytree = xfunc::detail::has_tensor_leaves<Params>();
    static_assert(is_pytree, XFUNC_MSG_OPTIM_ADAMW_INIT_PARAMS);
    if constexpr (is_pytree) return detail::adam_init("xf::optim::adamw::init", params);
    else return {};  // (the static_assert has said what is wrong)
  }

  /// One AdamW step: returns `{new_params, new_state}` and changes nothing in place; the same
  /// requirements on `grads` and `state` as xf::optim::adam::update.
  template <class Params, class Grads, class State>
  std::pair<Params, adam_state<Params>> update(const Params& params, const Grads& grads, const State& state) const {
    constexpr bool grads_ok = detail::same_tree_v<Grads, Params>;
    constexpr bool state_ok = std::is_same_v<std::remove_cvref_t<State>, adam_state<Params>>;
    static_assert(grads_ok, XFUNC_MSG_OPTIM_ADAMW_UPDATE_GRADS);
    static_assert(state_ok, XFUNC_MSG_OPTIM_ADAMW_UPDATE_STATE);
    if constexpr (grads_ok && state_ok)
      return detail::adam_update("xf::optim::adamw::update", lr_, b1_, b2_, eps_, weight_decay_, params, grads, state);
    else
      return {};  // (the static_asserts have said what is wrong)
  }

 private:
  double lr_, b1_, b2_, eps_, weight_decay_;
};

/// The 2-norm of all tensor leaves of `tree` taken together, `sqrt(Σ_leaves Σ leaf²)`, as a 0-d
/// tensor (float64 zero when the tree has no tensor leaves; NaN when a leaf holds a NaN).
/// Differentiable and batchable; at an all-zero tree its derivative is taken as 0 (not NaN).
template <class Tree>
tensor global_norm(const Tree& tree) {
  tensor sum_sq;
  xfunc::detail::tree_for_each(tree, [&](const tensor& g) {
    if (!g.defined() || !is_floating(g.dtype()))
      xfunc::detail::fail("xf::optim::global_norm: every tensor leaf must be a defined floating tensor, got ",
                          g.defined() ? "one of dtype " : "an undefined one", g.defined() ? g.dtype() : dtype::float64);
    const tensor s = sum(square(g));
    sum_sq = sum_sq.defined() ? sum_sq + s : s;
  });
  if (!sum_sq.defined()) return zeros({}, dtype::float64);
  // sqrt has an infinite derivative at 0: keep it away from 0 so that the derivative there is 0
  // (`!= 0`, not `> 0`: a NaN gradient gives a NaN norm, as in torch, not a norm of 0)
  const tensor nonzero = sum_sq != 0.0;
  return where(nonzero, sqrt(where(nonzero, sum_sq, ones_like(sum_sq))), zeros_like(sum_sq));
}

/// `grads` scaled so that their global 2-norm is at most `max_norm`, as
/// torch.nn.utils.clip_grad_norm_ (out of place): every leaf is multiplied by
/// `min(1, max_norm / (global_norm(grads) + 1e-6))`. `max_norm` must be finite and >= 0, else
/// xf::error ("optim"). A NaN gradient makes every leaf NaN, as in torch (the norm is NaN).
/// Differentiable and batchable: `xf::vmap` of it clips each example of a batch of per-example
/// gradients separately.
template <class Tree>
Tree clip_by_global_norm(const Tree& grads, double max_norm) {
  detail::require_nonnegative("xf::optim::clip_by_global_norm", "max_norm", max_norm,
                              "pass the largest global 2-norm the gradients may have, such as 1.0");
  bool any = false;
  xfunc::detail::tree_for_each(grads, [&](const tensor&) { any = true; });
  if (!any) return grads;
  const tensor coef = clamp(max_norm / (global_norm(grads) + 1e-6), -std::numeric_limits<double>::infinity(), 1.0);
  return xfunc::detail::tree_map(grads, [&](const tensor& g) { return g * coef.to(g.dtype()); });
}

}  // namespace xfunc::optim

#ifndef XFUNC_DOXYGEN
// The optimizer states are Boost.Hana structs (pytrees); written out because BOOST_HANA_ADAPT_STRUCT
// does not take templates.
namespace xfunc::optim::detail {
template <auto Member>
struct member_fn {
  template <class S>
  constexpr decltype(auto) operator()(S&& s) const {
    return (std::forward<S>(s).*Member);
  }
};
}  // namespace xfunc::optim::detail

namespace boost::hana {
template <class P>
struct accessors_impl<xfunc::optim::sgd_state<P>> {
  static constexpr auto apply() {
    using S = xfunc::optim::sgd_state<P>;
    return make_tuple(make_pair(BOOST_HANA_STRING("step"), xfunc::optim::detail::member_fn<&S::step>{}),
                      make_pair(BOOST_HANA_STRING("momentum_buffer"),
                                xfunc::optim::detail::member_fn<&S::momentum_buffer>{}));
  }
};
template <class P>
struct accessors_impl<xfunc::optim::adam_state<P>> {
  static constexpr auto apply() {
    using S = xfunc::optim::adam_state<P>;
    return make_tuple(make_pair(BOOST_HANA_STRING("step"), xfunc::optim::detail::member_fn<&S::step>{}),
                      make_pair(BOOST_HANA_STRING("exp_avg"), xfunc::optim::detail::member_fn<&S::exp_avg>{}),
                      make_pair(BOOST_HANA_STRING("exp_avg_sq"), xfunc::optim::detail::member_fn<&S::exp_avg_sq>{}));
  }
};
}  // namespace boost::hana
#endif
