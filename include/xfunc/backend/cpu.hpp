#pragma once
// CPU kernels: strided copies written once by hand (backend/strided.hpp), math on contiguous
// buffers through xtensor (vectorised with xsimd when XTENSOR_USE_XSIMD is defined, as the
// xfunc::xfunc target does), large ones split over the thread pool (backend/parallel.hpp).
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xnoalias.hpp>

#include <xfunc/backend/parallel.hpp>
#include <xfunc/backend/strided.hpp>
#include <xfunc/core/tensor.hpp>

namespace xfunc::detail::backend {

/// take ? a : b, chosen through bit masks. On data (a mask, a comparison of random values) the
/// compiler makes a branch of `?:`, mispredicted half the time; this is a blend, and a loop of
/// it vectorises.
template <class T>
T select_bits(bool take, T a, T b) {
  using U = std::conditional_t<sizeof(T) == 8, std::uint64_t,
                               std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint8_t>>;
  static_assert(sizeof(U) == sizeof(T) && std::is_trivially_copyable_v<T>);
  const U m = U(0) - static_cast<U>(take);
  return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(a) & m) | (std::bit_cast<U>(b) & ~m)));
}

/// A 1-d xtensor view of the n elements at p. (Out of line, the adaptor's constructor is inlined
/// into it; inlined into each kernel, GCC calls the constructor out of line: a 1-element op
/// pays several ns for it.)
template <class T>
[[gnu::noinline]] auto flat(T* p, std::int64_t n) {
  const auto u = static_cast<std::size_t>(n);
  // the pointer as a prvalue: given an lvalue, xt::adapt would keep a reference to it (here, to
  // this function's parameter)
  return xt::adapt(static_cast<T*>(p), u, xt::no_ownership(), std::array<std::size_t, 1>{u});
}
/// A 1-d xtensor view of the contiguous data of t.
template <class T>
auto flat(const tensor& t) {
  return flat(t.impl()->template data<T>(), t.numel());
}

// NOTE: [Pointwise chunks]
// A contiguous pointwise kernel over n elements runs as one xtensor assignment when n is below
// 2 * pointwise_chunk, else as one assignment per chunk of pointwise_chunk elements, split over
// the thread pool (NOTE: [Threads]). Chunks start at multiples of pointwise_chunk elements of the
// output, which is 64-byte aligned like every buffer, so each chunk starts aligned; xtensor
// computes the elements before the first aligned one and after the last whole SIMD batch
// without SIMD, and SIMD and scalar math (exp, ...) may round differently. With aligned starts
// and a chunk length that is a multiple of every SIMD width, exactly the same elements take the
// SIMD path as in one assignment over the whole buffer, so the result is bitwise that of the
// unsplit kernel, for every thread count.
inline constexpr std::int64_t pointwise_chunk = std::int64_t(1) << 14;

/// for_each_chunk's large case, out of line: small calls keep the code of one assignment.
template <class F>
[[gnu::noinline]] void for_each_chunk_of(std::int64_t n, const F& f) {
  const std::int64_t chunks = (n + pointwise_chunk - 1) / pointwise_chunk;
  parallel_for(chunks, pointwise_chunk, [&](std::int64_t c) {
    const std::int64_t b = c * pointwise_chunk;
    f(b, n - b < pointwise_chunk ? n - b : pointwise_chunk);
  });
}
/// Calls f(begin, length) over [0, n) in the chunks of NOTE: [Pointwise chunks].
template <class F>
void for_each_chunk(std::int64_t n, F&& f) {
  if (n < 2 * pointwise_chunk) [[likely]]
    f(std::int64_t(0), n);
  else
    for_each_chunk_of(n, f);
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
  for (auto e : shape)  // nothing to copy (and the contiguous strides of `shape` need not fit)
    if (e == 0) return;
  src.prepare_access();
  visit_dtype(src.dt, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* base = reinterpret_cast<const S*>(src.store->data) + src.offset;
    const std::int64_t n = numel_of(shape);
    if constexpr (std::is_same_v<S, T>)
      if (n <= copy_grain && is_contiguous_layout(shape, strides)) {  // small and plain: no layout work
        std::memcpy(dst, base, static_cast<std::size_t>(n) * sizeof(T));
        return;
      }
    strided_copy<T, S>(shape, dst, contiguous_strides(shape), base, strides);
  });
}

inline bool is_materialized(const tensor& t, const shape_t& shape, dtype d) {
  const tensor_impl& s = *t.impl();
  return s.dt == d && s.shape == shape && is_contiguous_layout(s.shape, s.strides);
}

/// A contiguous copy of t, converted to dtype d and broadcast to `shape`.
template <int = 0>
tensor materialized_copy(const tensor& t, const shape_t& shape, dtype d) {
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
template <int = 0>
tensor materialize(const tensor& t, const shape_t& shape, dtype d) {
  return is_materialized(t, shape, d) ? t : materialized_copy(t, shape, d);
}

template <int = 0>
tensor contiguous_as(const tensor& t, dtype d) { return materialize(t, t.shape(), d); }

/// materialize() for kernels that only read the result: t itself when it already is what they
/// need (no copy of the handle, which costs an atomic count pair in a multithreaded process),
/// else the converted tensor, kept in `scratch`.
template <int = 0>
const tensor& materialized(const tensor& t, const shape_t& shape, dtype d, tensor& scratch) {
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
    using O = std::conditional_t<Types::bool_out, bool, T>;
    const std::int64_t n_out = numel_of(out.impl()->shape);
    O* po = out.impl()->template data<O>();
    T* px = xc.impl()->template data<T>();  // (only read)
    if (n_out < 2 * pointwise_chunk) [[likely]] {  // one assignment
      auto o = flat(po, n_out);
      xt::noalias(o) = f(flat(px, n_out));
      return;
    }
    for_each_chunk_of(n_out, [&](std::int64_t b, std::int64_t n) {
      auto o = flat(po + b, n);
      xt::noalias(o) = f(flat(px + b, n));
    });
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
    using O = std::conditional_t<Types::bool_out, bool, T>;
    const std::int64_t n_out = numel_of(out.impl()->shape);
    // Small calls are one assignment.
    const bool small = n_out < 2 * pointwise_chunk;
    O* po = out.impl()->template data<O>();
    auto in = [](const tensor& t) { return t.impl()->template data<T>(); };  // (only read)
    // Fast paths: a one-element side stays a scalar, so the other side streams contiguously.
    tensor sa, sb;
    if (b.numel() == 1 && a.numel() == n_out) {
      const tensor& ac = materialized(a, shape, compute, sa);
      T bv = static_cast<T>(materialized(b, b.shape(), compute, sb).impl()->template data<T>()[0]);
      T* pa = in(ac);
      if (small) {
        auto o = flat(po, n_out);
        xt::noalias(o) = f(flat(pa, n_out), xt::xscalar<T>(bv));
        return;
      }
      for_each_chunk_of(n_out, [&](std::int64_t i, std::int64_t n) {
        auto o = flat(po + i, n);
        xt::noalias(o) = f(flat(pa + i, n), xt::xscalar<T>(bv));
      });
    } else if (a.numel() == 1 && b.numel() == n_out) {
      const tensor& bc = materialized(b, shape, compute, sb);
      T av = static_cast<T>(materialized(a, a.shape(), compute, sa).impl()->template data<T>()[0]);
      T* pb = in(bc);
      if (small) {
        auto o = flat(po, n_out);
        xt::noalias(o) = f(xt::xscalar<T>(av), flat(pb, n_out));
        return;
      }
      for_each_chunk_of(n_out, [&](std::int64_t i, std::int64_t n) {
        auto o = flat(po + i, n);
        xt::noalias(o) = f(xt::xscalar<T>(av), flat(pb + i, n));
      });
    } else {
      const tensor& ac = materialized(a, shape, compute, sa);
      const tensor& bc = materialized(b, shape, compute, sb);
      T* pa = in(ac);
      T* pb = in(bc);
      if (small) {
        auto o = flat(po, n_out);
        xt::noalias(o) = f(flat(pa, n_out), flat(pb, n_out));
        return;
      }
      for_each_chunk_of(n_out, [&](std::int64_t i, std::int64_t n) {
        auto o = flat(po + i, n);
        xt::noalias(o) = f(flat(pa + i, n), flat(pb + i, n));
      });
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

// Strided copies are what every layout change runs, for every pair of dtypes: compiled once in
// xfunc::kernels (NOTE: [Precompiled kernels]).
#if defined(XFUNC_PRECOMPILED_KERNELS)
namespace xfunc::detail::backend {
extern template tensor materialized_copy<0>(const tensor&, const shape_t&, dtype);
}  // namespace xfunc::detail::backend
#endif
