#pragma once
// xf::custom_op<"schema">(fn): a written-out schema (schema/parse.hpp) checked against fn's
// signature (schema/signature.hpp) at compile time, parameter by parameter and then the return
// (API.md §4.1). The kinds on both sides come from those two headers; nothing here maps types.
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include <xfunc/core/diagnostics.hpp>
#include <xfunc/schema/parse.hpp>
#include <xfunc/schema/schema_literal.hpp>
#include <xfunc/schema/signature.hpp>

namespace xfunc::detail::schema {

/// How a schema parameter and fn's parameter at the same position disagree.
enum class param_mismatch : std::uint8_t {
  none,
  type,           // different types
  read_only,      // Tensor(a!) in the schema, but fn takes const tensor& or tensor
  not_annotated,  // Tensor in the schema, but fn takes tensor& (writes it in place)
};

// The kind of T for a parameter P = std::optional<T> (optional_value); P's own kind otherwise.
template <class P>
constexpr arg_kind value_kind_of() {
  if constexpr (kind_of<P>() == arg_kind::optional_value) return *optional_value_kind<std::remove_cvref_t<P>>::inner;
  else return kind_of<P>();
}

/// Compares a schema parameter with fn's parameter of kind `kind` (and `value`, see
/// value_kind_of).
constexpr param_mismatch compare_param(const schema_param& s, arg_kind kind, arg_kind value) {
  if (s.kind == kind && s.value == value) return param_mismatch::none;
  if (s.kind == arg_kind::mutable_tensor && kind == arg_kind::tensor) return param_mismatch::read_only;
  if (s.kind == arg_kind::tensor && kind == arg_kind::mutable_tensor) return param_mismatch::not_annotated;
  return param_mismatch::type;
}

struct param_mismatch_at {
  std::size_t position;  // the arity when all agree
  param_mismatch what;
};

/// The first parameter at which schema S and the parameter types A... disagree (same count).
template <schema_literal S, class... A, std::size_t... I>
constexpr param_mismatch_at first_param_mismatch(std::type_identity<std::tuple<A...>>, std::index_sequence<I...>) {
  constexpr auto& p = parsed_schema_v<S>;
  const param_mismatch m[] = {compare_param(p.params[I], kind_of<A>(), value_kind_of<A>())..., param_mismatch::none};
  for (std::size_t i = 0; i < sizeof...(A); ++i)
    if (m[i] != param_mismatch::none) return {i, m[i]};
  return {sizeof...(A), param_mismatch::none};
}

// Always false: conditions of the failing checks, so that the note that follows a message names
// the position and the types (see NOTE: [Schema text notes] in schema/parse.hpp).
template <std::size_t Position, schema_literal SchemaType, class FnParam>
inline constexpr bool schema_vs_fn_param = false;
template <schema_literal SchemaReturn, class FnReturn>
inline constexpr bool schema_vs_fn_return = false;
template <std::size_t Position, class FnParam>
inline constexpr bool fn_param_not_in_schema = false;
template <std::size_t Position, schema_literal SchemaType>
inline constexpr bool schema_param_not_in_fn = false;

/// The schema type of parameter K of S, as written (without whitespace).
template <schema_literal S, std::size_t K>
constexpr auto schema_param_type() {
  return text_literal<S, parsed_schema_v<S>.params[K].type, true>();
}

// One static_assert per position, each with its own literal message (the position is in the
// text); only the one for position I is instantiated. T: the schema type, P: fn's parameter type.
#define XFUNC_SCHEMA_MISMATCH_REPORT(K)                                                       \
  if constexpr (M == param_mismatch::read_only)                                             \
    static_assert(schema_vs_fn_param<I, T, P>, XFUNC_MSG_SCHEMA_PARAM_READ_ONLY(K));         \
  else if constexpr (M == param_mismatch::not_annotated)                                    \
    static_assert(schema_vs_fn_param<I, T, P>, XFUNC_MSG_SCHEMA_PARAM_NOT_ANNOTATED(K));     \
  else                                                                                      \
    static_assert(schema_vs_fn_param<I, T, P>, XFUNC_MSG_SCHEMA_PARAM_TYPE_MISMATCH(K));
#define XFUNC_SCHEMA_MISMATCH_AT(K) \
  if constexpr (I == K) {           \
    XFUNC_SCHEMA_MISMATCH_REPORT(K) \
  }
template <std::size_t I, param_mismatch M, schema_literal T, class P>
constexpr void report_param_mismatch() {
  XFUNC_SCHEMA_MISMATCH_AT(0)
  else XFUNC_SCHEMA_MISMATCH_AT(1)
  else XFUNC_SCHEMA_MISMATCH_AT(2)
  else XFUNC_SCHEMA_MISMATCH_AT(3)
  else XFUNC_SCHEMA_MISMATCH_AT(4)
  else XFUNC_SCHEMA_MISMATCH_AT(5)
  else XFUNC_SCHEMA_MISMATCH_AT(6)
  else XFUNC_SCHEMA_MISMATCH_AT(7)
  else XFUNC_SCHEMA_MISMATCH_AT(8)
  else XFUNC_SCHEMA_MISMATCH_AT(9)
  else XFUNC_SCHEMA_MISMATCH_AT(10)
  else XFUNC_SCHEMA_MISMATCH_AT(11)
  else XFUNC_SCHEMA_MISMATCH_AT(12)
  else XFUNC_SCHEMA_MISMATCH_AT(13)
  else XFUNC_SCHEMA_MISMATCH_AT(14)
  else XFUNC_SCHEMA_MISMATCH_AT(15)
  else {  // positions past 15 share one message; the note still gives the position
    XFUNC_SCHEMA_MISMATCH_REPORT(16 or later)
  }
}
#undef XFUNC_SCHEMA_MISMATCH_AT
#undef XFUNC_SCHEMA_MISMATCH_REPORT

// The failing static_asserts of the count and return checks; the values are template
// parameters so that every compiler prints them.
template <std::size_t K, class P>
constexpr void report_extra_param() {
  static_assert(fn_param_not_in_schema<K, P>, XFUNC_MSG_SCHEMA_EXTRA_PARAM);
}
template <std::size_t K, schema_literal T>
constexpr void report_missing_param() {
  static_assert(schema_param_not_in_fn<K, T>, XFUNC_MSG_SCHEMA_MISSING_PARAM);
}
template <schema_literal T, class R>
constexpr void report_return_mismatch() {
  static_assert(schema_vs_fn_return<T, R>, XFUNC_MSG_SCHEMA_RETURN_MISMATCH);
}

/// Compile-time check of xf::custom_op<S>(fn): S parses (check_schema_text), F's signature is
/// supported (check_signature), and they agree: the same number of parameters, the same type at
/// each position (Tensor(a!) exactly for tensor&), the same return. True when all hold; otherwise
/// a static_assert names the first disagreement, and the result is false so that callers can stop
/// instantiating (`if constexpr`).
template <schema_literal S, class F>
constexpr bool check_schema_literal() {
  if constexpr (!check_schema_text<S>()) {
    return false;
  } else if constexpr (!check_signature<F>()) {
    return false;
  } else {
    constexpr auto& p = parsed_schema_v<S>;
    using traits = fn_traits<F>;
    using args = typename traits::args;
    using ret = typename traits::ret;
    if constexpr (traits::arity > p.arity) {
      report_extra_param<p.arity, std::tuple_element_t<p.arity, args>>();
      return false;
    } else if constexpr (traits::arity < p.arity) {
      report_missing_param<traits::arity, schema_param_type<S, traits::arity>()>();
      return false;
    } else {
      constexpr param_mismatch_at m =
          first_param_mismatch<S>(std::type_identity<args>{}, std::make_index_sequence<traits::arity>{});
      if constexpr (m.what != param_mismatch::none) {
        report_param_mismatch<m.position, m.what, schema_param_type<S, m.position>(),
                              std::tuple_element_t<m.position, args>>();
        return false;
      } else if constexpr (return_type<ret>::kind != p.ret || return_type<ret>::outputs != p.outputs) {
        report_return_mismatch<text_literal<S, p.ret_text, true>(), ret>();
        return false;
      } else {
        return true;
      }
    }
  }
}

}  // namespace xfunc::detail::schema
