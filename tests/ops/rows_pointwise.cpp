// Conformance rows: pointwise unary and binary ops, and the dtype promotion rules of API §2.
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include <catch2/catch.hpp>

#include "conformance.hpp"

namespace conformance {
namespace {
using T = tensors;

// Samples keep away from kinks (relu/abs/sign at 0, clamp bounds, maximum ties) by more than
// the finite-difference step.
const bool registered_unary = add({
    {"neg", {sample({2, 3})}, [](const T& x) { return xf::neg(x[0]); }, ref_unary([](double v) { return -v; })},
    {"neg (operator-)", {sample({3})}, [](const T& x) { return -x[0]; }, ref_unary([](double v) { return -v; })},
    {"exp", {sample({2, 3})}, [](const T& x) { return xf::exp(x[0]); }, ref_unary([](double v) { return std::exp(v); })},
    {"exp (non-contiguous)", {noncontiguous(sample({3, 4}))}, [](const T& x) { return xf::exp(x[0]); },
     ref_unary([](double v) { return std::exp(v); })},
    {"log", {sample({2, 3}, 0.5, 2.0)}, [](const T& x) { return xf::log(x[0]); },
     ref_unary([](double v) { return std::log(v); })},
    {"sin", {sample({2, 3})}, [](const T& x) { return xf::sin(x[0]); }, ref_unary([](double v) { return std::sin(v); })},
    {"sin (0-d)", {xf::scalar(0.3)}, [](const T& x) { return xf::sin(x[0]); },
     ref_unary([](double v) { return std::sin(v); })},
    {"cos", {sample({2, 3})}, [](const T& x) { return xf::cos(x[0]); }, ref_unary([](double v) { return std::cos(v); })},
    {"tan", {sample({2, 3})}, [](const T& x) { return xf::tan(x[0]); }, ref_unary([](double v) { return std::tan(v); })},
    {"tanh", {sample({2, 3}, -2, 2)}, [](const T& x) { return xf::tanh(x[0]); },
     ref_unary([](double v) { return std::tanh(v); })},
    {"sigmoid", {sample({2, 3}, -3, 3)}, [](const T& x) { return xf::sigmoid(x[0]); },
     ref_unary([](double v) { return 1.0 / (1.0 + std::exp(-v)); })},
    {"relu", {sample({2, 3})}, [](const T& x) { return xf::relu(x[0]); },
     ref_unary([](double v) { return v > 0 ? v : 0.0; })},
    {"relu (non-contiguous)", {noncontiguous(sample({4, 3}, -1, 1, 5))}, [](const T& x) { return xf::relu(x[0]); },
     ref_unary([](double v) { return v > 0 ? v : 0.0; })},
    {"abs", {sample({2, 3})}, [](const T& x) { return xf::abs(x[0]); }, ref_unary([](double v) { return std::fabs(v); })},
    {"sqrt", {sample({2, 3}, 0.5, 2.0)}, [](const T& x) { return xf::sqrt(x[0]); },
     ref_unary([](double v) { return std::sqrt(v); })},
    {"rsqrt", {sample({2, 3}, 0.5, 2.0)}, [](const T& x) { return xf::rsqrt(x[0]); },
     ref_unary([](double v) { return 1.0 / std::sqrt(v); })},
    {"square", {sample({2, 3})}, [](const T& x) { return xf::square(x[0]); },
     ref_unary([](double v) { return v * v; })},
    {"log1p", {sample({2, 3}, -0.5, 1.0)}, [](const T& x) { return xf::log1p(x[0]); },
     ref_unary([](double v) { return std::log1p(v); })},
    {"expm1", {sample({2, 3})}, [](const T& x) { return xf::expm1(x[0]); },
     ref_unary([](double v) { return std::expm1(v); })},
    {"sign", {sample({2, 3})}, [](const T& x) { return xf::sign(x[0]); },
     ref_unary([](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); })},
    {"reciprocal", {sample({2, 3}, 0.5, 2.0)}, [](const T& x) { return xf::reciprocal(x[0]); },
     ref_unary([](double v) { return 1.0 / v; })},
    {"reciprocal (negative)", {sample({2, 3}, -2.0, -0.5)}, [](const T& x) { return xf::reciprocal(x[0]); },
     ref_unary([](double v) { return 1.0 / v; })},
    {"erf", {sample({2, 3}, -2, 2)}, [](const T& x) { return xf::erf(x[0]); },
     ref_unary([](double v) { return std::erf(v); })},
});

auto plus = [](double a, double b) { return a + b; };
auto minus = [](double a, double b) { return a - b; };
auto times = [](double a, double b) { return a * b; };
auto over = [](double a, double b) { return a / b; };

const bool registered_binary = add({
    {"add", {sample({2, 3}), sample({2, 3}, -1, 1, 2)}, [](const T& x) { return xf::add(x[0], x[1]); },
     ref_binary(plus)},
    {"add (broadcast [2,1] + [3])", {sample({2, 1}), sample({3}, -1, 1, 2)}, [](const T& x) { return x[0] + x[1]; },
     ref_binary(plus)},
    {"add (broadcast [3] + [2,3])", {sample({3}), sample({2, 3}, -1, 1, 2)}, [](const T& x) { return x[0] + x[1]; },
     ref_binary(plus)},
    {"add (0-d + [2,3])", {xf::scalar(0.7), sample({2, 3}, -1, 1, 2)}, [](const T& x) { return x[0] + x[1]; },
     ref_binary(plus)},
    {"add (non-contiguous, broadcast [4,3] + [1,3])", {noncontiguous(sample({4, 3})), sample({1, 3}, -1, 1, 2)},
     [](const T& x) { return x[0] + x[1]; }, ref_binary(plus)},
    {"add (tensor + double)", {sample({2, 3})}, [](const T& x) { return x[0] + 2.5; },
     ref_unary([](double v) { return v + 2.5; })},
    {"add (double + tensor)", {sample({2, 3})}, [](const T& x) { return xf::add(2.5, x[0]); },
     ref_unary([](double v) { return 2.5 + v; })},
    {"sub", {sample({2, 3}), sample({2, 3}, -1, 1, 2)}, [](const T& x) { return xf::sub(x[0], x[1]); },
     ref_binary(minus)},
    {"sub (broadcast [2,1,3] - [4,1])", {sample({2, 1, 3}), sample({4, 1}, -1, 1, 2)},
     [](const T& x) { return x[0] - x[1]; }, ref_binary(minus)},
    {"sub (tensor - double)", {sample({2, 3})}, [](const T& x) { return x[0] - 1.5; },
     ref_unary([](double v) { return v - 1.5; })},
    {"sub (double - tensor)", {sample({2, 3})}, [](const T& x) { return 1.5 - x[0]; },
     ref_unary([](double v) { return 1.5 - v; })},
    {"mul", {sample({2, 3}), sample({2, 3}, -1, 1, 2)}, [](const T& x) { return xf::mul(x[0], x[1]); },
     ref_binary(times)},
    {"mul (broadcast [2,3] * [3])", {sample({2, 3}), sample({3}, -1, 1, 2)}, [](const T& x) { return x[0] * x[1]; },
     ref_binary(times)},
    {"mul (broadcast [3,1] * [1,4])", {sample({3, 1}), sample({1, 4}, -1, 1, 2)},
     [](const T& x) { return x[0] * x[1]; }, ref_binary(times)},
    {"mul (tensor * double)", {sample({2, 3})}, [](const T& x) { return x[0] * -2.0; },
     ref_unary([](double v) { return v * -2.0; })},
    {"mul (double * tensor)", {sample({2, 3})}, [](const T& x) { return 3.0 * x[0]; },
     ref_unary([](double v) { return 3.0 * v; })},
    {"div", {sample({2, 3}), sample({2, 3}, 0.5, 2.0, 3)}, [](const T& x) { return xf::div(x[0], x[1]); },
     ref_binary(over)},
    {"div (broadcast [2,3] / [2,1])", {sample({2, 3}), sample({2, 1}, 0.5, 2.0, 3)},
     [](const T& x) { return x[0] / x[1]; }, ref_binary(over)},
    {"div (tensor / double)", {sample({2, 3})}, [](const T& x) { return x[0] / 4.0; },
     ref_unary([](double v) { return v / 4.0; })},
    {"div (double / tensor)", {sample({2, 3}, 0.5, 2.0)}, [](const T& x) { return 2.0 / x[0]; },
     ref_unary([](double v) { return 2.0 / v; })},
    {"pow (tensor, tensor)", {sample({2, 3}, 0.5, 2.0), sample({2, 3}, -1, 2, 2)},
     [](const T& x) { return xf::pow(x[0], x[1]); }, ref_binary([](double a, double b) { return std::pow(a, b); })},
    {"pow (tensor, tensor, broadcast [2,3] ^ [3])", {sample({2, 3}, 0.5, 2.0), sample({3}, -1, 2, 2)},
     [](const T& x) { return xf::pow(x[0], x[1]); }, ref_binary([](double a, double b) { return std::pow(a, b); })},
    {"pow (tensor, 3.0)", {sample({2, 3})}, [](const T& x) { return xf::pow(x[0], 3.0); },
     ref_unary([](double v) { return v * v * v; })},
    {"pow (tensor, 2.0)", {sample({2, 3})}, [](const T& x) { return xf::pow(x[0], 2.0); },
     ref_unary([](double v) { return v * v; })},
    {"pow (tensor, -1.5)", {sample({2, 3}, 0.5, 2.0)}, [](const T& x) { return xf::pow(x[0], -1.5); },
     ref_unary([](double v) { return std::pow(v, -1.5); })},
    {"pow (tensor, 0.5)", {sample({2, 3}, 0.5, 2.0)}, [](const T& x) { return xf::pow(x[0], 0.5); },
     ref_unary([](double v) { return std::sqrt(v); })},
    {"pow (double, tensor)", {sample({2, 3})}, [](const T& x) { return xf::pow(2.0, x[0]); },
     ref_unary([](double v) { return std::pow(2.0, v); })},
    {"maximum", {sample({2, 3}), sample({2, 3}, -1, 1, 2)}, [](const T& x) { return xf::maximum(x[0], x[1]); },
     ref_binary([](double a, double b) { return std::max(a, b); })},
    {"maximum (broadcast [2,3], [3])", {sample({2, 3}), sample({3}, -1, 1, 4)},
     [](const T& x) { return xf::maximum(x[0], x[1]); }, ref_binary([](double a, double b) { return std::max(a, b); })},
    {"minimum", {sample({2, 3}), sample({2, 3}, -1, 1, 2)}, [](const T& x) { return xf::minimum(x[0], x[1]); },
     ref_binary([](double a, double b) { return std::min(a, b); })},
    {"minimum (broadcast [2,1], [2,3])", {sample({2, 1}), sample({2, 3}, -1, 1, 4)},
     [](const T& x) { return xf::minimum(x[0], x[1]); }, ref_binary([](double a, double b) { return std::min(a, b); })},
    {"atan2", {sample({2, 3}), sample({2, 3}, -1, 1, 2)}, [](const T& x) { return xf::atan2(x[0], x[1]); },
     ref_binary([](double a, double b) { return std::atan2(a, b); })},
    {"atan2 (broadcast [2,3], [3])", {sample({2, 3}), sample({3}, 0.5, 1.5, 2)},
     [](const T& x) { return xf::atan2(x[0], x[1]); }, ref_binary([](double a, double b) { return std::atan2(a, b); })},
    {"clamp", {sample({2, 3})}, [](const T& x) { return xf::clamp(x[0], -0.5, 0.5); },
     ref_unary([](double v) { return std::min(std::max(v, -0.5), 0.5); })},
    {"clamp (non-contiguous)", {noncontiguous(sample({3, 4}, -2, 2, 3))}, [](const T& x) { return xf::clamp(x[0], -1.0, 0.8); },
     ref_unary([](double v) { return std::min(std::max(v, -1.0), 0.8); })},
});

op_fn ref_where = [](const T& in) {
  return from_x(xt::xarray<double>(xt::where(xt::not_equal(to_x(in[0]), 0.0), to_x(in[1]), to_x(in[2]))));
};

const bool registered_where = add({
    {"where", {sample({2, 3}) > 0.0, sample({2, 3}, -1, 1, 2), sample({2, 3}, -1, 1, 3)},
     [](const T& x) { return xf::where(x[0], x[1], x[2]); }, ref_where},
    {"where (broadcast cond [2,3], a [3], b [2,1])", {sample({2, 3}) > 0.0, sample({3}, -1, 1, 2), sample({2, 1}, -1, 1, 3)},
     [](const T& x) { return xf::where(x[0], x[1], x[2]); }, ref_where},
    {"where (broadcast cond [3], a [2,3], b 0-d)", {sample({3}, -1, 1, 4) > 0.0, sample({2, 3}, -1, 1, 2), xf::scalar(0.25)},
     [](const T& x) { return xf::where(x[0], x[1], x[2]); }, ref_where},
});

// ---- dtype promotion (API §2) -------------------------------------------------------------------

TEST_CASE("pointwise: dtype promotion follows torch", "[ops][pointwise]") {
  const xf::tensor a32 = xf::tensor{1.0f, 2.0f}, a64 = xf::tensor{0.5, 0.25};
  const xf::tensor ai = xf::tensor{1, 2}, ab = xf::tensor{true, false};
  SECTION("f32 with f64 gives f64") {
    CHECK((a32 + a64).dtype() == xf::f64);
    CHECK((a64 * a32).dtype() == xf::f64);
    CHECK(xf::pow(a32, a64).dtype() == xf::f64);
    CHECK(xf::maximum(a32, a64).dtype() == xf::f64);
    CHECK(xf::atan2(a64, a32).dtype() == xf::f64);
    CHECK(xf::where(ab, a32, a64).dtype() == xf::f64);
    CHECK(xf::allclose(a32 + a64, xf::tensor{1.5, 2.25}));
  }
  SECTION("i64 or b8 with a floating tensor gives that dtype") {
    CHECK((ai + a32).dtype() == xf::f32);
    CHECK((a64 - ai).dtype() == xf::f64);
    CHECK((ab * a32).dtype() == xf::f32);
    CHECK((a64 / ab).dtype() == xf::f64);
    CHECK(xf::minimum(ai, a32).dtype() == xf::f32);
    CHECK(xf::allclose(ai + a64, xf::tensor{1.5, 2.25}));
    CHECK(xf::allclose(ab * a64, xf::tensor{0.5, 0.0}));
  }
  SECTION("a double does not widen a floating tensor") {
    CHECK((a32 * 2.0).dtype() == xf::f32);
    CHECK((2.0 * a32).dtype() == xf::f32);
    CHECK((a32 + 0.1).dtype() == xf::f32);
    CHECK((1.0 - a32).dtype() == xf::f32);
    CHECK((a32 / 3.0).dtype() == xf::f32);
    CHECK(xf::pow(a32, 2.0).dtype() == xf::f32);
    CHECK(xf::pow(2.0, a32).dtype() == xf::f32);
    CHECK((a64 * 2.0).dtype() == xf::f64);
    CHECK(xf::allclose(a32 * 2.0, xf::tensor{2.0f, 4.0f}));
  }
  SECTION("an integer tensor with a double becomes f32") {
    CHECK((ai * 2.5).dtype() == xf::f32);
    CHECK((2.5 + ai).dtype() == xf::f32);
    CHECK((ai - 0.5).dtype() == xf::f32);
    CHECK((ai / 2.0).dtype() == xf::f32);
    CHECK((ab * 2.0).dtype() == xf::f32);
    CHECK(xf::pow(ai, 2.0).dtype() == xf::f32);
    CHECK(xf::pow(2.0, ai).dtype() == xf::f32);
    CHECK(xf::allclose(ai * 2.5, xf::tensor{2.5f, 5.0f}));
  }
  SECTION("a 0-d tensor does not widen a tensor with dimensions of its category (torch)") {
    const xf::tensor s64 = xf::scalar(2.0), s32 = xf::scalar(2.0f);
    CHECK((a32 * s64).dtype() == xf::f32);
    CHECK((s64 + a32).dtype() == xf::f32);
    CHECK(xf::pow(a32, s64).dtype() == xf::f32);
    CHECK(xf::maximum(s64, a32).dtype() == xf::f32);
    CHECK(xf::where(ab, a32, s64).dtype() == xf::f32);
    CHECK(xf::allclose(a32 * s64, xf::tensor{2.0f, 4.0f}));
    CHECK((a64 * s32).dtype() == xf::f64);       // the tensor with dimensions is already wider
    CHECK((s64 * s32).dtype() == xf::f64);       // both 0-d: ordinary promotion
    CHECK((ai * s64).dtype() == xf::f64);        // a higher category still wins
    CHECK((xf::scalar(true) + ai).dtype() == xf::i64);
    // the 0-d float64 operand gets a float64 gradient, under vmap too
    auto g = xf::grad([&](const xf::tensor& s) { return xf::sum(a32 * s).to(xf::f64); })(s64);
    CHECK(g.dtype() == xf::f64);
    CHECK(g.item<double>() == Approx(3.0));
    auto v = xf::vmap([&](const xf::tensor& s) { return a32 * s; })(xf::tensor{1.0, 2.0});
    CHECK(v.dtype() == xf::f32);
    CHECK(xf::allclose(v, xf::tensor{{1.0f, 2.0f}, {2.0f, 4.0f}}));
  }
  SECTION("integer arithmetic stays integer; division and math ops give floats") {
    CHECK((ai + ai).dtype() == xf::i64);
    CHECK((ai * ai).dtype() == xf::i64);
    CHECK((ai + ab).dtype() == xf::i64);
    CHECK(xf::pow(ai, ai).dtype() == xf::i64);  // (torch's int ** int; pow(ai, 2.0) is f32 above)
    CHECK(xf::pow(ab, ai).dtype() == xf::i64);
    CHECK(xf::pow(ai, a32).dtype() == xf::f32);
    CHECK((ai / ai).dtype() == xf::f32);
    CHECK(xf::exp(ai).dtype() == xf::f32);
    CHECK(xf::sqrt(ai).dtype() == xf::f32);
    CHECK(xf::neg(ai).dtype() == xf::i64);
    CHECK(xf::abs(ai).dtype() == xf::i64);
    CHECK(xf::equal(-ai, xf::tensor{-1, -2}));
    CHECK(xf::equal(ai * ai, xf::tensor{1, 4}));
    CHECK(xf::allclose(ai / xf::tensor{2, 2}, xf::tensor{0.5f, 1.0f}));
  }
}

TEST_CASE("pointwise: arithmetic on two boolean tensors is torch's", "[ops][pointwise]") {
  // add, mul, maximum, minimum of two booleans stay boolean (or, and, or, and); subtraction and
  // negation are refused; with any other dtype the boolean is promoted as usual
  const xf::tensor p = xf::tensor{true, true, false, false}, q = xf::tensor{true, false, true, false};
  const auto same = [](const xf::tensor& got, const xf::tensor& expect) {
    CHECK(got.dtype() == xf::b8);
    CHECK(xf::equal(got, expect));
  };
  same(p + q, xf::logical_or(p, q));
  same(p * q, xf::logical_and(p, q));
  same(xf::maximum(p, q), xf::logical_or(p, q));
  same(xf::minimum(p, q), xf::logical_and(p, q));
  same(p + xf::scalar(true), xf::tensor{true, true, true, true});                  // a 0-d boolean
  same(p.reshape({4, 1}) * q, xf::logical_and(p.reshape({4, 1}), q));             // broadcasting
  same(xf::vmap([&](const xf::tensor& r) { return r + q; })(p.reshape({1, 4}).expand({2, 4})),
       xf::logical_or(p, q).reshape({1, 4}).expand({2, 4}));
  CHECK((p + xf::tensor{1, 2, 3, 4}).dtype() == xf::i64);
  CHECK((p * 2.5).dtype() == xf::f32);
  CHECK_THROWS_WITH(p - q, Catch::Contains("xf::sub: subtraction (the - operator) with a boolean tensor"));
  CHECK_THROWS_WITH(1.0 - p, Catch::Contains("xf::logical_not"));
  const xf::tensor f = xf::tensor{1.0, 2.0, 3.0, 4.0};
  CHECK_THROWS_WITH(f - p, Catch::Contains("with a boolean tensor is not supported"));
  CHECK_THROWS_WITH(-p, Catch::Contains("xf::neg: negation (the - operator) of a boolean tensor"));
  CHECK_THROWS_WITH(xf::abs(p), Catch::Contains("xf::abs: the absolute value of a boolean tensor is not supported"));
  CHECK_NOTHROW(p.to(xf::i64) - q.to(xf::i64));
  CHECK(xf::abs(p.to(xf::i64)).dtype() == xf::i64);
}

TEST_CASE("pointwise: integer pow is exact, as torch's", "[ops][pointwise]") {
  // by squaring in int64 (past 2^53, where a float computation would round), wrapping on
  // overflow; a negative exponent truncates 1 / a^-b: 1 for a base of 1, +-1 for -1, else 0
  const long big = 3037000499;  // floor(sqrt(2^63 - 1))
  const xf::tensor a = xf::tensor{3L, -2L, 1L, -1L, -1L, 0L, 0L, 5L, 2L, big, 3L, 2L};  // (std::int64_t is long)
  const xf::tensor b = xf::tensor{39L, 3L, -5L, -3L, -4L, 0L, 7L, -1L, -1L, 2L, 0L, 64L};
  const xf::tensor r = xf::pow(a, b);
  REQUIRE(r.dtype() == xf::i64);
  const std::vector<std::int64_t> expect = {4052555153018976267, -8, 1, -1, 1, 1, 0, 0, 0, big * big, 1, 0};
  for (std::size_t i = 0; i < expect.size(); ++i) {
    INFO("element " << i);
    CHECK(r.select(0, static_cast<std::int64_t>(i)).item<std::int64_t>() == expect[i]);
  }
  // 3^41 wraps as two's complement (torch gives the same bits)
  const std::uint64_t wrapped = 4052555153018976267ull * 9ull;
  CHECK(xf::pow(xf::tensor{std::int64_t(3)}, xf::tensor{std::int64_t(41)}).item<std::int64_t>() ==
        static_cast<std::int64_t>(wrapped));
  // broadcasting, a 0-d exponent, and under vmap (the batch rule keeps the dtype)
  CHECK(xf::equal(xf::pow(xf::arange(5), xf::scalar(std::int64_t(2))), xf::arange(5) * xf::arange(5)));
  const xf::tensor rows = xf::arange(6).reshape({2, 3});
  const xf::tensor v = xf::vmap([](const xf::tensor& x) { return xf::pow(x, xf::tensor{std::int64_t(3)}); })(rows);
  CHECK(v.dtype() == xf::i64);
  CHECK(xf::equal(v, rows * rows * rows));
}

TEST_CASE("pointwise: pow's derivatives at a zero base and a zero exponent are torch's", "[ops][pointwise]") {
  auto f = [](const xf::tensor& a, const xf::tensor& b) { return xf::sum(xf::pow(a, b)); };
  auto grads = [&](double a, double b) {
    auto [ga, gb] = xf::grad(f, xf::argnums<0, 1>)(xf::tensor{a}, xf::tensor{b});
    return std::pair{ga.item<double>(), gb.item<double>()};
  };
  // 0^0: both derivatives 0 (was NaN for the base)
  CHECK(grads(0.0, 0.0) == std::pair{0.0, 0.0});
  // b == 0 with a nonzero base: d/da = 0, d/db = log a
  CHECK(grads(2.0, 0.0).first == 0.0);
  CHECK(grads(2.0, 0.0).second == Approx(std::log(2.0)));
  // a zero base with b >= 0: d/db = 0; with b < 0: -inf (0^b log 0), as torch
  CHECK(grads(0.0, 2.0) == std::pair{0.0, 0.0});
  CHECK(grads(0.0, -1.0).second == -INFINITY);
  // a negative base: d/db is NaN (log of a negative number), d/da is b a^(b-1)
  CHECK(std::isnan(grads(-2.0, 2.0).second));
  CHECK(grads(-2.0, 2.0).first == Approx(-4.0));
  // forward mode agrees: the tangent of pow(x, 0) at x = 0 is 0
  auto [y, t] = xf::jvp([](const xf::tensor& x) { return xf::pow(x, xf::tensor{0.0}); }, xf::tensor{0.0}, xf::tensor{1.0});
  CHECK(t.item<double>() == 0.0);
}

TEST_CASE("pointwise: copy_ converts like torch; float to int64 never overflows", "[ops][pointwise]") {
  xf::tensor i = xf::zeros({4}, xf::i64);
  i.copy_(xf::tensor{1.5, -2.5, 7.0, 0.25});
  CHECK(xf::equal(i, xf::tensor{1, -2, 7, 0}));  // truncated, as torch
  // NaN, the infinities and values beyond int64 become INT64_MIN (x86's answer, torch's), in
  // to() too, without undefined behaviour
  const std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
  const xf::tensor odd = xf::tensor{std::nan(""), double(INFINITY), -double(INFINITY), 1e300, -1e19, 9.2e18};
  const xf::tensor as_int = odd.to(xf::i64);
  for (std::int64_t k = 0; k < 5; ++k) CHECK(as_int.select(0, k).item<std::int64_t>() == lowest);
  CHECK(as_int.select(0, 5).item<std::int64_t>() == 9200000000000000000);
  i.copy_(odd.narrow(0, 0, 4));
  CHECK(xf::equal(i, xf::full({4}, static_cast<double>(lowest), xf::i64)));
  // into a boolean tensor: nonzero is true
  xf::tensor b = xf::zeros({3}, xf::b8);
  b.copy_(xf::tensor{0.0, 2.0, -0.5});
  CHECK(xf::equal(b, xf::tensor{false, true, true}));
}

TEST_CASE("pointwise: clamp of an integer tensor is float32", "[ops][pointwise]") {
  const xf::tensor c = xf::clamp(xf::tensor{-1, 1, 2, 3}, -0.5, 2.5);
  CHECK(c.dtype() == xf::f32);
  CHECK(xf::equal(c, xf::tensor{-0.5f, 1.0f, 2.0f, 2.5f}));
  CHECK(xf::clamp(xf::tensor{0, 2}, 0.0, 2.0).dtype() == xf::f32);
}

TEST_CASE("pointwise: errors", "[ops][pointwise]") {
  CHECK_THROWS_WITH(sample({2, 3}) + sample({4}), Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(xf::mul(sample({2, 3}), sample({3, 2})), Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(xf::where(sample({2}) > 0.0, sample({3}), sample({3})), Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(xf::clamp(sample({2}), 1.0, -1.0), Catch::Contains("must not exceed"));
}
}  // namespace
}  // namespace conformance
