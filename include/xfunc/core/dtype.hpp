#pragma once
/// \file
/// Element types: the four dtypes, their C++ types, promotion and a visitor.
#include <xfunc/core/diagnostics.hpp>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>

#include <xfunc/core/error.hpp>

namespace xfunc {

/// Element type of a tensor.
enum class dtype : std::uint8_t { float32, float64, int64, boolean };

///@{
/// Short names of the dtypes: f32, f64, i64 and b8 (boolean), as in `xf::zeros({2}, xf::f64)`.
inline constexpr dtype f32 = dtype::float32;
inline constexpr dtype f64 = dtype::float64;
inline constexpr dtype i64 = dtype::int64;
inline constexpr dtype b8 = dtype::boolean;
///@}

/// "float32", "float64", "int64", "bool".
constexpr std::string_view dtype_name(dtype d) {
  switch (d) {
    case dtype::float32: return "float32";
    case dtype::float64: return "float64";
    case dtype::int64: return "int64";
    case dtype::boolean: return "bool";
  }
  return "?";
}

/// Prints dtype_name(d).
inline std::ostream& operator<<(std::ostream& os, dtype d) { return os << dtype_name(d); }

/// Whether d is float32 or float64, the dtypes that can be differentiated.
constexpr bool is_floating(dtype d) { return d == dtype::float32 || d == dtype::float64; }

/// Bytes per element of d.
constexpr std::size_t dtype_size(dtype d) {
  switch (d) {
    case dtype::float32: return 4;
    case dtype::float64: return 8;
    case dtype::int64: return 8;
    case dtype::boolean: return 1;
  }
  return 0;
}

/// The dtype a C++ element type maps to (double→f64, float→f32, integers→i64, bool→b8).
template <class T>
constexpr dtype dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return dtype::boolean;
  else if constexpr (std::is_same_v<T, float>) return dtype::float32;
  else if constexpr (std::is_floating_point_v<T>) return dtype::float64;
  else if constexpr (std::is_integral_v<T>) return dtype::int64;
  else static_assert(sizeof(T) == 0, XFUNC_MSG_ELEMENT_TYPE);
}

/// Promotion of two tensor dtypes as in torch: bool < int64 < float32 < float64.
constexpr dtype promote(dtype a, dtype b) {
  auto rank = [](dtype d) {
    switch (d) {
      case dtype::boolean: return 0;
      case dtype::int64: return 1;
      case dtype::float32: return 2;
      case dtype::float64: return 3;
    }
    return 0;
  };
  return rank(a) >= rank(b) ? a : b;
}

/// Result dtype of a tensor combined with a C++ double: a double does not widen a floating
/// tensor, and turns an integer or boolean tensor into float32.
constexpr dtype promote_with_double(dtype t) { return is_floating(t) ? t : dtype::float32; }

namespace detail {
template <class T>
struct type_tag { using type = T; };

/// Calls f(type_tag<T>{}) with T the C++ element type of d.
template <class F>
decltype(auto) visit_dtype(dtype d, F&& f) {
  switch (d) {
    case dtype::float32: return f(type_tag<float>{});
    case dtype::float64: return f(type_tag<double>{});
    case dtype::int64: return f(type_tag<std::int64_t>{});
    case dtype::boolean: return f(type_tag<bool>{});
  }
  fail("xf: invalid dtype");
}

/// Like visit_dtype, for the two floating dtypes only.
template <class F>
decltype(auto) visit_floating(dtype d, F&& f) {
  if (d == dtype::float64) return f(type_tag<double>{});
  return f(type_tag<float>{});
}
}  // namespace detail
}  // namespace xfunc
