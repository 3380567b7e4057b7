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
XFUNC_ELEMENT_UNARY(exp)
XFUNC_ELEMENT_UNARY(log)
XFUNC_ELEMENT_UNARY(sin)
XFUNC_ELEMENT_UNARY(cos)
XFUNC_ELEMENT_UNARY(tan)
XFUNC_ELEMENT_UNARY(tanh)
XFUNC_ELEMENT_UNARY(sqrt)
XFUNC_ELEMENT_UNARY(log1p)
XFUNC_ELEMENT_UNARY(expm1)
XFUNC_ELEMENT_UNARY(erf)
#undef XFUNC_ELEMENT_UNARY

#define XFUNC_ELEMENT_BINARY(name)                                    \
  template <class X>                                                  \
  XFUNC_ELEMENT_FN X name(const X& a, const X& b) {                                    \
    if constexpr (backend::is_simd<X>::value) return xsimd::name(a, b); \
    else return std::name(a, b);                                      \
  }
XFUNC_ELEMENT_BINARY(pow)
#undef XFUNC_ELEMENT_BINARY

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
    alignas(64) T ya[X::size], xa[X::size];
    a.store_unaligned(ya);
    b.store_unaligned(xa);
    for (std::size_t k = 0; k < X::size; ++k) ya[k] = std::atan2(ya[k], xa[k]);
    return X::load_unaligned(ya);
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

/// Whether x is NaN (false for integers).
template <class X>
XFUNC_ELEMENT_FN auto is_nan(const X& x) { return x != x; }

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
