#pragma once
// CPU kernels: strided copies written once by hand (backend/strided.hpp), pointwise math on
// contiguous buffers as each op's per-element `fn` (NOTE: [Element math]) mapped over xsimd
// registers, large calls split over the thread pool (backend/parallel.hpp).
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <xfunc/backend/element.hpp>
#include <xfunc/backend/parallel.hpp>
#include <xfunc/backend/strided.hpp>
#include <xfunc/core/tensor.hpp>

namespace xfunc::detail::backend {

/// take ? a : b, chosen through bit masks. On data (a mask, a comparison of random values) the
/// compiler makes a branch of `?:`, mispredicted half the time; this is a blend, and a loop of
/// it vectorises.
template <class T>
T select_bits(bool take, T a, T b) {
  using U = unsigned_of_t<T>;  // (backend/strided.hpp)
  static_assert(sizeof(U) == sizeof(T) && std::is_trivially_copyable_v<T>);
  const U m = U(0) - static_cast<U>(take);
  return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(a) & m) | (std::bit_cast<U>(b) & ~m)));
}

// NOTE: [Pointwise chunks]
// A contiguous pointwise kernel over n elements runs as one loop when n is below
// 2 * pointwise_chunk, else as one loop per chunk of pointwise_chunk elements, split over the
// thread pool (NOTE: [Threads]). Chunks start at multiples of pointwise_chunk, a multiple of
// every SIMD width, and map_elements takes whole SIMD registers from the start of its range, so
// exactly the same elements take the SIMD path as in one loop over the whole buffer (SIMD and
// scalar math may round differently): the result is bitwise that of the unsplit kernel, for
// every thread count.
inline constexpr std::int64_t pointwise_chunk = std::int64_t(1) << 14;

/// for_each_chunk's large case, out of line: small calls keep the code of one loop.
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
  // no elements: any strides lay them out contiguously (as torch's is_contiguous says)
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 0) return true;
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

/// An operand of map_elements: contiguous values from p.
template <class T>
struct elements {
  const T* p;
  auto batch(std::int64_t i) const { return simd<T>::load_unaligned(p + i); }
  T value(std::int64_t i) const { return p[i]; }
  elements at(std::int64_t i) const { return {p + i}; }
};
/// An operand of map_elements: one value for every element.
template <class T>
struct repeated {
  T v;
  auto batch(std::int64_t) const { return simd<T>(v); }
  T value(std::int64_t) const { return v; }
  repeated at(std::int64_t) const { return *this; }
};

/// out[i] = f(in[i]...) for i in [0, n): whole SIMD registers from the start, then the tail one
/// by one (so which elements take the SIMD path depends only on their position: NOTE: [Element
/// math]). Boolean results (comparisons) and integer math run as plain loops. With Stream, the
/// whole registers go out by streaming stores (NOTE: [Streaming stores]; `out` aligned to a
/// register), for results too large to stay in the caches: the same values.
template <class T, bool Stream = false, class O, class F, class... In>
void map_elements(O* __restrict out, std::int64_t n, const F& f, const In&... in) {
  std::int64_t i = 0;
  if constexpr (std::is_same_v<O, T> && simd_elements<T>) {
    using V = simd<T>;
    constexpr std::int64_t W = V::size;
    for (; i + W <= n; i += W) {
      const V v = f(in.batch(i)...);
      if constexpr (Stream) stream_bytes<sizeof(V)>(out + i, &v);
      else v.store_unaligned(out + i);
    }
  }
  for (; i < n; ++i) out[i] = static_cast<O>(f(in.value(i)...));
}

/// map_elements over n elements in the chunks of NOTE: [Pointwise chunks].
template <class T, class O, class F, class... In>
void map_chunked(O* out, std::int64_t n, const F& f, const In&... in) {
  for_each_chunk(n, [&](std::int64_t b, std::int64_t len) { map_elements<T>(out + b, len, f, in.at(b)...); });
}

/// Elementwise unary op: out[i] = f(x[i]) computed in dtype `compute`, stored as `out_dt`; f is
/// an op's per-element `fn` (NOTE: [Element math]).
template <class Types, class F>
tensor unary(const tensor& x, dtype compute, dtype out_dt, const F& f) {
  if (x.device() == meta) return meta_like(x.shape(), out_dt);
  tensor scratch;
  const tensor& xc = materialized(x, x.shape(), compute, scratch);
  tensor out = empty_dense(x.shape(), out_dt);
  Types::visit(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<Types::bool_out, bool, T>;
    map_chunked<T>(out.impl()->template data<O>(), out.numel(), f, elements<T>{xc.impl()->template data<T>()});
  });
  return out;
}

/// Elementwise binary op with NumPy broadcasting; `fn` names the op when the broadcast shape is
/// invalid (its element count or bytes do not fit: NOTE: [Checked shape arithmetic]).
template <class Types, class F>
tensor binary(const tensor& a, const tensor& b, dtype compute, dtype out_dt, const F& f, const char* fn) {
  shape_t shape = a.shape() == b.shape() ? a.shape() : broadcast_shapes(a.shape(), b.shape(), fn);
  if (a.device() == meta || b.device() == meta) return meta_like(shape, out_dt, fn);
  tensor out = empty_dense(shape, out_dt, cpu, fn);
  Types::visit(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using O = std::conditional_t<Types::bool_out, bool, T>;
    const std::int64_t n = out.numel();
    O* po = out.impl()->template data<O>();
    // A one-element side stays a scalar, so the other side streams contiguously.
    tensor sa, sb;
    auto stream = [&](const tensor& t, tensor& scratch) {
      return elements<T>{materialized(t, shape, compute, scratch).impl()->template data<T>()};
    };
    auto one = [&](const tensor& t, tensor& scratch) {
      return repeated<T>{materialized(t, t.shape(), compute, scratch).impl()->template data<T>()[0]};
    };
    if (b.numel() == 1 && a.numel() == n) map_chunked<T>(po, n, f, stream(a, sa), one(b, sb));
    else if (a.numel() == 1 && b.numel() == n) map_chunked<T>(po, n, f, one(a, sa), stream(b, sb));
    else map_chunked<T>(po, n, f, stream(a, sa), stream(b, sb));
  });
  return out;
}

/// o[i] = c[i] ? x[i] : y[i] (x[0] / y[0] for a scalar side), without a branch on the mask
/// (select_bits: 8x faster than `?:` on a random mask).
template <bool XScalar, bool YScalar, class T>
void select_run(T* __restrict o, const bool* __restrict c, const T* __restrict x, const T* __restrict y,
                std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = select_bits(c[i], x[XScalar ? 0 : i], y[YScalar ? 0 : i]);
}

/// where(c, a, b) broadcast to `shape` in dtype dt (a one-element a or b, as in
/// where(mask, x, 0.5), is read as a scalar, not broadcast into a buffer).
template <int = 0>
tensor where(const tensor& c, const tensor& a, const tensor& b, const shape_t& shape, dtype dt, const char* op) {
  tensor cc = materialize(c, shape, dtype::boolean);
  const shape_t one(shape.size(), 1);
  const bool a1 = a.numel() == 1, b1 = b.numel() == 1;
  tensor ac = materialize(a, a1 ? one : shape, dt), bc = materialize(b, b1 ? one : shape, dt);
  tensor out = empty_dense(shape, dt, cpu, op);
  visit_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool* pc = cc.impl()->template data<bool>();
    const T* x = ac.impl()->template data<T>();
    const T* y = bc.impl()->template data<T>();
    T* o = out.impl()->template data<T>();
    auto run = [&](auto x_scalar, auto y_scalar) {
      for_each_chunk(out.numel(), [&](std::int64_t i, std::int64_t n) {
        select_run<decltype(x_scalar)::value, decltype(y_scalar)::value>(o + i, pc + i, x_scalar ? x : x + i,
                                                                         y_scalar ? y : y + i, n);
      });
    };
    using yes = std::true_type;
    using no = std::false_type;
    if (a1) b1 ? run(yes{}, yes{}) : run(yes{}, no{});
    else b1 ? run(no{}, yes{}) : run(no{}, no{});
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
