#pragma once
// Compile-time schema inference for xf::custom_op (API.md §4.1): a C++ signature becomes
// argument descriptors (arg_kind per parameter) and a schema string such as
// "mylib::foo(Tensor a0, Tensor(a!) a1, float a2) -> Tensor".
#include <xfunc/core/diagnostics.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <xfunc/core/device.hpp>
#include <xfunc/core/dtype.hpp>
#include <xfunc/core/error.hpp>
#include <xfunc/core/tensor.hpp>
#include <xfunc/schema/arg_names.hpp>

namespace xfunc::detail::schema {

// ---- fn_traits -----------------------------------------------------------------------------

template <class R, class... A>
struct signature_of {
  using ret = R;
  using args = std::tuple<A...>;
  static constexpr std::size_t arity = sizeof...(A);
};

// Empty for anything without a single signature (generic lambdas, overloaded functors, C
// varargs), so that has_fn_traits can test for it.
template <class F>
struct fn_traits_impl {};
template <class R, bool NE, class... A>
struct fn_traits_impl<R(A...) noexcept(NE)> : signature_of<R, A...> {};
template <class R, bool NE, class... A>
struct fn_traits_impl<R (*)(A...) noexcept(NE)> : signature_of<R, A...> {};
// Member call operators, with every cv/ref qualifier a functor's operator() may carry.
#define XFUNC_SCHEMA_MEMFN(QUAL)                                          \
  template <class R, class C, bool NE, class... A>                        \
  struct fn_traits_impl<R (C::*)(A...) QUAL noexcept(NE)> : signature_of<R, A...> {};
XFUNC_SCHEMA_MEMFN()
XFUNC_SCHEMA_MEMFN(const)
XFUNC_SCHEMA_MEMFN(&)
XFUNC_SCHEMA_MEMFN(const&)
XFUNC_SCHEMA_MEMFN(&&)
XFUNC_SCHEMA_MEMFN(const&&)
#undef XFUNC_SCHEMA_MEMFN
// Lambdas, functors and std::function: the signature of their one operator().
template <class F>
  requires std::is_class_v<F> && requires { &F::operator(); }
struct fn_traits_impl<F> : fn_traits_impl<decltype(&F::operator())> {};

/// Signature of a callable: function pointer, function reference, non-generic lambda / functor
/// (via &F::operator()), std::function. `args` keeps the declared parameter types exactly (refs
/// and cv included); `ret` is the return type. Empty (no members) for other types.
template <class F>
struct fn_traits : fn_traits_impl<std::remove_cvref_t<F>> {};

/// Whether fn_traits<F> has a signature.
template <class F>
concept has_fn_traits = requires { typename fn_traits<F>::args; };

// ---- parameter kinds -----------------------------------------------------------------------

/// Kind of a parameter type (declared type, refs included).
enum class arg_kind : std::uint8_t {
  tensor,           // tensor, const tensor&
  mutable_tensor,   // tensor&
  optional_tensor,  // std::optional<tensor>
  tensor_list,      // std::vector<tensor>
  floating,         // double
  integer,          // int64_t
  boolean,          // bool
  int_list,         // std::vector<int64_t>
  string,           // std::string, std::string_view
  dtype,            // xf::dtype
  device,           // xf::device
  optional_value,   // std::optional<T>, T one of the non-tensor kinds above
};

/// Whether parameters of kind k carry tensors (and so take slots in a flat tensor list).
constexpr bool is_tensor_kind(arg_kind k) {
  return k == arg_kind::tensor || k == arg_kind::mutable_tensor || k == arg_kind::optional_tensor ||
         k == arg_kind::tensor_list;
}

// Kind of a plain value type V (no cv, no ref); nullopt when V is not supported.
template <class V>
constexpr std::optional<arg_kind> value_kind() {
  if constexpr (std::is_same_v<V, xfunc::tensor>) return arg_kind::tensor;
  else if constexpr (std::is_same_v<V, std::optional<xfunc::tensor>>) return arg_kind::optional_tensor;
  else if constexpr (std::is_same_v<V, std::vector<xfunc::tensor>>) return arg_kind::tensor_list;
  else if constexpr (std::is_same_v<V, double>) return arg_kind::floating;
  else if constexpr (std::is_same_v<V, std::int64_t>) return arg_kind::integer;
  else if constexpr (std::is_same_v<V, bool>) return arg_kind::boolean;
  else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) return arg_kind::int_list;
  else if constexpr (std::is_same_v<V, std::string> || std::is_same_v<V, std::string_view>) return arg_kind::string;
  else if constexpr (std::is_same_v<V, xfunc::dtype>) return arg_kind::dtype;
  else if constexpr (std::is_same_v<V, xfunc::device>) return arg_kind::device;
  else return std::nullopt;
}
template <class V>
struct optional_value_kind {
  static constexpr std::optional<arg_kind> value = std::nullopt;
};
// std::optional<T> of a plain non-tensor value kind (no optional of optional, no Tensor[]?).
template <class T>
struct optional_value_kind<std::optional<T>> {
  static constexpr std::optional<arg_kind> inner = value_kind<T>();
  static constexpr std::optional<arg_kind> value =
      inner && !is_tensor_kind(*inner) ? std::optional<arg_kind>(arg_kind::optional_value) : std::nullopt;
};

// Kind of a declared parameter type P; nullopt when unsupported. Accepted: V, const V, const V&
// for every supported V, and tensor& (the one mutable parameter).
template <class P>
constexpr std::optional<arg_kind> param_kind() {
  using V = std::remove_cvref_t<P>;
  if constexpr (std::is_same_v<P, xfunc::tensor&>) return arg_kind::mutable_tensor;
  else if constexpr (!std::is_same_v<P, V> && !std::is_same_v<P, const V> && !std::is_same_v<P, const V&>)
    return std::nullopt;
  else if constexpr (value_kind<V>()) return value_kind<V>();
  else return optional_value_kind<V>::value;
}

/// Whether P (a declared parameter type) may appear in a custom op's signature. False for
/// float, int, unsigned, char*, double&, ...
template <class P>
inline constexpr bool supported_param_v = param_kind<P>().has_value();

/// Kind of a supported parameter type P.
template <class P>
  requires supported_param_v<P>
constexpr arg_kind kind_of() {
  return *param_kind<P>();
}

/// Whether P is one of the four tensor kinds (tensor, mutable_tensor, optional_tensor,
/// tensor_list); false for other and unsupported types.
template <class P>
inline constexpr bool is_tensor_kind_v = supported_param_v<P> && is_tensor_kind(*param_kind<P>());

/// Number of slots a parameter value takes in a flat tensor list: 1 for tensor, tensor& and
/// std::optional<tensor> (an undefined xf::tensor stands for nullopt), its size for
/// std::vector<tensor>, 0 for non-tensor kinds.
template <class P>
  requires supported_param_v<P>
constexpr std::size_t tensor_slots([[maybe_unused]] const std::remove_cvref_t<P>& value) {
  if constexpr (kind_of<P>() == arg_kind::tensor_list) return value.size();
  else return is_tensor_kind(kind_of<P>()) ? 1 : 0;
}

// ---- return types --------------------------------------------------------------------------

/// Kind of a return type (the schema's "-> ..." part).
enum class return_kind : std::uint8_t {
  tensor,        // xf::tensor: Tensor
  tensor_tuple,  // std::tuple<xf::tensor, ...>: (Tensor, ...)
  tensor_list,   // std::vector<xf::tensor>: Tensor[]
  none,          // void: ()
};

// For a supported R: ok, its kind, the number of outputs for a tuple, and its schema name.
template <class R>
struct return_type {
  static constexpr bool ok = false;
};
template <>
struct return_type<xfunc::tensor> {
  static constexpr bool ok = true;
  static constexpr return_kind kind = return_kind::tensor;
  static constexpr std::size_t outputs = 1;
  static std::string name() { return "Tensor"; }
};
template <>
struct return_type<std::vector<xfunc::tensor>> {
  static constexpr bool ok = true;
  static constexpr return_kind kind = return_kind::tensor_list;
  static constexpr std::size_t outputs = 1;  // one list
  static std::string name() { return "Tensor[]"; }
};
template <>
struct return_type<void> {
  static constexpr bool ok = true;
  static constexpr return_kind kind = return_kind::none;
  static constexpr std::size_t outputs = 0;
  static std::string name() { return "()"; }
};
template <class... T>
  requires(sizeof...(T) > 0 && (std::is_same_v<T, xfunc::tensor> && ...))
struct return_type<std::tuple<T...>> {
  static constexpr bool ok = true;
  static constexpr return_kind kind = return_kind::tensor_tuple;
  static constexpr std::size_t outputs = sizeof...(T);
  static std::string name() {
    std::string s = "(";
    for (std::size_t i = 0; i < sizeof...(T); ++i) s += i ? ", Tensor" : "Tensor";
    return s + ")";
  }
};

/// Whether R may be a custom op's return type (by value: tensor, tuple of tensors, vector of
/// tensors, or void).
template <class R>
inline constexpr bool supported_return_v = return_type<R>::ok;

// ---- the static check ----------------------------------------------------------------------

// What is wrong with a parameter type; picks the fix the message suggests.
enum class param_fault : std::uint8_t { none, floating, integer, other };

template <class P>
constexpr param_fault fault_of() {
  using V = std::remove_cvref_t<P>;
  if constexpr (supported_param_v<P>) return param_fault::none;
  else if constexpr (std::is_same_v<V, float>) return param_fault::floating;
  else if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>) return param_fault::integer;
  else return param_fault::other;
}

// Index of the first unsupported parameter in Args (a std::tuple), or its size when all are.
template <class Args>
struct first_bad_param;
template <class... A>
struct first_bad_param<std::tuple<A...>> {
  static constexpr std::size_t value = [] {
    constexpr bool ok[] = {supported_param_v<A>..., true};
    std::size_t i = 0;
    while (i < sizeof...(A) && ok[i]) ++i;
    return i;
  }();
};

// One static_assert per position and fault, each with its own literal message; only the one
// for (I, F) fires.
#define XFUNC_SCHEMA_PARAM_CHECK(K)                                                         \
  static_assert(I != K || F != param_fault::floating, XFUNC_MSG_CUSTOM_OP_PARAM_FLOAT(K));  \
  static_assert(I != K || F != param_fault::integer, XFUNC_MSG_CUSTOM_OP_PARAM_INT(K));     \
  static_assert(I != K || F != param_fault::other, XFUNC_MSG_CUSTOM_OP_PARAM_OTHER(K));
template <std::size_t I, param_fault F>
constexpr void report_param() {
  XFUNC_SCHEMA_PARAM_CHECK(0)
  XFUNC_SCHEMA_PARAM_CHECK(1)
  XFUNC_SCHEMA_PARAM_CHECK(2)
  XFUNC_SCHEMA_PARAM_CHECK(3)
  XFUNC_SCHEMA_PARAM_CHECK(4)
  XFUNC_SCHEMA_PARAM_CHECK(5)
  XFUNC_SCHEMA_PARAM_CHECK(6)
  XFUNC_SCHEMA_PARAM_CHECK(7)
  XFUNC_SCHEMA_PARAM_CHECK(8)
  XFUNC_SCHEMA_PARAM_CHECK(9)
  XFUNC_SCHEMA_PARAM_CHECK(10)
  XFUNC_SCHEMA_PARAM_CHECK(11)
  XFUNC_SCHEMA_PARAM_CHECK(12)
  XFUNC_SCHEMA_PARAM_CHECK(13)
  XFUNC_SCHEMA_PARAM_CHECK(14)
  XFUNC_SCHEMA_PARAM_CHECK(15)
  // Positions past 15 share one message.
  static_assert(I < 16 || F != param_fault::floating, XFUNC_MSG_CUSTOM_OP_PARAM_FLOAT(16 or later));
  static_assert(I < 16 || F != param_fault::integer, XFUNC_MSG_CUSTOM_OP_PARAM_INT(16 or later));
  static_assert(I < 16 || F != param_fault::other, XFUNC_MSG_CUSTOM_OP_PARAM_OTHER(16 or later));
}
#undef XFUNC_SCHEMA_PARAM_CHECK

template <class F>
inline constexpr bool dependent_false_v = false;

/// Compile-time check that F's signature is supported: true when it is; otherwise a
/// static_assert names the first bad parameter's position and the fix (or the return type), and
/// the result is false so that callers can stop instantiating (`if constexpr`).
template <class F>
constexpr bool check_signature() {
  if constexpr (!has_fn_traits<F>) {
    static_assert(dependent_false_v<F>, XFUNC_MSG_CUSTOM_OP_CALLABLE);
    return false;
  } else {
    using args = typename fn_traits<F>::args;
    constexpr std::size_t bad = first_bad_param<args>::value;
    if constexpr (bad < fn_traits<F>::arity) {
      report_param<bad, fault_of<std::tuple_element_t<bad, args>>()>();
      return false;
    } else if constexpr (!supported_return_v<typename fn_traits<F>::ret>) {
      static_assert(dependent_false_v<F>, XFUNC_MSG_CUSTOM_OP_RETURN);
      return false;
    } else {
      return true;
    }
  }
}

// ---- the schema string ---------------------------------------------------------------------

// Schema type of a plain supported value type V (no tensor& here: that needs an alias letter).
template <class V>
std::string type_name() {
  if constexpr (optional_value_kind<V>::value) {
    return type_name<typename V::value_type>() + "?";
  } else {
    switch (*value_kind<V>()) {
      case arg_kind::tensor: return "Tensor";
      case arg_kind::optional_tensor: return "Tensor?";
      case arg_kind::tensor_list: return "Tensor[]";
      case arg_kind::floating: return "float";
      case arg_kind::integer: return "int";
      case arg_kind::boolean: return "bool";
      case arg_kind::int_list: return "int[]";
      case arg_kind::string: return "str";
      case arg_kind::dtype: return "ScalarType";
      case arg_kind::device: return "Device";
      default: return "?";  // unreachable: value_kind never gives mutable_tensor / optional_value
    }
  }
}

// Alias set name of the n-th mutable tensor: a, b, ..., z, then a1, b1, ...
inline std::string alias_name(std::size_t n) {
  std::string s(1, static_cast<char>('a' + n % 26));
  if (n >= 26) s += std::to_string(n / 26);
  return s;
}

// Schema type of a declared parameter type P; counts mutable tensors to give each its alias set.
template <class P>
std::string param_type(std::size_t& mutables) {
  if constexpr (kind_of<P>() == arg_kind::mutable_tensor) return "Tensor(" + alias_name(mutables++) + "!)";
  else return type_name<std::remove_cvref_t<P>>();
}
template <class... A>
std::vector<std::string> param_types(std::type_identity<std::tuple<A...>>) {
  [[maybe_unused]] std::size_t mutables = 0;
  return {param_type<A>(mutables)...};  // braced list: evaluated left to right, so a!, b!, ... in order
}

/// The schema string of F as op `name`, e.g. "mylib::foo(Tensor a0, Tensor(a!) a1, float a2) ->
/// Tensor". Parameters are named a0, a1, ... unless `names` is given (then exactly one per
/// parameter, else throws xf::error); mutable tensors get distinct alias sets a!, b!, ...
template <class F>
std::string infer_schema(std::string_view name, const std::vector<std::string>& names = {}) {
  if constexpr (!check_signature<F>()) {
    return {};  // the static_assert has fired; nothing more to instantiate
  } else {
    using traits = fn_traits<F>;
    if (!names.empty() && names.size() != traits::arity)
      fail("xf::custom_op(\"", name, "\", fn, xf::arg_names(...)): fn has ", traits::arity,
           " parameters, so ", traits::arity, " names are expected; got ", names.size());
    const std::vector<std::string> types = param_types(std::type_identity<typename traits::args>{});
    std::string s(name);
    s += "(";
    for (std::size_t i = 0; i < types.size(); ++i)
      s += (i ? ", " : "") + types[i] + " " + (names.empty() ? detail::str_cat("a", i) : names[i]);
    return s + ") -> " + return_type<typename traits::ret>::name();
  }
}

}  // namespace xfunc::detail::schema
