// Schema inference from C++ signatures (xf::custom_op, API.md §4.1): fn_traits, parameter kinds,
// the schema string, argument names, and the compile-time signature check.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <xfunc/schema/signature.hpp>
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
