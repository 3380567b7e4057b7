// grad and grad_and_value: argnums, has_aux, nesting, perturbation confusion, pytrees,
// escaped tensors, exceptions, errors.
#include <catch2/catch.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using Catch::Matchers::Contains;

TEST_CASE("grad of a scalar function", "[grad]") {
  xf::tensor x{1.0, 2.0, 3.0};
  auto g = xf::grad([](const xf::tensor& t) { return xf::sum(xf::sin(t) * t); })(x);
  CHECK(xf::allclose(g, xf::cos(x) * x + xf::sin(x)));
  CHECK(g.dtype() == xf::f64);
  CHECK(xf::layers::depth() == 0);
}

TEST_CASE("grad keeps float32", "[grad]") {
  xf::tensor x{1.0f, 2.0f};
  auto g = xf::grad([](const xf::tensor& t) { return xf::sum(t * t); })(x);
  CHECK(g.dtype() == xf::f32);
  CHECK(xf::allclose(g, xf::tensor{2.0f, 4.0f}));
}

TEST_CASE("grad argnums: one, several, negative", "[grad]") {
  auto f = [](const xf::tensor& a, const xf::tensor& b) { return xf::sum(a * a * b); };
  xf::tensor a{1.0, 2.0}, b{3.0, 4.0};
  CHECK(xf::allclose(xf::grad(f)(a, b), 2.0 * a * b));
  CHECK(xf::allclose(xf::grad(f, xf::argnums<1>)(a, b), a * a));
  CHECK(xf::allclose(xf::grad(f, xf::argnums<-1>)(a, b), a * a));
  auto [ga, gb] = xf::grad(f, xf::argnums<0, 1>)(a, b);
  CHECK(xf::allclose(ga, 2.0 * a * b));
  CHECK(xf::allclose(gb, a * a));
  auto [gb2, ga2] = xf::grad(f, xf::argnums<1, 0>)(a, b);
  CHECK(xf::allclose(gb2, a * a));
  CHECK(xf::allclose(ga2, 2.0 * a * b));
}

TEST_CASE("grad with non-tensor arguments", "[grad]") {
  auto f = [](const xf::tensor& a, double s) { return xf::sum(a * s); };
  CHECK(xf::allclose(xf::grad(f)(xf::tensor{1.0, 2.0}, 3.0), xf::tensor{3.0, 3.0}));
}

TEST_CASE("grad has_aux and grad_and_value", "[grad]") {
  xf::tensor x{1.0, 2.0};
  auto f = [](const xf::tensor& t) { return std::pair{xf::sum(t * t), t * 10.0}; };
  auto [g, aux] = xf::grad(f, xf::has_aux)(x);
  CHECK(xf::allclose(g, 2.0 * x));
  CHECK(xf::allclose(aux, x * 10.0));
  auto [g2, v] = xf::grad_and_value([](const xf::tensor& t) { return xf::sum(t * t); })(x);
  CHECK(xf::allclose(g2, 2.0 * x));
  CHECK(v.item<double>() == 5.0);
  auto [g3, va] = xf::grad_and_value(f, xf::has_aux)(x);
  CHECK(xf::allclose(g3, 2.0 * x));
  CHECK(va.first.item<double>() == 5.0);
  CHECK(xf::allclose(va.second, x * 10.0));
  // aux and value are plain tensors afterwards
  CHECK(aux.impl()->is_dense());
  CHECK(v.impl()->is_dense());
}

TEST_CASE("grad of grad of grad", "[grad][nesting]") {
  auto f = [](const xf::tensor& x) { return xf::sum(xf::sin(x)); };
  xf::tensor x{0.3, 1.2};
  auto d1 = xf::grad(f);
  auto d2 = xf::grad([&](const xf::tensor& t) { return xf::sum(d1(t)); });
  auto d3 = xf::grad([&](const xf::tensor& t) { return xf::sum(d2(t)); });
  CHECK(xf::allclose(d1(x), xf::cos(x)));
  CHECK(xf::allclose(d2(x), -xf::sin(x)));
  CHECK(xf::allclose(d3(x), -xf::cos(x)));
  auto cube = [](const xf::tensor& t) { return t * t * t; };
  auto ggg = xf::grad(xf::grad(xf::grad(cube)));
  CHECK(ggg(xf::scalar(2.0)).item<double>() == Approx(6.0));
}

TEST_CASE("six levels of nested transforms", "[grad][nesting]") {
  // sin's derivatives cycle with period 4: the sixth is -sin
  auto d6 = xf::grad(xf::grad(xf::grad(xf::grad(xf::grad(xf::grad([](const xf::tensor& t) { return xf::sin(t); }))))));
  CHECK(d6(xf::scalar(0.7)).item<double>() == Approx(-std::sin(0.7)));
  // every kind of level in one stack: vmap(jacfwd(grad(vmap(jvp(grad)))))
  auto g = xf::grad([](const xf::tensor& t) { return xf::sum(xf::exp(t) * t); });  // (1 + t) e^t
  auto h = [&](const xf::tensor& t) { return xf::jvp(g, t, xf::ones_like(t)).second; };  // (2 + t) e^t
  auto inner = xf::vmap(h);
  auto scalar_fn = [&](const xf::tensor& t) { return xf::sum(inner(t.expand({3}))); };  // 3 (2 + t) e^t
  auto outer = xf::vmap(xf::jacfwd(xf::grad(scalar_fn)));  // 3 (4 + t) e^t per example
  const xf::tensor x = xf::tensor{0.1, -0.4, 0.9}.to(xf::f64);
  const xf::tensor expect = 3.0 * (4.0 + x) * xf::exp(x);
  CHECK(xf::allclose(outer(x), expect, 1e-10, 1e-12));
}

TEST_CASE("nested grads of closures: no perturbation confusion", "[grad][nesting]") {
  // d/dx [ x * d/dy (x + y) ] = d/dx [ x * 1 ] = 1   (a confused implementation gives 2)
  auto outer = [](const xf::tensor& x) {
    auto inner = [&](const xf::tensor& y) { return x + y; };
    return x * xf::grad(inner)(xf::scalar(1.0));
  };
  CHECK(xf::grad(outer)(xf::scalar(1.0)).item<double>() == Approx(1.0));
  // d/dx [ d/dy (x * y) at y=c ] * x = d/dx [x * x] = 2x
  auto g2 = xf::grad([](const xf::tensor& x) {
    return x * xf::grad([&](const xf::tensor& y) { return x * y; })(xf::scalar(5.0));
  });
  CHECK(g2(xf::scalar(3.0)).item<double>() == Approx(6.0));
}

TEST_CASE("gradient of an unused input is zeros", "[grad]") {
  auto f = [](const xf::tensor& a, const xf::tensor&) { return xf::sum(a * 2.0); };
  auto [ga, gb] = xf::grad(f, xf::argnums<0, 1>)(xf::tensor{1.0, 2.0}, xf::tensor{{1.0, 2.0}, {3.0, 4.0}});
  CHECK(xf::allclose(ga, xf::tensor{2.0, 2.0}));
  CHECK(xf::equal(gb, xf::zeros({2, 2}, xf::f64)));
  auto constant = [](const xf::tensor&) { return xf::scalar(1.0); };
  CHECK(xf::equal(xf::grad(constant)(xf::tensor{1.0, 2.0}), xf::zeros({2}, xf::f64)));
}

TEST_CASE("grad with pytree arguments mirrors their structure", "[grad][pytree]") {
  using params = std::tuple<xf::tensor, xf::tensor>;
  auto f = [](const params& p, const xf::tensor& x) { return xf::sum(std::get<0>(p) * x + std::get<1>(p)); };
  params p{xf::tensor{1.0, 2.0}, xf::tensor{3.0, 4.0}};
  params g = xf::grad(f)(p, xf::tensor{5.0, 6.0});
  CHECK(xf::allclose(std::get<0>(g), xf::tensor{5.0, 6.0}));
  CHECK(xf::allclose(std::get<1>(g), xf::tensor{1.0, 1.0}));
  auto fv = [](const std::vector<xf::tensor>& v) { return xf::sum(v[0] * v[1]); };
  auto gv = xf::grad(fv)(std::vector<xf::tensor>{xf::tensor{1.0}, xf::tensor{2.0}});
  REQUIRE(gv.size() == 2);
  CHECK(gv[0].item<double>() == 2.0);
  CHECK(gv[1].item<double>() == 1.0);
}

TEST_CASE("an escaped tensor behaves as a plain tensor", "[grad][escape]") {
  xf::tensor leaked;
  auto f = [&](const xf::tensor& x) {
    leaked = x * 2.0;
    return xf::sum(x);
  };
  xf::grad(f)(xf::tensor{1.0, 2.0});
  CHECK(xf::layers::depth() == 0);
  xf::tensor y = leaked + 1.0;
  CHECK(y.impl()->is_dense());
  CHECK(xf::allclose(y, xf::tensor{3.0, 5.0}));
  // and can be differentiated again by a new transform
  CHECK(xf::allclose(xf::grad([](const xf::tensor& t) { return xf::sum(t * t); })(leaked), xf::tensor{4.0, 8.0}));
}

TEST_CASE("an escaped tensor stays dead when a later call reuses its layer", "[grad][escape]") {
  // Finished layers are recycled with a new level (NOTE: [Levels and life handles]): a wrapper
  // that escaped must not be taken for one of the new call's tensors.
  xf::tensor leaked;
  xf::grad([&](const xf::tensor& x) {
    leaked = x * 3.0;
    return xf::sum(x);
  })(xf::tensor{1.0, 2.0});
  bool reused = false;
  auto g = xf::grad([&](const xf::tensor& x) {
    reused = x.impl()->owner.get() == leaked.impl()->owner.get();
    return xf::sum(x * leaked + leaked);
  })(xf::tensor{5.0, 7.0});
  CHECK(reused);  // the case this test is about
  CHECK(xf::allclose(g, xf::tensor{3.0, 6.0}));
  // the same under jvp (dual wrappers); for vmap see test_vmap.cpp
  xf::tensor dual_leak;
  (void)xf::jvp([&](const xf::tensor& x) { return dual_leak = x * 2.0; }, xf::tensor{1.0}, xf::tensor{1.0});
  auto [out, tan] = xf::jvp([&](const xf::tensor& x) { return x * dual_leak; }, xf::tensor{4.0}, xf::tensor{1.0});
  CHECK(xf::allclose(out, xf::tensor{8.0}));
  CHECK(xf::allclose(tan, xf::tensor{2.0}));
  CHECK(xf::layers::depth() == 0);
}

TEST_CASE("an exception inside a transform restores the layer stack", "[grad][errors]") {
  auto bad = [](const xf::tensor& x) -> xf::tensor {
    CHECK(xf::layers::depth() == 2);
    throw std::runtime_error("boom");
    return x;
  };
  CHECK_THROWS_WITH(xf::vmap(xf::grad(bad))(xf::ones({2, 3})), "boom");
  CHECK(xf::layers::depth() == 0);
}

TEST_CASE("grad errors", "[grad][errors]") {
  auto nonscalar = [](const xf::tensor& x) { return x * 2.0; };
  CHECK_THROWS_AS(xf::grad(nonscalar)(xf::tensor{1.0, 2.0}), xf::error);
  CHECK_THROWS_WITH(xf::grad(nonscalar)(xf::tensor{1.0, 2.0}), Contains("scalar"));
  auto f = [](const xf::tensor& x) { return xf::sum(x); };
  CHECK_THROWS_WITH(xf::grad(f)(xf::tensor{1, 2}), Contains("only floating tensors can be differentiated"));
  auto intout = [](const xf::tensor& x) { return xf::argmax(x, 0); };
  CHECK_THROWS_WITH(xf::grad(intout)(xf::tensor{1.0, 2.0}), Contains("scalar"));
  CHECK(xf::layers::depth() == 0);
}

TEST_CASE("layers::depth counts active transforms", "[layers]") {
  CHECK(xf::layers::depth() == 0);
  std::size_t seen = 0;
  auto f = [&](const xf::tensor& x) {
    seen = xf::layers::depth();
    return xf::sum(x);
  };
  xf::grad(f)(xf::tensor{1.0});
  CHECK(seen == 1);
  xf::vmap(xf::grad(f))(xf::ones({2, 1}));
  CHECK(seen == 2);
  xf::vmap(xf::vmap(xf::grad(f)))(xf::ones({2, 3, 1}));
  CHECK(seen == 3);
  CHECK(xf::layers::depth() == 0);
}

TEST_CASE("an escaped tensor prints as its value", "[grad][escape]") {
  xf::tensor e;
  (void)xf::grad([&](const xf::tensor& x) {
    e = x * 2.0;
    return xf::sum(e);
  })(xf::tensor{1.0});
  std::ostringstream os;
  os << e;
  CHECK(os.str().rfind("tensor([2]", 0) == 0);
}
