#pragma once
/// \file
/// xf::schema_literal: a string literal held by value, so that it can be a template argument
/// (a C++20 class-type non-type template parameter), as in
/// xf::custom_op<"mylib::foo(Tensor x, float alpha) -> Tensor">(fn) (API.md §4.1).
#include <cstddef>
#include <string_view>

namespace xfunc {

/// The characters of a string literal, by value: `template <xf::schema_literal S>` accepts
/// `<"...">` (N, the literal's size with its terminating '\0', is deduced). A structural type,
/// so two template arguments with the same text are the same argument.
template <std::size_t N>
struct schema_literal {
  /// The characters, with the terminating '\0'.
  char text[N] = {};  // public: a structural type's members must be

  /// An all-zero text.
  constexpr schema_literal() = default;
  // Implicit, so that a string literal converts to the template argument.
  /// Copies a string literal.
  constexpr schema_literal(const char (&s)[N]) noexcept {
    for (std::size_t i = 0; i < N; ++i) text[i] = s[i];
  }

  /// The text, without the terminating '\0'.
  constexpr std::string_view view() const noexcept { return {text, N - 1}; }
  /// The number of characters, without the terminating '\0'.
  static constexpr std::size_t size() noexcept { return N - 1; }
};

}  // namespace xfunc
