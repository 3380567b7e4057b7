#pragma once
// The dispatcher: hands each op call to the layer its arguments belong to, and the generic
// grad / jvp / vmap interpreters that apply an op's rules at one layer.
#include <array>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include <xfunc/core/linkage.hpp>
#include <xfunc/dispatch/autograd_graph.hpp>
#include <xfunc/dispatch/layer_stack.hpp>
#include <xfunc/dispatch/trace.hpp>
#include <xfunc/dispatch/wrappers.hpp>
#include <xfunc/fwd.hpp>

namespace xfunc::detail {

// NOTE: [Op definitions]
// An op is a struct with everything about it in one place:
//   name                      "xf::add" (make_fx and error messages use it)
//   attrs                     its non-tensor arguments (a struct; no_attrs when none)
//   kernel(in, attrs)         the backend computation on dense cpu or meta tensors
//   vjp(in, out, g, attrs)    one gradient per tensor argument, in xfunc ops   [differentiable]
//   jvp(in, tin, out, attrs)  output tangent from argument tangents, in xfunc ops (an undefined
//                             tangent means zero)                                [differentiable]
//   batch(in, bdims, B, attrs) the batch rule: physical values and their batch dims in, the
//                             result and its batch dim out; ops without one use the loop
//                             fallback (with a one-time warning naming the op)
// Tensor arguments arrive as one span, so the interpreters below are written once for all ops.
struct no_attrs {};

template <class Op>
tensor dispatch(std::span<const tensor> in, const typename Op::attrs& a);

template <class Op>
concept differentiable_op = requires { &Op::vjp; &Op::jvp; };
template <class Op>
concept batchable_op = requires { &Op::batch; };
/// View ops say so (`static constexpr bool is_view = true`); `view_writable = false` marks views
/// whose elements can share memory (expand), which in-place ops must not write through.
template <class Op>
constexpr bool is_view_op() {
  if constexpr (requires { Op::is_view; }) return Op::is_view;
  else return false;
}
template <class Op>
constexpr bool is_writable_view_op() {
  if constexpr (requires { Op::view_writable; }) return Op::view_writable;
  else return true;
}

// NOTE: [Views as copies]
// functionalize(f, remove::mutations_and_views) leaves no view behind: while such a call runs on
// this thread, a view op that reaches its kernel returns a fresh copy instead of an alias, and
// make_fx records it under the name torch gives the copying form (`Op::copy_name`:
// xf::narrow_copy, xf::view_copy, ...). Views of the call's own (functional) values are still
// tracked as views one layer up, so writes through them reach their base by rebinding. A plain
// tensor's view being a copy, tensors made in such a call from captured ones only cannot be
// written in place (NOTE: [Tensors created inside transforms]): their copies could not follow.
inline thread_local int tls_views_as_copies = 0;

/// While alive (and `on`), views are copies on this thread (NOTE: [Views as copies]).
class views_as_copies_scope {
 public:
  explicit views_as_copies_scope(bool on) : on_(on) { tls_views_as_copies += on_; }
  ~views_as_copies_scope() { tls_views_as_copies -= on_; }
  views_as_copies_scope(const views_as_copies_scope&) = delete;
  views_as_copies_scope& operator=(const views_as_copies_scope&) = delete;

 private:
  int on_;
};

/// The copying form of view op Op at the bottom (defined with the view ops, ops/view.hpp).
template <class Op>
tensor view_as_copy(std::span<const tensor> in, const typename Op::attrs& a);

// NOTE: [Device dispatch]
// At the bottom of the dispatch (plain tensors only) an op whose arguments include a tensor on
// a device other than the cpu runs that device's kernel: `cuda_kernel_of<Op>`, set by the CUDA
// backend (include/xfunc/cuda/ops.hpp; NOTE: [Device backends]). Ops whose one kernel serves
// every device run it there: views (they only make new strides over the same storage) and ops
// that say `device_generic = true` (xf::to between devices, flip, xf::dist's collectives, which
// choose their transport: NOTE: [Collectives on device tensors]). All tensor arguments must be
// on that one device, except 0-d cpu tensors, which act as scalars: moved there, or passed by
// value to the elementwise kernels (NOTE: [Scalar operands]).
// Transforms need nothing more: their rules call ops, which land here with plain tensors on the
// device.

/// An op's kernel for one device kind.
template <class Op>
using device_kernel_fn = tensor (*)(std::span<const tensor>, const typename Op::attrs&);
/// Op's cuda kernel (null: it has none, or the program is built without xfunc::cuda).
template <class Op>
inline device_kernel_fn<Op> cuda_kernel_of = nullptr;
/// Whether Op's cuda kernel takes 0-d cpu tensors as they are, as scalars in its arguments
/// (NOTE: [Scalar operands] in include/xfunc/cuda/kernel_args.hpp); others get them uploaded.
template <class Op>
inline bool cuda_kernel_takes_scalars = false;

template <class Op>
constexpr bool is_device_generic() {
  if constexpr (requires { Op::device_generic; }) return Op::device_generic;
  else return is_view_op<Op>();
}

/// Whether any argument (a plain tensor) lives on a device other than the cpu and meta.
inline bool any_on_device(std::span<const tensor> in) {
  for (const auto& t : in)
    if (t.impl() && t.impl()->dev.kind == device_kind::cuda) [[unlikely]] return true;
  return false;
}

/// The device of the arguments that are not on the cpu, and whether 0-d cpu tensors (scalars)
/// are among them; fails when two arguments are on different devices (NOTE: [Device dispatch]).
struct device_args {
  device dev;
  bool scalars;
};
XFUNC_RUNTIME device_args device_of_args(const char* op, std::span<const tensor> in);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME device_args device_of_args(const char* op, std::span<const tensor> in) {
  device d = cpu;
  for (const auto& t : in)
    if (t.impl() && t.impl()->dev.kind == device_kind::cuda) {
      d = t.impl()->dev;
      break;
    }
  bool scalars = false;
  for (const auto& t : in) {
    if (!t.impl() || t.impl()->dev == d) continue;
    if (t.impl()->dev == cpu && t.impl()->shape.empty()) {
      scalars = true;
      continue;
    }
    fail(op, ": tensor arguments on different devices (", d, " and ", t.impl()->dev,
         "); move them to one device first, e.g. with .to(", d, ") (only 0-d cpu tensors act as scalars on any device)");
  }
  return {d, scalars};
}
#endif

/// `in` with its cpu tensors (0-d: scalars) uploaded to d, by the backend itself, not an op
/// (make_fx would record one).
XFUNC_RUNTIME tensor_list with_scalars_on(std::span<const tensor> in, device d, const char* op);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME tensor_list with_scalars_on(std::span<const tensor> in, device d, const char* op) {
  tensor_list moved(in.begin(), in.end());
  for (auto& t : moved)
    if (t.impl() && t.impl()->dev == cpu) t = backend_of(d, op).upload(t, d);
  return moved;
}
#endif

[[noreturn, gnu::cold]] inline void fail_no_cuda_kernel(const char* op) {
  fail(op, ": has no cuda kernel yet (docs/cuda.md lists the ops that run on cuda tensors); "
       "compute it on the cpu, e.g. with .cpu() on its arguments");
}

/// Runs Op's cuda kernel on `in` (NOTE: [Device dispatch]).
template <class Op>
tensor run_device_kernel(std::span<const tensor> in, const typename Op::attrs& a) {
  const auto [d, scalars] = device_of_args(Op::name, in);
  if constexpr (is_device_generic<Op>()) {
    return Op::kernel(in, a);
  } else {
    const device_kernel_fn<Op> k = cuda_kernel_of<Op>;
    if (!k) fail_no_cuda_kernel(Op::name);
    if (!scalars || cuda_kernel_takes_scalars<Op>) return k(in, a);
    return k(with_scalars_on(in, d, Op::name), a);
  }
}

/// Op's kernel on plain tensors: the cpu (and meta) kernel, or a device's (NOTE: [Device dispatch]).
template <class Op>
tensor run_kernel(std::span<const tensor> in, const typename Op::attrs& a) {
  if (any_on_device(in)) [[unlikely]] return run_device_kernel<Op>(in, a);
  return Op::kernel(in, a);
}

/// Loop-and-stack fallback for ops without a batch rule.
template <class Op>
batched batch_fallback(std::span<const tensor> in, std::span<const std::int64_t> bdims, std::int64_t B,
                       const typename Op::attrs& a) {
  static std::once_flag warned;
  std::call_once(warned, [] {
    std::fprintf(stderr, "xf::vmap: %s has no batch rule; falling back to a loop over the batch (slow)\n",
                 Op::name);
  });
  std::vector<tensor> outs;
  outs.reserve(static_cast<std::size_t>(B));
  tensor_list slice(in.size());
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::size_t i = 0; i < in.size(); ++i)
      slice[i] = bdims[i] == no_bdim ? in[i] : in[i].select(bdims[i], b);
    outs.push_back(dispatch<Op>(slice, a));
  }
  return {xfunc::stack(outs, 0), 0};
}

// NOTE: [Saved outputs]
// A grad node keeps its op's output only for ops whose backward or forward formula reads it; they
// say so (`static constexpr bool reads_output = true`: exp, tanh, sqrt, div, pow, where, amax,
// norm, ...). For every other op `out` stays undefined: keeping a tensor costs an atomic
// reference-count pair per op and level in a multithreaded process, a measurable share of the
// per-level overhead of cheap ops. An op that reads `out` without saying so gets an undefined
// tensor, which the conformance table's vjp and jvp checks catch.
template <class Op>
constexpr bool op_reads_output() {
  if constexpr (requires { Op::reads_output; }) return Op::reads_output;
  else return false;
}

// NOTE: [Rule shapes]
// A derivative rule must give a gradient of its argument's shape and a tangent of its output's
// shape. One that does not (a reduction over the batch dim of a physical value, say) would give
// wrong numbers further on, or make a later kernel read past a buffer; the interpreters check
// the shapes and report the op instead.
[[noreturn]] inline void fail_rule_shape(const char* op, const char* what, const shape_t& got, const shape_t& want) {
  fail("xf: internal error: the ", what, " rule of ", op, " gave a result of shape ", got, " where shape ", want,
       " was expected; please report this with the program that triggered it");
}

// NOTE: [Op tables]
// The interpreter of each transform (grad_rule, jvp_rule, vmap_rule, functional_rule below), and
// the rare paths of dispatch (dispatch_slow: make_fx recording, device tensors, escaped
// wrappers), are the same code for every op but for a few calls into the op: its dispatch one
// layer down, its kernel, its jvp, its batch rule, a grad node that holds its attrs and calls its
// vjp, a view's replay. Written as templates over the op they were compiled again for every op a
// program used: a fifth of the code of a header-only program (examples/per_example_gradients.cpp:
// 660 -> 543 KB without them). They take the op as a table of those calls instead, with its attrs
// behind a `const void*`, and are compiled once (in xfunc::kernels with the kernel library: NOTE:
// [Compiled runtime]); only the table's thunks, a few hundred bytes each, are per op. The
// zero-layer path of dispatch (NOTE: [Dispatch]) stays per op and calls the kernel directly.

/// A grad node of an op call: its arguments (unwrapped one layer), its output when the op's
/// rules read it (NOTE: [Saved outputs]); op_node<Op> adds the attrs and the rules.
struct op_node_base : grad_node {
  op_node_base() {}  // NOLINT: user-provided, so make_shared does not zero the struct first
  small_list<tensor, 3> in;
  tensor out;  // undefined unless the op reads its output
  /// gs, once each gradient of a tracked argument has that argument's shape (NOTE: [Rule shapes]).
  tensor_list checked(const char* op, tensor_list gs) const {
    for (std::size_t i = 0; i < gs.size() && i < in.size(); ++i)
      if (gs[i].defined() && next[i] && !(gs[i].shape() == in[i].shape())) [[unlikely]]
        fail_rule_shape(op, "vjp", gs[i].shape(), in[i].shape());
    return gs;
  }
};

/// What the transforms' interpreters call of an op (NOTE: [Op tables]); made by op_table_of<Op>.
struct op_table {
  const char* name;
  bool differentiable;
  bool is_view;
  bool writable_view;
  bool reads_output;
  /// dispatch<Op>: the op on the arguments, from the next layer down.
  tensor (*dispatch)(std::span<const tensor> in, const void* a);
  /// run_device_kernel<Op>: the op on plain tensors on a device (NOTE: [Device dispatch]).
  tensor (*device_kernel)(std::span<const tensor> in, const void* a);
  /// The op recorded by the make_fx trace of this thread (NOTE: [Dispatch]).
  tensor (*record)(std::span<const tensor> in, const void* a);
  /// view_as_copy<Op> (view ops; null otherwise: NOTE: [Views as copies]).
  tensor (*view_as_copy)(std::span<const tensor> in, const void* a);
  /// A new op_node<Op> holding a copy of the attrs (differentiable ops; null otherwise).
  std::shared_ptr<op_node_base> (*new_node)(const void* a);
  /// Op::jvp (differentiable ops; null otherwise).
  tensor (*jvp)(std::span<const tensor> primals, std::span<const tensor> tangents, const tensor& out,
                const void* a);
  /// Op::batch, or the loop fallback.
  batched (*batch)(std::span<const tensor> values, std::span<const std::int64_t> bdims, std::int64_t B,
                   const void* a);
  /// The replay of a view of a view: prev (from the base; empty: the base itself), then this op
  /// (view ops; null otherwise).
  std::function<tensor(const tensor&)> (*view_replay)(std::function<tensor(const tensor&)> prev, const void* a);
};

template <class Op>
const typename Op::attrs& attrs_of(const void* a) {
  return *static_cast<const typename Op::attrs*>(a);
}

template <class Op>
struct op_node final : op_node_base {
  op_node() {}  // NOLINT: as op_node_base's
  typename Op::attrs attrs;
  tensor_list apply(const tensor& g) override {
    // Ops that can skip gradients nobody needs (an argument with no node at this layer, e.g. a
    // captured weight) take a mask: under vmap such a gradient would be a full batched tensor.
    if constexpr (requires(std::span<const bool> m) { Op::vjp(std::span<const tensor>{}, out, g, attrs, m); }) {
      bool inline_need[8];
      std::unique_ptr<bool[]> heap_need(in.size() > 8 ? new bool[in.size()] : nullptr);
      bool* need = heap_need ? heap_need.get() : inline_need;
      for (std::size_t i = 0; i < in.size(); ++i) need[i] = next[i] != nullptr;
      return checked(Op::name, Op::vjp(in, out, g, attrs, std::span<const bool>(need, in.size())));
    } else {
      return checked(Op::name, Op::vjp(in, out, g, attrs));
    }
  }
  tensor forward_tangent(const tensor_list& tin) override { return Op::jvp(in, tin, out, attrs); }
};

/// The per-op calls of op_table_of<Op>.
template <class Op>
struct op_thunks {
  static tensor dispatch(std::span<const tensor> in, const void* a) { return detail::dispatch<Op>(in, attrs_of<Op>(a)); }
  static tensor device_kernel(std::span<const tensor> in, const void* a) {
    return run_device_kernel<Op>(in, attrs_of<Op>(a));
  }
  static tensor record(std::span<const tensor> in, const void* a) {
    return tls_trace->record_kernel(
        Op::name, in, [a = attrs_of<Op>(a)](std::span<const tensor> xs) { return run_kernel<Op>(xs, a); },
        is_view_op<Op>());
  }
  static tensor view_as_copy(std::span<const tensor> in, const void* a) {
    return detail::view_as_copy<Op>(in, attrs_of<Op>(a));
  }
  static std::shared_ptr<op_node_base> new_node(const void* a) {
    auto node = make_pooled<op_node<Op>>();
    node->attrs = attrs_of<Op>(a);
    return node;
  }
  static tensor jvp(std::span<const tensor> primals, std::span<const tensor> tangents, const tensor& out,
                    const void* a) {
    return Op::jvp(primals, tangents, out, attrs_of<Op>(a));
  }
  static batched batch(std::span<const tensor> values, std::span<const std::int64_t> bdims, std::int64_t B,
                       const void* a) {
    if constexpr (batchable_op<Op>) return Op::batch(values, bdims, B, attrs_of<Op>(a));
    else return batch_fallback<Op>(values, bdims, B, attrs_of<Op>(a));
  }
  static std::function<tensor(const tensor&)> view_replay(std::function<tensor(const tensor&)> prev, const void* a) {
    return [prev = std::move(prev), a = attrs_of<Op>(a)](const tensor& base) {
      tensor t = prev ? prev(base) : base;
      return detail::dispatch<Op>(std::span<const tensor>(&t, 1), a);
    };
  }
};

/// Op's table (NOTE: [Op tables]); the rules an op lacks are null and never instantiated.
template <class Op>
constexpr op_table make_op_table() {
  op_table t{Op::name, differentiable_op<Op>, is_view_op<Op>(), is_writable_view_op<Op>(), op_reads_output<Op>(),
             &op_thunks<Op>::dispatch, &op_thunks<Op>::device_kernel, &op_thunks<Op>::record, nullptr,
             nullptr, nullptr, &op_thunks<Op>::batch, nullptr};
  if constexpr (differentiable_op<Op>) {
    t.new_node = &op_thunks<Op>::new_node;
    t.jvp = &op_thunks<Op>::jvp;
  }
  if constexpr (is_view_op<Op>()) {
    t.view_as_copy = &op_thunks<Op>::view_as_copy;
    t.view_replay = &op_thunks<Op>::view_replay;
  }
  return t;
}
template <class Op>
inline constexpr op_table op_table_of = make_op_table<Op>();

/// Records on `out` (a wrapper of the same layer as `self`) that it is a view of self's base.
XFUNC_RUNTIME void track_view(const op_table& op, const tensor& out, const tensor& self, const void* a);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME void track_view(const op_table& op, const tensor& out, const tensor& self, const void* a) {
  const tensor_impl* s = self.impl();
  auto v = std::make_shared<view_info>();
  v->base = s->view ? s->view->base : self.impl_ptr();
  v->replay = op.view_replay(s->view ? s->view->replay : std::function<tensor(const tensor&)>{}, a);
  v->writable = (!s->view || s->view->writable) && op.writable_view;
  v->base_version = v->base->version;
  out.impl()->view = std::move(v);
}
#endif

/// grad: the op on the unwrapped arguments, its result wrapped with a node that holds its vjp.
XFUNC_RUNTIME tensor grad_rule(const op_table& op, const layer_ptr& L, std::span<const tensor> in, const void* a);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME tensor grad_rule(const op_table& op, const layer_ptr& L, std::span<const tensor> in, const void* a) {
  if (!op.differentiable) {
    small_list<tensor, 4> primals(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) primals[i] = unwrap_at(in[i], L.get());
    return op.dispatch(primals.span(), a);
  }
  // The node is made first and the unwrapped arguments go straight into it (one allocation
  // for the list); it is dropped again when the output is not differentiable.
  std::shared_ptr<op_node_base> node = op.new_node(a);
  for (const tensor& t : in) {
    if (belongs_to(t, L.get())) {
      refresh_view(t);
      node->in.push_back(t.impl()->inner);
      node->next.push_back(t.impl()->node);
    } else {
      node->in.push_back(t);
      node->next.push_back(nullptr);
    }
  }
  tensor out = op.dispatch(node->in.span(), a);
  if (!is_floating(out.dtype())) return out;
  if (op.reads_output) node->out = out;
  tensor w = wrap_grad(std::move(out), L, std::move(node));
  if (op.is_view && belongs_to(in[0], L.get())) track_view(op, w, in[0], a);
  return w;
}
#endif

/// jvp: the op on the primals, and its jvp on the tangents when any is defined.
XFUNC_RUNTIME tensor jvp_rule(const op_table& op, const layer_ptr& L, std::span<const tensor> in, const void* a);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME tensor jvp_rule(const op_table& op, const layer_ptr& L, std::span<const tensor> in, const void* a) {
  small_list<tensor, 4> primals(in.size()), tangents(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (belongs_to(in[i], L.get())) {
      refresh_view(in[i]);
      primals[i] = in[i].impl()->inner;
      tangents[i] = in[i].impl()->tangent;
    } else {
      primals[i] = in[i];
    }
  }
  tensor out = op.dispatch(primals.span(), a);
  if (!op.differentiable || !is_floating(out.dtype())) return out;
  bool any = false;
  for (const auto& t : tangents.span()) any = any || t.defined();
  if (!any) {
    // a view of a value of this layer stays one, so that writes through it reach its base
    // (e.g. a factory's result: NOTE: [Tensors created inside transforms])
    if (op.is_view && belongs_to(in[0], L.get())) {
      tensor w = wrap_dual(std::move(out), tensor(), L);
      track_view(op, w, in[0], a);
      return w;
    }
    return out;
  }
  tensor tan = op.jvp(primals.span(), tangents.span(), out, a);
  if (tan.defined() && !(tan.shape() == out.shape())) [[unlikely]]  // NOTE: [Rule shapes]
    fail_rule_shape(op.name, "jvp", tan.shape(), out.shape());
  if (!tan.defined() && !op.is_view) return out;
  tensor w = wrap_dual(std::move(out), std::move(tan), L);
  if (op.is_view && belongs_to(in[0], L.get())) track_view(op, w, in[0], a);
  return w;
}
#endif

/// vmap: the op's batch rule on the physical values and their batch dims.
XFUNC_RUNTIME tensor vmap_rule(const op_table& op, const layer_ptr& L, std::span<const tensor> in, const void* a);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME tensor vmap_rule(const op_table& op, const layer_ptr& L, std::span<const tensor> in, const void* a) {
  small_list<tensor, 4> values(in.size());
  small_list<std::int64_t, 4> bdims(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (belongs_to(in[i], L.get())) {
      values[i] = in[i].impl()->inner;
      bdims[i] = in[i].impl()->bdim;
    } else {
      values[i] = in[i];
      bdims[i] = no_bdim;
    }
  }
  batched r = op.batch(values.span(), bdims.span(), L->batch_size, a);
  if (r.bdim == no_bdim) return r.value;
  return wrap_batched(std::move(r.value), r.bdim, L);
}
#endif

/// functionalize: ops run on the unwrapped values and their results are wrapped again, so
/// that in-place ops on them can be turned into rebinding (NOTE: [Mutation under transforms]).
XFUNC_RUNTIME tensor functional_rule(const op_table& op, const layer_ptr& L, std::span<const tensor> in,
                                     const void* a);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME tensor functional_rule(const op_table& op, const layer_ptr& L, std::span<const tensor> in,
                                     const void* a) {
  small_list<tensor, 4> values(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) values[i] = unwrap_at(in[i], L.get());
  tensor w = wrap_functional(op.dispatch(values.span(), a), L);
  // (under remove::mutations_and_views a view's result is a copy: NOTE: [Views as copies])
  if (op.is_view && belongs_to(in[0], L.get())) track_view(op, w, in[0], a);
  return w;
}
#endif

/// The highest layer among the arguments' wrappers (null if all are plain), found in one pass
/// that also says whether any wrapper is dead (an escaped tensor, to be stripped first) and
/// whether a plain argument lives on a device (the zero-layer path then runs its kernel).
struct top_layer_t {
  const layer_ptr* layer = nullptr;
  bool any_dead = false;
  bool any_undefined = false;  // an argument is a default-constructed tensor (an error)
  bool any_on_device = false;  // NOTE: [Device dispatch]
};
inline top_layer_t find_top_layer(std::span<const tensor> in) {
  top_layer_t top;
  std::uint64_t top_level = 0;
  for (const auto& t : in) {
    const tensor_impl* p = t.impl();
    if (!p) [[unlikely]] {
      top.any_undefined = true;
      continue;
    }
    if (p->is_dense()) {
      top.any_on_device |= p->dev.kind == device_kind::cuda;
      continue;
    }
    if (!p->is_live_wrapper()) [[unlikely]] {
      top.any_dead = true;
      continue;
    }
    if (!top.layer || p->owner_level > top_level) {
      top.layer = &p->owner;
      top_level = p->owner_level;
    }
  }
  return top;
}
/// The highest live layer among arguments already stripped of dead wrappers.
inline const layer_ptr* top_layer_of(std::span<const tensor> in) { return find_top_layer(in).layer; }

// NOTE: [Dispatch]
// With no wrapper among the arguments (always so outside transforms) the kernel runs directly:
// the zero-layer fast path, the only part compiled per op. Everything else goes through the op's
// table (NOTE: [Op tables]) to dispatch_slow, compiled once: arguments that are undefined (an
// error) or escaped wrappers (stripped first); views while views are copies (NOTE: [Views as
// copies]); a make_fx trace; tensors on a device (NOTE: [Device dispatch]); and wrappers, where
// the op goes to the layer of the highest live level among its arguments (layers that none of
// the arguments belong to are skipped without being looked at, in O(1)). The interpreter unwraps
// its level and calls the op again on the unwrapped values, which lands on the layers below.
XFUNC_RUNTIME tensor dispatch_slow(const op_table& op, const top_layer_t& top, std::span<const tensor> in,
                                   const void* a);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME tensor dispatch_slow(const op_table& op, const top_layer_t& top, std::span<const tensor> in,
                                   const void* a) {
  if (top.any_undefined) fail_undefined(op.name);
  if (top.any_dead) {
    tensor_list stripped(in.begin(), in.end());
    for (auto& t : stripped) t = strip_dead(t);
    return op.dispatch(stripped, a);
  }
  if (!top.layer) {
    if (op.is_view && tls_views_as_copies) return op.view_as_copy(in, a);
    if (tls_trace) return op.record(in, a);
    return op.device_kernel(in, a);  // (what is left: an argument on a device)
  }
  const layer_ptr& L = *top.layer;  // a live layer: its transform call is running
  switch (L->kind) {
    case transform_kind::grad: return grad_rule(op, L, in, a);
    case transform_kind::jvp: return jvp_rule(op, L, in, a);
    case transform_kind::vmap: return vmap_rule(op, L, in, a);
    case transform_kind::functionalize: return functional_rule(op, L, in, a);
  }
  fail("xf: ", op.name, ": unknown layer kind");
}
#endif

template <class Op>
tensor dispatch(std::span<const tensor> in, const typename Op::attrs& a) {
  const top_layer_t top = find_top_layer(in);
  const bool views_as_copies = is_view_op<Op>() && tls_views_as_copies;
  if (!top.layer && !top.any_dead && !top.any_undefined && !top.any_on_device && !views_as_copies && !tls_trace)
    [[likely]] return Op::kernel(in, a);
  return dispatch_slow(op_table_of<Op>, top, in, &a);
}

/// Convenience: dispatch with tensors given inline. A lone tensor is passed in place; several are
/// gathered into an array, temporaries moved rather than copied (a copy of a handle is an atomic
/// reference count in a multithreaded process, a measurable share of a small op).
template <class Op, class... T>
tensor call(const typename Op::attrs& a, T&&... ts) {
  if constexpr (sizeof...(T) == 1 && (std::is_same_v<std::remove_cvref_t<T>, tensor> && ...)) {
    return dispatch<Op>(std::span<const tensor>(&ts..., 1), a);
  } else {
    const tensor arr[] = {tensor(std::forward<T>(ts))...};
    return dispatch<Op>(std::span<const tensor>(arr, sizeof...(T)), a);
  }
}

}  // namespace xfunc::detail
