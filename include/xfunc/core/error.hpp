#pragma once
/// \file
/// xf::error: the one exception type every runtime check of xfunc throws.
#include <cstddef>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <xfunc/core/linkage.hpp>

namespace xfunc {

/// Thrown by every runtime check; what() says what was wrong and what to do.
struct error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {

// NOTE: [Type-erased messages]
// Every check names its problem with fail("xf: ", what, " got shape ", s, ...): hundreds of
// calls, each with its own list of argument types (a string literal's type is its length,
// char[N]). Formatting them through one ostringstream fold per list instantiated a separate
// str_cat and fail for every call site's list: about a fifth of the object code of a user's
// translation unit. A part is now a pointer and the function that writes it, instantiated
// once per streamed type (const char*, long, shape_t, ...); the joining and the throw are
// compiled once, and fail<...> is a few instructions that fill an array of parts.

/// One piece of a message: the value and the function that writes it.
struct message_part {
  const void* value;
  void (*write)(std::ostream&, const void*);
};

template <class T>
void write_message_value(std::ostream& os, const void* v) {
  os << *static_cast<const T*>(v);
}
inline void write_message_c_string(std::ostream& os, const void* v) { os << static_cast<const char*>(v); }

/// A string literal or C string is written as text whatever its length; any other value through
/// its operator<< (found as the fold `os << part` found it: at the point of instantiation).
template <class T>
message_part message_part_of(const T& v) {
  if constexpr (std::is_array_v<T> && std::is_same_v<std::remove_cv_t<std::remove_extent_t<T>>, char>)
    return {static_cast<const char*>(v), &write_message_c_string};
  else if constexpr (std::is_same_v<T, const char*> || std::is_same_v<T, char*>)
    return {v, &write_message_c_string};
  else
    return {&v, &write_message_value<T>};
}

XFUNC_RUNTIME std::string join_message(const message_part* parts, std::size_t n);
[[noreturn]] XFUNC_RUNTIME void throw_message(const message_part* parts, std::size_t n);
#if XFUNC_RUNTIME_DEFINITIONS
XFUNC_RUNTIME std::string join_message(const message_part* parts, std::size_t n) {
  std::ostringstream os;
  for (std::size_t i = 0; i < n; ++i) parts[i].write(os, parts[i].value);
  return os.str();
}
XFUNC_RUNTIME void throw_message(const message_part* parts, std::size_t n) { throw error(join_message(parts, n)); }
#endif

/// The concatenation of `parts`, each written as by operator<<.
template <class... A>
std::string str_cat(const A&... parts) {
  if constexpr (sizeof...(A) == 0) {
    return {};
  } else {
    const message_part list[] = {message_part_of(parts)...};
    return join_message(list, sizeof...(A));
  }
}

/// Throws xf::error with the concatenation of `parts`.
template <class... A>
[[noreturn]] void fail(const A&... parts) {
  if constexpr (sizeof...(A) == 0) {
    throw error("");
  } else {
    const message_part list[] = {message_part_of(parts)...};
    throw_message(list, sizeof...(A));
  }
}

}  // namespace detail
}  // namespace xfunc
