#pragma once
// Building deferred pointwise results (NOTE: [Deferred elementwise] in core/deferred.hpp): each
// pointwise op's kernel first offers its call here; when the call qualifies, the result is a
// deferred tensor whose program holds the op's own per-element `fn` as a block function.
#include <cstddef>

#include <xfunc/backend/cpu.hpp>
#include <xfunc/core/deferred.hpp>
#include <xfunc/dispatch/layer_stack.hpp>
#include <xfunc/dispatch/trace.hpp>

namespace xfunc::detail::backend {

// Block functions: the op's per-element `fn` (NOTE: [Element math]) on n elements, in each
// operand form; `stream`: the result goes out by streaming stores (NOTE: [Streaming deferred
// results]).
template <class T, class F, class... In>
void map_block(void* dst, std::size_t n, bool stream, const F& f, const In&... in) {
  if (stream) map_elements<T, true>(static_cast<T*>(dst), std::int64_t(n), f, in...);
  else map_elements<T>(static_cast<T*>(dst), std::int64_t(n), f, in...);
}
template <class D, class T>
void unary_block(void* dst, const void* a, const void*, double, std::size_t n, bool stream) {
  map_block<T>(dst, n, stream, D::fn, elements<T>{static_cast<const T*>(a)});
}
template <class D, class T>
void binary_block(void* dst, const void* a, const void* b, double, std::size_t n, bool stream) {
  map_block<T>(dst, n, stream, D::fn, elements<T>{static_cast<const T*>(a)}, elements<T>{static_cast<const T*>(b)});
}
template <class D, class T>
void binary_scalar_right_block(void* dst, const void* a, const void*, double s, std::size_t n, bool stream) {
  map_block<T>(dst, n, stream, D::fn, elements<T>{static_cast<const T*>(a)}, repeated<T>{static_cast<T>(s)});
}
template <class D, class T>
void binary_scalar_left_block(void* dst, const void*, const void* b, double s, std::size_t n, bool stream) {
  map_block<T>(dst, n, stream, D::fn, repeated<T>{static_cast<T>(s)}, elements<T>{static_cast<const T*>(b)});
}

/// Op D's number in the fused programs of a device (NOTE: [Fused device programs]), set by the
/// CUDA backend at start-up; -1: D's steps are not fused there (a call computes eagerly).
template <class D>
inline int device_fused_op = -1;

/// Whether t can be read by a deferred program on device `dev` producing `shape` in dtype dt: a
/// deferred tensor, or a contiguous dense tensor of exactly that shape, dtype and device whose
/// buffer no other library shares (it could write the buffer before the program runs: NOTE:
/// [Memory shared with other libraries]).
inline bool deferrable_operand(const tensor& t, const shape_t& shape, dtype dt, device dev) {
  const tensor_impl* p = t.impl();
  if (!p->is_dense() || p->dev != dev || p->dt != dt || p->shape != shape) return false;
  if (p->deferred.load(std::memory_order_acquire)) return true;
  return is_contiguous_layout(p->shape, p->strides) && !p->store->shared_externally.load(std::memory_order_acquire);
}

/// Whether a pointwise call of `numel` elements in dtype dt may be deferred at all (checked
/// first and cheaply: most calls are small).
inline bool deferral_applies(std::int64_t numel, dtype dt) {
  const std::int64_t min = deferred_min_numel();
  return min > 0 && numel >= min && is_floating(dt) && !tls_trace && current_stack().layers.empty();
}

/// Adds operand t to program v: its program when it is deferred, else t as a leaf. Returns the
/// operand code, or false when v has no room (the registry's mutex is held).
inline bool add_operand(deferred_value& v, const tensor& t, int& code) {
  const tensor_impl* p = t.impl();
  if (p->deferred.load(std::memory_order_relaxed)) {
    const deferred_value& src = *p->pending;
    int leaf_code[deferred_value::max_leaves];
    std::size_t n_leaves = v.n_leaves;
    for (std::size_t i = 0; i < src.n_leaves; ++i) {
      std::size_t j = 0;
      while (j < n_leaves && v.leaves[j] != src.leaves[i]) ++j;
      if (j == n_leaves && ++n_leaves > deferred_value::max_leaves) return false;
      leaf_code[i] = -1 - static_cast<int>(j);
    }
    if (v.n_steps + src.n_steps > deferred_value::max_steps) return false;
    for (std::size_t i = 0; i < src.n_leaves; ++i) {
      const auto j = static_cast<std::size_t>(-1 - leaf_code[i]);
      if (j < v.n_leaves) continue;
      v.leaves[j] = src.leaves[i];
      v.leaves[j]->store->deferred_readers.fetch_add(1, std::memory_order_acq_rel);
      v.n_leaves = j + 1;
    }
    const int base = static_cast<int>(v.n_steps);
    auto remap = [&](int c) { return c >= 0 ? c + base : leaf_code[-1 - c]; };
    for (std::size_t k = 0; k < src.n_steps; ++k) {
      deferred_step s = src.steps[k];
      s.a = remap(s.a);
      s.b = remap(s.b);
      v.steps[v.n_steps++] = s;
    }
    code = static_cast<int>(v.n_steps) - 1;
    return true;
  }
  for (std::size_t j = 0; j < v.n_leaves; ++j)
    if (v.leaves[j].get() == p) {
      code = -1 - static_cast<int>(j);
      return true;
    }
  if (v.n_leaves == deferred_value::max_leaves) return false;
  v.leaves[v.n_leaves] = t.impl_ptr();
  p->store->deferred_readers.fetch_add(1, std::memory_order_acq_rel);
  code = -1 - static_cast<int>(v.n_leaves++);
  return true;
}

/// The deferred result on device `dev` of `step` (its function or device op, form and scalar)
/// over `operands` (one or two tensors), or an undefined tensor when the program would not fit
/// (the caller then computes eagerly).
inline tensor defer_step(std::span<const tensor> operands, const shape_t& shape, dtype dt, device dev,
                         deferred_step step) {
  auto& reg = deferred_registry::instance();
  auto v = std::make_shared<deferred_value>();
  v->dev = dev;
  v->dt = dt;
  v->elem_size = dtype_size(dt);
  v->numel = numel_of(shape);
  std::lock_guard<std::mutex> lock(reg.m);
  int codes[2] = {0, 0};
  for (std::size_t i = 0; i < operands.size(); ++i)
    if (!add_operand(*v, operands[i], codes[i])) return {};
  if (v->n_steps == deferred_value::max_steps) return {};
  step.a = codes[0];
  step.b = operands.size() > 1 ? codes[1] : codes[0];
  v->steps[v->n_steps++] = step;
  auto impl = make_pooled<tensor_impl>();
  impl->dt = dt;
  impl->dev = dev;
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->pending = std::move(v);
  impl->deferred.store(true, std::memory_order_release);
  if (reg.live.size() >= 32)  // drop the entries of deferred tensors that are gone
    std::erase_if(reg.live, [](const std::weak_ptr<tensor_impl>& w) { return w.expired(); });
  reg.live.push_back(impl);
  return tensor(std::move(impl));
}

/// The step of op D in form F for a program on device `dev` (one that fuses D) in dtype dt: a
/// cpu step calls a block function of D::fn, a device step names D by device_fused_op.
template <class D, step_form F>
deferred_step step_of(dtype dt, device dev, double scalar) {
  deferred_step s;
  s.form = F;
  s.scalar = scalar;
  if (dev != cpu) {
    s.device_op = device_fused_op<D>;
    return s;
  }
  const bool f32 = dt == dtype::float32;
  if constexpr (F == step_form::unary) s.fn = f32 ? &unary_block<D, float> : &unary_block<D, double>;
  if constexpr (F == step_form::binary) s.fn = f32 ? &binary_block<D, float> : &binary_block<D, double>;
  if constexpr (F == step_form::scalar_right)
    s.fn = f32 ? &binary_scalar_right_block<D, float> : &binary_scalar_right_block<D, double>;
  if constexpr (F == step_form::scalar_left)
    s.fn = f32 ? &binary_scalar_left_block<D, float> : &binary_scalar_left_block<D, double>;
  return s;
}
/// Whether `dev` fuses op D at all.
template <class D>
bool fuses(device dev) {
  return dev == cpu || (dev.kind == device_kind::cuda && device_fused_op<D> >= 0);
}

/// Deferred y = D::fn(x), or undefined when the call does not qualify. (Deferral takes floating
/// inputs only, and every unary op keeps a floating dtype.)
template <class D>
tensor defer_unary(const tensor& x) {
  const tensor_impl& p = *x.impl();
  if (!deferral_applies(numel_of(p.shape), p.dt) || !fuses<D>(p.dev) || !deferrable_operand(x, p.shape, p.dt, p.dev))
    return {};
  return defer_step(std::span<const tensor>(&x, 1), p.shape, p.dt, p.dev, step_of<D, step_form::unary>(p.dt, p.dev, 0.0));
}

/// Deferred y = D::fn(a, b) (both of dtype dt; a one-element side becomes a scalar: a cpu tensor,
/// read on the host), or undefined when the call does not qualify.
template <class D>
tensor defer_binary(const tensor& a, const tensor& b, dtype dt) {
  const std::int64_t na = numel_of(a.impl()->shape), nb = numel_of(b.impl()->shape);
  if (!deferral_applies(na > nb ? na : nb, dt) || a.impl()->dt != dt || b.impl()->dt != dt) return {};
  const bool a_scalar = na == 1 && nb > 1, b_scalar = nb == 1 && na > 1;
  const tensor& big = a_scalar ? b : a;
  const shape_t& shape = big.shape();
  const device dev = big.impl()->dev;
  if (!fuses<D>(dev) || !(broadcast_shapes(a.shape(), b.shape(), D::name) == shape)) return {};
  if (!deferrable_operand(big, shape, dt, dev)) return {};
  const tensor& small = a_scalar ? a : b;
  if ((a_scalar || b_scalar) && !(small.impl()->is_dense() && small.impl()->dev == cpu)) return {};  // e.g. meta, cuda
  auto scalar_of = [&](const tensor& s) {
    return dt == dtype::float32 ? double(s.impl()->template data<float>()[0]) : s.impl()->template data<double>()[0];
  };
  if (b_scalar)
    return defer_step(std::span<const tensor>(&a, 1), shape, dt, dev,
                      step_of<D, step_form::scalar_right>(dt, dev, scalar_of(b)));
  if (a_scalar)
    return defer_step(std::span<const tensor>(&b, 1), shape, dt, dev,
                      step_of<D, step_form::scalar_left>(dt, dev, scalar_of(a)));
  if (!deferrable_operand(b, shape, dt, dev)) return {};
  const tensor both[] = {a, b};
  return defer_step(both, shape, dt, dev, step_of<D, step_form::binary>(dt, dev, 0.0));
}

}  // namespace xfunc::detail::backend
