#pragma once
// Tensors made inside a transform call: what factories return there, and how a plain tensor an
// op made there becomes writable with values of that transform.
#include <algorithm>
#include <optional>
#include <span>

#include <xfunc/core/linkage.hpp>
#include <xfunc/core/small_list.hpp>

#include <xfunc/dispatch/dispatcher.hpp>
#include <xfunc/dispatch/layer_stack.hpp>
#include <xfunc/dispatch/wrappers.hpp>

namespace xfunc::detail {

// NOTE: [Tensors created inside transforms]
// As in torch.func, a transform refuses in-place writes into tensors captured from outside its
// function ("captured") but allows them into tensors made inside it. Three rules make that so:
//  * Factories (zeros, ones, empty, full, eye, arange, linspace, rand, randn) called while
//    transforms are active return a value of every grad, jvp and functionalize layer on the
//    stack, with no derivative there (a grad wrapper without a node, a dual without a tangent,
//    a functional wrapper), as torch.func wraps every result at the current level. Writing into
//    them or into their views then rebinds them like any wrapper of that layer (NOTE: [Mutation
//    under transforms]). At vmap layers they stay unbatched, so writing a batched value into
//    them is the "in-place" error, as in torch.func.
//  * The *_like(t) factories follow t: batched wherever t is, with t's batch dims, and a value
//    of every grad, jvp and functionalize layer on the stack.
//  * The result of an op whose arguments all came from outside belongs to no layer: a plain
//    tensor. Every tensor is stamped when made with the level counter (creation_stamp), so one
//    made inside layer L's call has a stamp of at least L's level. Writing a value of L into
//    such a tensor first turns it into a wrapper of L (promote_created), provided nothing else
//    shares its buffer: the aliases of a view, or of a tensor with views, could not follow the
//    write, so that write is refused with a message that says how to make the tensor writable.
// A wrapper without a derivative is neutral: ops on it compute what they would on its value.
// Library code uses the unlifted factories of namespace detail, so that the tensors it makes
// while computing a rule stay at the level the rule computes at.
// The "captured" rule holds whatever the other operands are (check_not_captured): an in-place
// write, built-in or by a custom op, into a tensor whose data is older than the call of the
// innermost active grad or jvp transform, and that is not one of its values, throws, as torch.func's
// grad layer refuses in-place ops on tensors not wrapped at its level. Views count by the data
// they share (the storage's stamp, or a wrapper view's base), so `outside[0].add_(1)` is captured
// too; vmap and functionalize alone do not refuse plain tensors written with plain values.

/// v as a value of layer L with no derivative there.
XFUNC_RUNTIME tensor wrap_without_derivative(tensor v, const layer_ptr& L);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME tensor wrap_without_derivative(tensor v, const layer_ptr& L) {
  switch (L->kind) {
    case transform_kind::grad: return wrap_grad(std::move(v), L, nullptr);
    case transform_kind::jvp: return wrap_dual(std::move(v), tensor(), L);
    case transform_kind::functionalize: return wrap_functional(std::move(v), L);
    case transform_kind::vmap: break;
  }
  fail("xf: internal error: a vmap layer has no derivative-free wrapper");
}
#endif

/// A batch dim a made tensor takes at a vmap layer (the layer and its level when recorded).
struct batch_entry {
  const layer_ptr* layer;
  std::uint64_t level;
  std::int64_t bdim;
};

/// Wraps v, a value just made (its physical shape holding one batch dim per entry of `batched`),
/// at every grad, jvp and functionalize layer on the stack and at the vmap layers of `batched`,
/// innermost last (ascending `batched`). v itself outside transforms.
XFUNC_RUNTIME tensor lift_created(tensor v, std::span<const batch_entry> batched = {});
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME tensor lift_created(tensor v, std::span<const batch_entry> batched) {
  const auto& stack = current_stack().layers;
  if (stack.empty() && batched.empty()) return v;
  std::size_t b = 0;
  for (const layer_ptr& L : stack) {
    const std::uint64_t level = L->level.load(std::memory_order_relaxed);
    for (; b < batched.size() && batched[b].level < level; ++b)
      v = wrap_batched(std::move(v), batched[b].bdim, *batched[b].layer);
    if (L->kind != transform_kind::vmap) v = wrap_without_derivative(std::move(v), L);
  }
  for (; b < batched.size(); ++b) v = wrap_batched(std::move(v), batched[b].bdim, *batched[b].layer);
  return v;
}
#endif

/// The live vmap layers t is batched at, outermost first, with its batch dim at each.
inline small_list<batch_entry, 4> batch_entries_of(const tensor& t) {
  small_list<batch_entry, 4> out;
  for (const tensor_impl* p = t.impl(); p && !p->is_dense(); p = p->inner.impl())
    if (p->kind == impl_kind::batched && p->is_live_wrapper()) out.push_back({&p->owner, p->owner_level, p->bdim});
  std::reverse(out.begin(), out.end());
  return out;
}

/// Why a tensor that does not belong to layer L cannot take an in-place write of L's values.
enum class not_writable : std::uint8_t { captured, aliased, outer_value, views_are_copies };

/// The creation stamp of the data p holds: its own, its buffer's, or its view base's when older.
inline std::uint64_t data_born(const tensor_impl* p) {
  std::uint64_t b = p->born;
  if (p->store) b = std::min(b, p->store->born);
  if (p->view && p->view->base) b = std::min(b, data_born(p->view->base.get()));
  return b;
}

[[noreturn]] inline void fail_captured(const char* name) {
  fail(name, ": in-place operation would mutate a tensor captured from outside the transform (grad, vjp, "
       "jvp or functionalize); mutating captured tensors is not allowed: pass the tensor in as an argument, "
       "return the new value instead, or use the out-of-place form");
}

/// Throws ("captured") when s, about to be written in place, is neither a value of the innermost
/// grad or jvp layer on this thread's stack nor made inside that layer's call (NOTE: [Tensors
/// created inside transforms]).
inline void check_not_captured(const tensor& s, const char* name) {
  const auto& layers = current_stack().layers;
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    const layer* G = it->get();
    if (G->kind != transform_kind::grad && G->kind != transform_kind::jvp) continue;
    if (!belongs_to(s, G) && data_born(s.impl()) < G->level.load(std::memory_order_relaxed)) fail_captured(name);
    return;
  }
}

/// Turns s (a plain tensor made inside L's call, sharing its buffer with nothing) into a wrapper
/// of L holding its value, so that an in-place write of L's values can rebind it; every handle
/// to s sees the change. Returns why it cannot when it cannot (NOTE: [Tensors created inside
/// transforms]).
inline std::optional<not_writable> promote_created(const tensor& s, const layer_ptr& L) {
  tensor_impl* p = s.impl();
  if (data_born(p) < L->level.load(std::memory_order_relaxed)) return not_writable::captured;
  if (!p->is_dense()) return not_writable::outer_value;
  if (tls_views_as_copies) return not_writable::views_are_copies;  // NOTE: [Views as copies]
  if (p->dev == meta || !p->store || p->store.use_count() != 1) return not_writable::aliased;
  p->prepare_access();  // a deferred value is computed into its buffer first
  auto value = make_pooled<tensor_impl>();
  value->dt = p->dt;
  value->dev = p->dev;
  value->shape = p->shape;
  value->strides = p->strides;
  value->offset = p->offset;
  value->store = std::move(p->store);
  value->born = p->born;
  p->offset = 0;
  p->strides = shape_t();
  // p becomes what wrap_without_derivative(value, L) would make, in place
  tensor w = wrap_without_derivative(tensor(std::move(value)), L);
  tensor_impl* q = w.impl();
  p->kind = q->kind;
  p->owner = q->owner;
  p->owner_level = q->owner_level;
  p->inner = q->inner;
  return std::nullopt;
}

/// Makes s, which does not belong to layer L, writable by an in-place write of L's values, or
/// throws saying why it cannot be: under vmap a batched value cannot go into an unbatched tensor
/// ("in-place"); under grad, jvp and functionalize a tensor made inside L's call becomes a value
/// of L (promote_created).
inline void make_writable_by(const tensor& s, const layer_ptr& L, const char* name) {
  if (L->kind == transform_kind::vmap)
    fail(name, ": in-place operation would write a batched value into an unbatched tensor under vmap; "
         "make the destination batched too (for example create it from a batched input with xf::zeros_like, "
         "or write x = x + y instead) or use the out-of-place form");
  const auto why = promote_created(s, L);
  if (!why) return;
  if (*why == not_writable::captured) fail_captured(name);
  fail(name, ": in-place write of a value of the transform into a tensor that was made inside it only from "
       "tensors captured from outside, and ",
       *why == not_writable::aliased        ? "that shares its memory with another tensor (a view, or a tensor with views)"
       : *why == not_writable::outer_value ? "that belongs to an outer transform"
                                           : "whose views are copies under functionalize(f, xf::remove::mutations_and_views)",
       "; make the destination with a factory inside the transform (e.g. xf::zeros_like(x)), or use the "
       "out-of-place form");
}

}  // namespace xfunc::detail
