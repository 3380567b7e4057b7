#pragma once
/// \file
/// In-place ops. On plain tensors (and views of them) they compute the out-of-place result and
/// write it through the destination's strides, so views write through to their base. Under
/// transforms they follow NOTE: [Mutation under transforms] (dispatch/wrappers.hpp): vmap
/// mutates the batched value physically, grad / jvp / functionalize rebind the wrapper (through
/// its base when it is a view). Mutating a tensor that the innermost transform involved does not
/// own throws: "in-place" under vmap (a batched value into an unbatched tensor), "captured" under
/// grad, vjp, jvp and functionalize.
#include <xfunc/backend/cpu.hpp>
#include <xfunc/dispatch/created.hpp>
#include <xfunc/ops/pointwise.hpp>
#include <xfunc/transforms/vjp.hpp>

namespace xfunc {
namespace detail {

/// Set while xf::cond checks the branch it does not take on meta tensors (cond_on_meta in
/// extend/control_flow.hpp): in-place writes into tensors with data are then checked for their
/// shapes and dtypes but not done, so that the check leaves the caller's tensors as they were.
inline thread_local bool tls_shape_only = false;

/// The out-of-place computation of an in-place op: self and the other tensor arguments in,
/// the new value of self out.
using inplace_fn = std::function<tensor(const tensor& self, std::span<const tensor> others)>;

/// Whether an in-place op may store a result of dtype `r` into a tensor of dtype `d` (torch's
/// canCast: never a floating value into an integer or boolean tensor, nor an integer into a
/// boolean one; copy_ converts its source first, as torch's does).
inline bool can_store_in_place(dtype r, dtype d) {
  return !(is_floating(r) && !is_floating(d)) && !(d == dtype::boolean && r != dtype::boolean);
}

/// Throws unless the result r of an in-place op fits a destination of this shape and dtype.
inline void check_in_place_result(const shape_t& shape, dtype dt, const tensor& r, const char* name) {
  if (!(broadcast_shapes(shape, r.shape(), name) == shape))
    fail(name, ": the result has shape ", r.shape(), " which does not fit the destination's shape ", shape);
  if (!can_store_in_place(r.dtype(), dt))
    fail(name, ": a ", r.dtype(), " result cannot be written into a ", dt, " tensor in place; convert first");
}

/// Writes r (broadcastable to self's shape) through self's strides, converting the dtype.
template <int = 0>
void write_through(const tensor& self, const tensor& r, const char* name) {
  const tensor_impl& d = *self.impl();
  check_in_place_result(d.shape, d.dt, r, name);
  for (std::size_t i = 0; i < d.shape.size(); ++i)
    if (d.strides[i] == 0 && d.shape[i] > 1)
      fail(name, ": in-place write into an expanded tensor, whose elements share memory; clone() it first");
  if (d.dev == meta) return;
  if (r.device() == meta) fail(name, ": cannot write a meta (shape-only) value into a tensor with data");
  if (d.dev.kind == device_kind::cuda) return backend_of(d.dev, name).write(self, r, name);
  if (r.device() != cpu) return write_through(self, backend_of(r.device(), name).download(r), name);
  // r is read through its own (broadcast) strides, converted on the way (NOTE: [Strided
  // copies]); a value sharing self's storage (copy_ from a view of self) is copied out first.
  tensor src = r;
  r.impl()->prepare_access();  // r may be deferred and read self: evaluated before the write
  if (r.impl()->store == d.store) src = backend::materialized_copy(r, d.shape, d.dt);
  d.prepare_access();
  const tensor_impl& s = *src.impl();
  shape_t sst(d.shape.size(), 0);  // s's strides broadcast against self's shape
  const std::size_t lead = d.shape.size() - s.shape.size();
  for (std::size_t i = 0; i < s.shape.size(); ++i) sst[lead + i] = s.shape[i] == 1 ? 0 : s.strides[i];
  visit_dtype(d.dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* base = reinterpret_cast<T*>(d.store->data) + d.offset;
    visit_dtype(s.dt, [&](auto stag) {
      using S = typename decltype(stag)::type;
      backend::strided_copy<T, S>(d.shape, base, d.strides, reinterpret_cast<const S*>(s.store->data) + s.offset, sst);
    });
  });
}

/// The new value r of wrapper s, checked and cast to s's shape and dtype.
template <int = 0>
tensor fit_result(const tensor& s, tensor r, const char* name) {
  check_in_place_result(s.shape(), s.dtype(), r, name);
  // (a traced shape-only value is written by the replay: see apply_inplace)
  if (r.device() == meta && s.device() != meta && !tls_trace)
    fail(name, ": cannot write a meta (shape-only) value into a tensor with data");
  if (r.dtype() != s.dtype()) r = r.to(s.dtype());
  if (!(r.shape() == s.shape())) r = r.expand(s.shape());
  return r;
}

/// V^T(r) and the mask of the elements a view V of `base` covers, computed with the vjp of the
/// view's replay (views are linear, so their vjp embeds a value back into the base's shape).
template <int = 0>
std::pair<tensor, tensor> embed_into_base(const view_info& v, const tensor& base, const tensor& r) {
  // An integer or boolean base is embedded through a float64 copy. The view is replayed on that
  // copy itself: views do not depend on the dtype, and a round trip through the integer dtype
  // would cut the vjp (a cast to an integer is not differentiable), losing the write.
  const bool floating = is_floating(base.dtype());
  tensor b = floating ? base : base.to(f64);
  auto replay = [&](const tensor& x) { return v.replay(x); };
  auto [val, pullback] = xfunc::vjp(replay, b);
  tensor embedded = std::get<0>(pullback(r.to(b.dtype())));
  tensor covered = std::get<0>(pullback(plain_ones_like(val))) != 0.0;
  return {floating ? embedded : embedded.to(base.dtype()), covered};
}

/// Gives wrapper s (of a grad, jvp or functionalize layer) the new value r.
template <int = 0>
void commit(const tensor& s, const tensor& r, const char* name) {
  tensor_impl* p = s.impl();
  if (!p->view) {
    assign_wrapper_value(p, r);
    ++p->version;
    return;
  }
  view_info& v = *p->view;
  if (!v.writable)
    fail(name, ": in-place write into a view whose elements share memory (an expand); clone() it first");
  tensor base(v.base);
  refresh_view(s);
  auto [embedded, covered] = embed_into_base(v, base, r);
  assign_wrapper_value(v.base.get(), where(covered, embedded, base));
  ++v.base->version;
  refresh_view(s);
}

template <int = 0>
tensor& apply_inplace(tensor& self, std::vector<tensor> others, const char* name, const inplace_fn& compute) {
  require_defined(self, name);
  for (const auto& o : others) require_defined(o, name);
  tensor s = strip_dead(self);
  for (auto& o : others) o = strip_dead(o);
  // The others broadcast against self elementwise, so the result must fit self's shape: checked
  // on the logical shapes, before any layer (under vmap an unbatched argument's leading dims
  // could physically line up with the batch dim and pass the physical check).
  for (const auto& o : others)
    if (const shape_t r = broadcast_shapes(s.shape(), o.shape(), name); !(r == s.shape()))
      fail(name, ": the result has shape ", r, " which does not fit the destination's shape ", s.shape());
  if (tls_shape_only && s.device() != meta) {  // only the shapes and dtypes, on a stand-in
    const tensor stand_in = empty_dense(s.shape(), s.dtype(), meta);
    write_through(stand_in, compute(stand_in, others), name);
    return self;
  }
  check_not_captured(s, name);
  std::vector<tensor> all{s};
  all.insert(all.end(), others.begin(), others.end());
  const layer_ptr* top = top_layer_of(all);
  if (!top) {
    if (trace_state* tr = tls_trace) {  // record one in-place node, not the ops it is made of
      trace_scope pause(nullptr);
      tensor r = compute(s, others);
      // a traced (meta) value cannot be written into a real constant; the replay will do it
      if (!(r.device() == meta && s.device() != meta)) write_through(s, r, name);
      tr->record_inplace(name, s, others, [compute, name](std::span<const tensor> xs) {
        write_through(xs[0], compute(xs[0], xs.subspan(1)), name);
        return xs[0];
      });
      return self;
    }
    write_through(s, compute(s, others), name);
    return self;
  }
  const layer_ptr L = *top;
  // a tensor made inside the transform becomes one of its values (NOTE: [Tensors created inside transforms])
  if (!belongs_to(s, L.get())) make_writable_by(s, L, name);
  if (L->kind == transform_kind::vmap) {
    // physically, on the batched value with its batch dim in front (a view: writes reach it)
    tensor xv = bdim_to_front(s.impl()->inner, s.impl()->bdim);
    std::vector<tensor> aligned;
    for (const auto& o : others) {
      if (!belongs_to(o, L.get())) {
        aligned.push_back(o);
        continue;
      }
      tensor ov = bdim_to_front(o.impl()->inner, o.impl()->bdim);
      shape_t sh = ov.shape();
      while (static_cast<std::int64_t>(sh.size()) < xv.dim()) sh.insert(1, 1);
      aligned.push_back(ov.view(sh));
    }
    apply_inplace(xv, std::move(aligned), name, compute);
    return self;
  }
  refresh_view(s);
  commit(s, fit_result(s, compute(s, others), name), name);
  return self;
}
}  // namespace detail

template <int D>
tensor& tensor::add_(const tensor& o) {
  return detail::apply_inplace(*this, {o}, "xf::add_", [](const tensor& s, std::span<const tensor> x) { return add(s, x[0]); });
}
template <int D>
tensor& tensor::add_(double v) {
  return detail::apply_inplace(*this, {}, "xf::add_", [v](const tensor& s, std::span<const tensor>) { return add(s, v); });
}
template <int D>
tensor& tensor::sub_(const tensor& o) {
  return detail::apply_inplace(*this, {o}, "xf::sub_", [](const tensor& s, std::span<const tensor> x) { return sub(s, x[0]); });
}
template <int D>
tensor& tensor::sub_(double v) {
  return detail::apply_inplace(*this, {}, "xf::sub_", [v](const tensor& s, std::span<const tensor>) { return sub(s, v); });
}
template <int D>
tensor& tensor::mul_(const tensor& o) {
  return detail::apply_inplace(*this, {o}, "xf::mul_", [](const tensor& s, std::span<const tensor> x) { return mul(s, x[0]); });
}
template <int D>
tensor& tensor::mul_(double v) {
  return detail::apply_inplace(*this, {}, "xf::mul_", [v](const tensor& s, std::span<const tensor>) { return mul(s, v); });
}
template <int D>
tensor& tensor::div_(const tensor& o) {
  return detail::apply_inplace(*this, {o}, "xf::div_", [](const tensor& s, std::span<const tensor> x) { return div(s, x[0]); });
}
template <int D>
tensor& tensor::div_(double v) {
  return detail::apply_inplace(*this, {}, "xf::div_", [v](const tensor& s, std::span<const tensor>) { return div(s, v); });
}
template <int D>
tensor& tensor::copy_(const tensor& src) {
  // copy_ converts any dtype into the destination's, as torch's (a floating value into an
  // integer tensor is truncated; NaN and out-of-range values become INT64_MIN)
  return detail::apply_inplace(*this, {src}, "xf::copy_", [](const tensor& s, std::span<const tensor> x) {
    return x[0].dtype() == s.dtype() ? x[0] : x[0].to(s.dtype());
  });
}
template <int D>
tensor& tensor::zero_() {
  return detail::apply_inplace(*this, {}, "xf::zero_", [](const tensor& s, std::span<const tensor>) {
    return detail::plain_full({}, 0.0, s.dtype(), xfunc::cpu);
  });
}
template <int D>
tensor& tensor::fill_(double v) {
  if (defined()) detail::check_fill_value(v, dtype(), "xf::fill_");
  return detail::apply_inplace(*this, {}, "xf::fill_", [v](const tensor& s, std::span<const tensor>) {
    return detail::plain_full({}, v, is_floating(s.dtype()) ? s.dtype() : s.dtype() == b8 ? b8 : i64, xfunc::cpu);
  });
}
template <int D>
tensor& tensor::neg_() {
  return detail::apply_inplace(*this, {}, "xf::neg_", [](const tensor& s, std::span<const tensor>) { return neg(s); });
}
template <int D>
tensor& tensor::exp_() {
  return detail::apply_inplace(*this, {}, "xf::exp_", [](const tensor& s, std::span<const tensor>) { return exp(s); });
}
template <int D>
tensor& tensor::sin_() {
  return detail::apply_inplace(*this, {}, "xf::sin_", [](const tensor& s, std::span<const tensor>) { return sin(s); });
}
template <int D>
tensor& tensor::cos_() {
  return detail::apply_inplace(*this, {}, "xf::cos_", [](const tensor& s, std::span<const tensor>) { return cos(s); });
}
template <int D>
tensor& tensor::clamp_(double lo, double hi) {
  return detail::apply_inplace(*this, {}, "xf::clamp_",
                               [lo, hi](const tensor& s, std::span<const tensor>) { return clamp(s, lo, hi); });
}

}  // namespace xfunc

// Compiled once in xfunc::kernels, with the strided copies it runs (NOTE: [Precompiled kernels]).
#if defined(XFUNC_PRECOMPILED_KERNELS)
namespace xfunc::detail {
extern template void write_through<0>(const tensor&, const tensor&, const char*);
}  // namespace xfunc::detail
#endif
