#pragma once
/// \file
/// xf::arg_names: the parameter names of a custom op's schema (API.md §4.1).
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace xfunc {

/// Names for a custom op's parameters, one per parameter of fn, in order.
struct arg_names_t {
  /// The names, in parameter order.
  std::vector<std::string> names;
};

/// xf::arg_names("x", "y", "alpha"): names the parameters of xf::custom_op("ns::name", fn, ...).
template <class... S>
  requires(std::is_convertible_v<const S&, std::string_view> && ...)
arg_names_t arg_names(const S&... s) {
  return {{std::string(std::string_view(s))...}};
}

}  // namespace xfunc
