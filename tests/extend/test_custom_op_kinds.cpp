// Every parameter kind of API 4.1 combined with each return kind (tensor, tuple, vector, void):
// one op per return kind taking a parameter of every kind, under depth 0, vmap, grad, jvp,
// functionalize and make_fx. The mutated parameter (tensor&) is written by every op.
#include <catch2/catch.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using xf::tensor;

namespace {

/// The non-tensor arguments every call passes; the kernels check they arrive intact.
void check_values(double a, std::int64_t n, bool b, const std::vector<std::int64_t>& dims, const std::string& s,
                  std::string_view sv, xf::dtype dt, xf::device dev, const std::optional<double>& od) {
  if (a != 2.0 || n != 3 || !b || dims != std::vector<std::int64_t>{0, 1} || s != "str" || sv != "view" ||
      dt != xf::f64 || !(dev == xf::cpu) || od != 0.5)
    throw std::runtime_error("a non-tensor argument of the custom op arrived changed");
}

// x: const tensor&, y: tensor (by value), acc: tensor& (mutated), o: std::optional<tensor>,
// l: std::vector<tensor>; then double, int64_t, bool, int[], std::string, std::string_view,
// ScalarType, Device, float?.
#define XFTEST_PARAMS                                                                                            \
  const tensor &x, tensor y, tensor &acc, std::optional<tensor> o, std::vector<tensor> l, double a, std::int64_t n, \
      bool b, std::vector<std::int64_t> dims, std::string s, std::string_view sv, xf::dtype dt, xf::device dev,   \
      std::optional<double> od
#define XFTEST_CHECK_AND_WRITE            \
  check_values(a, n, b, dims, s, sv, dt, dev, od); \
  acc.add_(x)

const char* expected_schema(const char* name, const char* ret) {
  static std::string s;
  s = std::string(name) +
      "(Tensor a0, Tensor a1, Tensor(a!) a2, Tensor? a3, Tensor[] a4, float a5, int a6, bool a7, int[] a8, str a9, "
      "str a10, ScalarType a11, Device a12, float? a13) -> " +
      ret;
  return s.c_str();
}

// out = a x + y + o + l[0]  (with y = 2x, o = x, l = {x}: 6x)
auto op_tensor() {
  auto op = xf::custom_op("xftest::kinds_tensor", [](XFTEST_PARAMS) {
    XFTEST_CHECK_AND_WRITE;
    return x * a + y + (o ? *o : xf::zeros_like(x)) + l.at(0);
  });
  op.register_autograd(
      [](xf::autograd::context& ctx, const tensor& g) {
        return std::tuple{g * ctx.get<double>("a"), g, tensor(), std::optional<tensor>(g), std::vector<tensor>{g}};
      },
      [](xf::autograd::context& ctx, const auto& in, const tensor&) { ctx.set("a", std::get<5>(in)); });
  return op;
}
// (a x, y + o)
auto op_tuple() {
  auto op = xf::custom_op("xftest::kinds_tuple", [](XFTEST_PARAMS) {
    XFTEST_CHECK_AND_WRITE;
    (void)l;
    return std::tuple{x * a, y + *o};
  });
  op.register_autograd(
      [](xf::autograd::context&, const tensor& g0, const tensor& g1) {
        return std::tuple{g0 * 2.0, g1, tensor(), std::optional<tensor>(g1), std::vector<tensor>{tensor()}};
      },
      [](xf::autograd::context&, const auto&, const std::tuple<tensor, tensor>&) {});
  return op;
}
// {a x, l[0] + y}
auto op_vector() {
  auto op = xf::custom_op("xftest::kinds_vector", [](XFTEST_PARAMS) {
    XFTEST_CHECK_AND_WRITE;
    (void)o;
    return std::vector<tensor>{x * a, l.at(0) + y};
  });
  op.register_autograd(
      [](xf::autograd::context&, const std::vector<tensor>& g) {
        return std::tuple{g[0] * 2.0, g[1], tensor(), std::optional<tensor>(), std::vector<tensor>{g[1]}};
      },
      [](xf::autograd::context&, const auto&, const std::vector<tensor>&) {});
  return op;
}
// only writes acc
auto op_void() {
  return xf::custom_op("xftest::kinds_void", [](XFTEST_PARAMS) {
    XFTEST_CHECK_AND_WRITE;
    (void)y, (void)o, (void)l;
  });
}

/// Calls op the way every test does: y = 2x, o = x, l = {x}, acc written.
template <class Op>
auto call(const Op& op, const tensor& x, tensor& acc) {
  return op(x, x * 2.0, acc, x, {x}, 2.0, 3, true, {0, 1}, "str", "view", xf::f64, xf::cpu, 0.5);
}
/// The op's outputs summed into one tensor (with none: a copy of acc).
template <class Op>
tensor run(const Op& op, const tensor& x, tensor& acc) {
  using R = decltype(call(op, x, acc));
  if constexpr (std::is_void_v<R>) {
    call(op, x, acc);
    return acc * 1.0;
  } else {
    const R r = call(op, x, acc);
    if constexpr (std::is_same_v<R, tensor>) return r;
    else if constexpr (std::is_same_v<R, std::vector<tensor>>) return r.at(0) + r.at(1);
    else return std::get<0>(r) + std::get<1>(r);
  }
}

template <class Op>
void check_all_transforms(const Op& op, double slope, bool differentiable) {
  const tensor x0{0.3, -1.2, 2.0};
  // depth 0: the outputs, and acc written in place
  {
    tensor acc = xf::ones({3}, xf::f64);
    const tensor out = run(op, x0, acc);
    CHECK(xf::allclose(acc, 1.0 + x0));
    CHECK(xf::allclose(out, differentiable ? slope * x0 : 1.0 + x0));
  }
  // vmap (the loop fallback): x and acc batched, against per-example calls
  {
    const tensor xs = xf::stack({x0, x0 * -0.5}, 0);
    tensor accs = xf::zeros({2, 3}, xf::f64);
    const tensor got = xf::vmap([&](const tensor& x, tensor a) { return run(op, x, a); })(xs, accs);
    tensor a0 = xf::zeros({3}, xf::f64), a1 = xf::zeros({3}, xf::f64);
    const tensor expect = xf::stack({run(op, x0, a0), run(op, x0 * -0.5, a1)}, 0);
    CHECK(xf::allclose(got, expect));
    CHECK(xf::allclose(accs, xf::stack({a0, a1}, 0)));  // written through to the caller's batch
  }
  // functionalize: the write into acc is removed inside and copied back at the end
  {
    tensor acc = xf::zeros({3}, xf::f64);
    const tensor got = xf::functionalize([&](const tensor& x, tensor a) { return run(op, x, a); })(x0, acc);
    CHECK(xf::allclose(acc, x0));
    tensor acc2 = xf::zeros({3}, xf::f64);
    CHECK(xf::allclose(got, run(op, x0, acc2)));
  }
  // make_fx: one node (per output), replayed to the same values and the same write
  {
    auto f = [&](const tensor& x, tensor a) { return run(op, x, a); };
    tensor acc = xf::zeros({3}, xf::f64);
    const xf::graph g = xf::make_fx(f)(x0, acc);
    CHECK(xf::equal(acc, xf::zeros({3}, xf::f64)));  // tracing does not write the caller's tensors
    CHECK(g.count(op.name()) == 1);
    tensor acc_replay = xf::zeros({3}, xf::f64), acc_eager = xf::zeros({3}, xf::f64);
    const tensor x1 = x0 * 0.25;
    CHECK(xf::allclose(g(x1, acc_replay)[0], f(x1, acc_eager)));
    CHECK(xf::allclose(acc_replay, acc_eager));
  }
  if (!differentiable) return;
  // grad and jvp through the registered formula (forward mode transposes it); acc is made inside
  auto loss = [&](const tensor& x) {
    tensor acc = xf::zeros_like(x);
    return xf::sum(run(op, x, acc));
  };
  CHECK(xf::allclose(xf::grad(loss)(x0), xf::full({3}, slope, xf::f64)));
  auto [value, tangent] = xf::jvp(loss, x0, xf::ones({3}, xf::f64));
  CHECK(xf::allclose(tangent, xf::scalar(3.0 * slope)));
  CHECK(xf::allclose(xf::vmap(xf::grad(loss))(xf::stack({x0, x0}, 0)), xf::full({2, 3}, slope, xf::f64)));
}

}  // namespace

TEST_CASE("custom_op: every parameter kind with each return kind, under every transform", "[custom_op][kinds]") {
  SECTION("returns Tensor") {
    auto op = op_tensor();
    CHECK(op.schema() == expected_schema("xftest::kinds_tensor", "Tensor"));
    check_all_transforms(op, 6.0, true);
  }
  SECTION("returns (Tensor, Tensor)") {
    auto op = op_tuple();
    CHECK(op.schema() == expected_schema("xftest::kinds_tuple", "(Tensor, Tensor)"));
    check_all_transforms(op, 5.0, true);  // 2x + (2x + x)
  }
  SECTION("returns Tensor[]") {
    auto op = op_vector();
    CHECK(op.schema() == expected_schema("xftest::kinds_vector", "Tensor[]"));
    check_all_transforms(op, 5.0, true);  // 2x + (x + 2x)
  }
  SECTION("returns ()") {
    auto op = op_void();
    CHECK(op.schema() == expected_schema("xftest::kinds_void", "()"));
    check_all_transforms(op, 0.0, false);
  }
}
