#pragma once
// Pytrees: nested std::tuple / std::pair / std::array / std::vector<tensor> / Hana-adapted
// structs with tensor leaves. Non-tensor leaves (double, int64_t, bool, ...) pass through.
#include <array>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/accessors.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>

#include <xfunc/core/tensor.hpp>

namespace xfunc {
namespace detail {

template <class T>
struct is_std_tuple : std::false_type {};
template <class... T>
struct is_std_tuple<std::tuple<T...>> : std::true_type {};
template <class A, class B>
struct is_std_tuple<std::pair<A, B>> : std::true_type {};
template <class T, std::size_t N>
struct is_std_tuple<std::array<T, N>> : std::true_type {};

template <class T>
struct is_std_vector : std::false_type {};
template <class T, class A>
struct is_std_vector<std::vector<T, A>> : std::true_type {};

template <class T>
inline constexpr bool is_hana_struct_v = boost::hana::Struct<T>::value;

/// Whether T is a tensor or a container/struct with tensor leaves (or non-tensor leaves).
template <class T>
inline constexpr bool is_tensor_v = std::is_same_v<std::remove_cvref_t<T>, tensor>;

/// A copy of v with every tensor leaf replaced by f(leaf).
template <class T, class F>
T tree_map(const T& v, F&& f) {
  if constexpr (std::is_same_v<T, tensor>) {
    return f(v);
  } else if constexpr (is_std_tuple<T>::value) {
    return std::apply([&](const auto&... e) { return T{tree_map(e, f)...}; }, v);
  } else if constexpr (is_std_vector<T>::value) {
    T out;
    out.reserve(v.size());
    for (const auto& e : v) out.push_back(tree_map(e, f));
    return out;
  } else if constexpr (is_hana_struct_v<T>) {
    T out = v;
    boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
      auto get = boost::hana::second(pair);
      get(out) = tree_map(get(v), f);
    });
    return out;
  } else {
    return v;  // non-tensor leaf
  }
}

/// Calls f(leaf) for every tensor leaf of v, in flattening order.
template <class T, class F>
void tree_for_each(const T& v, F&& f) {
  if constexpr (std::is_same_v<T, tensor>) {
    f(v);
  } else if constexpr (is_std_tuple<T>::value) {
    std::apply([&](const auto&... e) { (tree_for_each(e, f), ...); }, v);
  } else if constexpr (is_std_vector<T>::value) {
    for (const auto& e : v) tree_for_each(e, f);
  } else if constexpr (is_hana_struct_v<T>) {
    boost::hana::for_each(boost::hana::accessors<T>(),
                          [&](auto pair) { tree_for_each(boost::hana::second(pair)(v), f); });
  }
}

/// A copy of a with each tensor leaf replaced by f(leaf_of_a, matching_leaf_of_b).
template <class T, class F>
T tree_map2(const T& a, const T& b, F&& f) {
  if constexpr (std::is_same_v<T, tensor>) {
    return f(a, b);
  } else if constexpr (is_std_tuple<T>::value) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return T{tree_map2(std::get<I>(a), std::get<I>(b), f)...};
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (is_std_vector<T>::value) {
    if (a.size() != b.size())
      fail("xf: two pytrees differ in structure: a std::vector of ", a.size(), " entries against one of ",
           b.size());
    T out;
    for (std::size_t i = 0; i < a.size(); ++i) out.push_back(tree_map2(a[i], b[i], f));
    return out;
  } else if constexpr (is_hana_struct_v<T>) {
    T out = a;
    boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
      auto get = boost::hana::second(pair);
      get(out) = tree_map2(get(a), get(b), f);
    });
    return out;
  } else {
    return a;
  }
}

/// Flattened tensor leaves of v.
template <class T>
std::vector<tensor> tree_leaves(const T& v) {
  std::vector<tensor> out;
  tree_for_each(v, [&](const tensor& t) { out.push_back(t); });
  return out;
}

/// Whether T can appear as a pytree (tensor leaves somewhere, or a plain leaf).
template <class T>
constexpr bool has_tensor_leaves() {
  if constexpr (std::is_same_v<T, tensor>) return true;
  else if constexpr (is_std_tuple<T>::value)
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (has_tensor_leaves<std::tuple_element_t<I, T>>() || ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  else if constexpr (is_std_vector<T>::value) return has_tensor_leaves<typename T::value_type>();
  else if constexpr (is_hana_struct_v<T>) return true;
  else return false;
}

}  // namespace detail
}  // namespace xfunc
