#pragma once
// Per-element math: what a pointwise op states once (its `fn`), in functions that take a single
// value or a SIMD register of values alike. Backends map an op's `fn` over their data: the CPU
// calls it on xsimd registers and on single values for the tail (backend::map_elements in
// backend/cpu.hpp), a GPU backend on single values in device code.
#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

namespace xfunc::detail::backend {

/// The SIMD register type for T on the target the code is compiled for (xsimd).
template <class T>
using simd = xsimd::batch<T>;

template <class T>
struct is_simd : std::false_type {};
template <class T, class A>
struct is_simd<xsimd::batch<T, A>> : std::true_type {};

/// Whether pointwise kernels over T run on SIMD registers (floating types; integer ones are
/// left to the compiler's vectoriser, which handles their plain arithmetic).
template <class T>
inline constexpr bool simd_elements = std::is_same_v<T, float> || std::is_same_v<T, double>;

}  // namespace xfunc::detail::backend

// NOTE: [Element math]
// An op's `fn` is written with the functions of xfunc::detail::element and the operators
// + - * / < > == != on its arguments, so that it compiles for a value (float, double, int64_t)
// and for an xsimd register of values. Comparisons give bool or xsimd::batch_bool: combine them
// with element::select and element::either, never with ?: or || (which need a bool). Constants
// go through lit(x, c), the constant c in x's type (broadcast for a register). SIMD and scalar
// math may round differently in the last place (exp, sin, ...); map_elements decides which
// elements take which path from their position alone, so results do not depend on how a call
// is cut into chunks or threads. The functions are __host__ __device__ under nvcc
// (XFUNC_ELEMENT_FN), so the same `fn` compiles into CUDA kernels (tests/cuda).

/// Marks the element functions as callable from device code when nvcc compiles them (where
/// they are not, nvcc compiles a kernel that calls them to an empty body, without an error).
#if defined(__CUDACC__)
#define XFUNC_ELEMENT_FN __host__ __device__
#else
#define XFUNC_ELEMENT_FN
#endif
/// The same, for element functions that a kernel's loop must inline: GCC left `exp` out of line
/// in large translation units (bench_kernels), a call per register.
#if defined(__CUDACC__)
#define XFUNC_ELEMENT_INLINE_FN __host__ __device__ __forceinline__
#else
#define XFUNC_ELEMENT_INLINE_FN [[gnu::always_inline]] inline
#endif

namespace xfunc::detail::element {

template <class X>
struct value_of {
  using type = X;
};
template <class T, class A>
struct value_of<xsimd::batch<T, A>> {
  using type = T;
};
/// The element type of X (a value or an xsimd register).
template <class X>
using value_t = typename value_of<X>::type;

/// The constant c as an X.
template <class X, class C>
XFUNC_ELEMENT_FN X lit(const X&, C c) { return X(static_cast<value_t<X>>(c)); }

/// take ? a : b, element by element.
template <class C, class X>
XFUNC_ELEMENT_FN X select(const C& take, const X& a, const X& b) {
  if constexpr (backend::is_simd<X>::value) return xsimd::select(take, a, b);
  else return take ? a : b;
}

#define XFUNC_ELEMENT_UNARY(name)                              \
  template <class X>                                           \
  XFUNC_ELEMENT_FN X name(const X& x) {                                         \
    if constexpr (backend::is_simd<X>::value) return xsimd::name(x); \
    else return std::name(x);                                  \
  }
XFUNC_ELEMENT_UNARY(abs)
XFUNC_ELEMENT_UNARY(log)
XFUNC_ELEMENT_UNARY(sin)
XFUNC_ELEMENT_UNARY(cos)
XFUNC_ELEMENT_UNARY(tan)
XFUNC_ELEMENT_UNARY(sqrt)
XFUNC_ELEMENT_UNARY(log1p)
#undef XFUNC_ELEMENT_UNARY

/// Whether x is NaN (false for integers). Not `x != x`: xsimd 8's AVX-512 `!=` is the ordered
/// comparison (_CMP_NEQ_OQ), false for a NaN lane, unlike IEEE's `!=` and its SSE and AVX
/// versions. Registers take xsimd::isnan, one unordered comparison on every target (`!(x == x)`
/// is right too, but its negated mask made amax over rows 1.7x slower with AVX-512); scalars,
/// `!(x == x)`, since `==` is ordered everywhere.
template <class X>
XFUNC_ELEMENT_FN auto is_nan(const X& x) {
  if constexpr (backend::is_simd<X>::value) return xsimd::isnan(x);
  else return !(x == x);
}

/// a != b as IEEE defines it (true when either is NaN), on every SIMD target (see is_nan).
template <class X>
XFUNC_ELEMENT_FN auto not_equal(const X& a, const X& b) { return !(a == b); }

/// f (a scalar std function) applied to each lane of register a (and b): for the rare registers
/// that xsimd's function must not be given (NOTE: [Exponentials of double registers]).
template <class F, class X>
X lane_by_lane(F f, const X& a) {
  alignas(64) value_t<X> v[X::size];
  a.store_aligned(v);
  for (std::size_t k = 0; k < X::size; ++k) v[k] = f(v[k]);
  return X::load_aligned(v);
}
template <class F, class X>
X lane_by_lane(F f, const X& a, const X& b) {
  alignas(64) value_t<X> u[X::size], v[X::size];
  a.store_aligned(u);
  b.store_aligned(v);
  for (std::size_t k = 0; k < X::size; ++k) u[k] = f(u[k], v[k]);
  return X::load_aligned(u);
}

// NOTE: [Exponentials of double registers]
// xsimd's exp, expm1, tanh, erf and pow on double registers turn the scaled argument into an
// int64 exponent; where the instruction set has no packed double-to-int64 conversion (SSE2,
// AVX2) that is a scalar cast per lane, undefined behaviour for a NaN, infinite or huge value
// (clang's UBSan reports it; x86 happens to give INT64_MIN, which xsimd's final selects mask).
// So a register with a lane outside the ordinary range (one test per register) gets an argument
// clamped to [-800, 800], where every result is already its limit (exp(800) = inf, exp(-800) = 0,
// tanh and erf +-1, expm1(-800) = -1), with NaN lanes put back afterwards: still on registers, so
// masked softmax rows full of -inf stay vectorised (float registers convert with a packed
// instruction and need no clamp). For both types xsimd's exp
// also overflows to inf early (exp(709.7) and expf(88.5) are finite) and gives 0 where the
// result is subnormal, where std::exp and torch give finite values; a register with a lane in
// those narrow ranges goes lane by lane through std::exp. pow goes lane by lane through std::pow
// where a double lane could overflow the exponent, or where a result is 0 or inf from a nonzero
// base (rare: no cost otherwise).
template <class X>
XFUNC_ELEMENT_FN X clamp_exponent_arg(const X& x) {
  const X hi(800.0), lo(-800.0);
  const X below_hi = xsimd::select(x < hi, x, hi);  // NaN -> hi
  return xsimd::select(below_hi > lo, below_hi, lo);
}

/// Whether every lane of x lies in [lo, hi] (false for a NaN lane).
template <class X>
bool all_within(const X& x, double lo, double hi) {
  using T = value_t<X>;
  return xsimd::all((x >= X(T(lo))) & (x <= X(T(hi))));
}

/// The arguments for which xsimd's exp of a T register is a normal number: [under, over].
template <class T>
struct exponential_range {
  static constexpr bool f64 = std::is_same_v<T, double>;
  static constexpr double under = f64 ? -708.0 : -87.0, over = f64 ? 709.0 : 88.0;
};

/// exp or expm1 of a register with a lane outside exponential_range: those lanes are mended
/// (NOTE: [Exponentials of double registers]).
template <class X, class Simd, class Std>
[[gnu::noinline]] X exponential_edges(const X& x, Simd simd_fn, Std std_fn, bool subnormal_results) {
  using range = exponential_range<value_t<X>>;
  constexpr bool f64 = range::f64;
  const auto overflow_edge = (x > X(range::over)) & (x < X(f64 ? 710.0 : 89.0));
  const auto underflow_edge = (x < X(range::under)) & (x > X(f64 ? -746.0 : -104.0));
  if (xsimd::any(subnormal_results ? (overflow_edge | underflow_edge) : overflow_edge)) return lane_by_lane(std_fn, x);
  if constexpr (f64) return xsimd::select(is_nan(x), x, simd_fn(clamp_exponent_arg(x)));
  else return simd_fn(x);
}

/// exp or expm1 of a register, as std gives them: the fast path (in_range_fn, for registers whose
/// lanes all lie in exponential_range), one test per register, inlined into the kernel's loop; the
/// rare registers with a lane near or beyond the limits call out. (As one function, GCC inlined
/// none of it: a call per register, and `exp(x)` on 2^24 floats took 1.06x the time on a Zen 2
/// VM, 2026-12-06.)
template <class X, class InRange, class Simd, class Std>
[[gnu::always_inline]] inline X exponential(const X& x, InRange in_range_fn, Simd simd_fn, Std std_fn,
                                            bool subnormal_results) {
  using range = exponential_range<value_t<X>>;
  if (all_within(x, range::under, range::over)) [[likely]]
    return in_range_fn(x);
  return exponential_edges(x, simd_fn, std_fn, subnormal_results);
}

/// xsimd's exp of a register whose lanes all lie in exponential_range, with the same bits: for
/// floats, xsimd 8's own steps without its two selects for the ends of the range, which such lanes
/// never reach. A fifth less work (2^24 floats in cache 9.5 -> 7.4 ms): `exp(x)` on 2^24 floats
/// from memory 0.82x the time, 1.03x a `memcpy` of the same bytes instead of 1.23x (one thread,
/// Zen 2 VM, 2026-12-06).
template <class X>
[[gnu::always_inline]] inline X exp_in_range(const X& v) {
#if XSIMD_VERSION_MAJOR == 8
  if constexpr (std::is_same_v<value_t<X>, float>) {
    namespace xd = xsimd::kernel::detail;
    using reduction = xd::exp_reduction<float, typename X::arch_type, xd::exp_tag>;
    X r;
    const X k = reduction::reduce(v, r);
    return xsimd::ldexp(reduction::approx(r), xsimd::to_int(k));
  }
#endif
  return xsimd::exp(v);
}

template <class X>
XFUNC_ELEMENT_INLINE_FN X exp(const X& x) {
  if constexpr (backend::is_simd<X>::value) {
    using T = value_t<X>;
    return exponential(x, [](const X& v) { return exp_in_range(v); }, [](const X& v) { return xsimd::exp(v); },
                       [](T v) { return std::exp(v); }, true);
  } else {
    return std::exp(x);
  }
}

template <class X>
XFUNC_ELEMENT_FN X expm1(const X& x) {
  if constexpr (backend::is_simd<X>::value) {
    using T = value_t<X>;
    const auto simd_fn = [](const X& v) { return xsimd::expm1(v); };
    return exponential(x, simd_fn, simd_fn, [](T v) { return std::expm1(v); }, false);
  } else {
    return std::expm1(x);
  }
}

#define XFUNC_ELEMENT_SATURATING(name)                                                      \
  template <class X>                                                                        \
  XFUNC_ELEMENT_FN X name(const X& x) {                                                     \
    if constexpr (backend::is_simd<X>::value && std::is_same_v<value_t<X>, double>) {       \
      if (all_within(x, -800.0, 800.0)) return xsimd::name(x);                              \
      return xsimd::select(is_nan(x), x, xsimd::name(clamp_exponent_arg(x)));               \
    } else if constexpr (backend::is_simd<X>::value) {                                      \
      return xsimd::name(x);                                                                \
    } else {                                                                                \
      return std::name(x);                                                                  \
    }                                                                                       \
  }
XFUNC_ELEMENT_SATURATING(tanh)
XFUNC_ELEMENT_SATURATING(erf)
#undef XFUNC_ELEMENT_SATURATING

/// a to the power b for integers, as torch computes it: by squaring, wrapping on overflow (the
/// products are taken unsigned), and for b < 0 the truncated value of 1 / a^-b (1 for a = 1,
/// +-1 for a = -1, else 0).
template <class T>
XFUNC_ELEMENT_FN T integer_pow(T a, T b) {
  if (b < 0) return a == 1 ? T(1) : a == -1 ? (b % 2 != 0 ? T(-1) : T(1)) : T(0);
  using U = std::make_unsigned_t<T>;
  U result = 1, base = static_cast<U>(a);
  for (U e = static_cast<U>(b); e != 0; e >>= 1) {
    if (e & 1) result *= base;
    base *= base;
  }
  return static_cast<T>(result);
}

/// a to the power b, as std::pow gives it (NOTE: [Exponentials of double registers]); integers
/// as integer_pow.
template <class X>
XFUNC_ELEMENT_FN X pow(const X& a, const X& b) {
  if constexpr (std::is_integral_v<X>) {
    return integer_pow(a, b);
  } else if constexpr (backend::is_simd<X>::value) {
    using T = value_t<X>;
    auto by_lane = [&] { return lane_by_lane([](T u, T v) { return std::pow(u, v); }, a, b); };
    if constexpr (std::is_same_v<T, double>) {
      // |b * log2|a|| stays far inside int64 when both are finite and |b| <= 2^50
      const X inf(std::numeric_limits<double>::infinity()), big(0x1p50);
      if (xsimd::any((xsimd::abs(a) == inf) | is_nan(a) | !(xsimd::abs(b) <= big))) return by_lane();
    }
    // results at the ends of the range: xsimd flushes subnormals to 0 and overflows early
    const X r = xsimd::pow(a, b), zero(T(0)), inf(std::numeric_limits<T>::infinity());
    if (xsimd::any(not_equal(a, zero) & ((r == zero) | (xsimd::abs(r) == inf)))) return by_lane();
    return r;
  } else {
    return std::pow(a, b);
  }
}

/// atan2(a, b) as std::atan2 (and torch) gives it: xsimd's returns NaN where both are zero or
/// both infinite, so a register with such a lane is computed lane by lane (rare: no cost otherwise).
template <class X>
XFUNC_ELEMENT_FN X atan2(const X& a, const X& b) {
  if constexpr (backend::is_simd<X>::value) {
    using T = value_t<X>;
    const X inf(std::numeric_limits<T>::infinity());
    const auto both_zero = (a == X(T(0))) & (b == X(T(0)));
    const auto both_inf = (xsimd::abs(a) == inf) & (xsimd::abs(b) == inf);
    if (!xsimd::any(both_zero | both_inf)) return xsimd::atan2(a, b);
    return lane_by_lane([](T y, T x) { return std::atan2(y, x); }, a, b);
  } else {
    return std::atan2(a, b);
  }
}

/// a or b, element by element (|| for values, | for xsimd masks).
template <class C>
XFUNC_ELEMENT_FN C either(const C& a, const C& b) {
  if constexpr (std::is_same_v<C, bool>) return a || b;
  else return a | b;
}

/// The larger of a and b; NaN when either is NaN (as torch.maximum).
template <class X>
XFUNC_ELEMENT_FN X maximum(const X& a, const X& b) { return select(either(a > b, is_nan(a)), a, b); }
/// The smaller of a and b; NaN when either is NaN (as torch.minimum).
template <class X>
XFUNC_ELEMENT_FN X minimum(const X& a, const X& b) { return select(either(a < b, is_nan(a)), a, b); }

/// -1, 0 or 1 by the sign of x; a zero keeps its sign and NaN stays NaN.
template <class X>
XFUNC_ELEMENT_FN X sign(const X& x) { return select(x > lit(x, 0), lit(x, 1), select(x < lit(x, 0), lit(x, -1), x)); }

}  // namespace xfunc::detail::element
