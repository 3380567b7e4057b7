#pragma once
// Dispatch for calls whose rules are given at run time: custom ops (xf::custom_op) and custom
// autograd functions (xf::autograd::function). Built-in ops have their rules in their type
// (dispatch/dispatcher.hpp); these carry them in a dyn_call object, and may have several outputs.
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <utility>

#include <xfunc/dispatch/created.hpp>
#include <xfunc/dispatch/dispatcher.hpp>
#include <xfunc/extend/context.hpp>

namespace xfunc::detail {

// NOTE: [Runtime-rule calls]
// One dyn_call object describes one call: it holds the call's non-tensor arguments and knows
// how to run the forward computation and the registered rules on a flat list of tensor
// arguments. dispatch_dyn hands it to the layer its arguments belong to, exactly as dispatch<Op>
// does for built-in ops:
//   grad   unwraps, calls it one layer down, runs setup_context on the unwrapped inputs and
//          outputs, and records a node whose backward is the registered formula;
//   jvp    unwraps, calls it one layer down and pushes the tangents with the registered jvp or,
//          without one, by transposing the backward formula (it is linear in the cotangents, so
//          the vjp of u -> backward(u) at any u, applied to the input tangents, is J t);
//   vmap   a registered rule on the physical values; or the generated rule (the call made again
//          one layer down as a batched call whose forward, backward and jvp run under a private
//          vmap layer); or a loop over the batch;
//   functionalize  unwraps, calls it one layer down, wraps.
// At the bottom the forward runs with every layer hidden. Because the rules run on values one
// layer down with xfunc ops, they are differentiated and batched again by the layers below.
struct dyn_call : std::enable_shared_from_this<dyn_call> {
  enum class batching { rule, generated, loop, none };
  virtual ~dyn_call() = default;
  virtual const std::string& name() const = 0;
  /// Opaque calls (custom ops) are one node in make_fx traces and run a fake kernel on meta
  /// tensors; transparent ones (custom functions) run their forward, whose ops are traced.
  virtual bool opaque() const = 0;
  virtual tensor_list forward(std::span<const tensor> in) const = 0;
  virtual tensor_list fake(std::span<const tensor> in) const { return forward(in); }
  /// Opaque calls with exactly one output: that output computed without a list (the loop
  /// fallback's per-example fast path); undefined when the call does not offer it.
  virtual tensor forward_single(std::span<const tensor>) const { return {}; }
  /// Whether flat tensor argument i is written in place (Tensor(a!)).
  virtual bool mutates(std::size_t) const { return false; }
  /// The position among all parameters of flat tensor argument i (for needs_input_grad).
  virtual std::size_t position(std::size_t i) const { return i; }

  virtual bool has_backward() const = 0;
  virtual bool has_jvp() const = 0;
  virtual void setup(autograd::context&, std::span<const tensor> in, const tensor_list& out) const = 0;
  /// One gradient per flat tensor argument (undefined = zero) from one cotangent per output.
  virtual tensor_list backward(autograd::context&, const tensor_list& grads) const = 0;
  /// One tangent per output from one tangent per flat tensor argument (zeros materialised).
  virtual tensor_list jvp(autograd::context&, const tensor_list& tangents) const = 0;

  virtual batching batch_kind() const = 0;
  /// The registered vmap rule: outputs and their batch dims (no_bdim: unbatched).
  virtual std::pair<tensor_list, std::vector<std::int64_t>> batch(std::span<const tensor>, std::span<const std::int64_t>,
                                                                  const vmap_info&) const {
    fail("xf::vmap: ", name(), " has no vmap rule");
  }
};
using dyn_call_ptr = std::shared_ptr<const dyn_call>;

// (templates only to be instantiated lazily: NOTE: [Lazy instantiation] in fwd.hpp)
template <int D = 0>
tensor_list dispatch_dyn(const dyn_call_ptr& c, std::span<const tensor> in);
template <int D = 0>
tensor_list dyn_bottom(const dyn_call_ptr& c, std::span<const tensor> in);

/// While alive, no layer is active: the calls below every transform run here. Swapping the
/// stack out costs no allocation (lower_guard copies the hidden layers).
struct hide_all_layers {
  std::vector<layer_ptr> saved;
  hide_all_layers() { saved.swap(current_stack().layers); }
  ~hide_all_layers() { current_stack().layers.swap(saved); }
  hide_all_layers(const hide_all_layers&) = delete;
  hide_all_layers& operator=(const hide_all_layers&) = delete;
};

/// Whether a and b are the same tensor or share memory.
inline bool aliases(const tensor& a, const tensor& b) {
  return a.defined() && b.defined() && (a.impl() == b.impl() || same_storage(a, b));
}
/// A kernel that returned a default-constructed tensor as its output k.
[[noreturn]] inline void fail_undefined_output(const std::string& name, std::size_t k) {
  fail(name, ": the kernel returned an undefined tensor as output ", k,
       " (a default-constructed xf::tensor); every output must be a new tensor");
}
/// Output k of a custom op may not be, or share memory with, its input i.
inline void check_output_not_input(const std::string& name, const tensor& input, std::size_t i, const tensor& out,
                                   std::size_t k) {
  if (aliases(out, input))
    fail(name, ": output ", k, " is or aliases input ", i,
         " (alias); a custom op must return new tensors: return a copy (e.g. x.clone())");
}
/// Output k of a custom op may not be, or share memory with, one of its inputs.
inline void check_output_not_input(const std::string& name, std::span<const tensor> in, const tensor& out,
                                   std::size_t k) {
  for (std::size_t i = 0; i < in.size(); ++i) check_output_not_input(name, in[i], i, out, k);
}
/// A custom op's outputs may not be, or share memory with, an input or another output.
inline void check_no_alias(const std::string& name, std::span<const tensor> in, const tensor_list& outs) {
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (!outs[k].defined()) fail_undefined_output(name, k);
    check_output_not_input(name, in, outs[k], k);
    for (std::size_t j = 0; j < k; ++j)
      if (aliases(outs[k], outs[j]))
        fail(name, ": outputs ", j, " and ", k,
             " share memory (alias); a custom op must return distinct new tensors: return copies");
  }
}

inline bool differentiable_output(const autograd::context* ctx, const tensor& t) {
  return t.defined() && is_floating(t.dtype()) && !(ctx && context_access::is_non_differentiable(*ctx, t.impl()));
}

[[noreturn]] inline void fail_no_formula(const dyn_call& c, const char* transform) {
  fail(transform, ": cannot differentiate ", c.name(), ": it has no derivative formula (custom op: register one with ",
       "op.register_autograd(backward, setup_context); custom function: define backward or jvp)");
}

/// The output tangents of call c from its argument tangents: the registered jvp or the
/// transposed backward (NOTE: [Runtime-rule calls]).
template <int D = 0>
tensor_list dyn_forward_tangents(const dyn_call& c, autograd::context& ctx, std::span<const tensor> primals,
                                        const tensor_list& outs, const tensor_list& tangents) {
  if (c.has_jvp()) {
    tensor_list t(tangents.size());
    for (std::size_t i = 0; i < t.size(); ++i)
      t[i] = tangents[i].defined() || !primals[i].defined() ? tangents[i] : plain_zeros_like(primals[i]);
    bool& in_jvp = context_access::in_jvp(ctx);
    in_jvp = true;
    struct reset {
      bool& f;
      ~reset() { f = false; }
    } r{in_jvp};
    return c.jvp(ctx, t);
  }
  if (!c.has_backward()) fail_no_formula(c, "xf::jvp");
  layer_guard guard(transform_kind::grad);
  const layer_ptr& G = guard.get();
  std::vector<std::shared_ptr<grad_node>> leaves(outs.size());
  tensor_list u(outs.size());
  const bool materialize = context_access::materialize(ctx);
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (!differentiable_output(&ctx, outs[k])) {
      // (as torch, backward gets zeros for the outputs with no derivative while grads materialize)
      if (materialize && outs[k].defined()) u[k] = plain_zeros_like(outs[k]);
      continue;
    }
    leaves[k] = make_pooled<leaf_node>();
    u[k] = wrap_grad(plain_full(outs[k].shape(), 0.0, outs[k].dtype(), outs[k].device()), G, leaves[k]);
  }
  tensor_list gin = c.backward(ctx, u);
  std::vector<std::shared_ptr<grad_node>> roots;
  tensor_list cots;
  for (std::size_t i = 0; i < gin.size() && i < tangents.size(); ++i) {
    if (!tangents[i].defined() || !belongs_to(gin[i], G.get())) continue;
    roots.push_back(gin[i].impl()->node);
    cots.push_back(tangents[i]);
  }
  if (roots.empty()) return tensor_list(outs.size());
  return run_backward(roots, cots, leaves);
}

/// The grad-layer node of one runtime-rule call. With several differentiable outputs, each
/// output's wrapper holds an output_node that deposits its cotangent in `pending`; the backward
/// pass then runs this node once with all of them.
template <int D = 0>
struct dyn_node final : grad_node {
  dyn_call_ptr call;
  std::shared_ptr<autograd::context> ctx;
  tensor_list primals, outs;       // one layer down
  tensor_list pending;             // per output
  tensor_list tangents;            // per output, computed by forward_tangent (linearize)
  std::size_t only = 0;            // the differentiable output when there is just one
  bool single = true;

  tensor_list apply(const tensor& g) override {
    tensor_list gs(outs.size());
    if (single) gs[only] = g;
    else std::swap(gs, pending);
    if (!call->has_backward()) fail_no_formula(*call, "xf::grad");
    // every output gets zeros while grads materialize, those with no derivative (marked
    // non-differentiable, integer) too, as torch's autograd.Function does
    if (context_access::materialize(*ctx))
      for (std::size_t k = 0; k < gs.size(); ++k)
        if (!gs[k].defined() && outs[k].defined()) gs[k] = plain_zeros_like(outs[k]);
    return call->backward(*ctx, gs);
  }
  bool has_pending() const override {
    for (const auto& p : pending)
      if (p.defined()) return true;
    return false;
  }
  tensor forward_tangent(const tensor_list& tin) override {
    tangents = dyn_forward_tangents(*call, *ctx, primals, outs, tin);
    if (single) return tangents[only];
    for (const auto& t : tangents)
      if (t.defined()) return t;  // a marker: the output nodes read their own entry
    return {};
  }
};

template <int D = 0>
struct dyn_output_node final : grad_node {
  dyn_node<D>* owner;  // kept alive by next[0]
  std::size_t index;
  tensor_list apply(const tensor& g) override {
    tensor& p = owner->pending[index];
    p = p.defined() ? xfunc::add(p, g) : g;
    return {};
  }
  tensor forward_tangent(const tensor_list&) override { return owner->tangents[index]; }
};

/// ctx.needs_input_grad(p) for every parameter p: whether one of its flat tensors `needs(i)`.
template <class Needs>
void set_needs_input_grad(autograd::context& ctx, const dyn_call& c, std::size_t n, Needs&& needs) {
  auto& flags = context_access::needs_input_grad(ctx);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t p = c.position(i);
    if (flags.size() <= p) flags.resize(p + 1);
    flags[p] = flags[p] || needs(i);
  }
}

/// Arguments written in place are computed on a copy one layer down and the wrapper is rebound
/// to it afterwards (NOTE: [Mutation under transforms]).
template <int D = 0>
void copy_mutated(const dyn_call& c, std::span<const tensor> in, tensor_list& values, const layer* L) {
  for (std::size_t i = 0; i < in.size(); ++i)
    if (c.mutates(i) && belongs_to(in[i], L)) values[i] = values[i].clone();
}
inline void rebind_mutated(const dyn_call& c, std::span<const tensor> in, const tensor_list& values, const layer* L) {
  for (std::size_t i = 0; i < in.size(); ++i)
    if (c.mutates(i) && belongs_to(in[i], L)) {
      assign_wrapper_value(in[i].impl(), values[i]);
      ++in[i].impl()->version;
    }
}

/// The output that an input marked dirty became: the input's wrapper, rebound to it.
inline tensor rebind_dirty(const autograd::context& ctx, std::span<const tensor> in, const tensor_list& values,
                           const tensor& out_value, const tensor& wrapped_out, const layer* L) {
  if (!context_access::is_dirty(ctx, out_value.impl())) return wrapped_out;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (values[i].impl() == out_value.impl() && belongs_to(in[i], L)) {
      assign_wrapper_value(in[i].impl(), wrapped_out);
      ++in[i].impl()->version;
      return in[i];
    }
  return wrapped_out;
}

/// The call at grad layer L. `single_level`: the forward runs here with L hidden (for
/// xf::autograd::single_level_function) instead of being dispatched to the layers below.
template <int D = 0>
tensor_list dyn_grad_rule(const layer_ptr& L, const dyn_call_ptr& c, std::span<const tensor> in,
                                 bool single_level = false) {
  const std::size_t n = in.size();
  tensor_list values(n);
  small_list<std::shared_ptr<grad_node>, 3> next(n);  // no allocation for up to 3 arguments
  bool tracked = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (belongs_to(in[i], L.get())) {
      refresh_view(in[i]);
      values[i] = in[i].impl()->inner;
      next[i] = in[i].impl()->node;
      tracked = tracked || next[i] != nullptr;
    } else {
      values[i] = in[i];
    }
  }
  copy_mutated(*c, in, values, L.get());
  tensor_list outs;
  if (single_level) {
    lower_guard hide(L->level);
    outs = c->forward(values);
  } else {
    outs = dispatch_dyn(c, values);
  }
  rebind_mutated(*c, in, values, L.get());
  if (!tracked) return outs;
  auto ctx = make_pooled<autograd::context>();
  set_needs_input_grad(*ctx, *c, n,
                       [&](std::size_t i) { return next[i] && values[i].defined() && is_floating(values[i].dtype()); });
  if (c->has_backward() || c->has_jvp()) c->setup(*ctx, values, outs);
  auto node = make_pooled<dyn_node<D>>();
  std::size_t n_diff = 0;
  for (std::size_t k = 0; k < outs.size(); ++k)
    if (differentiable_output(ctx.get(), outs[k])) node->only = k, ++n_diff;
  if (n_diff == 0) return outs;
  node->call = c;
  node->ctx = ctx;
  node->next = std::move(next);
  node->single = n_diff == 1;
  if (!node->single) node->pending.resize(outs.size());
  tensor_list result(outs.size());
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (!differentiable_output(ctx.get(), outs[k])) {
      result[k] = outs[k];
      continue;
    }
    std::shared_ptr<grad_node> out_node = node;
    if (!node->single) {
      auto o = make_pooled<dyn_output_node<D>>();
      o->owner = node.get();
      o->index = k;
      o->next.resize(1);
      o->next[0] = node;
      out_node = std::move(o);
    }
    result[k] = rebind_dirty(*ctx, in, values, outs[k], wrap_grad(outs[k], L, std::move(out_node)), L.get());
  }
  node->primals = std::move(values);
  node->outs = std::move(outs);
  return result;
}

template <int D = 0>
tensor_list dyn_jvp_rule(const layer_ptr& L, const dyn_call_ptr& c, std::span<const tensor> in) {
  const std::size_t n = in.size();
  tensor_list primals(n), tangents(n);
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (belongs_to(in[i], L.get())) {
      refresh_view(in[i]);
      primals[i] = in[i].impl()->inner;
      tangents[i] = in[i].impl()->tangent;
      any = any || tangents[i].defined();
    } else {
      primals[i] = in[i];
    }
  }
  copy_mutated(*c, in, primals, L.get());
  tensor_list outs = dispatch_dyn(c, primals);
  rebind_mutated(*c, in, primals, L.get());
  if (!any) return outs;
  autograd::context ctx;
  set_needs_input_grad(ctx, *c, n, [&](std::size_t i) { return tangents[i].defined(); });
  if (!c->has_backward() && !c->has_jvp()) fail_no_formula(*c, "xf::jvp");
  c->setup(ctx, primals, outs);
  tensor_list touts = dyn_forward_tangents(*c, ctx, primals, outs, tangents);
  tensor_list result(outs.size());
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const bool diff = differentiable_output(&ctx, outs[k]) && k < touts.size() && touts[k].defined();
    result[k] = diff ? rebind_dirty(ctx, in, primals, outs[k], wrap_dual(outs[k], touts[k], L), L.get()) : outs[k];
  }
  return result;
}

/// Moves the batch dim of t (a value of vmap layer T, or unbatched) to the front.
template <int D = 0>
tensor batch_to_front(const tensor& t, const layer* T) {
  if (!t.defined()) return t;
  if (belongs_to(t, T)) return t.impl()->inner.movedim(t.impl()->bdim, 0);
  shape_t s = t.shape();
  s.insert(std::size_t{0}, T->batch_size);
  return t.unsqueeze(0).expand(s);
}

/// A call made batched by a generated vmap rule: its forward, backward and jvp are those of
/// `base` run under a private vmap layer on the batched values (NOTE: [Runtime-rule calls]).
/// Outputs have their batch dim in front, except an input that forward modified in place and
/// returned (mark_dirty): that output is the input's own value, with the input's batch dim, so
/// that the layers around it rebind the input as they do for in-place ops. The batch dims of the
/// tensors setup_context saved are kept in the context, one entry per such layer.
template <int D = 0>
struct generated_vmap_call final : dyn_call {
  dyn_call_ptr base;
  std::vector<std::int64_t> bdims;  // per flat argument
  std::int64_t batch_size;
  xfunc::randomness rand;
  mutable std::vector<std::int64_t> out_bdims;  // per output, set by forward (0, or an input's)

  generated_vmap_call(dyn_call_ptr b, std::span<const std::int64_t> d, std::int64_t B, xfunc::randomness r)
      : base(std::move(b)), bdims(d.begin(), d.end()), batch_size(B), rand(r) {}

  const std::string& name() const override { return base->name(); }
  bool opaque() const override { return false; }
  bool mutates(std::size_t i) const override { return base->mutates(i); }
  std::size_t position(std::size_t i) const override { return base->position(i); }
  bool has_backward() const override { return base->has_backward(); }
  bool has_jvp() const override { return base->has_jvp(); }
  batching batch_kind() const override { return batching::generated; }

  tensor_list wrap_args(std::span<const tensor> values, const layer_ptr& T) const {
    tensor_list w(values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
      w[i] = bdims[i] == no_bdim || !values[i].defined() ? values[i] : wrap_batched(values[i], bdims[i], T);
    return w;
  }
  /// Outputs (or tensors laid out as they are: gradients) as values of layer T.
  tensor_list wrap_outputs(const tensor_list& ts, const layer_ptr& T) const {
    tensor_list w(ts.size());
    for (std::size_t k = 0; k < ts.size(); ++k) {
      const std::int64_t d = k < out_bdims.size() ? out_bdims[k] : 0;
      w[k] = ts[k].defined() && d != no_bdim ? wrap_batched(ts[k], d, T) : ts[k];
    }
    return w;
  }
  /// Values of layer T (or unbatched) laid out as the outputs.
  tensor_list to_outputs(const tensor_list& ts, const layer* T) const {
    tensor_list r(ts.size());
    for (std::size_t k = 0; k < ts.size(); ++k) {
      const std::int64_t d = k < out_bdims.size() ? out_bdims[k] : 0;
      r[k] = d == no_bdim ? ts[k] : d == 0 ? batch_to_front(ts[k], T) : batch_to_front(ts[k], T).movedim(0, d);
    }
    return r;
  }

  tensor_list forward(std::span<const tensor> values) const override {
    layer_guard guard(transform_kind::vmap, batch_size, rand);
    const tensor_list args = wrap_args(values, guard.get());
    tensor_list outs = base->forward(args);
    out_bdims.assign(outs.size(), 0);
    for (std::size_t k = 0; k < outs.size(); ++k) {
      std::size_t i = 0;
      while (i < args.size() && !(outs[k].defined() && args[i].defined() && outs[k].impl() == args[i].impl())) ++i;
      if (i < args.size()) {  // an input modified in place: its own value
        out_bdims[k] = bdims[i];
        outs[k] = values[i];
      } else {
        outs[k] = batch_to_front(outs[k], guard.get().get());
      }
    }
    return outs;
  }

  /// Replaces saved tensors (values of layer T) by their physical values, recording batch dims.
  static void unwrap_saved(std::vector<tensor>& saved, std::vector<std::vector<std::int64_t>>& bdim_stack,
                           const layer* T) {
    std::vector<std::int64_t> d(saved.size(), no_bdim);
    for (std::size_t i = 0; i < saved.size(); ++i)
      if (belongs_to(saved[i], T)) {
        d[i] = saved[i].impl()->bdim;
        saved[i] = saved[i].impl()->inner;
      }
    bdim_stack.push_back(std::move(d));
  }
  /// While alive, the saved tensors are wrapped again at layer T with the dims unwrap_saved kept.
  struct rewrapped_saved {
    std::vector<tensor>& saved;
    std::vector<std::vector<std::int64_t>>& bdim_stack;
    std::vector<tensor> physical;
    std::vector<std::int64_t> dims;
    rewrapped_saved(std::vector<tensor>& s, std::vector<std::vector<std::int64_t>>& st, const layer_ptr& T)
        : saved(s), bdim_stack(st), physical(s), dims(st.back()) {
      bdim_stack.pop_back();
      for (std::size_t i = 0; i < saved.size(); ++i)
        if (dims[i] != no_bdim) saved[i] = wrap_batched(saved[i], dims[i], T);
    }
    ~rewrapped_saved() {
      saved = std::move(physical);
      bdim_stack.push_back(std::move(dims));
    }
  };

  void setup(autograd::context& ctx, std::span<const tensor> values, const tensor_list& outs) const override {
    layer_guard guard(transform_kind::vmap, batch_size, rand);
    const layer_ptr& T = guard.get();
    const tensor_list wouts = wrap_outputs(outs, T);
    const tensor_list args = wrap_args(values, T);
    base->setup(ctx, args, wouts);
    // marks on the wrappers of this private layer go to the values the layers below know
    for (std::size_t k = 0; k < outs.size(); ++k)
      if (wouts[k].defined() && context_access::is_non_differentiable(ctx, wouts[k].impl()))
        context_access::mark_non_differentiable(ctx, outs[k].impl());
    for (std::size_t i = 0; i < args.size(); ++i)
      if (args[i].defined() && args[i].impl() != values[i].impl() && context_access::is_dirty(ctx, args[i].impl()))
        context_access::mark_dirty(ctx, values[i].impl());
    unwrap_saved(context_access::saved(ctx), context_access::saved_bdims(ctx), T.get());
    unwrap_saved(context_access::saved_forward(ctx), context_access::saved_forward_bdims(ctx), T.get());
  }

  tensor_list backward(autograd::context& ctx, const tensor_list& grads) const override {
    layer_guard guard(transform_kind::vmap, batch_size, rand);
    const layer_ptr& T = guard.get();
    rewrapped_saved s(context_access::saved(ctx), context_access::saved_bdims(ctx), T);
    tensor_list gin = base->backward(ctx, wrap_outputs(grads, T));
    for (std::size_t i = 0; i < gin.size() && i < bdims.size(); ++i) {
      const tensor& g = gin[i];
      if (!g.defined()) continue;
      if (bdims[i] == no_bdim)  // an unbatched argument is used by every example: sum their gradients
        gin[i] = belongs_to(g, T.get()) ? xfunc::sum(g.impl()->inner, dims_t{g.impl()->bdim}) : g;
      else
        gin[i] = batch_to_front(g, T.get()).movedim(0, bdims[i]);
    }
    return gin;
  }

  tensor_list jvp(autograd::context& ctx, const tensor_list& tangents) const override {
    layer_guard guard(transform_kind::vmap, batch_size, rand);
    const layer_ptr& T = guard.get();
    rewrapped_saved s(context_access::saved_forward(ctx), context_access::saved_forward_bdims(ctx), T);
    // a tangent has its argument's physical layout; an unbatched argument's may still vary
    // per example (it comes from the layers below), so it is wrapped only where the value is
    tensor_list t = wrap_args(tangents, T);
    return to_outputs(base->jvp(ctx, t), T.get());
  }
};

/// vmap fallback for runtime-rule calls without a batching rule: one call per example.
template <int D = 0>
tensor_list dyn_batch_loop(const dyn_call_ptr& c, std::span<const tensor> values,
                                  std::span<const std::int64_t> bdims, std::int64_t B) {
  {
    // warn once per op; each thread remembers what it has seen, so only first calls lock
    thread_local std::set<const std::string*> seen;  // names live as long as their op
    if (seen.insert(&c->name()).second) {
      static std::mutex m;
      static std::set<std::string> warned;
      std::lock_guard<std::mutex> lock(m);
      if (warned.insert(c->name()).second)
        std::fprintf(stderr, "xf::vmap: %s has no vmap rule; falling back to a loop over the batch (slow)\n",
                     c->name().c_str());
    }
  }
  if (B == 0)
    fail("xf::vmap: ", c->name(), " has no vmap rule and the batch is empty; the loop fallback needs at least one ",
         "example to know the outputs (register a vmap rule)");
  std::vector<std::vector<tensor>> parts;  // per output: its per-example values, stacked at the end
  small_list<tensor, 4> slice(values.size());
  bool plain = !tls_trace;  // then every example goes straight to the kernel
  for (const auto& v : values) plain = plain && (!v.impl() || v.impl()->is_dense());
  if (plain && c->opaque()) {  // one output without a list per example, when the call offers it
    hide_all_layers hide;
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::size_t i = 0; i < values.size(); ++i)
        slice[i] = bdims[i] == no_bdim ? values[i] : values[i].select(bdims[i], b);
      tensor o = c->forward_single(slice);
      if (!o.defined()) {
        if (b == 0) break;  // not offered: the general path below
        fail(c->name(), ": the kernel returned an undefined tensor");
      }
      check_output_not_input(c->name(), slice, o, 0);
      if (b == 0) {
        parts.resize(1);
        parts[0].reserve(static_cast<std::size_t>(B));
      }
      parts[0].push_back(std::move(o));
    }
  }
  for (std::int64_t b = parts.empty() ? 0 : B; b < B; ++b) {
    for (std::size_t i = 0; i < values.size(); ++i)
      slice[i] = bdims[i] == no_bdim ? values[i] : values[i].select(bdims[i], b);
    tensor_list outs = plain ? dyn_bottom(c, slice) : dispatch_dyn(c, slice);
    if (b == 0) {
      parts.resize(outs.size());
      for (auto& p : parts) p.reserve(static_cast<std::size_t>(B));
    }
    for (std::size_t k = 0; k < outs.size(); ++k) parts[k].push_back(std::move(outs[k]));
  }
  tensor_list outs(parts.size());
  for (std::size_t k = 0; k < outs.size(); ++k) outs[k] = xfunc::stack(parts[k], 0);
  return outs;
}

template <int D = 0>
tensor_list dyn_vmap_rule(const layer_ptr& L, const dyn_call_ptr& c, std::span<const tensor> in) {
  const std::size_t n = in.size();
  small_list<tensor, 4> values(n);
  small_list<std::int64_t, 4> bdims(n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool mine = belongs_to(in[i], L.get());
    values[i] = mine ? in[i].impl()->inner : in[i];
    bdims[i] = mine ? in[i].impl()->bdim : no_bdim;
  }
  tensor_list outs;
  switch (c->batch_kind()) {
    case dyn_call::batching::rule: {
      std::vector<std::int64_t> out_bdims;
      std::tie(outs, out_bdims) = c->batch(values, bdims, vmap_info(L->batch_size, L->rand));
      if (out_bdims.size() != outs.size())
        fail("xf::vmap: the vmap rule of ", c->name(), " returned ", out_bdims.size(), " out dims for ", outs.size(),
             " outputs; give one per output tensor");
      for (std::size_t k = 0; k < outs.size(); ++k)
        if (out_bdims[k] != no_bdim && outs[k].defined()) outs[k] = wrap_batched(std::move(outs[k]), out_bdims[k], L);
      return outs;
    }
    case dyn_call::batching::generated:
      outs = dispatch_dyn(std::make_shared<generated_vmap_call<D>>(c, bdims, L->batch_size, L->rand), values);
      for (auto& o : outs) {
        if (!o.defined()) continue;
        std::size_t i = 0;
        while (i < n && !(values[i].defined() && o.impl() == values[i].impl())) ++i;
        // an input modified in place comes back as its own value (the layers below rebound it):
        // the result is the input itself, as for in-place ops; the others have the batch in front
        o = i < n ? in[i] : wrap_batched(std::move(o), 0, L);
      }
      return outs;
    case dyn_call::batching::loop:
      outs = dyn_batch_loop(c, values, bdims, L->batch_size);
      break;
    case dyn_call::batching::none:
      fail("xf::vmap: ", c->name(), " has no vmap rule; define a static vmap(...) rule or set ",
           "static constexpr bool generate_vmap_rule = true");
  }
  for (auto& o : outs)  // generated rules and the loop put the batch dim in front
    if (o.defined()) o = wrap_batched(std::move(o), 0, L);
  return outs;
}

template <int D = 0>
tensor_list dyn_functional_rule(const layer_ptr& L, const dyn_call_ptr& c, std::span<const tensor> in) {
  tensor_list values(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) values[i] = unwrap_at(in[i], L.get());
  copy_mutated(*c, in, values, L.get());
  tensor_list outs = dispatch_dyn(c, values);
  rebind_mutated(*c, in, values, L.get());
  for (auto& o : outs)
    if (o.defined()) o = wrap_functional(o, L);
  return outs;
}

/// The call below every layer: the kernel (the fake one on meta tensors) of an opaque call, or
/// the forward of a transparent one, with every layer hidden; recorded when make_fx traces.
template <int D>
tensor_list dyn_bottom(const dyn_call_ptr& c, std::span<const tensor> in) {
  hide_all_layers hide;
  if (!c->opaque()) return c->forward(in);
  bool on_meta = false;
  for (const auto& t : in) on_meta = on_meta || (t.defined() && t.device() == meta);
  if (tls_trace) {
    trace_state* trace = tls_trace;
    tensor_list outs;
    {
      trace_scope off(nullptr);  // what the kernel does inside is not part of the graph
      outs = on_meta ? c->fake(in) : c->forward(in);
    }
    std::ptrdiff_t mutated = -1;
    for (std::size_t i = in.size(); i-- > 0;)
      if (c->mutates(i)) mutated = static_cast<std::ptrdiff_t>(i);
    auto call = c;
    return trace->record_call(
        c->name(), in, std::move(outs), [call](std::span<const tensor> xs) { return call->forward(xs); }, mutated);
  }
  tensor_list outs = on_meta ? c->fake(in) : c->forward(in);
  check_no_alias(c->name(), in, outs);
  return outs;
}

template <int D>
tensor_list dispatch_dyn(const dyn_call_ptr& c, std::span<const tensor> in) {
  // (undefined tensors are the empty optionals of Tensor? parameters here; custom_op checks the rest)
  const auto [top, any_dead, any_undefined, on_device] = find_top_layer(in);
  (void)any_undefined;
  (void)on_device;  // custom ops run their own C++ on whatever device their arguments are
  if (any_dead) {
    tensor_list stripped(in.begin(), in.end());
    for (auto& t : stripped) t = strip_dead(t);
    return dispatch_dyn(c, stripped);
  }
  if (!top) return dyn_bottom(c, in);
  const layer_ptr& L = *top;
  // an argument written in place that is not a value of L is rebound to L's result as built-in
  // in-place ops are: made a value of L when made inside L's call, else an error ("in-place"
  // under vmap, "captured" under the others), never written with L's values stripped off
  for (std::size_t i = 0; i < in.size(); ++i)
    if (c->mutates(i) && in[i].defined() && !belongs_to(in[i], L.get())) make_writable_by(in[i], L, c->name().c_str());
  switch (L->kind) {
    case transform_kind::grad: return dyn_grad_rule(L, c, in);
    case transform_kind::jvp: return dyn_jvp_rule(L, c, in);
    case transform_kind::vmap: return dyn_vmap_rule(L, c, in);
    case transform_kind::functionalize: return dyn_functional_rule(L, c, in);
  }
  fail("xf: ", c->name(), ": unknown layer kind");
}

}  // namespace xfunc::detail
