// vjp and jvp: outputs, repeated pullbacks, has_aux, forward-over-reverse and the reverse,
// perturbation confusion in forward mode, errors.
#include <catch2/catch.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using Catch::Matchers::Contains;

TEST_CASE("vjp of a vector function, called repeatedly", "[vjp]") {
  xf::tensor x{1.0, 2.0, 3.0};
  auto [out, pullback] = xf::vjp([](const xf::tensor& t) { return xf::sin(t) * 2.0; }, x);
  CHECK(xf::allclose(out, xf::sin(x) * 2.0));
  auto [g1] = pullback(xf::ones_like(x));
  CHECK(xf::allclose(g1, 2.0 * xf::cos(x)));
  auto [g2] = pullback(xf::tensor{1.0, 0.0, 2.0});
  CHECK(xf::allclose(g2, xf::tensor{1.0, 0.0, 2.0} * 2.0 * xf::cos(x)));
}

TEST_CASE("vjp with several primals and tuple outputs", "[vjp]") {
  auto f = [](const xf::tensor& a, const xf::tensor& b) { return std::tuple{a * b, a + b}; };
  xf::tensor a{1.0, 2.0}, b{3.0, 4.0};
  auto [out, pullback] = xf::vjp(f, a, b);
  CHECK(xf::allclose(std::get<0>(out), a * b));
  auto [ga, gb] = pullback(std::tuple{xf::ones_like(a), xf::full_like(a, 2.0)});
  CHECK(xf::allclose(ga, b + 2.0));
  CHECK(xf::allclose(gb, a + 2.0));
}

TEST_CASE("vjp with has_aux", "[vjp]") {
  auto f = [](const xf::tensor& a) { return std::pair{a * 3.0, xf::sum(a)}; };
  auto [out, pullback, aux] = xf::vjp(f, xf::has_aux, xf::tensor{1.0, 2.0});
  CHECK(aux.item<double>() == 3.0);
  auto [g] = pullback(xf::tensor{1.0, 1.0});
  CHECK(xf::allclose(g, xf::tensor{3.0, 3.0}));
  CHECK(xf::allclose(out, xf::tensor{3.0, 6.0}));
}

TEST_CASE("vjp cotangent of the wrong shape throws", "[vjp][errors]") {
  auto [out, pullback] = xf::vjp([](const xf::tensor& t) { return t * 2.0; }, xf::tensor{1.0, 2.0});
  CHECK_THROWS_WITH(pullback(xf::tensor{1.0, 2.0, 3.0}), Contains("cotangent"));
}

TEST_CASE("jvp of elementwise and reducing functions", "[jvp]") {
  xf::tensor x{0.5, 1.5};
  auto [y, t] = xf::jvp([](const xf::tensor& a) { return xf::exp(a) * a; }, x, xf::tensor{1.0, 2.0});
  CHECK(xf::allclose(y, xf::exp(x) * x));
  CHECK(xf::allclose(t, (xf::exp(x) * x + xf::exp(x)) * xf::tensor{1.0, 2.0}));
  auto f2 = [](const xf::tensor& a, const xf::tensor& b) { return xf::sum(a * b); };
  auto [y2, t2] = xf::jvp(f2, std::tuple{x, x}, std::tuple{xf::tensor{1.0, 0.0}, xf::tensor{0.0, 1.0}});
  CHECK(t2.item<double>() == Approx(1.5 + 0.5));
  auto [y3, t3, aux] = xf::jvp([](const xf::tensor& a) { return std::pair{a * 2.0, a + 1.0}; }, xf::has_aux, x,
                               xf::ones_like(x));
  CHECK(xf::allclose(t3, xf::tensor{2.0, 2.0}));
  CHECK(xf::allclose(aux, x + 1.0));
}

TEST_CASE("jvp of an output independent of the input is zeros", "[jvp]") {
  auto [y, t] = xf::jvp([](const xf::tensor&) { return xf::ones({2}, xf::f64); }, xf::tensor{1.0}, xf::tensor{1.0});
  CHECK(xf::equal(t, xf::zeros({2}, xf::f64)));
}

TEST_CASE("jvp of grad (forward over reverse) and grad of jvp", "[jvp][nesting]") {
  auto f = [](const xf::tensor& x) { return xf::sum(x * x * x); };
  xf::tensor x{1.0, 2.0};
  // Hessian-vector product: H = diag(6x)
  auto [g, hv] = xf::jvp(xf::grad(f), x, xf::tensor{1.0, 1.0});
  CHECK(xf::allclose(g, 3.0 * x * x));
  CHECK(xf::allclose(hv, 6.0 * x));
  // grad of a jvp output: d/dx sum(d/dt f(x + t v)) = d/dx sum(3x^2 v) = 6 x v
  auto dir = [&](const xf::tensor& a) {
    auto [y, t] = xf::jvp(f, a, xf::tensor{1.0, 0.5});
    return t;
  };
  CHECK(xf::allclose(xf::grad(dir)(x), 6.0 * x * xf::tensor{1.0, 0.5}));
}

TEST_CASE("nested jvp of closures: no perturbation confusion", "[jvp][nesting]") {
  // d/dx [ x * d/dy (x + y) ] = 1
  auto outer = [](const xf::tensor& x) {
    auto [v, inner] = xf::jvp([&](const xf::tensor& y) { return x + y; }, xf::scalar(1.0), xf::scalar(1.0));
    return x * inner;
  };
  auto [o, d] = xf::jvp(outer, xf::scalar(1.0), xf::scalar(1.0));
  CHECK(d.item<double>() == Approx(1.0));
}

TEST_CASE("jvp tangent of the wrong shape throws", "[jvp][errors]") {
  auto f = [](const xf::tensor& a) { return a; };
  CHECK_THROWS_WITH(xf::jvp(f, xf::tensor{1.0, 2.0}, xf::tensor{1.0}), Contains("tangent"));
  CHECK(xf::layers::depth() == 0);
}
