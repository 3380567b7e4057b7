// Conformance rows: reductions. References reduce by plain loops (ref_reduce).
#include <algorithm>
#include <cmath>
#include <numeric>

#include <catch2/catch.hpp>

#include "conformance.hpp"

namespace conformance {
namespace {
using T = tensors;
using V = std::vector<double>;
using dims = std::vector<std::int64_t>;

double vsum(const V& v) { return std::accumulate(v.begin(), v.end(), 0.0); }
double vmean(const V& v) { return vsum(v) / static_cast<double>(v.size()); }
double vprod(const V& v) { return std::accumulate(v.begin(), v.end(), 1.0, std::multiplies<>()); }
double vmax(const V& v) { return *std::max_element(v.begin(), v.end()); }
double vmin(const V& v) { return *std::min_element(v.begin(), v.end()); }
double vargmax(const V& v) { return static_cast<double>(std::max_element(v.begin(), v.end()) - v.begin()); }
double vlse(const V& v) {
  double s = 0;
  for (double x : v) s += std::exp(x);
  return std::log(s);
}
double vvar(const V& v, double correction) {
  const double m = vmean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / (static_cast<double>(v.size()) - correction);
}

op_fn red(dims d, bool keepdim, double (*f)(const V&)) {
  return [d, keepdim, f](const T& in) { return ref_reduce(in[0], d, keepdim, f); };
}

const bool registered = add({
    // sum
    {"sum (all)", {sample({2, 3})}, [](const T& x) { return xf::sum(x[0]); }, red({}, false, vsum)},
    {"sum (all, 3-d)", {sample({2, 3, 2})}, [](const T& x) { return xf::sum(x[0]); }, red({}, false, vsum)},
    {"sum (0-d)", {xf::scalar(0.7)}, [](const T& x) { return xf::sum(x[0]); }, red({}, false, vsum)},
    {"sum (dims {1})", {sample({2, 3})}, [](const T& x) { return xf::sum(x[0], {1}); }, red({1}, false, vsum)},
    {"sum (dims {0}, keepdim)", {sample({2, 3})}, [](const T& x) { return xf::sum(x[0], {0}, true); },
     red({0}, true, vsum)},
    {"sum (dims {-1})", {sample({2, 3, 4})}, [](const T& x) { return xf::sum(x[0], {-1}); }, red({-1}, false, vsum)},
    {"sum (dims {0, 2}, 3-d)", {sample({2, 3, 4})}, [](const T& x) { return xf::sum(x[0], {0, 2}); },
     red({0, 2}, false, vsum)},
    {"sum (dims {-1, 0}, keepdim)", {sample({2, 3, 4})}, [](const T& x) { return xf::sum(x[0], {-1, 0}, true); },
     red({-1, 0}, true, vsum)},
    // mean
    {"mean (all)", {sample({2, 3})}, [](const T& x) { return xf::mean(x[0]); }, red({}, false, vmean)},
    {"mean (dims {0})", {sample({2, 3})}, [](const T& x) { return xf::mean(x[0], {0}); }, red({0}, false, vmean)},
    {"mean (dims {-1}, keepdim)", {sample({2, 3, 2})}, [](const T& x) { return xf::mean(x[0], {-1}, true); },
     red({-1}, true, vmean)},
    // prod (one dim; a zero entry checks the division-free gradient)
    {"prod (dim 1)", {sample({2, 3}, 0.5, 1.5)}, [](const T& x) { return xf::prod(x[0], 1); }, red({1}, false, vprod)},
    {"prod (dim 0, keepdim)", {sample({3, 2}, -1.5, 1.5)}, [](const T& x) { return xf::prod(x[0], 0, true); },
     red({0}, true, vprod)},
    {"prod (dim -1, with a zero)", {xf::tensor{{0.5, 0.0, -1.5}, {2.0, 0.7, 1.1}}},
     [](const T& x) { return xf::prod(x[0], -1); }, red({-1}, false, vprod)},
    {"prod (1-d)", {sample({4}, 0.5, 1.5)}, [](const T& x) { return xf::prod(x[0], 0); }, red({0}, false, vprod)},
    // amax / amin (no ties)
    {"amax (dims {1})", {sample({2, 3})}, [](const T& x) { return xf::amax(x[0], {1}); }, red({1}, false, vmax)},
    {"amax (all dims, keepdim)", {sample({2, 3})}, [](const T& x) { return xf::amax(x[0], {0, 1}, true); },
     red({}, true, vmax)},
    {"amax (dims {-1}, 3-d)", {sample({2, 3, 4})}, [](const T& x) { return xf::amax(x[0], {-1}); },
     red({-1}, false, vmax)},
    {"amin (dims {0})", {sample({2, 3})}, [](const T& x) { return xf::amin(x[0], {0}); }, red({0}, false, vmin)},
    {"amin (dims {0, 2}, keepdim)", {sample({2, 3, 4})}, [](const T& x) { return xf::amin(x[0], {0, 2}, true); },
     red({0, 2}, true, vmin)},
    // argmax (integer result, not differentiable)
    {"argmax (dim 1)", {sample({3, 4})}, [](const T& x) { return xf::argmax(x[0], 1); }, red({1}, false, vargmax),
     false},
    {"argmax (dim 0, keepdim)", {sample({3, 4})}, [](const T& x) { return xf::argmax(x[0], 0, true); },
     red({0}, true, vargmax), false},
    {"argmax (dim -1, 3-d)", {sample({2, 3, 4})}, [](const T& x) { return xf::argmax(x[0], -1); },
     red({-1}, false, vargmax), false},
    // logsumexp
    {"logsumexp (dims {1})", {sample({2, 3}, -2, 2)}, [](const T& x) { return xf::logsumexp(x[0], {1}); },
     red({1}, false, vlse)},
    {"logsumexp (dims {0, 1}, keepdim)", {sample({2, 3}, -2, 2)},
     [](const T& x) { return xf::logsumexp(x[0], {0, 1}, true); }, red({}, true, vlse)},
    {"logsumexp (dims {-1}, 3-d, large values)", {sample({2, 3, 4}, 50, 60)},
     [](const T& x) { return xf::logsumexp(x[0], {-1}); }, red({-1}, false, vlse)},
    // var
    {"var (dims {1}, correction 1)", {sample({2, 4})}, [](const T& x) { return xf::var(x[0], {1}); },
     [](const T& in) { return ref_reduce(in[0], {1}, false, [](const V& v) { return vvar(v, 1); }); }},
    {"var (dims {1}, correction 0)", {sample({2, 4})}, [](const T& x) { return xf::var(x[0], {1}, 0); },
     [](const T& in) { return ref_reduce(in[0], {1}, false, [](const V& v) { return vvar(v, 0); }); }},
    {"var (dims {0, -1}, correction 1, keepdim)", {sample({3, 2, 4})},
     [](const T& x) { return xf::var(x[0], {0, -1}, 1, true); },
     [](const T& in) { return ref_reduce(in[0], {0, -1}, true, [](const V& v) { return vvar(v, 1); }); }},
    {"var (all dims, correction 0)", {sample({2, 3})}, [](const T& x) { return xf::var(x[0], {0, 1}, 0); },
     [](const T& in) { return ref_reduce(in[0], {}, false, [](const V& v) { return vvar(v, 0); }); }},
    // norm
    {"norm", {sample({2, 3})}, [](const T& x) { return xf::norm(x[0]); },
     [](const T& in) {
       return ref_reduce(in[0], {}, false, [](const V& v) {
         double s = 0;
         for (double x : v) s += x * x;
         return std::sqrt(s);
       });
     }},
    {"norm (1-d)", {sample({5}, -2, 2)}, [](const T& x) { return xf::norm(x[0]); },
     [](const T& in) {
       return ref_reduce(in[0], {}, false, [](const V& v) {
         double s = 0;
         for (double x : v) s += x * x;
         return std::sqrt(s);
       });
     }},
    // 0-d inputs: under vmap each example reduces no dim of its physical value, so a rule that
    // read an empty dims list as "every dim" would reduce over the batch (jvp∘vmap catches it)
    {"mean (0-d)", {xf::scalar(0.7)}, [](const T& x) { return xf::mean(x[0]); }, red({}, false, vmean)},
    {"prod (0-d)", {xf::scalar(-0.6)}, [](const T& x) { return xf::prod(x[0], 0); }, red({}, false, vprod)},
    {"amax (0-d)", {xf::scalar(0.7)}, [](const T& x) { return xf::amax(x[0], {}); }, red({}, false, vmax)},
    {"amin (0-d, keepdim)", {xf::scalar(-0.6)}, [](const T& x) { return xf::amin(x[0], {0}, true); },
     red({}, true, vmin)},
    {"argmax (0-d)", {xf::scalar(0.7)}, [](const T& x) { return xf::argmax(x[0], 0); }, red({}, false, vargmax),
     false},
    {"logsumexp (0-d)", {xf::scalar(0.7)}, [](const T& x) { return xf::logsumexp(x[0], {}); }, red({}, false, vlse)},
    {"norm (0-d)", {xf::scalar(-0.6)}, [](const T& x) { return xf::norm(x[0]); },
     [](const T& in) { return ref_reduce(in[0], {}, false, [](const V& v) { return std::abs(v[0]); }); }},
});

TEST_CASE("reduction: dtypes", "[ops][reduction]") {
  const xf::tensor i = xf::tensor{{1, 2, 3}, {4, 5, 6}};
  CHECK(xf::sum(i).dtype() == xf::i64);
  CHECK(xf::sum(i).item<std::int64_t>() == 21);
  CHECK(xf::sum(xf::tensor{true, true, false}).dtype() == xf::i64);
  // mean of an integer tensor is refused, as in torch (it gave float32 before 2026-12-05)
  CHECK_THROWS_WITH(xf::mean(i), Catch::Contains("xf::mean: needs a floating tensor, got int64"));
  CHECK(xf::mean(i.to(xf::f32)).item<float>() == Approx(3.5));
  CHECK(xf::argmax(xf::tensor{1.0f, 3.0f, 2.0f}, 0).dtype() == xf::i64);
  CHECK(xf::argmax(xf::tensor{1.0f, 3.0f, 2.0f}, 0).item<std::int64_t>() == 1);
  CHECK(xf::amax(i, {1}).dtype() == xf::i64);
  CHECK(xf::equal(xf::amax(i, {1}), xf::tensor{3, 6}));
  CHECK(xf::equal(xf::prod(i, 1), xf::tensor{6, 120}));
  CHECK(xf::sum(sample({2, 3}).to(xf::f32), {1}).dtype() == xf::f32);
}

TEST_CASE("reduction: amax gradient is shared among ties", "[ops][reduction]") {
  auto g = xf::grad([](const xf::tensor& t) { return xf::sum(xf::amax(t, {1})); })(xf::tensor{{1.0, 3.0, 3.0}, {2.0, 0.0, 1.0}});
  CHECK(xf::allclose(g, xf::tensor{{0.0, 0.5, 0.5}, {1.0, 0.0, 0.0}}));
}

TEST_CASE("reduction: norm has zero derivative at zero (as torch)", "[ops][reduction]") {
  const xf::tensor z = xf::zeros({2, 3}, xf::f64);
  auto g = xf::grad([](const xf::tensor& t) { return xf::norm(t); })(z);
  CHECK(xf::equal(g, xf::zeros({2, 3}, xf::f64)));
  auto [out, tan] = xf::jvp([](const xf::tensor& t) { return xf::norm(t); }, z, xf::ones({2, 3}, xf::f64));
  CHECK(out.item<double>() == 0.0);
  CHECK(tan.item<double>() == 0.0);
  auto gb = xf::vmap(xf::grad([](const xf::tensor& t) { return xf::norm(t); }))(xf::stack({z, sample({2, 3})}, 0));
  CHECK(xf::equal(gb.select(0, 0), z));
  CHECK(xf::allclose(gb.select(0, 1), sample({2, 3}) / xf::norm(sample({2, 3}))));
  CHECK(xf::norm(sample({2, 3}).to(xf::f32)).dtype() == xf::f32);
}

TEST_CASE("reduction: errors", "[ops][reduction]") {
  const xf::tensor x = sample({2, 3});
  CHECK_THROWS_WITH(xf::sum(x, {2}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::sum(x, {-3}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::mean(x, {0, 0}), Catch::Contains("more than once"));
  CHECK_THROWS_WITH(xf::sum(xf::scalar(1.0), {0, -1}), Catch::Contains("more than once"));  // a 0-d tensor too
  CHECK(xf::sum(xf::scalar(1.0), {-1}).item<double>() == 1.0);
  CHECK_THROWS_WITH(xf::prod(x, 2), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::amax(x, {5}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::argmax(x, -3), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::logsumexp(x, {2}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::var(x, {3}), Catch::Contains("out of range"));
}
}  // namespace
}  // namespace conformance
