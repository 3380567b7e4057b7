#pragma once
// The constexpr parser of a written-out custom op schema (API.md §4.1):
//   ns::name(Type name, ...) -> Ret
// with the parameter types Tensor, Tensor(a!), Tensor?, Tensor[], float, int, bool, int[], str,
// ScalarType, Device and T? for the non-tensor ones, and the returns Tensor, (Tensor, ...),
// Tensor[] and (). The result speaks the vocabulary of schema/signature.hpp (arg_kind,
// return_kind), so that schema/match.hpp compares it with fn's signature kind by kind.
//
// NOTE: [Schema text notes]
// static_assert messages are string literals in C++20, so a message cannot quote the schema.
// Each message says what is wrong; the condition of the failing static_assert is an always-false
// variable template whose arguments carry the rest (a position, the schema text from there, a
// schema type as an xf::schema_literal, fn's C++ type), and g++ prints it in the note that
// follows the message: "note: 'xfunc::detail::schema::schema_text_at<17, ...{"Tensr x) ->
// Tensor"}>' evaluates to false". Only the failing check's note is ever instantiated.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <xfunc/core/diagnostics.hpp>
#include <xfunc/schema/schema_literal.hpp>
#include <xfunc/schema/signature.hpp>

namespace xfunc::detail::schema {

/// What is wrong with a schema's text.
enum class syntax_error : std::uint8_t {
  ok,
  unbalanced,       // a '(' never closed, or a ')' closing nothing
  op_name,          // the text does not start with ns::name
  open_paren,       // no '(' after the op name
  param_type,       // an unknown parameter type (or none where one is expected)
  alias,            // an alias annotation other than Tensor(a!) on a plain Tensor
  param_name,       // a parameter without a name
  duplicate_name,   // a parameter name used twice
  duplicate_alias,  // two Tensor(x!) parameters in the same alias set
  separator,        // neither ',' nor ')' after a parameter
  arrow,            // no "->" after the parameter list
  return_type,      // an unknown return type
  trailing,         // text after the return type
};

/// A part of the schema's text: [begin, begin + size). (No default member initializers here and
/// in schema_param: g++ 12 fails on them in the constant evaluation of parse_schema; value
/// initialization zeroes them.)
struct text_span {
  std::size_t begin, size;
  constexpr std::string_view of(std::string_view s) const { return s.substr(begin, size); }
};

/// One parameter of a parsed schema.
struct schema_param {
  arg_kind kind;
  arg_kind value;  // for T? (optional_value) the kind of T; else `kind`
  text_span type, name;
  text_span alias;  // the alias set of Tensor(a!) ("a"); empty for other types
};

/// Parameter position of an error outside the parameter list.
inline constexpr std::size_t no_param = static_cast<std::size_t>(-1);

/// A parsed schema, with room for Cap parameters. On a syntax error, `error` says what and
/// `where` (a character position, from 0) and `param` (a parameter position, or no_param) say
/// where; the other fields are then partial.
template <std::size_t Cap>
struct parsed_schema {
  syntax_error error = syntax_error::ok;
  std::size_t where = 0;
  std::size_t param = no_param;
  text_span name{};  // "ns::name"
  std::size_t arity = 0;
  std::array<schema_param, Cap> params{};
  return_kind ret = return_kind::none;
  std::size_t outputs = 0;  // number of tensors of a (Tensor, ...) return; 1 for Tensor / Tensor[]
  text_span ret_text{};
};

// ---- characters ----------------------------------------------------------------------------

constexpr bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
constexpr bool is_ident_start(char c) { return is_lower(c) || (c >= 'A' && c <= 'Z') || c == '_'; }
constexpr bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

// Position of the first ')' that closes nothing, else of the last '(' left open; npos when the
// parentheses balance.
constexpr std::size_t unbalanced_paren(std::string_view s) {
  std::size_t depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    else if (s[i] == ')' && depth-- == 0) return i;
  }
  for (std::size_t i = s.size(), closes = 0; depth && i-- > 0;) {  // the last unclosed '('
    if (s[i] == ')') ++closes;
    else if (s[i] == '(' && closes-- == 0) return i;
  }
  return std::string_view::npos;
}

// A position in the text being parsed.
struct schema_cursor {
  std::string_view s;
  std::size_t i = 0;

  constexpr char peek() const { return i < s.size() ? s[i] : '\0'; }
  constexpr void skip_ws() {
    while (i < s.size() && is_space(s[i])) ++i;
  }
  // Skips whitespace, then consumes c if it is next.
  constexpr bool eat(char c) {
    skip_ws();
    if (peek() != c) return false;
    ++i;
    return true;
  }
  // An identifier [A-Za-z_][A-Za-z0-9_]* here (no whitespace skipped); empty when there is none.
  constexpr text_span identifier() {
    const std::size_t b = i;
    if (is_ident_start(peek()))
      while (is_ident_char(peek())) ++i;
    return {b, i - b};
  }
};

// ---- parameter types -----------------------------------------------------------------------

// The kind of a type word without its suffixes ("Tensor", "float", ...).
constexpr std::optional<arg_kind> type_word_kind(std::string_view w) {
  if (w == "Tensor") return arg_kind::tensor;
  if (w == "float") return arg_kind::floating;
  if (w == "int") return arg_kind::integer;
  if (w == "bool") return arg_kind::boolean;
  if (w == "str") return arg_kind::string;
  if (w == "ScalarType") return arg_kind::dtype;
  if (w == "Device") return arg_kind::device;
  return std::nullopt;
}

struct parse_fault {
  syntax_error error = syntax_error::ok;
  std::size_t where = 0;
};

// Parses the parameter type at c into p (kind, value, type, alias).
//
// NOTE: [Read-only alias annotations]
// The only alias annotation accepted is Tensor(a!) (any alias set: a lowercase letter, then
// letters and digits), for a parameter fn writes in place (xf::tensor&). A read-only annotation,
// Tensor(a), declares in PyTorch that an output may be a view of that input; a custom op's outputs
// never alias its inputs (the call throws "alias"), so Tensor(a) would declare what cannot
// happen, and it is rejected rather than silently ignored. Annotations on other types, and
// Tensor(a!)? or Tensor(a!)[], have no C++ type (infer_schema never writes them): rejected too.
constexpr parse_fault parse_param_type(schema_cursor& c, schema_param& p) {
  c.skip_ws();
  const std::size_t start = c.i;
  const std::optional<arg_kind> word = type_word_kind(c.identifier().of(c.s));
  if (!word) return {syntax_error::param_type, start};
  arg_kind kind = *word, value = *word;
  std::size_t end = c.i;
  c.skip_ws();
  if (c.peek() == '(') {
    const std::size_t at = c.i;
    ++c.i;
    c.skip_ws();
    if (kind != arg_kind::tensor || !is_lower(c.peek())) return {syntax_error::alias, at};
    const std::size_t set = c.i;
    while (is_lower(c.peek()) || is_digit(c.peek())) ++c.i;
    p.alias = {set, c.i - set};
    if (!c.eat('!') || !c.eat(')')) return {syntax_error::alias, at};
    kind = value = arg_kind::mutable_tensor;
    end = c.i;
    c.skip_ws();
    if (c.peek() == '?' || c.peek() == '[') return {syntax_error::alias, at};
  }
  if (c.peek() == '[') {
    ++c.i;
    if (!c.eat(']')) return {syntax_error::param_type, start};
    if (kind == arg_kind::tensor) kind = value = arg_kind::tensor_list;
    else if (kind == arg_kind::integer) kind = value = arg_kind::int_list;
    else return {syntax_error::param_type, start};  // float[], bool[], ...: no C++ type
    end = c.i;
    c.skip_ws();
  }
  if (c.peek() == '?') {
    ++c.i;
    if (kind == arg_kind::tensor) kind = value = arg_kind::optional_tensor;
    else if (kind == arg_kind::tensor_list) return {syntax_error::param_type, start};  // Tensor[]?
    else kind = arg_kind::optional_value;  // value keeps T's kind
    end = c.i;
    c.skip_ws();
  }
  if (c.peek() == '(') return {syntax_error::alias, c.i};                             // Tensor?(a!)
  if (c.peek() == '?' || c.peek() == '[') return {syntax_error::param_type, start};  // Tensor??, int?[]
  p.kind = kind;
  p.value = value;
  p.type = {start, end - start};
  return {};
}

// ---- the schema ----------------------------------------------------------------------------

/// Room a schema needs for its parameters: one more than its commas.
constexpr std::size_t param_capacity(std::string_view s) {
  std::size_t n = 1;
  for (const char ch : s) n += ch == ',';
  return n;
}

// Parses s into r (see parse_schema).
template <std::size_t Cap>
constexpr void parse_schema_into(parsed_schema<Cap>& r, std::string_view s) {
  // (r is not returned from here: g++ 12 rejects a copy of an NRVO result in constant evaluation)
  const auto fail = [&r](syntax_error e, std::size_t where, std::size_t param = no_param) {
    r.error = e;
    r.where = where;
    r.param = param;
  };
  if (const std::size_t at = unbalanced_paren(s); at != std::string_view::npos) return fail(syntax_error::unbalanced, at);
  schema_cursor c{s};

  // ns::name
  c.skip_ws();
  const std::size_t name_begin = c.i;
  if (!c.identifier().size) return fail(syntax_error::op_name, c.i);
  if (s.substr(c.i, 2) != "::") return fail(syntax_error::op_name, c.i);
  c.i += 2;
  if (!c.identifier().size) return fail(syntax_error::op_name, c.i);
  r.name = {name_begin, c.i - name_begin};
  if (!c.eat('(')) return fail(syntax_error::open_paren, c.i);

  // (Type name, ...)
  if (!c.eat(')')) {
    for (std::size_t k = 0;; ++k) {  // k < Cap: parameter k comes after k commas
      schema_param& p = r.params[k];
      if (const parse_fault f = parse_param_type(c, p); f.error != syntax_error::ok) return fail(f.error, f.where, k);
      c.skip_ws();
      p.name = c.identifier();
      if (!p.name.size) return fail(syntax_error::param_name, c.i, k);
      for (std::size_t j = 0; j < k; ++j) {
        if (r.params[j].name.of(s) == p.name.of(s)) return fail(syntax_error::duplicate_name, p.name.begin, k);
        if (p.alias.size && r.params[j].alias.of(s) == p.alias.of(s))
          return fail(syntax_error::duplicate_alias, p.alias.begin, k);
      }
      r.arity = k + 1;
      if (c.eat(',')) continue;
      if (c.eat(')')) break;
      return fail(syntax_error::separator, c.i, k);
    }
  }

  // -> Ret
  c.skip_ws();
  if (s.substr(c.i, 2) != "->") return fail(syntax_error::arrow, c.i);
  c.i += 2;
  c.skip_ws();
  const std::size_t ret_begin = c.i;
  if (c.eat('(')) {  // () or (Tensor, ...)
    r.ret = return_kind::none;
    if (!c.eat(')')) {
      r.ret = return_kind::tensor_tuple;
      do {
        c.skip_ws();
        const std::size_t at = c.i;
        if (c.identifier().of(s) != "Tensor") return fail(syntax_error::return_type, at);
        ++r.outputs;
      } while (c.eat(','));
      if (!c.eat(')')) return fail(syntax_error::return_type, c.i);
    }
  } else {  // Tensor or Tensor[]
    if (c.identifier().of(s) != "Tensor") return fail(syntax_error::return_type, ret_begin);
    r.ret = return_kind::tensor;
    r.outputs = 1;
    if (c.eat('[')) {
      if (!c.eat(']')) return fail(syntax_error::return_type, ret_begin);
      r.ret = return_kind::tensor_list;
    }
    c.skip_ws();
    if (c.peek() == '?' || c.peek() == '(') return fail(syntax_error::return_type, ret_begin);
  }
  r.ret_text = {ret_begin, c.i - ret_begin};
  c.skip_ws();
  if (c.i != s.size()) return fail(syntax_error::trailing, c.i);
}

/// Parses a schema "ns::name(Type name, ...) -> Ret" (whitespace between tokens is free).
template <std::size_t Cap>
constexpr parsed_schema<Cap> parse_schema(std::string_view s) {
  parsed_schema<Cap> r{};
  parse_schema_into(r, s);
  return r;
}

/// The parsed schema S.
template <schema_literal S>
inline constexpr auto parsed_schema_v = parse_schema<param_capacity(S.view())>(S.view());

// ---- text for the notes --------------------------------------------------------------------

// Copies in to out (when given) without whitespace but with a space after each comma ("(Tensor,
// Tensor)"), the way infer_schema writes types; returns the length.
constexpr std::size_t compact_text(std::string_view in, char* out) {
  std::size_t n = 0;
  for (const char ch : in) {
    if (is_space(ch)) continue;
    if (out) out[n] = ch;
    ++n;
    if (ch == ',') {
      if (out) out[n] = ' ';
      ++n;
    }
  }
  return n;
}

/// The text of span T of S as a schema_literal (compact: see compact_text), for a note.
template <schema_literal S, text_span T, bool Compact>
constexpr auto text_literal() {
  constexpr std::string_view in = T.of(S.view());
  constexpr std::size_t n = Compact ? compact_text(in, nullptr) : in.size();
  schema_literal<n + 1> r;
  if constexpr (Compact) compact_text(in, r.text);
  else
    for (std::size_t i = 0; i < n; ++i) r.text[i] = in[i];
  return r;
}

// Always false: the condition of a failing syntax check, so that the note that follows its message
// shows where (see NOTE: [Schema text notes]).
template <std::size_t Character, schema_literal TextFromThere>
inline constexpr bool schema_text_at = false;
template <std::size_t Parameter, std::size_t Character, schema_literal TextFromThere>
inline constexpr bool schema_parameter_at = false;

// The failing static_assert for syntax error E at character C (parameter K, or no_param), with
// the text from there. Template parameters, not locals, so that every compiler prints their values.
template <syntax_error E, std::size_t K, std::size_t C, schema_literal Rest>
constexpr void report_syntax_error() {
  if constexpr (E == syntax_error::unbalanced) static_assert(schema_text_at<C, Rest>, XFUNC_MSG_SCHEMA_UNBALANCED);
  else if constexpr (E == syntax_error::op_name) static_assert(schema_text_at<C, Rest>, XFUNC_MSG_SCHEMA_OP_NAME);
  else if constexpr (E == syntax_error::open_paren) static_assert(schema_text_at<C, Rest>, XFUNC_MSG_SCHEMA_OPEN_PAREN);
  else if constexpr (E == syntax_error::param_type) static_assert(schema_parameter_at<K, C, Rest>, XFUNC_MSG_SCHEMA_PARAM_TYPE);
  else if constexpr (E == syntax_error::alias) static_assert(schema_parameter_at<K, C, Rest>, XFUNC_MSG_SCHEMA_ALIAS);
  else if constexpr (E == syntax_error::param_name) static_assert(schema_parameter_at<K, C, Rest>, XFUNC_MSG_SCHEMA_PARAM_NAME);
  else if constexpr (E == syntax_error::duplicate_name)
    static_assert(schema_parameter_at<K, C, Rest>, XFUNC_MSG_SCHEMA_DUPLICATE_NAME);
  else if constexpr (E == syntax_error::duplicate_alias)
    static_assert(schema_parameter_at<K, C, Rest>, XFUNC_MSG_SCHEMA_DUPLICATE_ALIAS);
  else if constexpr (E == syntax_error::separator) static_assert(schema_parameter_at<K, C, Rest>, XFUNC_MSG_SCHEMA_SEPARATOR);
  else if constexpr (E == syntax_error::arrow) static_assert(schema_text_at<C, Rest>, XFUNC_MSG_SCHEMA_ARROW);
  else if constexpr (E == syntax_error::return_type) static_assert(schema_text_at<C, Rest>, XFUNC_MSG_SCHEMA_RETURN);
  else static_assert(schema_text_at<C, Rest>, XFUNC_MSG_SCHEMA_TRAILING);
}

/// Compile-time check of S's syntax: true when it parses; otherwise a static_assert says what is
/// wrong (its note says where), and the result is false so that callers stop instantiating.
template <schema_literal S>
constexpr bool check_schema_text() {
  constexpr auto& p = parsed_schema_v<S>;
  if constexpr (p.error == syntax_error::ok) {
    return true;
  } else {
    report_syntax_error<p.error, p.param, p.where, text_literal<S, text_span{p.where, S.size() - p.where}, false>()>();
    return false;
  }
}

// ---- what the op takes from the schema -----------------------------------------------------

/// The op name of schema S ("ns::name").
template <schema_literal S>
std::string schema_op_name() {
  return std::string(parsed_schema_v<S>.name.of(S.view()));
}

/// The parameter names of schema S, in order.
template <schema_literal S>
std::vector<std::string> schema_arg_names() {
  constexpr auto& p = parsed_schema_v<S>;
  std::vector<std::string> names;
  names.reserve(p.arity);
  for (std::size_t i = 0; i < p.arity; ++i) names.emplace_back(p.params[i].name.of(S.view()));
  return names;
}

}  // namespace xfunc::detail::schema
