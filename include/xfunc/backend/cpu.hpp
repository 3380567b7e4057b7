#pragma once
// CPU kernels: strided gathers written once by hand, math on contiguous buffers through xtensor
// (vectorised with xsimd when XTENSOR_USE_XSIMD is defined, as the xfunc::xfunc target does).
#include <array>
#include <cstdint>

#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>

#include <xfunc/core/tensor.hpp>

namespace xfunc::detail::backend {

/// A 1-d xtensor view of the contiguous data of t.
template <class T>
auto flat(const tensor& t) {
  auto n = static_cast<std::size_t>(t.numel());
  return xt::adapt(t.impl()->template data<T>(), n, xt::no_ownership(), std::array<std::size_t, 1>{n});
}

/// Calls f(offset) for every element of a strided layout, in row-major order.
template <class F>
void for_each_offset(const shape_t& shape, const shape_t& strides, std::int64_t offset, F&& f) {
  const std::size_t r = shape.size();
  for (auto e : shape)
    if (e == 0) return;
  if (r == 0) {
    f(offset);
    return;
  }
  std::int64_t idx[shape_t::max_dims] = {};
  const std::int64_t n_inner = shape[r - 1], s_inner = strides[r - 1];
  std::int64_t off = offset;
  for (;;) {
    for (std::int64_t i = 0; i < n_inner; ++i) f(off + i * s_inner);
    std::int64_t d = static_cast<std::int64_t>(r) - 2;
    for (; d >= 0; --d) {
      auto du = static_cast<std::size_t>(d);
      ++idx[du];
      off += strides[du];
      if (idx[du] < shape[du]) break;
      off -= strides[du] * shape[du];
      idx[du] = 0;
    }
    if (d < 0) return;
  }
}

inline bool is_contiguous_layout(const shape_t& shape, const shape_t& strides) {
  std::int64_t expected = 1;
  bool unrepresentable = false;  // the next expected stride does not fit in int64_t (0-element views)
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (unrepresentable || strides[i] != expected) return false;
    unrepresentable = !mul_fits(expected, shape[i], expected);  // NOTE: [Checked shape arithmetic]
  }
  return true;
}

/// Copies the (strided, possibly broadcast) elements of dense `src`, viewed with `shape` and
/// `strides`, into contiguous `dst`, converting to T.
template <class T>
void gather_into(const tensor_impl& src, const shape_t& shape, const shape_t& strides, T* dst) {
  src.prepare_access();
  visit_dtype(src.dt, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* base = reinterpret_cast<const S*>(src.store->data);
    T* o = dst;
    for_each_offset(shape, strides, src.offset, [&](std::int64_t off) { *o++ = static_cast<T>(base[off]); });
  });
}

inline bool is_materialized(const tensor& t, const shape_t& shape, dtype d) {
  const tensor_impl& s = *t.impl();
  return s.dt == d && s.shape == shape && is_contiguous_layout(s.shape, s.strides);
}

/// A contiguous copy of t, converted to dtype d and broadcast to `shape`.
inline tensor materialized_copy(const tensor& t, const shape_t& shape, dtype d) {
  const tensor_impl& s = *t.impl();
  // broadcast strides of s against `shape`
  shape_t st(shape.size(), 0);
  const std::size_t lead = shape.size() - s.shape.size();
  for (std::size_t i = 0; i < s.shape.size(); ++i) st[lead + i] = s.shape[i] == 1 ? 0 : s.strides[i];
  tensor out = empty_dense(shape, d);
  visit_dtype(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    gather_into<T>(s, shape, st, out.impl()->template data<T>());
  });
  return out;
}

/// t as a contiguous dense tensor of dtype d with the given (broadcast-compatible) shape; t
/// itself when it already is one.
inline tensor materialize(const tensor& t, const shape_t& shape, dtype d) {
  return is_materialized(t, shape, d) ? t : materialized_copy(t, shape, d);
}

inline tensor contiguous_as(const tensor& t, dtype d) { return materialize(t, t.shape(), d); }

/// materialize() for kernels that only read the result: t itself when it already is what they
/// need (no copy of the handle, which costs an atomic count pair in a multithreaded process),
/// else the converted tensor, kept in `scratch`.
inline const tensor& materialized(const tensor& t, const shape_t& shape, dtype d, tensor& scratch) {
  if (is_materialized(t, shape, d)) return t;
  scratch = materialized_copy(t, shape, d);
  return scratch;
}

/// A meta tensor of shape s; `fn` names the op if the shape is invalid.
inline tensor meta_like(const shape_t& s, dtype d, const char* fn = "xf") { return empty_dense(s, d, meta, fn); }

/// Elementwise unary op: out[i] = f(x[i]) computed in dtype `compute`, stored as `out_dt`.
/// `f` maps an xtensor expression to an xtensor expression.
template <class Types, class F>
tensor unary(const tensor& x, dtype compute, dtype out_dt, F&& f) {
  if (x.device() == meta) return meta_like(x.shape(), out_dt);
  tensor scratch;
  const tensor& xc = materialized(x, x.shape(), compute, scratch);
  tensor out = empty_dense(x.shape(), out_dt);
  Types::visit(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto o = [&] {
      if constexpr (Types::bool_out) return flat<bool>(out);
      else return flat<T>(out);
    }();
    xt::noalias(o) = f(flat<T>(xc));
  });
  return out;
}

/// Elementwise binary op with NumPy broadcasting; `fn` names the op when the broadcast shape is
/// invalid (its element count or bytes do not fit: NOTE: [Checked shape arithmetic]).
template <class Types, class F>
tensor binary(const tensor& a, const tensor& b, dtype compute, dtype out_dt, F&& f, const char* fn) {
  shape_t shape = a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape());
  if (a.device() == meta || b.device() == meta) return meta_like(shape, out_dt, fn);
  tensor out = empty_dense(shape, out_dt, cpu, fn);
  Types::visit(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto o = [&] {
      if constexpr (Types::bool_out) return flat<bool>(out);
      else return flat<T>(out);
    }();
    // Fast paths: a one-element side stays a scalar, so the other side streams contiguously.
    tensor sa, sb;
    if (b.numel() == 1 && a.numel() == out.numel()) {
      const tensor& ac = materialized(a, shape, compute, sa);
      T bv = static_cast<T>(materialized(b, b.shape(), compute, sb).impl()->template data<T>()[0]);
      xt::noalias(o) = f(flat<T>(ac), xt::xscalar<T>(bv));
    } else if (a.numel() == 1 && b.numel() == out.numel()) {
      const tensor& bc = materialized(b, shape, compute, sb);
      T av = static_cast<T>(materialized(a, a.shape(), compute, sa).impl()->template data<T>()[0]);
      xt::noalias(o) = f(xt::xscalar<T>(av), flat<T>(bc));
    } else {
      const tensor& ac = materialized(a, shape, compute, sa);
      const tensor& bc = materialized(b, shape, compute, sb);
      xt::noalias(o) = f(flat<T>(ac), flat<T>(bc));
    }
  });
  return out;
}

/// Type sets a kernel is instantiated for (keeps instantiations to what each op needs).
struct floating_types {
  static constexpr bool bool_out = false;
  template <class F>
  static void visit(dtype d, F&& f) { visit_floating(d, f); }
};
struct numeric_types {
  static constexpr bool bool_out = false;
  template <class F>
  static void visit(dtype d, F&& f) {
    if (d == dtype::int64) f(type_tag<std::int64_t>{});
    else visit_floating(d, f);
  }
};
/// numeric compute types, boolean output (comparisons)
struct compare_types {
  static constexpr bool bool_out = true;
  template <class F>
  static void visit(dtype d, F&& f) { numeric_types::visit(d == dtype::boolean ? dtype::int64 : d, f); }
};

}  // namespace xfunc::detail::backend
