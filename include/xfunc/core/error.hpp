#pragma once
/// \file
/// xf::error: the one exception type every runtime check of xfunc throws.
#include <sstream>
#include <stdexcept>
#include <string>

namespace xfunc {

/// Thrown by every runtime check; what() says what was wrong and what to do.
struct error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {

template <class... A>
std::string str_cat(const A&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

/// Throws xf::error with the concatenation of `parts`.
template <class... A>
[[noreturn]] void fail(const A&... parts) {
  throw error(str_cat(parts...));
}

}  // namespace detail
}  // namespace xfunc
