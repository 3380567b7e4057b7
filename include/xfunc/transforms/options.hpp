#pragma once
/// \file
/// Transform options: tag values passed after f, in any order.
#include <xfunc/core/diagnostics.hpp>
#include <array>
#include <cstdint>
#include <optional>
#include <tuple>
#include <type_traits>

#include <xfunc/core/error.hpp>
#include <xfunc/core/layer.hpp>

namespace xfunc {

/// Which positional arguments to differentiate (negative indices count from the end).
template <int... I>
struct argnums_t {
  /// The number of indices.
  static constexpr int count = sizeof...(I);
};
/// `xf::argnums<0, 1>`: differentiate with respect to arguments 0 and 1 (default argnums<0>).
template <int... I>
inline constexpr argnums_t<I...> argnums{};

/// f returns std::pair<output, aux>; aux is passed through untouched by differentiation.
struct has_aux_t {};
/// The has_aux option: f returns std::pair<output, aux>.
inline constexpr has_aux_t has_aux{};

/// "this argument / output is not mapped".
struct none_t {};
/// An in_dims or out_dims entry for an argument or output that is not mapped.
inline constexpr none_t none{};

/// One entry per positional argument: an integer dim, xf::none, or a nested in_dims(...).
/// (An std::optional<int64_t> entry chooses at run time: nullopt means none.)
template <class... E>
struct in_dims_t {
  /// The entries, in argument order.
  std::tuple<E...> entries;
  /// The number of entries.
  static constexpr std::size_t size = sizeof...(E);
};
/// `xf::in_dims(0, xf::none, 1)`: where each positional argument of a vmapped function is mapped
/// (integers become int64_t).
template <class... E>
constexpr in_dims_t<std::conditional_t<std::is_integral_v<E>, std::int64_t, E>...> in_dims(E... e) {
  return {{static_cast<std::conditional_t<std::is_integral_v<E>, std::int64_t, E>>(e)...}};
}

/// One entry per output, or a single entry for every output.
template <class... E>
struct out_dims_t {
  /// The entries, in output order.
  std::tuple<E...> entries;
  /// The number of entries.
  static constexpr std::size_t size = sizeof...(E);
};
/// `xf::out_dims(0, 1)`: where the batch dimension goes in each output of a vmapped function.
template <class... E>
constexpr out_dims_t<std::conditional_t<std::is_integral_v<E>, std::int64_t, E>...> out_dims(E... e) {
  return {{static_cast<std::conditional_t<std::is_integral_v<E>, std::int64_t, E>>(e)...}};
}

/// Maps in chunks of n examples at a time (n > 0).
struct chunk_size_t {
  /// Examples per chunk.
  std::int64_t n;
};
/// `xf::chunk_size(n)`: vmap or jacrev maps n examples at a time, bounding memory (n > 0).
constexpr chunk_size_t chunk_size(std::int64_t n) { return {n}; }

/// Whether functionalize removes mutations only, or views too.
enum class remove : std::uint8_t { mutations, mutations_and_views };

namespace detail {
template <class T>
struct is_argnums : std::false_type {};
template <int... I>
struct is_argnums<argnums_t<I...>> : std::true_type {};
template <class T>
struct is_in_dims : std::false_type {};
template <class... E>
struct is_in_dims<in_dims_t<E...>> : std::true_type {};
template <class T>
struct is_out_dims : std::false_type {};
template <class... E>
struct is_out_dims<out_dims_t<E...>> : std::true_type {};

/// The option in Opts satisfying Pred, or `fallback`.
template <template <class> class Pred, class Fallback, class... Opts>
constexpr auto find_option(const std::tuple<Opts...>& opts, Fallback fallback) {
  constexpr std::size_t n = (0 + ... + (Pred<Opts>::value ? 1 : 0));
  static_assert(n <= 1, XFUNC_MSG_OPTION_TWICE);
  if constexpr (n == 0) {
    return fallback;
  } else {
    constexpr std::size_t idx = [] {
      std::size_t i = 0, found = 0;
      ((Pred<Opts>::value ? (found = i, ++i) : ++i), ...);
      return found;
    }();
    return std::get<idx>(opts);
  }
}

template <class T>
struct is_has_aux : std::is_same<T, has_aux_t> {};

/// Whether option type O is one of the kinds a transform takes (Preds...): each transform
/// static_asserts it for its options, so that an option it would ignore does not compile.
template <class O, template <class> class... Preds>
inline constexpr bool option_in = (Preds<O>::value || ...);
template <class T>
struct is_randomness : std::is_same<T, xfunc::randomness> {};
template <class T>
struct is_chunk_size : std::is_same<T, chunk_size_t> {};

template <class... Opts>
constexpr bool has_aux_in = (std::is_same_v<Opts, has_aux_t> || ...);

/// Normalised argnums (negative counted from the end) checked at compile time.
template <class A, std::size_t N>
struct argnums_of;
template <int... I, std::size_t N>
struct argnums_of<argnums_t<I...>, N> {
  static constexpr std::array<std::size_t, sizeof...(I)> value = {
      static_cast<std::size_t>(I < 0 ? I + static_cast<int>(N) : I)...};
  static constexpr bool in_range = ((I < static_cast<int>(N) && I >= -static_cast<int>(N)) && ...);
  static constexpr bool unique = [] {
    for (std::size_t i = 0; i < value.size(); ++i)
      for (std::size_t j = i + 1; j < value.size(); ++j)
        if (value[i] == value[j]) return false;
    return true;
  }();
  static constexpr bool contains(std::size_t k) {
    for (auto v : value)
      if (v == k) return true;
    return false;
  }
};
}  // namespace detail
}  // namespace xfunc
