// vmap: in_dims / out_dims, nesting with different batch sizes, per-example gradients,
// grad of vmap, the loop fallback, and every documented error.
#include <catch2/catch.hpp>

#include <sstream>

#include <xfunc/testing.hpp>
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using Catch::Matchers::Contains;

TEST_CASE("vmap maps over dim 0 by default", "[vmap]") {
  xf::tensor x = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({2, 3});
  auto y = xf::vmap([](const xf::tensor& r) { return xf::sum(r * r); })(x);
  CHECK(xf::allclose(y, xf::tensor{5.0, 50.0}));
}

TEST_CASE("vmap in_dims and out_dims", "[vmap]") {
  xf::tensor x = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({2, 3});
  xf::tensor w{1.0, 2.0};
  auto f = [](const xf::tensor& col, const xf::tensor& v) { return col * v; };
  // map over the columns of x (dim 1), w unmapped
  auto y = xf::vmap(f, xf::in_dims(1, xf::none))(x, w);
  CHECK(y.shape() == xf::shape_t{3, 2});
  CHECK(xf::allclose(y, x.t() * w));
  auto y1 = xf::vmap(f, xf::in_dims(-1, xf::none), xf::out_dims(1))(x, w);
  CHECK(y1.shape() == xf::shape_t{2, 3});
  CHECK(xf::allclose(y1, x * w.unsqueeze(1)));
  CHECK(xf::testing::vmap_matches_loop(f, xf::in_dims(1, xf::none), x, w));
}

TEST_CASE("testing::vmap_matches_loop takes vmap's in_dims and matches NaN with NaN", "[vmap][testing]") {
  const xf::tensor x = xf::tensor{{0.5, -1.0}, {2.0, 3.0}, {-0.25, 1.5}};
  // a non-tensor argument with in_dim none, and a tuple argument with nested in_dims
  auto scaled = [](const xf::tensor& a, double s) { return a * s; };
  CHECK(xf::testing::vmap_matches_loop(scaled, xf::in_dims(0, xf::none), x, 2.0));
  auto pair = [](const std::tuple<xf::tensor, xf::tensor>& p) { return std::get<0>(p) * std::get<1>(p); };
  CHECK(xf::testing::vmap_matches_loop(pair, xf::in_dims(xf::in_dims(1, xf::none)), std::tuple{x, xf::tensor{1.0, 2.0, 3.0}}));
  CHECK(xf::testing::vmap_matches_loop(pair, xf::in_dims(0), std::tuple{x, x * 2.0}));
  // log of negative entries: NaN in the same places on both sides
  CHECK(xf::testing::vmap_matches_loop([](const xf::tensor& a) { return xf::log(a); }, xf::in_dims(0), x));
  // and a real mismatch still fails
  struct counter {
    int* n;
    xf::tensor operator()(const xf::tensor& a) const { return a * static_cast<double>(++*n); }
  };
  int calls = 0;  // one call under vmap, then one per example: the loop sees other factors
  CHECK_FALSE(xf::testing::vmap_matches_loop(counter{&calls}, xf::in_dims(0), x));
}

TEST_CASE("vmap with tuple outputs and per-output out_dims", "[vmap]") {
  auto f = [](const xf::tensor& r) { return std::tuple{r * 2.0, xf::sum(r)}; };
  xf::tensor x = xf::ones({4, 3}, xf::f64);
  auto [a, s] = xf::vmap(f, xf::in_dims(0), xf::out_dims(1, 0))(x);
  CHECK(a.shape() == xf::shape_t{3, 4});
  CHECK(s.shape() == xf::shape_t{4});
}

TEST_CASE("vmap nested in_dims for tuple arguments", "[vmap][pytree]") {
  auto f = [](const std::tuple<xf::tensor, xf::tensor>& p, double k) { return std::get<0>(p) * std::get<1>(p) * k; };
  std::tuple<xf::tensor, xf::tensor> p{xf::ones({3, 2}, xf::f64), xf::tensor{1.0, 2.0}};
  auto y = xf::vmap(f, xf::in_dims(xf::in_dims(0, xf::none), xf::none))(p, 2.0);
  CHECK(y.shape() == xf::shape_t{3, 2});
  CHECK(xf::allclose(y.select(0, 2), xf::tensor{2.0, 4.0}));
}

TEST_CASE("an output independent of the batch is expanded", "[vmap]") {
  auto y = xf::vmap([](const xf::tensor&) { return xf::tensor{7.0, 8.0}; })(xf::ones({3, 1}));
  CHECK(y.shape() == xf::shape_t{3, 2});
  CHECK(xf::allclose(y.select(0, 2), xf::tensor{7.0, 8.0}));
}

TEST_CASE("vmap of vmap with different batch sizes", "[vmap][nesting]") {
  xf::tensor a = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({2, 3});
  xf::tensor b = xf::arange(0.0, 20.0, 1.0, xf::f64).reshape({5, 4});
  // outer maps a's rows (2), inner maps b's rows (5): out[i][j] = sum(a_i) * sum(b_j)
  auto inner = [](const xf::tensor& ar, const xf::tensor& br) { return xf::sum(ar) * xf::sum(br); };
  auto outer = [&](const xf::tensor& ar) { return xf::vmap(inner, xf::in_dims(xf::none, 0))(ar, b); };
  auto y = xf::vmap(outer)(a);
  REQUIRE(y.shape() == xf::shape_t{2, 5});
  CHECK(xf::allclose(y, xf::outer(xf::sum(a, {1}), xf::sum(b, {1}))));
}

TEST_CASE("per-example gradients: vmap(grad)", "[vmap][grad]") {
  xf::tensor w{0.5, -1.0, 2.0};
  xf::tensor xs = xf::arange(0.0, 12.0, 1.0, xf::f64).reshape({4, 3}) * 0.1;
  xf::tensor ys{1.0, 0.0, 2.0, -1.0};
  auto loss = [](const xf::tensor& wt, const xf::tensor& x, const xf::tensor& y) {
    return xf::square(xf::sum(wt * x) - y);
  };
  auto per_ex = xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0, 0))(w, xs, ys);
  REQUIRE(per_ex.shape() == xf::shape_t{4, 3});
  for (std::int64_t i = 0; i < 4; ++i)
    CHECK(xf::allclose(per_ex.select(0, i), xf::grad(loss)(w, xs.select(0, i), ys.select(0, i))));
  // and vmap(vmap(grad)) over a 2x2 grouping
  auto nested = xf::vmap(xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0, 0)), xf::in_dims(xf::none, 0, 0))(
      w, xs.reshape({2, 2, 3}), ys.reshape({2, 2}));
  CHECK(xf::allclose(nested.reshape({4, 3}), per_ex));
}

TEST_CASE("grad of vmap", "[vmap][grad]") {
  auto f = [](const xf::tensor& x) {
    return xf::sum(xf::vmap([](const xf::tensor& r) { return xf::sum(xf::sin(r)) * xf::sum(r); })(x));
  };
  xf::tensor x = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({2, 3}) * 0.3;
  auto g = xf::grad(f)(x);
  xf::tensor expect = xf::cos(x) * xf::sum(x, {1}, true) + xf::sum(xf::sin(x), {1}, true);
  CHECK(xf::allclose(g, expect));
}

TEST_CASE("jvp of vmap and vmap of jvp", "[vmap][jvp]") {
  xf::tensor x = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({2, 3}) * 0.2;
  auto f = [](const xf::tensor& r) { return xf::sin(r) * r; };
  auto [y, t] = xf::jvp(xf::vmap(f), x, xf::ones_like(x));
  CHECK(xf::allclose(t, xf::cos(x) * x + xf::sin(x)));
  auto jv = [&](const xf::tensor& p, const xf::tensor& v) { return std::get<1>(xf::jvp(f, p, v)); };
  CHECK(xf::allclose(xf::vmap(jv)(x, xf::ones_like(x)), t));
}

namespace {
// An op without a batch rule, to exercise the loop fallback.
struct no_batch_rule_op {
  static constexpr const char* name = "test::double_it";
  using attrs = xf::detail::no_attrs;
  static xf::tensor kernel(std::span<const xf::tensor> in, const attrs&) { return in[0] * 2.0; }
};
xf::tensor double_it(const xf::tensor& x) { return xf::detail::call<no_batch_rule_op>({}, x); }
}  // namespace

TEST_CASE("ops without a batch rule fall back to a loop", "[vmap]") {
  xf::tensor x = xf::arange(0.0, 6.0, 1.0, xf::f64).reshape({3, 2});
  auto y = xf::vmap(double_it, xf::in_dims(1))(x);
  CHECK(xf::allclose(y, x.t() * 2.0));
}

TEST_CASE("vmap errors", "[vmap][errors]") {
  auto f = [](const xf::tensor& a, const xf::tensor& b) { return a + b; };
  CHECK_THROWS_WITH(xf::vmap(f)(xf::ones({2, 3}), xf::ones({3, 3})), Contains("same size in the mapped dimension"));
  CHECK_THROWS_WITH(xf::vmap(f, xf::in_dims(2, 0))(xf::ones({2, 3}), xf::ones({3, 3})), Contains("in_dim"));
  CHECK_THROWS_WITH(xf::vmap(f, xf::in_dims(xf::none, xf::none))(xf::ones({2}), xf::ones({2})),
                    Contains("at least one"));
  auto item = [](const xf::tensor& a) { return a * a.item<double>(); };
  CHECK_THROWS_WITH(xf::vmap(item)(xf::ones({2, 1})), Contains("data-dependent"));
  auto rnd = [](const xf::tensor& a) { return a + xf::randn({3}); };
  CHECK_THROWS_WITH(xf::vmap(rnd)(xf::ones({2, 3})), Contains("randomness"));
  xf::tensor outside = xf::zeros({3});
  auto inplace = [&](const xf::tensor& a) {
    outside.add_(a);
    return a;
  };
  CHECK_THROWS_WITH(xf::vmap(inplace)(xf::ones({2, 3})), Contains("in-place"));
  auto capture = [&](const xf::tensor& a) {
    outside.add_(a);
    return xf::sum(a);
  };
  CHECK_THROWS_WITH(xf::grad(capture)(xf::ones({3})), Contains("captured"));
  CHECK(xf::layers::depth() == 0);
}

TEST_CASE("factories inside vmap give unbatched tensors; random ops follow randomness", "[vmap]") {
  auto f = [](const xf::tensor& a) {
    xf::tensor z = xf::zeros({3});
    CHECK(z.impl()->is_dense());
    return a + z;
  };
  CHECK(xf::vmap(f)(xf::ones({2, 3})).shape() == xf::shape_t{2, 3});
  xf::manual_seed(7);
  auto same = xf::vmap([](const xf::tensor& a) { return a + xf::randn({3}); }, xf::randomness::same)(xf::zeros({4, 3}));
  CHECK(xf::allclose(same.select(0, 0), same.select(0, 3)));
  auto diff =
      xf::vmap([](const xf::tensor& a) { return a + xf::randn({3}); }, xf::randomness::different)(xf::zeros({4, 3}));
  CHECK_FALSE(xf::allclose(diff.select(0, 0), diff.select(0, 3)));
}

TEST_CASE("printing shows wrappers under a transform", "[vmap]") {
  std::string seen;
  xf::vmap([&](const xf::tensor& a) {
    std::ostringstream os;
    os << a;
    seen = os.str();
    return a;
  })(xf::ones({2, 3}));
  CHECK_THAT(seen, Contains("batched(level="));
  CHECK_THAT(seen, Contains("bdim=0"));
}

TEST_CASE("a tensor that escaped a vmap call cannot be used afterwards", "[vmap][escape][errors]") {
  // Its wrapper's shape is one example's and its data the whole batch's: there is no plain value
  // to fall back on, so every use is an error instead of a guess.
  xf::tensor leaked;
  (void)xf::vmap([&](const xf::tensor& r) { return leaked = r * 2.0; })(xf::ones({2, 3}));
  CHECK_THROWS_WITH(leaked + 1.0, Contains("escaped a vmap call"));
  CHECK_THROWS_WITH(xf::sum(leaked), Contains("escaped a vmap call"));
  CHECK_THROWS_WITH(xf::to_xtensor<float>(leaked), Contains("escaped a vmap call"));
  // also when a later vmap call (which reuses the finished call's layer) captures it
  CHECK_THROWS_WITH(xf::vmap([&](const xf::tensor& r) { return r + leaked; })(xf::ones({4, 3})),
                    Contains("escaped a vmap call"));
  // and through a grad wrapper that escaped with it
  xf::tensor leaked_grad;
  (void)xf::vmap(xf::grad([&](const xf::tensor& x) {
    leaked_grad = x * 2.0;
    return xf::sum(x);
  }))(xf::ones({2, 3}));
  CHECK_THROWS_WITH(leaked_grad * 3.0, Contains("escaped a vmap call"));
  // it still prints, as what it was
  std::ostringstream os;
  os << leaked;
  CHECK_THAT(os.str(), Contains("escaped_batched(") && Contains("shape=[2, 3]"));
  CHECK(xf::layers::depth() == 0);
}
