#pragma once
/// \file
/// Built-in higher-order operators: xf::cond, xf::map, xf::scan, xf::while_loop. Each is an
/// xf::higher_order_op with one rule per transform kind, written with the public machinery
/// (extend/higher_order_op.hpp, extend/interpreter.hpp).
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

#include <xfunc/core/diagnostics.hpp>
#include <xfunc/core/generator.hpp>
#include <xfunc/core/pytree.hpp>
#include <xfunc/core/tensor_io.hpp>
#include <xfunc/dispatch/trace.hpp>
#include <xfunc/extend/higher_order_op.hpp>
#include <xfunc/fwd.hpp>
#include <xfunc/ops/comparison.hpp>
#include <xfunc/ops/inplace.hpp>
#include <xfunc/ops/pointwise.hpp>
#include <xfunc/ops/reduction.hpp>
#include <xfunc/ops/view.hpp>

namespace xfunc {
namespace detail {

// NOTE: [Eager control flow]
// Every op is eager and already carries its grad, jvp, vmap and functionalize rules, so the
// rules of the built-in control-flow ops run the computation *at the layer they are called
// at* and let the ops inside the user's functions handle every layer: grad records the ops of
// the branch / iterations actually run, jvp propagates tangents through them, vmap batches them.
// What a rule must decide is control flow that depends on data:
//   * a predicate batched at some vmap layer (at this layer or any below: the value differs per
//     example) cannot pick one branch or decide to stop: cond runs both branches and selects per
//     example with xf::where; while_loop keeps looping while any example's predicate holds, and
//     examples already done keep their carry (xf::where again);
//   * any other predicate is concrete: its value is read through the grad / jvp wrappers.
// map and scan slice along dim 0 and stack, which every op's rules already handle. Reverse mode
// through while_loop is refused (its length is data-dependent, as in torch.func).
// The per-call state (the user's callables) is type-erased into std::function, so each op is
// instantiated once per combination of argument/result types (a small registry of function-local
// statics), not once per lambda.

/// Walks t's wrappers down to the dense tensor at the bottom (refreshing stale views).
inline tensor physical_value(const tensor& t) {
  tensor cur = t;
  while (cur.impl() && !cur.impl()->is_dense()) {
    refresh_view(cur);
    cur = cur.impl()->inner;
  }
  return cur;
}

/// Whether t is batched at a live vmap layer (its value differs per example).
inline bool is_batched_anywhere(const tensor& t) {
  tensor cur = t;
  while (cur.impl() && !cur.impl()->is_dense()) {
    refresh_view(cur);
    if (cur.impl()->kind == impl_kind::batched && cur.impl()->is_live_wrapper()) return true;
    cur = cur.impl()->inner;
  }
  return false;
}

/// Checks that a predicate is a defined 0-d tensor and returns it as a boolean tensor.
template <int D = 0>
tensor predicate(const tensor& p, const char* who) {
  if (!p.defined()) fail(who, ": the predicate is an undefined tensor");
  if (p.dim() != 0)
    fail(who, ": the predicate must be a 0-d tensor (boolean or numeric), got shape ", p.shape(),
         "; reduce it (e.g. xf::sum(x) > 0)");
  return p.dtype() == b8 ? p : ne(p, 0.0);
}

/// Whether any example's predicate holds (the only one, for an unbatched predicate).
template <int D = 0>
bool any_true(const tensor& bool_pred) {
  tensor v = physical_value(bool_pred);  // every example of every vmap layer
  if (v.numel() == 1) return v.item<bool>();
  return sum(v.to(i64)).item<std::int64_t>() > 0;
}

/// Throws unless a and b have the same tensor leaves (count, shapes, dtypes); `must` says what
/// the user has to keep the same.
template <class R>
void check_same_outputs(const R& a, const R& b, const char* who, const char* what_a, const char* what_b,
                        const char* must = "both branches must return tensors of the same shapes and dtypes") {
  const std::vector<tensor> la = tree_leaves(a), lb = tree_leaves(b);
  if (la.size() != lb.size())
    fail(who, ": ", what_a, " returns ", la.size(), " tensors but ", what_b, " returns ", lb.size(),
         "; both must return the same structure");
  for (std::size_t i = 0; i < la.size(); ++i)
    if (!(la[i].shape() == lb[i].shape()) || la[i].dtype() != lb[i].dtype())
      fail(who, ": output ", i, " has shape ", la[i].shape(), " and dtype ", la[i].dtype(), " from ", what_a,
           " but shape ", lb[i].shape(), " and dtype ", lb[i].dtype(), " from ", what_b, "; ", must);
}

/// Stacks a list of pytrees of the same structure leaf by leaf along a new dim 0.
template <class R>
R stack_trees(const std::vector<R>& rs, const char* who) {
  std::vector<std::vector<tensor>> leaves;
  leaves.reserve(rs.size());
  for (const auto& r : rs) {
    leaves.push_back(tree_leaves(r));
    if (leaves.back().size() != leaves.front().size())
      fail(who, ": fn returned ", leaves.front().size(), " tensors for the first slice but ", leaves.back().size(),
           " for a later one; it must return the same structure every time");
  }
  std::size_t k = 0;
  return tree_map(rs.front(), [&](const tensor&) {
    std::vector<tensor> col;
    col.reserve(leaves.size());
    for (const auto& l : leaves) col.push_back(l[k]);
    ++k;
    return stack(col, 0);
  });
}

/// The common size of dim 0 of every tensor leaf of xs... (at least one leaf, at least one slice).
template <class... Xs>
std::int64_t leading_size(const char* who, const Xs&... xs) {
  std::int64_t n = -1;
  auto check = [&](const tensor& t) {
    if (t.dim() == 0) fail(who, ": a 0-d tensor has no dim 0 to slice; every xs tensor needs at least one dim");
    if (n >= 0 && t.size(0) != n)
      fail(who, ": every xs tensor must have the same size in dim 0; got sizes ", n, " and ", t.size(0));
    n = t.size(0);
  };
  (tree_for_each(xs, check), ...);
  if (n < 0) fail(who, ": xs holds no tensor to slice");
  if (n == 0) fail(who, ": xs has length 0 in dim 0; there is nothing to apply fn to");
  return n;
}

/// Slice i of every tensor leaf along dim 0.
template <class X>
X slice_tree(const X& xs, std::int64_t i) {
  return tree_map(xs, [i](const tensor& t) { return t.select(0, i); });
}

/// Registers `rule` for every transform kind of `op`.
template <class Op, class Rule>
void impl_all(Op& op, const Rule& rule) {
  for (auto k : {transform_kind::grad, transform_kind::jvp, transform_kind::vmap, transform_kind::functionalize})
    op.impl(k, rule);
}

// ---- cond --------------------------------------------------------------------------------

template <class R, class... Ops>
using cond_branch = std::function<R(const Ops&...)>;

/// Runs the branch not taken on meta copies of the operands, with every layer hidden and
/// tracing paused, so that only shapes are computed and nothing is recorded. It leaves xfunc's
/// state as it was: in-place writes into captured tensors are checked but not done, and the
/// random generator is put back where it was (the branch's own C++ side effects do happen).
template <class R, class... Ops>
R cond_on_meta(const cond_branch<R, Ops...>& branch, const Ops&... ops) {
  lower_guard hide_all(0);
  trace_scope no_trace(nullptr);
  struct effects_off {
    std::uint64_t offset = rng_offset();
    bool was = std::exchange(tls_shape_only, true);
    ~effects_off() {
      tls_shape_only = was;
      set_rng_offset(offset);
    }
  } off;
  try {
    return branch(tree_map(ops, [](const tensor& t) { return empty_dense(t.shape(), t.dtype(), meta); })...);
  } catch (const error& e) {
    fail("xf::cond: checking the branch not taken on meta (shape-only) tensors failed: ", e.what());
  }
}

/// cond at the current layer (see NOTE: [Eager control flow]).
template <class R, class... Ops>
R cond_run(const tensor& pred, const cond_branch<R, Ops...>& true_fn, const cond_branch<R, Ops...>& false_fn,
           const Ops&... ops) {
  const tensor p = predicate(pred, "xf::cond");
  if (is_batched_anywhere(p)) {  // per-example choice: both branches, then select
    R a = true_fn(ops...);
    R b = false_fn(ops...);
    check_same_outputs(a, b, "xf::cond", "true_fn", "false_fn");
    return tree_map2(a, b, [&](const tensor& x, const tensor& y) { return where(p, x, y); });
  }
  const tensor pv = physical_value(p);
  const bool take = pv.item<bool>();
  if (tls_trace) tls_trace->record_guard(pv, take, "xf::cond");  // NOTE: [Tracing control flow]
  R out = take ? true_fn(ops...) : false_fn(ops...);
  R shadow = cond_on_meta<R, Ops...>(take ? false_fn : true_fn, ops...);
  if (take) check_same_outputs(out, shadow, "xf::cond", "true_fn", "false_fn");
  else check_same_outputs(shadow, out, "xf::cond", "true_fn", "false_fn");
  return out;
}

// NOTE: [Tracing control flow]
// make_fx records cond and while_loop reached below every transform as one node each, holding
// their branches (cond) or condition and body (while_loop) as subprograms, so that replay takes
// the branch and runs the number of steps the replayed values call for. A subprogram is traced
// on the call's values under a recording of its own whose parent is the enclosing one: a value
// of an enclosing recording that a branch uses (a closure) becomes an extra input of the
// subprogram and an argument of the node. Under a transform inside make_fx the rules run the
// branch or steps their predicates pick, and only those are traced; each choice is then
// recorded as an `xf::guard` node, and a replay whose values choose differently throws.

/// A subprogram traced from a call's values: the call's result, the program, and the ids (in
/// the enclosing recording) of the values it lifted as extra inputs after the operands.
template <class R>
struct traced_subprogram {
  R result;
  std::shared_ptr<const program> prog;
  std::vector<int> lifted;
};

/// Runs fn() under a recording of its own (child of `parent`) whose inputs are `operands`.
template <class R, class Fn>
traced_subprogram<R> trace_subprogram(trace_state& parent, const std::vector<tensor>& operands, const Fn& fn) {
  trace_state sub(&parent, "s");
  for (const auto& t : operands) sub.add_input(t);
  R result = [&] {
    trace_scope scope(&sub);
    return fn();
  }();
  for (const auto& t : tree_leaves(result)) sub.prog.outputs.push_back(sub.id_of(strip_dead(t)));
  std::vector<int> lifted = std::move(sub.lifted);
  return {std::move(result), std::make_shared<program>(sub.finish()), std::move(lifted)};
}

/// Fresh copies of the leaves of r (a node's results must be values the recording has not seen)
/// and r rebuilt from them.
template <class R>
std::pair<R, std::vector<tensor>> fresh_results(const R& r) {
  trace_scope off(nullptr);
  std::vector<tensor> leaves;
  R out = tree_map(r, [&](const tensor& t) {
    leaves.push_back(strip_dead(t).clone());
    return leaves.back();
  });
  return {std::move(out), std::move(leaves)};
}

/// Runs `sub` on xs[0, n) (the node's own values) followed by xs[from, from + k) (the values the
/// subprogram lifted).
template <int = 0>
std::vector<tensor> run_subprogram(const program& sub, std::span<const tensor> own, std::span<const tensor> lifted) {
  std::vector<tensor> in(own.begin(), own.end());
  in.insert(in.end(), lifted.begin(), lifted.end());
  return sub.run(in);
}

/// cond below every transform while make_fx traces (NOTE: [Tracing control flow]).
template <class R, class... Ops>
R cond_traced(trace_state& tr, const tensor& pred, const cond_branch<R, Ops...>& true_fn,
              const cond_branch<R, Ops...>& false_fn, const Ops&... ops) {
  const tensor p = predicate(pred, "xf::cond");
  std::vector<tensor> operands;
  (tree_for_each(ops, [&](const tensor& t) { operands.push_back(strip_dead(t)); }), ...);
  auto t = trace_subprogram<R>(tr, operands, [&] { return true_fn(ops...); });
  auto f = trace_subprogram<R>(tr, operands, [&] { return false_fn(ops...); });
  check_same_outputs(t.result, f.result, "xf::cond", "true_fn", "false_fn");
  // the traced call returns what its predicate picks (on meta, either: only shapes count)
  const bool take = p.device() == meta || p.item<bool>();
  auto [result, outs] = fresh_results(take ? t.result : f.result);
  // arguments: the predicate, the operands, then each branch's lifted values
  std::vector<int> args{tr.id_of(p)};
  for (const auto& x : operands) args.push_back(tr.id_of(x));
  args.insert(args.end(), t.lifted.begin(), t.lifted.end());
  args.insert(args.end(), f.lifted.begin(), f.lifted.end());
  const std::size_t n = operands.size(), nt = t.lifted.size(), nf = f.lifted.size();
  auto replay = [pt = t.prog, pf = f.prog, n, nt, nf](std::span<const tensor> xs) {
    const auto own = xs.subspan(1, n);
    return xs[0].template item<bool>() ? run_subprogram(*pt, own, xs.subspan(1 + n, nt))
                              : run_subprogram(*pf, own, xs.subspan(1 + n + nt, nf));
  };
  tr.record_multi("xf::cond", std::move(args), std::move(outs), std::move(replay),
                  {{"true_fn", t.prog}, {"false_fn", f.prog}});
  return result;
}

/// The dense implementation: traced as one node while make_fx records (NOTE: [Tracing control flow]).
template <class R, class... Ops>
R cond_bottom(const tensor& pred, const cond_branch<R, Ops...>& true_fn, const cond_branch<R, Ops...>& false_fn,
              const Ops&... ops) {
  if (trace_state* tr = tls_trace) return cond_traced<R, Ops...>(*tr, pred, true_fn, false_fn, ops...);
  return cond_run<R, Ops...>(pred, true_fn, false_fn, ops...);
}

template <class R, class... Ops>
using cond_op_t = higher_order_op<R(const tensor&, const cond_branch<R, Ops...>&, const cond_branch<R, Ops...>&,
                                    const Ops&...)>;

/// The xf::cond op for branch result type R and operand types Ops (one per combination).
template <class R, class... Ops>
const cond_op_t<R, Ops...>& cond_op() {
  struct registry {
    cond_op_t<R, Ops...> op{"xf::cond", &cond_bottom<R, Ops...>};
    registry() {
      // The same rule at every layer: the branch ops handle the layer themselves.
      impl_all(op, [](interpreter&, const tensor& p, const cond_branch<R, Ops...>& t, const cond_branch<R, Ops...>& f,
                      const Ops&... ops) { return cond_run<R, Ops...>(p, t, f, ops...); });
    }
  };
  static registry r;
  return r.op;
}

struct cond_fn {
  template <class TF, class FF, class... Ops>
  auto operator()(const tensor& pred, const TF& true_fn, const FF& false_fn, const Ops&... operands) const {
    using RT = std::remove_cvref_t<std::invoke_result_t<const TF&, const Ops&...>>;
    using RF = std::remove_cvref_t<std::invoke_result_t<const FF&, const Ops&...>>;
    static_assert(std::is_same_v<RT, RF>, XFUNC_MSG_COND_BRANCH_TYPES);
    if constexpr (std::is_same_v<RT, RF>)
      return cond_op<RT, Ops...>()(pred, cond_branch<RT, Ops...>(std::cref(true_fn)),
                                   cond_branch<RT, Ops...>(std::cref(false_fn)), operands...);
  }
};

// ---- map ---------------------------------------------------------------------------------

template <class R, class... Xs>
R map_run(const std::function<R(const Xs&...)>& fn, const Xs&... xs) {
  const std::int64_t n = leading_size("xf::map", xs...);
  std::vector<R> outs;
  outs.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) outs.push_back(fn(slice_tree(xs, i)...));
  return stack_trees(outs, "xf::map");
}

template <class R, class... Xs>
using map_op_t = higher_order_op<R(const std::function<R(const Xs&...)>&, const Xs&...)>;

template <class R, class... Xs>
const map_op_t<R, Xs...>& map_op() {
  struct registry {
    map_op_t<R, Xs...> op{"xf::map", &map_run<R, Xs...>};
    registry() {
      impl_all(op, [](interpreter&, const std::function<R(const Xs&...)>& fn, const Xs&... xs) {
        return map_run<R, Xs...>(fn, xs...);
      });
    }
  };
  static registry r;
  return r.op;
}

struct map_fn {
  template <class F, class... Xs>
  auto operator()(const F& fn, const Xs&... xs) const {
    (tree_for_each(xs, [](const tensor& t) { require_defined(t, "xf::map"); }), ...);
    using R = std::remove_cvref_t<std::invoke_result_t<const F&, const Xs&...>>;
    return map_op<R, Xs...>()(std::function<R(const Xs&...)>(std::cref(fn)), xs...);
  }
};

// ---- scan --------------------------------------------------------------------------------

// (scan and while_loop, as in JAX: a carry that changed shape or dtype would make the transforms'
// rules, which run the steps batched or traced, disagree with the eager loop)
inline constexpr const char* carry_must = "the carry must keep its shapes and dtypes from step to step";

template <class C, class X, class Y>
using scan_body = std::function<std::pair<C, Y>(const C&, const X&)>;

template <class C, class X, class Y>
std::pair<C, Y> scan_run(const scan_body<C, X, Y>& fn, const C& init, const X& xs) {
  const std::int64_t n = leading_size("xf::scan", xs);
  C carry = init;
  std::vector<Y> ys;
  ys.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    auto [next, y] = fn(carry, slice_tree(xs, i));
    check_same_outputs(init, next, "xf::scan", "the initial carry", "fn", carry_must);
    carry = std::move(next);
    ys.push_back(std::move(y));
  }
  return {carry, stack_trees(ys, "xf::scan")};
}

template <class C, class X, class Y>
using scan_op_t = higher_order_op<std::pair<C, Y>(const scan_body<C, X, Y>&, const C&, const X&)>;

template <class C, class X, class Y>
const scan_op_t<C, X, Y>& scan_op() {
  struct registry {
    scan_op_t<C, X, Y> op{"xf::scan", &scan_run<C, X, Y>};
    registry() {
      impl_all(op, [](interpreter&, const scan_body<C, X, Y>& fn, const C& init, const X& xs) {
        return scan_run<C, X, Y>(fn, init, xs);
      });
    }
  };
  static registry r;
  return r.op;
}

struct scan_fn {
  template <class F, class C, class X>
  auto operator()(const F& fn, const C& init, const X& xs) const {
    tree_for_each(init, [](const tensor& t) { require_defined(t, "xf::scan"); });
    tree_for_each(xs, [](const tensor& t) { require_defined(t, "xf::scan"); });
    using FR = std::remove_cvref_t<std::invoke_result_t<const F&, const C&, const X&>>;
    using Y = std::remove_cvref_t<std::tuple_element_t<1, FR>>;
    scan_body<C, X, Y> body = [&fn](const C& c, const X& x) {
      FR r = fn(c, x);
      return std::pair<C, Y>{C(std::get<0>(std::move(r))), Y(std::get<1>(std::move(r)))};
    };
    return scan_op<C, X, Y>()(body, init, xs);
  }
};

// ---- while_loop --------------------------------------------------------------------------

/// Reverse mode is refused whenever a grad layer is active (at the top or below).
inline void refuse_reverse_mode() {
  for (const auto& l : current_stack().layers)
    if (l->kind == transform_kind::grad)
      fail("xf::while_loop: reverse-mode differentiation (grad, vjp, jacrev, hessian) through while_loop is not "
           "supported, because its number of iterations is data-dependent; use forward mode (jvp, jacfwd) or "
           "xf::scan over a fixed number of steps");
}

template <class C>
C while_run(const std::function<tensor(const C&)>& cond_f, const std::function<C(const C&)>& body, const C& init) {
  refuse_reverse_mode();
  C carry = init;
  for (;;) {
    const tensor p = predicate(cond_f(carry), "xf::while_loop");
    if (!is_batched_anywhere(p)) {
      const tensor pv = physical_value(p);
      const bool more = pv.item<bool>();
      if (tls_trace) tls_trace->record_guard(pv, more, "xf::while_loop");  // NOTE: [Tracing control flow]
      if (!more) return carry;
      carry = body(carry);
      check_same_outputs(init, carry, "xf::while_loop", "the initial carry", "body_fn", carry_must);
      continue;
    }
    if (!any_true(p)) return carry;
    // Examples whose predicate is false are done: they keep their carry.
    C next = body(carry);
    check_same_outputs(init, next, "xf::while_loop", "the initial carry", "body_fn", carry_must);
    carry = tree_map2(next, carry, [&](const tensor& n, const tensor& c) { return where(p, n, c); });
  }
}

/// while_loop below every transform while make_fx traces: one node holding cond_fn and body_fn
/// as subprograms of the carry (NOTE: [Tracing control flow]).
template <class C>
C while_traced(trace_state& tr, const std::function<tensor(const C&)>& cond_f, const std::function<C(const C&)>& body,
               const C& init) {
  std::vector<tensor> carry;
  tree_for_each(init, [&](const tensor& t) { carry.push_back(strip_dead(t)); });
  auto c = trace_subprogram<tensor>(tr, carry, [&] { return predicate(cond_f(init), "xf::while_loop"); });
  auto b = trace_subprogram<C>(tr, carry, [&] { return body(init); });
  check_same_outputs(init, b.result, "xf::while_loop", "the initial carry", "body_fn", carry_must);
  // the values the traced call returns: the loop run on the example values (on meta: the carry)
  C final = init;
  if (c.result.device() != meta) {
    trace_scope off(nullptr);
    while (predicate(cond_f(final), "xf::while_loop").template item<bool>()) final = body(final);
  }
  auto [result, outs] = fresh_results(final);
  std::vector<int> args;
  for (const auto& x : carry) args.push_back(tr.id_of(x));
  args.insert(args.end(), c.lifted.begin(), c.lifted.end());
  args.insert(args.end(), b.lifted.begin(), b.lifted.end());
  const std::size_t n = carry.size(), nc = c.lifted.size(), nb = b.lifted.size();
  auto replay = [pc = c.prog, pb = b.prog, n, nc, nb](std::span<const tensor> xs) {
    std::vector<tensor> state(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n));
    while (run_subprogram(*pc, state, xs.subspan(n, nc))[0].template item<bool>())
      state = run_subprogram(*pb, state, xs.subspan(n + nc, nb));
    return state;
  };
  tr.record_multi("xf::while_loop", std::move(args), std::move(outs), std::move(replay),
                  {{"cond_fn", c.prog}, {"body_fn", b.prog}});
  return result;
}

/// The dense implementation: traced as one node while make_fx records.
template <class C>
C while_bottom(const std::function<tensor(const C&)>& cond_f, const std::function<C(const C&)>& body, const C& init) {
  if (trace_state* tr = tls_trace) return while_traced<C>(*tr, cond_f, body, init);
  return while_run<C>(cond_f, body, init);
}

template <class C>
using while_op_t = higher_order_op<C(const std::function<tensor(const C&)>&, const std::function<C(const C&)>&,
                                     const C&)>;

template <class C>
const while_op_t<C>& while_op() {
  struct registry {
    while_op_t<C> op{"xf::while_loop", &while_bottom<C>};
    registry() {
      impl_all(op, [](interpreter&, const std::function<tensor(const C&)>& c, const std::function<C(const C&)>& b,
                      const C& init) { return while_run<C>(c, b, init); });
    }
  };
  static registry r;
  return r.op;
}

struct while_loop_fn {
  template <class CF, class BF, class C>
  C operator()(const CF& cond_f, const BF& body_f, const C& carry) const {
    tree_for_each(carry, [](const tensor& t) { require_defined(t, "xf::while_loop"); });
    return while_op<C>()(std::function<tensor(const C&)>(std::cref(cond_f)),
                         std::function<C(const C&)>([&body_f](const C& c) { return C(body_f(c)); }), carry);
  }
};

}  // namespace detail

/// cond(pred, true_fn, false_fn, operands...): true_fn(operands...) if the 0-d `pred` holds,
/// else false_fn(operands...). Both branches must return the same type, shapes and dtypes. Under
/// vmap with a batched pred both run and the result is selected per example; grad
/// differentiates the branch taken.
inline constexpr detail::cond_fn cond{};
/// map(fn, xs...): fn applied to the slices of xs... along dim 0, results stacked along dim 0.
inline constexpr detail::map_fn map{};
/// scan(fn, init, xs): carry = init; for each slice x of xs along dim 0, {carry, y} = fn(carry,
/// x); returns std::pair{final carry, ys stacked along dim 0}.
inline constexpr detail::scan_fn scan{};
/// while_loop(cond_fn, body_fn, carry): carry = body_fn(carry) while cond_fn(carry) (a 0-d
/// tensor) holds. Forward-differentiable and batchable (a batched predicate loops while any
/// example's holds); reverse mode throws ("while_loop").
inline constexpr detail::while_loop_fn while_loop{};

}  // namespace xfunc
