// Schema inference from C++ signatures (xf::custom_op, API.md §4.1): fn_traits, parameter kinds,
// the schema string, argument names, and the compile-time signature check; written-out schemas
// (xf::custom_op<"ns::name(...) -> Ret">(fn)): the constexpr parser, its comparison with fn's
// signature, and the op they register.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <utility>
#include <xfunc/schema/match.hpp>
#include <xfunc/schema/parse.hpp>
#include <xfunc/schema/signature.hpp>
#include <xfunc/testing.hpp>
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
namespace xs = xfunc::detail::schema;
using Catch::Matchers::Contains;
using xs::arg_kind;

namespace schema_test {  // named: clang warns about unused internal functions only named in decltype
xf::tensor plain_fn(const xf::tensor& a, double s) { return a * s; }
void noexcept_fn(xf::tensor&) noexcept {}
struct functor {
  std::vector<xf::tensor> operator()(const std::vector<xf::tensor>& v, std::int64_t) const { return v; }
};
struct overloaded {
  xf::tensor operator()(const xf::tensor& a) const { return a; }
  xf::tensor operator()(const xf::tensor& a, double) const { return a; }
};
template <class T>
concept nameable = requires(T t) { xf::arg_names(t); };
template <class F>
std::string schema_of(const F&, const std::vector<std::string>& names = {}) {
  return xs::infer_schema<F>("mylib::op", names);
}
}  // namespace schema_test
using namespace schema_test;

TEST_CASE("fn_traits of every callable form", "[schema]") {
  auto lambda = [](const xf::tensor& a, xf::tensor& b, double) { return a + b; };
  using L = xs::fn_traits<decltype(lambda)>;
  STATIC_REQUIRE(std::is_same_v<L::ret, xf::tensor>);
  STATIC_REQUIRE(std::is_same_v<L::args, std::tuple<const xf::tensor&, xf::tensor&, double>>);
  STATIC_REQUIRE(L::arity == 3);

  auto mut = [n = 0](xf::tensor a) mutable { ++n; return a; };
  STATIC_REQUIRE(std::is_same_v<xs::fn_traits<decltype(mut)>::args, std::tuple<xf::tensor>>);

  using P = xs::fn_traits<decltype(&plain_fn)>;
  STATIC_REQUIRE(std::is_same_v<P::args, std::tuple<const xf::tensor&, double>>);
  STATIC_REQUIRE(std::is_same_v<xs::fn_traits<decltype(plain_fn)>::ret, xf::tensor>);
  STATIC_REQUIRE(std::is_same_v<xs::fn_traits<decltype((plain_fn))>::ret, xf::tensor>);  // reference
  STATIC_REQUIRE(std::is_same_v<xs::fn_traits<decltype(&noexcept_fn)>::args, std::tuple<xf::tensor&>>);
  STATIC_REQUIRE(std::is_same_v<xs::fn_traits<decltype(&noexcept_fn)>::ret, void>);

  using S = xs::fn_traits<std::function<std::tuple<xf::tensor, xf::tensor>(const std::optional<xf::tensor>&)>>;
  STATIC_REQUIRE(std::is_same_v<S::args, std::tuple<const std::optional<xf::tensor>&>>);
  STATIC_REQUIRE(S::arity == 1);
  STATIC_REQUIRE(xs::fn_traits<functor>::arity == 2);
  STATIC_REQUIRE(std::is_same_v<xs::fn_traits<const functor&>::ret, std::vector<xf::tensor>>);

  // No single signature: no traits.
  auto generic = [](auto x) { return x; };
  STATIC_REQUIRE(!xs::has_fn_traits<decltype(generic)>);
  STATIC_REQUIRE(!xs::has_fn_traits<overloaded>);
  STATIC_REQUIRE(!xs::has_fn_traits<int>);
  STATIC_REQUIRE(xs::has_fn_traits<decltype(lambda)>);
}

TEST_CASE("parameter kinds", "[schema]") {
  STATIC_REQUIRE(xs::kind_of<xf::tensor>() == arg_kind::tensor);
  STATIC_REQUIRE(xs::kind_of<const xf::tensor&>() == arg_kind::tensor);
  STATIC_REQUIRE(xs::kind_of<xf::tensor&>() == arg_kind::mutable_tensor);
  STATIC_REQUIRE(xs::kind_of<std::optional<xf::tensor>>() == arg_kind::optional_tensor);
  STATIC_REQUIRE(xs::kind_of<const std::vector<xf::tensor>&>() == arg_kind::tensor_list);
  STATIC_REQUIRE(xs::kind_of<double>() == arg_kind::floating);
  STATIC_REQUIRE(xs::kind_of<const double&>() == arg_kind::floating);
  STATIC_REQUIRE(xs::kind_of<std::int64_t>() == arg_kind::integer);
  STATIC_REQUIRE(xs::kind_of<bool>() == arg_kind::boolean);
  STATIC_REQUIRE(xs::kind_of<const std::vector<std::int64_t>&>() == arg_kind::int_list);
  STATIC_REQUIRE(xs::kind_of<const std::string&>() == arg_kind::string);
  STATIC_REQUIRE(xs::kind_of<std::string_view>() == arg_kind::string);
  STATIC_REQUIRE(xs::kind_of<xf::dtype>() == arg_kind::dtype);
  STATIC_REQUIRE(xs::kind_of<xf::device>() == arg_kind::device);
  STATIC_REQUIRE(xs::kind_of<std::optional<double>>() == arg_kind::optional_value);
  STATIC_REQUIRE(xs::kind_of<const std::optional<std::vector<std::int64_t>>&>() == arg_kind::optional_value);

  STATIC_REQUIRE(xs::is_tensor_kind_v<xf::tensor&>);
  STATIC_REQUIRE(xs::is_tensor_kind_v<const std::vector<xf::tensor>&>);
  STATIC_REQUIRE(xs::is_tensor_kind_v<std::optional<xf::tensor>>);
  STATIC_REQUIRE(!xs::is_tensor_kind_v<double>);
  STATIC_REQUIRE(!xs::is_tensor_kind_v<float>);

  // Unsupported: other arithmetic types, C strings, mutable refs to non-tensors, nested optionals.
  STATIC_REQUIRE(!xs::supported_param_v<float>);
  STATIC_REQUIRE(!xs::supported_param_v<int>);
  STATIC_REQUIRE(!xs::supported_param_v<unsigned>);
  STATIC_REQUIRE(!xs::supported_param_v<std::int32_t>);
  STATIC_REQUIRE(!xs::supported_param_v<const char*>);
  STATIC_REQUIRE(!xs::supported_param_v<double&>);
  STATIC_REQUIRE(!xs::supported_param_v<xf::tensor&&>);
  STATIC_REQUIRE(!xs::supported_param_v<std::map<int, int>>);
  STATIC_REQUIRE(!xs::supported_param_v<std::optional<std::optional<double>>>);
  STATIC_REQUIRE(!xs::supported_param_v<std::optional<std::vector<xf::tensor>>>);
  STATIC_REQUIRE(!xs::supported_param_v<std::vector<int>>);
}

TEST_CASE("tensor slots per parameter", "[schema]") {
  CHECK(xs::tensor_slots<const xf::tensor&>(xf::tensor{1.0}) == 1);
  CHECK(xs::tensor_slots<xf::tensor&>(xf::tensor{1.0}) == 1);
  CHECK(xs::tensor_slots<std::optional<xf::tensor>>(std::nullopt) == 1);
  CHECK(xs::tensor_slots<const std::vector<xf::tensor>&>({xf::tensor{1.0}, xf::tensor{2.0}, xf::tensor{3.0}}) == 3);
  CHECK(xs::tensor_slots<double>(2.0) == 0);
  CHECK(xs::tensor_slots<std::optional<std::int64_t>>(std::nullopt) == 0);
}

TEST_CASE("schema: every parameter type mapping", "[schema]") {
  auto f = [](const xf::tensor&, xf::tensor, std::optional<xf::tensor>, const std::vector<xf::tensor>&, double,
              std::int64_t, bool, std::vector<std::int64_t>, const std::string&, std::string_view, xf::dtype,
              xf::device) { return xf::tensor{}; };
  CHECK(schema_of(f) ==
        "mylib::op(Tensor a0, Tensor a1, Tensor? a2, Tensor[] a3, float a4, int a5, bool a6, int[] a7, "
        "str a8, str a9, ScalarType a10, Device a11) -> Tensor");
  auto g = [](std::optional<double>, const std::optional<std::int64_t>&, std::optional<bool>,
              std::optional<std::vector<std::int64_t>>, std::optional<std::string>, std::optional<std::string_view>,
              std::optional<xf::dtype>, const std::optional<xf::device>&) {};
  CHECK(schema_of(g) ==
        "mylib::op(float? a0, int? a1, bool? a2, int[]? a3, str? a4, str? a5, ScalarType? a6, Device? a7) -> ()");
  CHECK(xs::check_signature<decltype(f)>());
  CHECK(xs::check_signature<decltype(g)>());
}

TEST_CASE("schema: mutable tensors get distinct alias sets", "[schema]") {
  auto one = [](const xf::tensor&, xf::tensor&, double) { return xf::tensor{}; };
  CHECK(schema_of(one) == "mylib::op(Tensor a0, Tensor(a!) a1, float a2) -> Tensor");
  auto three = [](xf::tensor&, const xf::tensor&, xf::tensor&, xf::tensor&) {};
  CHECK(schema_of(three) == "mylib::op(Tensor(a!) a0, Tensor a1, Tensor(b!) a2, Tensor(c!) a3) -> ()");
}

TEST_CASE("schema: every return kind", "[schema]") {
  CHECK(schema_of([](const xf::tensor& a) { return a; }) == "mylib::op(Tensor a0) -> Tensor");
  CHECK(schema_of([](const xf::tensor& a) { return std::tuple<xf::tensor, xf::tensor>{a, a}; }) ==
        "mylib::op(Tensor a0) -> (Tensor, Tensor)");
  CHECK(schema_of([](const xf::tensor& a) { return std::tuple<xf::tensor>{a}; }) == "mylib::op(Tensor a0) -> (Tensor)");
  CHECK(schema_of([](const xf::tensor& a) { return std::vector<xf::tensor>{a}; }) ==
        "mylib::op(Tensor a0) -> Tensor[]");
  CHECK(schema_of([](xf::tensor&) {}) == "mylib::op(Tensor(a!) a0) -> ()");
  CHECK(schema_of([] { return xf::tensor{}; }) == "mylib::op() -> Tensor");
  STATIC_REQUIRE(xs::supported_return_v<void>);
  STATIC_REQUIRE(!xs::supported_return_v<double>);
  STATIC_REQUIRE(!xs::supported_return_v<const xf::tensor&>);
  STATIC_REQUIRE(!xs::supported_return_v<std::tuple<>>);
  STATIC_REQUIRE(!xs::supported_return_v<std::tuple<xf::tensor, double>>);
}

TEST_CASE("schema: function pointers, references, functors, std::function", "[schema]") {
  CHECK(xs::infer_schema<decltype(&plain_fn)>("ns::scale") == "ns::scale(Tensor a0, float a1) -> Tensor");
  CHECK(xs::infer_schema<decltype(plain_fn)>("ns::scale") == "ns::scale(Tensor a0, float a1) -> Tensor");
  CHECK(xs::infer_schema<decltype(&noexcept_fn)>("ns::touch") == "ns::touch(Tensor(a!) a0) -> ()");
  CHECK(xs::infer_schema<functor>("ns::id") == "ns::id(Tensor[] a0, int a1) -> Tensor[]");
  using fn = std::function<std::tuple<xf::tensor, xf::tensor, xf::tensor>(xf::tensor&, std::optional<double>)>;
  CHECK(xs::infer_schema<fn>("ns::three") == "ns::three(Tensor(a!) a0, float? a1) -> (Tensor, Tensor, Tensor)");
}

TEST_CASE("schema: argument names", "[schema]") {
  auto f = [](const xf::tensor&, const xf::tensor&, double) { return xf::tensor{}; };
  const xf::arg_names_t names = xf::arg_names("x", std::string("y"), std::string_view("alpha"));
  CHECK(names.names == std::vector<std::string>{"x", "y", "alpha"});
  CHECK(schema_of(f, names.names) == "mylib::op(Tensor x, Tensor y, float alpha) -> Tensor");
  CHECK(schema_of(f) == "mylib::op(Tensor a0, Tensor a1, float a2) -> Tensor");
  CHECK(xf::arg_names().names.empty());
  STATIC_REQUIRE(nameable<const char*>);
  STATIC_REQUIRE(!nameable<int>);

  CHECK_THROWS_AS(schema_of(f, {"x", "y"}), xf::error);
  CHECK_THROWS_WITH(schema_of(f, {"x", "y"}), Contains("3 names are expected; got 2") && Contains("mylib::op"));
  CHECK_THROWS_WITH(schema_of(f, {"a", "b", "c", "d"}), Contains("3 names are expected; got 4"));
}

// ---- written-out schemas: xf::custom_op<"ns::name(...) -> Ret">(fn) --------------------------

namespace schema_test {
using xs::syntax_error;
template <xf::schema_literal S>
constexpr const auto& parsed = xs::parsed_schema_v<S>;
template <xf::schema_literal S>
struct tag {};

// The parser accepts every type of the grammar, with any whitespace between tokens.
constexpr auto& all_types = parsed<
    "t::all(Tensor a, Tensor(a!) b, Tensor? c, Tensor[] d, float e, int f, bool g, int[] h, str i, ScalarType j, "
    "Device k, float? l, int? m, bool? n, int[]? o, str? p, ScalarType? q, Device? r, Tensor(b1!) s) -> Tensor">;
static_assert(all_types.error == syntax_error::ok && all_types.arity == 19);
constexpr bool param_is(std::size_t i, arg_kind kind, arg_kind value) {
  return all_types.params[i].kind == kind && all_types.params[i].value == value;
}
static_assert(param_is(0, arg_kind::tensor, arg_kind::tensor));
static_assert(param_is(1, arg_kind::mutable_tensor, arg_kind::mutable_tensor));
static_assert(param_is(2, arg_kind::optional_tensor, arg_kind::optional_tensor));
static_assert(param_is(3, arg_kind::tensor_list, arg_kind::tensor_list));
static_assert(param_is(4, arg_kind::floating, arg_kind::floating));
static_assert(param_is(5, arg_kind::integer, arg_kind::integer));
static_assert(param_is(6, arg_kind::boolean, arg_kind::boolean));
static_assert(param_is(7, arg_kind::int_list, arg_kind::int_list));
static_assert(param_is(8, arg_kind::string, arg_kind::string));
static_assert(param_is(9, arg_kind::dtype, arg_kind::dtype));
static_assert(param_is(10, arg_kind::device, arg_kind::device));
static_assert(param_is(11, arg_kind::optional_value, arg_kind::floating));
static_assert(param_is(12, arg_kind::optional_value, arg_kind::integer));
static_assert(param_is(13, arg_kind::optional_value, arg_kind::boolean));
static_assert(param_is(14, arg_kind::optional_value, arg_kind::int_list));
static_assert(param_is(15, arg_kind::optional_value, arg_kind::string));
static_assert(param_is(16, arg_kind::optional_value, arg_kind::dtype));
static_assert(param_is(17, arg_kind::optional_value, arg_kind::device));
static_assert(param_is(18, arg_kind::mutable_tensor, arg_kind::mutable_tensor));
static_assert(all_types.params[1].alias.size == 1 && all_types.params[18].alias.size == 2 &&
              all_types.params[0].alias.size == 0);
static_assert(parsed<"ns::f(Tensor(b1!) x) -> ()">.params[0].alias.of("ns::f(Tensor(b1!) x) -> ()") == "b1");
static_assert(parsed<"ns::f(Tensor(b1!) x) -> ()">.params[0].name.of("ns::f(Tensor(b1!) x) -> ()") == "x");
static_assert(parsed<"ns::f(Tensor(b1!) x) -> ()">.params[0].type.of("ns::f(Tensor(b1!) x) -> ()") == "Tensor(b1!)");
static_assert(all_types.ret == xs::return_kind::tensor && all_types.outputs == 1);

constexpr auto& spaced = parsed<"\n  ns::f (\tTensor ( a ! ) y , int [ ] ? z,Tensor?w ) ->( Tensor ,Tensor )  ">;
static_assert(spaced.error == syntax_error::ok && spaced.arity == 3);
static_assert(spaced.params[0].kind == arg_kind::mutable_tensor && spaced.params[1].value == arg_kind::int_list &&
              spaced.params[2].kind == arg_kind::optional_tensor);
static_assert(spaced.ret == xs::return_kind::tensor_tuple && spaced.outputs == 2);

// Every return form.
static_assert(parsed<"ns::f() -> Tensor">.ret == xs::return_kind::tensor && parsed<"ns::f() -> Tensor">.arity == 0);
static_assert(parsed<"ns::f() -> Tensor[]">.ret == xs::return_kind::tensor_list);
static_assert(parsed<"ns::f() -> ()">.ret == xs::return_kind::none && parsed<"ns::f() -> ( )">.outputs == 0);
static_assert(parsed<"ns::f() -> (Tensor)">.ret == xs::return_kind::tensor_tuple && parsed<"ns::f() -> (Tensor)">.outputs == 1);
static_assert(parsed<"ns::f() -> (Tensor, Tensor, Tensor)">.outputs == 3);

// Malformed text: what, at which character (from 0) and, inside the parameters, which parameter.
template <xf::schema_literal S>
constexpr bool fails(syntax_error e, std::size_t where, std::size_t param = xs::no_param) {
  return parsed<S>.error == e && parsed<S>.where == where && parsed<S>.param == param;
}
static_assert(fails<"ns::f(Tensor x -> Tensor">(syntax_error::unbalanced, 5));
static_assert(fails<"ns::f(Tensor x)) -> Tensor">(syntax_error::unbalanced, 15));
static_assert(fails<"ns::f(Tensor(a! x) -> (Tensor">(syntax_error::unbalanced, 22));
static_assert(fails<"f(Tensor x) -> Tensor">(syntax_error::op_name, 1));
static_assert(fails<"ns::(Tensor x) -> Tensor">(syntax_error::op_name, 4));
static_assert(fails<" 1ns::f(Tensor x) -> Tensor">(syntax_error::op_name, 1));
static_assert(fails<"ns::f Tensor x -> Tensor">(syntax_error::open_paren, 6));
static_assert(fails<"ns::a::b(Tensor x) -> Tensor">(syntax_error::open_paren, 5));
static_assert(fails<"ns::f(Tensor x, Tensr y) -> Tensor">(syntax_error::param_type, 16, 1));
static_assert(fails<"ns::f(Tensor x, ) -> Tensor">(syntax_error::param_type, 16, 1));
static_assert(fails<"ns::f(float[] x) -> Tensor">(syntax_error::param_type, 6, 0));
static_assert(fails<"ns::f(Tensor[]? x) -> Tensor">(syntax_error::param_type, 6, 0));
static_assert(fails<"ns::f(Tensor?? x) -> Tensor">(syntax_error::param_type, 6, 0));
static_assert(fails<"ns::f(int?[] x) -> Tensor">(syntax_error::param_type, 6, 0));
static_assert(fails<"ns::f(Tensor(a) x) -> Tensor">(syntax_error::alias, 12, 0));
static_assert(fails<"ns::f(Tensor(A!) x) -> Tensor">(syntax_error::alias, 12, 0));
static_assert(fails<"ns::f(float(a!) x) -> Tensor">(syntax_error::alias, 11, 0));
static_assert(fails<"ns::f(Tensor(a!)? x) -> Tensor">(syntax_error::alias, 12, 0));
static_assert(fails<"ns::f(Tensor?(a!) x) -> Tensor">(syntax_error::alias, 13, 0));
static_assert(fails<"ns::f(Tensor x, float) -> Tensor">(syntax_error::param_name, 21, 1));
static_assert(fails<"ns::f(Tensor x, float x) -> Tensor">(syntax_error::duplicate_name, 22, 1));
static_assert(fails<"ns::f(Tensor(a!) x, Tensor(a!) y) -> ()">(syntax_error::duplicate_alias, 27, 1));
static_assert(fails<"ns::f(float alpha=1) -> Tensor">(syntax_error::separator, 17, 0));
static_assert(fails<"ns::f(Tensor x y) -> Tensor">(syntax_error::separator, 15, 0));
static_assert(fails<"ns::f(Tensor x) Tensor">(syntax_error::arrow, 16));
static_assert(fails<"ns::f(Tensor x)">(syntax_error::arrow, 15));
static_assert(fails<"ns::f(Tensor x) -> float">(syntax_error::return_type, 19));
static_assert(fails<"ns::f(Tensor x) -> Tensor?">(syntax_error::return_type, 19));
static_assert(fails<"ns::f(Tensor x) -> Tensor(a!)">(syntax_error::return_type, 19));
static_assert(fails<"ns::f(Tensor x) -> (Tensor, float)">(syntax_error::return_type, 28));
static_assert(fails<"ns::f(Tensor x) -> (Tensor y)">(syntax_error::return_type, 27));
static_assert(fails<"ns::f(Tensor x) ->">(syntax_error::return_type, 18));
static_assert(fails<"ns::f(Tensor x) -> Tensor y">(syntax_error::trailing, 26));
static_assert(fails<"">(syntax_error::op_name, 0));

// The same text is the same template argument.
static_assert(std::is_same_v<tag<"ns::f() -> ()">, tag<"ns::f() -> ()">>);
static_assert(!std::is_same_v<tag<"ns::f() -> ()">, tag<"ns::g() -> ()">>);

// fn agrees with its schema: every C++ type against its schema type.
auto all_kinds = [](const xf::tensor&, xf::tensor&, std::optional<xf::tensor>, const std::vector<xf::tensor>&, double,
                    std::int64_t, bool, std::vector<std::int64_t>, const std::string&, std::string_view, xf::dtype,
                    xf::device, std::optional<double>, const std::optional<std::int64_t>&, std::optional<bool>,
                    std::optional<std::vector<std::int64_t>>, std::optional<std::string>, std::optional<xf::dtype>,
                    std::optional<xf::device>, xf::tensor) { return std::tuple<xf::tensor, xf::tensor>{}; };
static_assert(xs::check_schema_literal<
              "t::all(Tensor a, Tensor(q!) b, Tensor? c, Tensor[] d, float e, int f, bool g, int[] h, str i, str i2, "
              "ScalarType j, Device k, float? l, int? m, bool? n, int[]? o, str? p, ScalarType? q, Device? r, "
              "Tensor s) -> (Tensor, Tensor)",
              decltype(all_kinds)>());
// Compared kind by kind, the first disagreement found where it is.
static_assert(xs::compare_param(parsed<"ns::f(Tensor(a!) x) -> ()">.params[0], arg_kind::tensor, arg_kind::tensor) ==
              xs::param_mismatch::read_only);
static_assert(xs::compare_param(parsed<"ns::f(Tensor x) -> ()">.params[0], arg_kind::mutable_tensor,
                                arg_kind::mutable_tensor) == xs::param_mismatch::not_annotated);
static_assert(xs::compare_param(parsed<"ns::f(float? x) -> ()">.params[0], arg_kind::optional_value,
                                arg_kind::integer) == xs::param_mismatch::type);
static_assert(xs::compare_param(parsed<"ns::f(int[]? x) -> ()">.params[0], arg_kind::optional_value,
                                arg_kind::int_list) == xs::param_mismatch::none);
constexpr xs::param_mismatch_at third_differs = xs::first_param_mismatch<"ns::f(Tensor x, float y, int z) -> ()">(
    std::type_identity<std::tuple<const xf::tensor&, double, double>>{}, std::make_index_sequence<3>{});
static_assert(third_differs.position == 2 && third_differs.what == xs::param_mismatch::type);
}  // namespace schema_test

TEST_CASE("schema literal: names, normalised schema string, op name", "[schema][schema_literal]") {
  auto fn = [](const xf::tensor& x, xf::tensor& y, double alpha) { return x * alpha + y; };
  auto op = xf::custom_op<"xftest::lit_axpy( Tensor x,Tensor(z!)  y , float alpha )->Tensor">(fn);
  CHECK(op.name() == "xftest::lit_axpy");
  // the format infer_schema writes: names from the schema, alias sets renamed a!, b!, ... in order
  CHECK(op.schema() == "xftest::lit_axpy(Tensor x, Tensor(a!) y, float alpha) -> Tensor");
  auto named = xf::custom_op("xftest::lit_axpy_named", fn, xf::arg_names("x", "y", "alpha"));
  CHECK(named.schema() == "xftest::lit_axpy_named(Tensor x, Tensor(a!) y, float alpha) -> Tensor");
  STATIC_REQUIRE(std::is_same_v<decltype(op), decltype(named)>);

  auto all = xf::custom_op<
      "xftest::lit_all(Tensor a, Tensor(q!) b, Tensor? c, Tensor[] d, float e, int f, bool g, int[] h, str i, "
      "str i2, ScalarType j, Device k, float? l, int? m, bool? n, int[]? o, str? p, ScalarType? q, Device? r, "
      "Tensor s) -> (Tensor, Tensor)">(all_kinds);
  CHECK(all.schema() ==
        "xftest::lit_all(Tensor a, Tensor(a!) b, Tensor? c, Tensor[] d, float e, int f, bool g, int[] h, str i, "
        "str i2, ScalarType j, Device k, float? l, int? m, bool? n, int[]? o, str? p, ScalarType? q, Device? r, "
        "Tensor s) -> (Tensor, Tensor)");
  CHECK(xf::custom_op<"xftest::lit_none() -> ()">([] {}).schema() == "xftest::lit_none() -> ()");
  CHECK(xf::custom_op<"xftest::lit_list(Tensor[] xs) -> Tensor[]">([](std::vector<xf::tensor> v) { return v; })
            .schema() == "xftest::lit_list(Tensor[] xs) -> Tensor[]");
  CHECK(xs::schema_arg_names<"ns::f(Tensor x, Tensor(a!) y, float alpha) -> Tensor">() ==
        std::vector<std::string>{"x", "y", "alpha"});
  CHECK(xs::schema_op_name<" my_lib::op_2 () -> ()">() == "my_lib::op_2");
}

TEST_CASE("schema literal: the op at depth 0 and under grad, with a mutated parameter", "[schema][schema_literal]") {
  // y = alpha * x (a new tensor); acc += x in place (Tensor(a!))
  auto op = xf::custom_op<"xftest::lit_scale_acc(Tensor x, Tensor(a!) acc, float alpha) -> Tensor">(
      [](const xf::tensor& x, xf::tensor& acc, double alpha) {
        acc.add_(x);
        return x * alpha;
      });
  op.register_autograd(
      [](xf::autograd::context& ctx, const xf::tensor& g) {
        return std::tuple{g * ctx.get<double>("alpha"), xf::tensor{}};  // no gradient for acc
      },
      [](xf::autograd::context& ctx, const std::tuple<xf::tensor, xf::tensor, double>& in, const xf::tensor&) {
        ctx.set("alpha", std::get<2>(in));
      });
  const xf::tensor x{0.5, -1.0, 2.0};
  xf::tensor acc{1.0, 1.0, 1.0};
  const xf::tensor y = op(x, acc, 3.0);
  CHECK(xf::allclose(y, x * 3.0));
  CHECK(xf::allclose(acc, xf::tensor{1.5, 0.0, 3.0}));

  xf::tensor acc2;
  const xf::tensor g = xf::grad([&](const xf::tensor& t) {
    xf::tensor inside = xf::zeros({3}, xf::f64);  // made inside the transform: writable
    const xf::tensor out = op(t * t, inside, 3.0);
    acc2 = inside;
    return xf::sum(out);
  })(x);
  CHECK(xf::allclose(g, x * 6.0));                   // d/dt sum(3 t^2) through the registered formula
  CHECK(xf::allclose(acc2, xf::tensor{0.25, 1.0, 4.0}));  // the kernel wrote it once
  // a tensor captured from outside grad cannot be written, as with built-in in-place ops
  xf::tensor captured{0.0, 0.0, 0.0};
  CHECK_THROWS_WITH(xf::grad([&](const xf::tensor& t) { return xf::sum(op(t * t, captured, 3.0)); })(x),
                    Catch::Contains("captured"));
  CHECK(xf::equal(captured, xf::zeros({3}, xf::f64)));
  CHECK(xf::testing::gradcheck([&](const xf::tensor& t) {
    xf::tensor scratch = xf::zeros_like(t);
    return op(t, scratch, -2.0);
  }, x));
}
