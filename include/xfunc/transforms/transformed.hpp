#pragma once
/// \file
/// The type of a transformed function, and xf::transform_names / xf::transform_depth_v.
#include <array>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace xfunc {
namespace detail {
/// Base of every transformed-function type: Name is the transform, F the function it wraps.
template <class F>
struct transform_base {
  using inner_type = F;
};

template <class T, class = void>
struct is_transformed : std::false_type {};
template <class T>
struct is_transformed<T, std::void_t<typename T::inner_type, decltype(T::transform_name)>> : std::true_type {};
}  // namespace detail

/// Number of transforms nested in the type T (0 for a plain function).
template <class T>
constexpr std::size_t transform_depth_of() {
  using U = std::remove_cvref_t<T>;
  if constexpr (detail::is_transformed<U>::value) return 1 + transform_depth_of<typename U::inner_type>();
  else return 0;
}
/// Number of transforms nested in the type T (2 for `decltype(xf::vmap(xf::grad(f)))`).
template <class T>
inline constexpr std::size_t transform_depth_v = transform_depth_of<T>();

/// The transforms nested in T, outermost first (e.g. {"vmap", "grad"}).
template <class T>
constexpr std::array<std::string_view, transform_depth_v<T>> transform_names() {
  std::array<std::string_view, transform_depth_v<T>> out{};
  if constexpr (transform_depth_v<T> > 0) {
    using U = std::remove_cvref_t<T>;
    out[0] = U::transform_name;
    auto rest = transform_names<typename U::inner_type>();
    for (std::size_t i = 0; i < rest.size(); ++i) out[i + 1] = rest[i];
  }
  return out;
}
}  // namespace xfunc
