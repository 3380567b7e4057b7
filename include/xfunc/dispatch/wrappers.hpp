#pragma once
// Making and taking apart transform wrappers: grad-tracking (value + node), dual (primal +
// tangent) and batched (value + batch dim).
#include <span>
#include <vector>

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

inline tensor make_wrapper(impl_kind k, const tensor& inner, const layer_ptr& owner) {
  auto impl = std::make_shared<tensor_impl>();
  impl->kind = k;
  impl->dt = inner.dtype();
  impl->dev = inner.device();
  impl->shape = inner.shape();
  impl->owner = owner;
  impl->inner = inner;
  return tensor(std::move(impl));
}

inline tensor wrap_grad(const tensor& value, const layer_ptr& owner, std::shared_ptr<grad_node> node) {
  tensor w = make_wrapper(impl_kind::grad, value, owner);
  w.impl()->node = std::move(node);
  return w;
}

inline tensor wrap_dual(const tensor& primal, const tensor& tangent, const layer_ptr& owner) {
  tensor w = make_wrapper(impl_kind::dual, primal, owner);
  w.impl()->tangent = tangent;
  return w;
}

inline tensor wrap_batched(const tensor& value, std::int64_t bdim, const layer_ptr& owner) {
  tensor w = make_wrapper(impl_kind::batched, value, owner);
  w.impl()->shape.erase(static_cast<std::size_t>(bdim));
  w.impl()->bdim = bdim;
  return w;
}

inline bool is_dead_wrapper(const tensor_impl* p) { return p && !p->is_dense() && !p->owner->alive; }

/// Drops the wrappers of transforms that have returned: an escaped tensor is its value.
inline tensor strip_dead(tensor t) {
  while (is_dead_wrapper(t.impl())) t = tensor(t.impl()->inner);
  return t;
}

/// Whether t is a live wrapper made by layer `l`.
inline bool belongs_to(const tensor& t, const layer* l) {
  const tensor_impl* p = t.impl();
  return p && !p->is_dense() && p->owner.get() == l;
}

/// The dense tensor at the bottom of any stack of wrappers.
inline const tensor_impl* dense_of(const tensor& t) {
  const tensor_impl* p = t.impl();
  while (p && !p->is_dense()) p = p->inner.impl();
  return p;
}

}  // namespace xfunc::detail
