// jacrev, jacfwd, hessian, linearize and chunked vmap.
#include <catch2/catch.hpp>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;
using Catch::Matchers::Contains;

namespace {
xf::tensor W() { return xf::tensor{{0.5, -1.0, 2.0}, {1.5, 0.3, -0.7}}; }
// f(x) = tanh(W x + b): J = diag(1 - y^2) W
xf::tensor layer(const xf::tensor& x) { return xf::tanh(xf::matmul(W(), x) + xf::tensor{0.1, -0.2}); }
xf::tensor analytic_jacobian(const xf::tensor& x) {
  xf::tensor y = layer(x);
  return (1.0 - y * y).unsqueeze(1) * W();
}
}  // namespace

TEST_CASE("jacrev and jacfwd agree with the analytic jacobian", "[jacobian]") {
  xf::tensor x{0.3, -0.2, 0.8};
  xf::tensor jr = xf::jacrev(layer)(x), jf = xf::jacfwd(layer)(x);
  REQUIRE(jr.shape() == xf::shape_t{2, 3});
  REQUIRE(jf.shape() == xf::shape_t{2, 3});
  CHECK(xf::allclose(jr, analytic_jacobian(x)));
  CHECK(xf::allclose(jf, analytic_jacobian(x)));
}

TEST_CASE("jacobian shapes are out ++ in, 0-d included", "[jacobian]") {
  auto f = [](const xf::tensor& m) { return m * 2.0; };  // [2,3] -> [2,3]
  xf::tensor m = xf::ones({2, 3}, xf::f64);
  CHECK(xf::jacrev(f)(m).shape() == xf::shape_t{2, 3, 2, 3});
  CHECK(xf::jacfwd(f)(m).shape() == xf::shape_t{2, 3, 2, 3});
  auto s = [](const xf::tensor& v) { return xf::sum(v * v); };  // [3] -> []
  CHECK(xf::jacrev(s)(xf::tensor{1.0, 2.0, 3.0}).shape() == xf::shape_t{3});
  auto sc = [](const xf::tensor& v) { return v * xf::tensor{1.0, 2.0}; };  // [] -> [2]
  xf::tensor jsc = xf::jacfwd(sc)(xf::scalar(3.0));
  CHECK(jsc.shape() == xf::shape_t{2});
  CHECK(xf::allclose(jsc, xf::tensor{1.0, 2.0}));
  CHECK(xf::allclose(xf::jacrev(sc)(xf::scalar(3.0)), xf::tensor{1.0, 2.0}));
}

TEST_CASE("jacobians over several argnums and several outputs", "[jacobian]") {
  auto f = [](const xf::tensor& a, const xf::tensor& b) { return std::tuple{a * b, xf::sum(a)}; };
  xf::tensor a{1.0, 2.0}, b{3.0, 4.0};
  auto jr = xf::jacrev(f, xf::argnums<0, 1>)(a, b);
  auto jf = xf::jacfwd(f, xf::argnums<0, 1>)(a, b);
  // d(a*b)/da = diag(b), d(a*b)/db = diag(a), dsum/da = 1, dsum/db = 0
  for (auto* j : {&jr, &jf}) {
    CHECK(xf::allclose(std::get<0>(std::get<0>(*j)), xf::tensor{{3.0, 0.0}, {0.0, 4.0}}));
    CHECK(xf::allclose(std::get<1>(std::get<0>(*j)), xf::tensor{{1.0, 0.0}, {0.0, 2.0}}));
    CHECK(xf::allclose(std::get<0>(std::get<1>(*j)), xf::tensor{1.0, 1.0}));
    CHECK(xf::allclose(std::get<1>(std::get<1>(*j)), xf::tensor{0.0, 0.0}));
  }
}

TEST_CASE("jacobians with has_aux", "[jacobian]") {
  auto f = [](const xf::tensor& a) { return std::pair{a * 3.0, xf::sum(a)}; };
  auto [jr, auxr] = xf::jacrev(f, xf::has_aux)(xf::tensor{1.0, 2.0});
  auto [jf, auxf] = xf::jacfwd(f, xf::has_aux)(xf::tensor{1.0, 2.0});
  CHECK(xf::allclose(jr, 3.0 * xf::eye(2, xf::f64)));
  CHECK(xf::allclose(jf, 3.0 * xf::eye(2, xf::f64)));
  CHECK(auxr.item<double>() == 3.0);
  CHECK(auxf.item<double>() == 3.0);
}

TEST_CASE("jacrev chunk_size gives the unchunked result", "[jacobian][chunk]") {
  xf::tensor x{0.3, -0.2, 0.8};
  for (std::int64_t c : {1, 2, 3, 7}) CHECK(xf::allclose(xf::jacrev(layer, xf::chunk_size(c))(x), analytic_jacobian(x)));
  CHECK_THROWS_WITH(xf::jacrev(layer, xf::chunk_size(0))(x), Contains("chunk_size"));
}

TEST_CASE("vmap chunk_size gives the unchunked result", "[vmap][chunk]") {
  xf::tensor xs = xf::arange(0.0, 30.0, 1.0, xf::f64).reshape({10, 3}) * 0.1;
  auto f = [](const xf::tensor& r) { return std::tuple{xf::sin(r), xf::sum(r)}; };
  auto full = xf::vmap(f)(xs);
  for (std::int64_t c : {1, 3, 4, 10, 64}) {
    auto part = xf::vmap(f, xf::chunk_size(c))(xs);
    CHECK(xf::allclose(std::get<0>(part), std::get<0>(full)));
    CHECK(xf::allclose(std::get<1>(part), std::get<1>(full)));
  }
  CHECK_THROWS_WITH(xf::vmap(f, xf::chunk_size(-2))(xs), Contains("chunk_size"));
}

TEST_CASE("vmap chunk_size under randomness::same draws the batch's one value in every chunk",
          "[vmap][chunk][random]") {
  // NOTE: [Chunked vmap]: each chunk starts from the generator's offset at the first, as torch.func
  // restores its RNG state per chunk; without that, chunks of 2 drew [a, a, b, b]
  auto noisy = [](const xf::tensor& x) { return x + xf::rand({3}, xf::f64) * xf::randn({}, xf::f64); };
  const xf::tensor xs = xf::zeros({5, 3}, xf::f64);
  xf::manual_seed(7);
  const xf::tensor full = xf::vmap(noisy, xf::randomness::same)(xs);
  const xf::tensor after_full = xf::rand({4}, xf::f64);
  for (std::int64_t c : {1, 2, 4}) {
    INFO("chunk_size " << c);
    xf::manual_seed(7);
    CHECK(xf::equal(xf::vmap(noisy, xf::randomness::same, xf::chunk_size(c))(xs), full));
    CHECK(xf::equal(xf::rand({4}, xf::f64), after_full));  // the generator ends where the unchunked call left it
  }
  for (std::int64_t b = 1; b < 5; ++b) CHECK(xf::equal(full.select(0, b), full.select(0, 0)));
  // ::different: one draw per example in each chunk (rows differ), chunked or not
  const xf::tensor diff = xf::vmap(noisy, xf::randomness::different, xf::chunk_size(2))(xs);
  for (std::int64_t b = 1; b < 5; ++b) CHECK_FALSE(xf::equal(diff.select(0, b), diff.select(0, 0)));
  // jacfwd maps its basis columns in chunks: the random factor must be one for all of them
  auto scaled = [](const xf::tensor& x) { return x * xf::rand({4}, xf::f64); };
  const xf::tensor x = xf::ones({4}, xf::f64);
  xf::manual_seed(3);
  const xf::tensor j = xf::jacfwd(scaled, xf::randomness::same)(x);
  xf::manual_seed(3);
  CHECK(xf::equal(xf::jacfwd(scaled, xf::randomness::same, xf::chunk_size(2))(x), j));
  xf::manual_seed(3);
  CHECK(xf::equal(xf::sum(j * xf::eye(4, xf::f64), {1}), xf::rand({4}, xf::f64)));  // the diagonal
}

TEST_CASE("hessian is jacfwd(jacrev)", "[hessian]") {
  auto f = [](const xf::tensor& x) { return xf::sum(x * x * x); };
  xf::tensor x{1.0, 2.0};
  CHECK(xf::allclose(xf::hessian(f)(x), xf::tensor{{6.0, 0.0}, {0.0, 12.0}}));
  static_assert(std::is_same_v<decltype(xf::hessian(f)), decltype(xf::jacfwd(xf::jacrev(f)))>);
  constexpr auto names = xf::transform_names<decltype(xf::hessian(f))>();
  static_assert(names.size() == 2 && names[0] == "jacfwd" && names[1] == "jacrev");
  static_assert(xf::transform_depth_v<decltype(xf::vmap(xf::grad(f)))> == 2);
  // mixed partials: f(a, b) = sum(a^2 b)
  auto g = [](const xf::tensor& a, const xf::tensor& b) { return xf::sum(a * a * b); };
  auto h = xf::hessian(g, xf::argnums<0, 1>)(xf::tensor{1.0, 2.0}, xf::tensor{3.0, 4.0});
  CHECK(xf::allclose(std::get<0>(std::get<0>(h)), xf::tensor{{6.0, 0.0}, {0.0, 8.0}}));   // d2/da2 = diag(2b)
  CHECK(xf::allclose(std::get<1>(std::get<0>(h)), xf::tensor{{2.0, 0.0}, {0.0, 4.0}}));   // d2/da db = diag(2a)
  CHECK(xf::allclose(std::get<0>(std::get<1>(h)), xf::tensor{{2.0, 0.0}, {0.0, 4.0}}));
  CHECK(xf::allclose(std::get<1>(std::get<1>(h)), xf::zeros({2, 2}, xf::f64)));
}

TEST_CASE("jacfwd and hessian chunk_size give the unchunked result", "[hessian][chunk]") {
  auto f = [](const xf::tensor& x) { return xf::sum(xf::tanh(x) * x * x); };
  xf::tensor x = xf::tensor{0.3, -0.2, 0.8, 1.1, -0.7};
  xf::tensor h = xf::hessian(f)(x);
  for (std::int64_t c : {1, 2, 4, 5, 9}) {
    CHECK(xf::allclose(xf::hessian(f, xf::chunk_size(c))(x), h));
    CHECK(xf::allclose(xf::jacfwd(layer, xf::chunk_size(c))(xf::tensor{0.3, -0.2, 0.8}),
                       analytic_jacobian(xf::tensor{0.3, -0.2, 0.8})));
  }
  CHECK_THROWS_WITH(xf::jacfwd(layer, xf::chunk_size(0))(xf::tensor{0.3, -0.2, 0.8}), Contains("chunk_size"));
}

TEST_CASE("jacfwd over a random op needs a randomness option", "[jacobian][errors]") {
  auto f = [](const xf::tensor& x) { return x + xf::randn({2}, xf::f64); };
  CHECK_THROWS_WITH(xf::jacfwd(f)(xf::tensor{1.0, 2.0}), Contains("randomness"));
  CHECK(xf::allclose(xf::jacfwd(f, xf::randomness::same)(xf::tensor{1.0, 2.0}), xf::eye(2, xf::f64)));
  CHECK_NOTHROW(xf::jvp(f, xf::tensor{1.0, 2.0}, xf::tensor{1.0, 1.0}));
}

TEST_CASE("linearize evaluates f once and reuses the jvp", "[linearize]") {
  int calls = 0;
  auto f = [&](const xf::tensor& x) {
    ++calls;
    return xf::sin(x) * x;
  };
  xf::tensor x{0.5, 1.0};
  auto [y, jvp_fn] = xf::linearize(f, x);
  CHECK(calls == 1);
  CHECK(xf::allclose(y, xf::sin(x) * x));
  CHECK(xf::allclose(jvp_fn(xf::tensor{1.0, 0.0}), xf::tensor{1.0, 0.0} * (xf::cos(x) * x + xf::sin(x))));
  CHECK(xf::allclose(jvp_fn(xf::tensor{0.0, 2.0}), xf::tensor{0.0, 2.0} * (xf::cos(x) * x + xf::sin(x))));
  CHECK(calls == 1);
  // batched tangents: vmap over the jvp function
  xf::tensor tangents = xf::eye(2, xf::f64);
  CHECK(xf::allclose(xf::vmap(jvp_fn)(tangents), xf::jacfwd(f)(x)));
}
