#pragma once
// In-place ops. On plain tensors (and views of them) they compute the out-of-place result and
// write it through the destination's strides, so views write through to their base. Under
// transforms, mutating a tensor that the transform does not own throws ("captured" for grad,
// vjp and jvp; "in-place" for vmap); mutating a transform's own wrappers is not supported yet
// and throws rather than computing a wrong derivative.
#include <xfunc/backend/cpu.hpp>
#include <xfunc/ops/pointwise.hpp>

namespace xfunc {
namespace detail {

inline void check_inplace(const tensor& self, std::span<const tensor> others, const char* name) {
  tensor s = strip_dead(self);
  if (!s.impl()->is_dense())
    fail(name, ": in-place operations on tensors produced inside a transform are not supported yet; "
         "use the out-of-place form (for example y = x + z instead of x.add_(z))");
  const layer_ptr* top = top_layer_of(others);
  if (!top || !(*top)->alive) return;
  if ((*top)->kind == transform_kind::vmap)
    fail(name, ": in-place operation would write a batched value into an unbatched tensor under vmap; "
         "make the destination batched too (for example create it from a batched input) or use the "
         "out-of-place form");
  fail(name, ": in-place operation would mutate a tensor captured from outside the transform (grad, "
       "vjp or jvp); mutating captured tensors is not allowed, use the out-of-place form");
}

/// Writes r (broadcastable to self's shape) through self's strides, converting the dtype.
inline void write_through(const tensor& self, const tensor& r, const char* name) {
  const tensor_impl& d = *self.impl();
  if (!(broadcast_shapes(d.shape, r.shape()) == d.shape))
    fail(name, ": the result has shape ", r.shape(), " which does not fit the destination's shape ", d.shape);
  if (is_floating(r.dtype()) && !is_floating(d.dt))
    fail(name, ": a ", r.dtype(), " result cannot be written into a ", d.dt, " tensor in place; convert first");
  if (d.dev == meta) return;
  tensor src = backend::materialize(r, d.shape, d.dt);
  visit_dtype(d.dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* base = reinterpret_cast<T*>(d.store->data);
    const T* p = src.impl()->template data<T>();
    backend::for_each_offset(d.shape, d.strides, d.offset, [&](std::int64_t off) { base[off] = *p++; });
  });
}

template <class F>
tensor& apply_inplace(tensor& self, std::initializer_list<tensor> others, const char* name, F&& compute) {
  check_inplace(self, std::span<const tensor>(others.begin(), others.size()), name);
  tensor s = strip_dead(self);
  write_through(s, compute(s), name);
  return self;
}
}  // namespace detail

inline tensor& tensor::add_(const tensor& o) {
  return detail::apply_inplace(*this, {o}, "xf::add_", [&](const tensor& s) { return add(s, o); });
}
inline tensor& tensor::add_(double v) { return detail::apply_inplace(*this, {}, "xf::add_", [&](const tensor& s) { return add(s, v); }); }
inline tensor& tensor::sub_(const tensor& o) {
  return detail::apply_inplace(*this, {o}, "xf::sub_", [&](const tensor& s) { return sub(s, o); });
}
inline tensor& tensor::sub_(double v) { return detail::apply_inplace(*this, {}, "xf::sub_", [&](const tensor& s) { return sub(s, v); }); }
inline tensor& tensor::mul_(const tensor& o) {
  return detail::apply_inplace(*this, {o}, "xf::mul_", [&](const tensor& s) { return mul(s, o); });
}
inline tensor& tensor::mul_(double v) { return detail::apply_inplace(*this, {}, "xf::mul_", [&](const tensor& s) { return mul(s, v); }); }
inline tensor& tensor::div_(const tensor& o) {
  return detail::apply_inplace(*this, {o}, "xf::div_", [&](const tensor& s) { return div(s, o); });
}
inline tensor& tensor::div_(double v) { return detail::apply_inplace(*this, {}, "xf::div_", [&](const tensor& s) { return div(s, v); }); }
inline tensor& tensor::copy_(const tensor& src) {
  return detail::apply_inplace(*this, {src}, "xf::copy_", [&](const tensor& s) {
    if (is_floating(src.dtype()) && !is_floating(s.dtype())) return src;  // write_through reports it
    return src.dtype() == s.dtype() ? src : src.to(s.dtype());
  });
}
inline tensor& tensor::zero_() { return fill_(0.0); }
inline tensor& tensor::fill_(double v) {
  return detail::apply_inplace(*this, {}, "xf::fill_", [&](const tensor& s) {
    return full({}, v, is_floating(s.dtype()) ? s.dtype() : s.dtype() == b8 ? b8 : i64);
  });
}
inline tensor& tensor::neg_() { return detail::apply_inplace(*this, {}, "xf::neg_", [](const tensor& s) { return neg(s); }); }
inline tensor& tensor::exp_() { return detail::apply_inplace(*this, {}, "xf::exp_", [](const tensor& s) { return exp(s); }); }
inline tensor& tensor::sin_() { return detail::apply_inplace(*this, {}, "xf::sin_", [](const tensor& s) { return sin(s); }); }
inline tensor& tensor::cos_() { return detail::apply_inplace(*this, {}, "xf::cos_", [](const tensor& s) { return cos(s); }); }
inline tensor& tensor::clamp_(double lo, double hi) {
  return detail::apply_inplace(*this, {}, "xf::clamp_", [&](const tensor& s) { return clamp(s, lo, hi); });
}

}  // namespace xfunc
