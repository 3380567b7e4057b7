#pragma once
// Making and taking apart transform wrappers: grad-tracking (value + node), dual (primal +
// tangent) and batched (value + batch dim).
#include <functional>
#include <span>
#include <vector>

#include <xfunc/core/linkage.hpp>
#include <xfunc/core/tensor.hpp>

namespace xfunc::detail {

using tensor_list = std::vector<tensor>;

/// Marker for "this argument has no batch dim" in batch rules.
inline constexpr std::int64_t no_bdim = -1;

/// What a batch rule returns: the physical value and where its batch dim is (or no_bdim).
struct batched {
  tensor value;
  std::int64_t bdim;
};

inline tensor make_wrapper(impl_kind k, tensor inner, const layer_ptr& owner) {
  auto impl = make_pooled<tensor_impl>();
  const tensor_impl* v = inner.impl();
  if (!v) fail("xf: an operation returned an undefined tensor");
  impl->kind = k;
  impl->dt = v->dt;
  impl->dev = v->dev;
  impl->shape = v->shape;
  impl->owner = owner;
  impl->owner_level = owner->level.load(std::memory_order_relaxed);
  impl->inner = std::move(inner);  // callers that are done with the value move it in
  return tensor(std::move(impl));
}

inline tensor wrap_grad(tensor value, const layer_ptr& owner, std::shared_ptr<grad_node> node) {
  tensor w = make_wrapper(impl_kind::grad, std::move(value), owner);
  w.impl()->node = std::move(node);
  return w;
}

inline tensor wrap_dual(tensor primal, tensor tangent, const layer_ptr& owner) {
  tensor w = make_wrapper(impl_kind::dual, std::move(primal), owner);
  w.impl()->tangent = std::move(tangent);
  return w;
}

inline tensor wrap_batched(tensor value, std::int64_t bdim, const layer_ptr& owner) {
  tensor w = make_wrapper(impl_kind::batched, std::move(value), owner);
  w.impl()->shape.erase(static_cast<std::size_t>(bdim));
  w.impl()->bdim = bdim;
  return w;
}

inline tensor wrap_functional(tensor value, const layer_ptr& owner) {
  return make_wrapper(impl_kind::functional, std::move(value), owner);
}

// NOTE: [Mutation under transforms]
// grad, jvp and functionalize wrappers are mutated by rebinding: an in-place op computes its
// out-of-place result at the wrapper's layer and the wrapper takes that result's parts (value,
// node or tangent), so every handle to it sees the new value while the tensors saved by earlier
// nodes stay intact. A view made at such a layer remembers its base wrapper and how to
// regenerate itself from it; writing into the view writes the base (its new value is the old
// one with the view's region replaced, computed with the view's own vjp, which embeds a view
// back into its base), and every view of that base regenerates itself lazily when its recorded
// base version is out of date. vmap wrappers are mutated physically instead: the op is applied
// in place to the batched value (a view with the batch dim in front), so the write reaches the
// caller's tensors and the views that share its storage, one layer down.
struct view_info {
  std::shared_ptr<tensor_impl> base;             // the root wrapper this view reads from
  std::function<tensor(const tensor&)> replay;   // regenerates the view from the base
  std::uint64_t base_version = 0;                // base->version when last regenerated
  bool writable = true;                          // false below an expand (shared elements)
};

/// Gives wrapper p (of layer `owner`) the value r: r's parts when r belongs to the same layer,
/// else r itself as a value with no derivative at this layer.
inline void assign_wrapper_value(tensor_impl* p, const tensor& r) {
  if (r.impl() == p) return;
  const tensor_impl* q = r.impl();
  if (q && !q->is_dense() && q->owner == p->owner && q->owner_level == p->owner_level) {
    p->inner = q->inner;
    p->node = q->node;
    p->tangent = q->tangent;
  } else {
    p->inner = r;
    p->node = nullptr;
    p->tangent = tensor();
  }
}

XFUNC_RUNTIME void refresh_stale_view(tensor_impl* p);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME void refresh_stale_view(tensor_impl* p) {
  if (!p->is_live_wrapper()) return;
  view_info& v = *p->view;
  if (v.base_version == v.base->version) return;
  tensor fresh = v.replay(tensor(v.base));
  assign_wrapper_value(p, fresh);
  v.base_version = v.base->version;
}
#endif
/// Regenerates a view wrapper whose base was written since (see NOTE: [Mutation under transforms]).
/// The test for "is a view" is inline: it runs for every argument of every op under grad.
inline void refresh_view(const tensor& t) {
  tensor_impl* p = t.impl();
  if (p && p->view) [[unlikely]] refresh_stale_view(p);
}

inline bool is_dead_wrapper(const tensor_impl* p) { return p && !p->is_dense() && !p->is_live_wrapper(); }

/// A tensor that escaped a vmap call has no value of its own afterwards: its wrapper's shape is
/// one example's, its data the whole batch's. Using it is an error rather than a guess.
[[noreturn]] inline void fail_escaped_vmap(const char* what) {
  fail("xf: ", what, " of a tensor that escaped a vmap call (stored in a captured variable while xf::vmap ran): "
       "outside vmap it has no value, each example had its own; return it from the vmapped function instead, "
       "so that vmap stacks it");
}

/// Drops the wrappers of transforms that have returned: a tensor that escaped a grad or jvp
/// transform is its value. One that escaped a vmap is an error (fail_escaped_vmap, naming `use`).
inline tensor strip_dead(tensor t, const char* use = "use") {
  while (is_dead_wrapper(t.impl())) {
    if (t.impl()->kind == impl_kind::batched) fail_escaped_vmap(use);
    t = tensor(t.impl()->inner);
  }
  return t;
}

/// Whether t is a live wrapper made by layer `l`.
inline bool belongs_to(const tensor& t, const layer* l) {
  const tensor_impl* p = t.impl();
  return p && !p->is_dense() && p->owner.get() == l && p->owner_level == l->level.load(std::memory_order_relaxed);
}

/// t's value one layer below L (t itself when it is not L's), its view regenerated if stale.
inline tensor unwrap_at(const tensor& t, const layer* L) {
  if (!belongs_to(t, L)) return t;
  refresh_view(t);
  return t.impl()->inner;
}

/// The dense tensor at the bottom of any stack of wrappers.
inline const tensor_impl* dense_of(const tensor& t) {
  const tensor_impl* p = t.impl();
  while (p && !p->is_dense()) p = p->inner.impl();
  return p;
}

}  // namespace xfunc::detail
