#pragma once
/// \file
/// xf::interpreter: the public view of one transform layer, for the rules of higher-order ops
/// (unwrap / wrap tensors of that layer, lower() to the layers below), and xf::layers::top().
#include <cstdint>
#include <optional>
#include <string_view>

#include <xfunc/core/error.hpp>
#include <xfunc/core/shape.hpp>
#include <xfunc/dispatch/layer_stack.hpp>
#include <xfunc/dispatch/wrappers.hpp>
#include <xfunc/ops/view.hpp>

namespace xfunc {

namespace detail {
inline std::string_view kind_name(transform_kind k) {
  switch (k) {
    case transform_kind::grad: return "grad";
    case transform_kind::jvp: return "jvp";
    case transform_kind::vmap: return "vmap";
    case transform_kind::functionalize: return "functionalize";
  }
  return "unknown";
}
}  // namespace detail

/// A tensor's parts at one layer (see interpreter::unwrap).
struct unwrapped {
  tensor value;                        ///< the value one layer down
  std::optional<std::int64_t> bdim;    ///< vmap layers: the batch dim of `value` (none: unbatched)
  tensor tangent;                      ///< jvp layers: the tangent (undefined: zero)
};

/// The view of one transform layer that a higher-order op's rule receives: what kind of layer it
/// is, how to take its tensors apart and make new ones, and how to call the layers below.
class interpreter {
 public:
  /// The view of `layer` (library use: rules receive interpreters, layers::top() returns one).
  explicit interpreter(detail::layer_ptr layer) : layer_(std::move(layer)) {}

  /// The kind of transform this layer belongs to.
  transform_kind kind() const { return layer_->kind; }
  /// The layer's unique level (inner layers have higher levels).
  std::uint64_t level() const { return layer_->level; }

  /// An RAII guard: while it lives, this layer (and any above it) is hidden, so op and
  /// higher-order-op calls go to the next layer down. Use it on unwrapped values.
  [[nodiscard]] detail::lower_guard lower() const { return detail::lower_guard(layer_->level); }

  /// t's parts at this layer: the value one layer down, its batch dim (vmap) and its tangent
  /// (jvp). A tensor that does not belong to this layer comes back as itself, with no batch dim
  /// and an undefined tangent.
  unwrapped unwrap(const tensor& t) const {
    tensor s = detail::strip_dead(t);
    if (!detail::belongs_to(s, layer_.get())) return {s, std::nullopt, tensor()};
    detail::refresh_view(s);  // a view whose base was written since reads the new value
    const detail::tensor_impl* p = s.impl();
    unwrapped u{p->inner, std::nullopt, tensor()};
    if (p->kind == detail::impl_kind::batched) u.bdim = p->bdim;
    if (p->kind == detail::impl_kind::dual) u.tangent = p->tangent;
    return u;
  }

  /// A tensor of this layer holding `value` with nothing attached: unbatched (vmap), zero
  /// tangent (jvp), no recorded derivative (grad), a fresh functional value (functionalize).
  /// Under vmap and for non-floating values under grad / jvp this is `value` itself, which is how
  /// the layer's own ops represent such values.
  tensor wrap(const tensor& value) const {
    tensor v = detail::strip_dead(value);
    if (detail::belongs_to(v, layer_.get())) return v;
    switch (layer_->kind) {
      case transform_kind::vmap: return v;
      case transform_kind::grad:
        // A wrapper with no node: belongs to the layer (in-place ops on it rebind) but is a
        // constant for the backward pass.
        return is_floating(v.dtype()) ? detail::wrap_grad(v, layer_, nullptr) : v;
      case transform_kind::jvp: return is_floating(v.dtype()) ? detail::wrap_dual(v, tensor(), layer_) : v;
      case transform_kind::functionalize: return detail::wrap_functional(v, layer_);
    }
    return v;
  }

  /// vmap layers: a batched tensor whose batch dim is `bdim` of `value` (none: unbatched).
  tensor wrap(const tensor& value, std::optional<std::int64_t> bdim) const {
    require(transform_kind::vmap, "wrap(value, bdim)");
    if (!bdim) return wrap(value);
    tensor v = detail::strip_dead(value);
    if (detail::belongs_to(v, layer_.get()))
      detail::fail("xf::interpreter::wrap(value, bdim): value already belongs to this vmap layer; pass the "
                   "unwrapped value (interp.unwrap(t).value)");
    const std::int64_t d = detail::wrap_dim(*bdim, v.dim(), "bdim");
    if (v.size(d) != layer_->batch_size)
      detail::fail("xf::interpreter::wrap(value, bdim): dim ", d, " of a value of shape ", v.shape(), " has size ",
                   v.size(d), " but the vmap layer's batch size is ", layer_->batch_size);
    return detail::wrap_batched(v, d, layer_);
  }

  /// jvp layers: a dual tensor with the given primal and tangent (undefined tangent: zero).
  /// (A template only to be instantiated lazily: NOTE: [Lazy instantiation] in fwd.hpp.)
  template <int D = 0>
  tensor wrap(const tensor& primal, const tensor& tangent) const {
    require(transform_kind::jvp, "wrap(primal, tangent)");
    if (!tangent.defined()) return wrap(primal);
    tensor p = detail::strip_dead(primal);
    if (!(p.shape() == tangent.shape()))
      detail::fail("xf::interpreter::wrap(primal, tangent): the tangent has shape ", tangent.shape(),
                   " but the primal has shape ", p.shape());
    if (!is_floating(p.dtype())) return p;
    return detail::wrap_dual(p, tangent.dtype() == p.dtype() ? tangent : tangent.to(p.dtype()), layer_);
  }

  /// vmap layers: the batch size.
  std::int64_t batch_size() const {
    require(transform_kind::vmap, "batch_size()");
    return layer_->batch_size;
  }
  /// vmap layers: the randomness option the vmap was called with.
  xfunc::randomness randomness() const {
    require(transform_kind::vmap, "randomness()");
    return layer_->rand;
  }

 private:
  void require(transform_kind k, const char* what) const {
    if (layer_->kind != k)
      detail::fail("xf::interpreter::", what, " is only defined for ", detail::kind_name(k), " layers; this is a ",
                   detail::kind_name(layer_->kind), " layer (check interp.kind() first)");
  }
  detail::layer_ptr layer_;
};

namespace layers {
/// The interpreter of the innermost active layer (the one a higher-order op called now would
/// run the rule of). Throws xf::error when no transform is active (check layers::depth() first).
inline interpreter top() {
  auto& ls = detail::current_stack().layers;
  if (ls.empty())
    detail::fail("xf::layers::top(): no transform is active on this thread (layers::depth() == 0); call it inside "
                 "a transform or a higher-order op's rule");
  return interpreter(ls.back());
}
}  // namespace layers
}  // namespace xfunc
