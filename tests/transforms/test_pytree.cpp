// Pytrees: tuples, pairs, arrays, vectors and Hana-adapted structs as arguments, outputs, aux
// and in_dims / out_dims, with gradients and jacobians that mirror the argument's type.
#include <catch2/catch.hpp>

#include <boost/hana/define_struct.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

namespace {
struct mlp_params {
  BOOST_HANA_DEFINE_STRUCT(mlp_params, (xf::tensor, w), (xf::tensor, b), (double, scale));
};

xf::tensor predict(const mlp_params& p, const xf::tensor& x) { return xf::tanh(xf::matmul(p.w, x) + p.b) * p.scale; }
mlp_params make_params() {
  return {xf::tensor{{0.5, -1.0}, {1.5, 0.3}, {0.2, 0.1}}, xf::tensor{0.1, -0.2, 0.3}, 2.0};
}
}  // namespace

TEST_CASE("grad with respect to a Hana struct returns that struct", "[pytree]") {
  mlp_params p = make_params();
  xf::tensor x{0.4, -0.6};
  auto loss = [](const mlp_params& q, const xf::tensor& v) { return xf::sum(predict(q, v)); };
  mlp_params g = xf::grad(loss)(p, x);
  // d/db sum(s tanh(Wx+b)) = s (1 - y^2); d/dW = that ⊗ x
  xf::tensor y = xf::tanh(xf::matmul(p.w, x) + p.b);
  xf::tensor gb = 2.0 * (1.0 - y * y);
  CHECK(xf::allclose(g.b, gb));
  CHECK(xf::allclose(g.w, xf::outer(gb, x)));
  CHECK(g.scale == 2.0);  // non-tensor leaves pass through
}

TEST_CASE("vmap over a struct argument and struct outputs", "[pytree][vmap]") {
  mlp_params p = make_params();
  xf::tensor xs = xf::tensor{{0.4, -0.6}, {0.1, 0.2}, {-0.3, 0.9}, {0.0, 0.5}};
  auto loss = [](const mlp_params& q, const xf::tensor& v) { return xf::sum(predict(q, v)); };
  // per-example gradients with respect to the struct: leaves gain a leading batch dim
  mlp_params per_ex = xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0))(p, xs);
  REQUIRE(per_ex.w.shape() == xf::shape_t{4, 3, 2});
  REQUIRE(per_ex.b.shape() == xf::shape_t{4, 3});
  for (std::int64_t i = 0; i < 4; ++i) {
    mlp_params gi = xf::grad(loss)(p, xs.select(0, i));
    CHECK(xf::allclose(per_ex.w.select(0, i), gi.w));
    CHECK(xf::allclose(per_ex.b.select(0, i), gi.b));
  }
}

TEST_CASE("std::pair, std::array and std::vector pytrees", "[pytree]") {
  auto f = [](const std::pair<xf::tensor, xf::tensor>& p, const std::array<xf::tensor, 2>& a) {
    return xf::sum(p.first * a[0] + p.second * a[1]);
  };
  std::pair<xf::tensor, xf::tensor> p{xf::tensor{1.0, 2.0}, xf::tensor{3.0}};
  std::array<xf::tensor, 2> a{xf::tensor{5.0, 6.0}, xf::tensor{7.0}};
  auto [gp, ga] = xf::grad(f, xf::argnums<0, 1>)(p, a);
  CHECK(xf::allclose(gp.first, a[0]));
  CHECK(xf::allclose(gp.second, 2.0 * a[1]));  // broadcast over the 2 entries of p.first * a[0]
  CHECK(xf::allclose(ga[0], p.first));
  CHECK(xf::allclose(ga[1], 2.0 * p.second));
  // vectors as outputs, aux and vmap arguments
  auto g = [](const std::vector<xf::tensor>& v) { return std::vector<xf::tensor>{v[0] * 2.0, v[1] + v[0]}; };
  auto out = xf::vmap(g)(std::vector<xf::tensor>{xf::ones({3, 2}), xf::ones({3, 2})});
  REQUIRE(out.size() == 2);
  CHECK(out[1].shape() == xf::shape_t{3, 2});
  auto h = [](const xf::tensor& x) { return std::pair{xf::sum(x), std::vector<xf::tensor>{x * 3.0}}; };
  auto [gx, aux] = xf::grad(h, xf::has_aux)(xf::tensor{1.0, 2.0});
  CHECK(xf::allclose(aux[0], xf::tensor{3.0, 6.0}));
  CHECK(aux[0].impl()->is_dense());
}

TEST_CASE("vmap out_dims over pytree outputs", "[pytree][vmap]") {
  auto f = [](const xf::tensor& x) { return std::tuple{std::pair{x, x * 2.0}, xf::sum(x)}; };
  auto [pr, s] = xf::vmap(f, xf::in_dims(0), xf::out_dims(1, 0))(xf::ones({4, 3}));
  CHECK(pr.first.shape() == xf::shape_t{3, 4});
  CHECK(pr.second.shape() == xf::shape_t{3, 4});
  CHECK(s.shape() == xf::shape_t{4});
}

TEST_CASE("jacobians mirror struct arguments", "[pytree][jacobian]") {
  mlp_params p = make_params();
  xf::tensor x{0.4, -0.6};
  mlp_params jr = xf::jacrev(predict)(p, x);
  mlp_params jf = xf::jacfwd(predict)(p, x);
  CHECK(jr.w.shape() == xf::shape_t{3, 3, 2});
  CHECK(jr.b.shape() == xf::shape_t{3, 3});
  CHECK(xf::allclose(jr.w, jf.w));
  CHECK(xf::allclose(jr.b, jf.b));
  xf::tensor y = xf::tanh(xf::matmul(p.w, x) + p.b);
  CHECK(xf::allclose(jr.b, xf::eye(3, xf::f64) * (2.0 * (1.0 - y * y)).unsqueeze(1)));
}

TEST_CASE("vjp and jvp with pytree primals", "[pytree]") {
  mlp_params p = make_params();
  xf::tensor x{0.4, -0.6};
  auto [out, pullback] = xf::vjp(predict, p, x);
  auto [gp, gx] = pullback(xf::ones_like(out));
  CHECK(gp.w.shape() == xf::shape_t{3, 2});
  mlp_params tp{xf::zeros({3, 2}, xf::f64), xf::ones({3}, xf::f64), 2.0};
  auto [o2, t2] = xf::jvp(predict, std::tuple{p, x}, std::tuple{tp, xf::zeros({2}, xf::f64)});
  // the tangent along b equals the column sum of the b-jacobian
  mlp_params jr = xf::jacrev(predict)(p, x);
  CHECK(xf::allclose(t2, xf::sum(jr.b, {1})));
}
