// Conformance rows: neural-network helpers. References by plain loops over xtensor arrays.
#include <cmath>

#include <catch2/catch.hpp>

#include "conformance.hpp"

namespace conformance {
namespace {
using T = tensors;

/// softmax / log_softmax along `dim` by loops: the values along dim are one group.
op_fn ref_softmax(std::int64_t dim, bool log) {
  return [dim, log](const T& in) {
    xt::xarray<double> a = to_x(in[0]);
    const auto r = static_cast<std::int64_t>(a.dimension());
    const auto d = static_cast<std::size_t>(dim < 0 ? dim + r : dim);
    std::size_t inner = 1;
    for (std::size_t i = d + 1; i < a.dimension(); ++i) inner *= a.shape()[i];
    const std::size_t n = a.shape()[d], outer = a.size() / (n * inner);
    xt::xarray<double> out = a;
    for (std::size_t o = 0; o < outer; ++o)
      for (std::size_t j = 0; j < inner; ++j) {
        double s = 0;
        for (std::size_t k = 0; k < n; ++k) s += std::exp(a.flat((o * n + k) * inner + j));
        for (std::size_t k = 0; k < n; ++k) {
          const double v = a.flat((o * n + k) * inner + j);
          out.flat((o * n + k) * inner + j) = log ? v - std::log(s) : std::exp(v) / s;
        }
      }
    return from_x(out);
  };
}

/// cross_entropy by loops: mean over rows of -log softmax(row)[target].
xf::tensor ref_cross_entropy(const T& in) {
  xt::xarray<double> a = to_x(in[0]);
  xt::xarray<std::int64_t> t = xf::to_xtensor<std::int64_t>(in[1]);
  if (a.dimension() == 1) a.reshape({1, a.size()});
  const std::size_t N = a.shape()[0], C = a.shape()[1];
  double total = 0;
  for (std::size_t i = 0; i < N; ++i) {
    double s = 0;
    for (std::size_t c = 0; c < C; ++c) s += std::exp(a(i, c));
    total += std::log(s) - a(i, static_cast<std::size_t>(t.flat(i)));
  }
  return xf::scalar(total / static_cast<double>(N));
}

xf::tensor ref_mse(const T& in) {
  xt::xarray<double> d = to_x(in[0]) - to_x(in[1]);
  double s = 0;
  for (double v : d) s += v * v;
  return xf::scalar(s / static_cast<double>(d.size()));
}

/// x · wᵀ + b by loops (x of any rank: its last dim is the feature dim).
xf::tensor ref_linear(const T& in) {
  xt::xarray<double> x = to_x(in[0]), w = to_x(in[1]);
  const std::size_t k = w.shape()[1], m = w.shape()[0], rows = x.size() / k;
  std::vector<std::size_t> s(x.shape().begin(), x.shape().end() - 1);
  s.push_back(m);
  xt::xarray<double> out(s);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < m; ++j) {
      double acc = 0;
      for (std::size_t q = 0; q < k; ++q) acc += x.flat(i * k + q) * w(j, q);
      out.flat(i * m + j) = acc;
    }
  if (in.size() > 2) out = out + to_x(in[2]);
  return from_x(out);
}

const bool registered = add({
    {"softmax (dim 1)", {sample({2, 4}, -2, 2)}, [](const T& x) { return xf::softmax(x[0], 1); }, ref_softmax(1, false)},
    {"softmax (dim 0)", {sample({3, 2}, -2, 2)}, [](const T& x) { return xf::softmax(x[0], 0); }, ref_softmax(0, false)},
    {"softmax (dim -2, 3-d)", {sample({2, 3, 2}, -2, 2)}, [](const T& x) { return xf::softmax(x[0], -2); },
     ref_softmax(-2, false)},
    {"softmax (1-d)", {sample({5}, -2, 2)}, [](const T& x) { return xf::softmax(x[0], 0); }, ref_softmax(0, false)},
    {"log_softmax (dim 1)", {sample({2, 4}, -2, 2)}, [](const T& x) { return xf::log_softmax(x[0], 1); },
     ref_softmax(1, true)},
    {"log_softmax (dim -1, 3-d)", {sample({2, 2, 3}, -2, 2)}, [](const T& x) { return xf::log_softmax(x[0], -1); },
     ref_softmax(-1, true)},
    {"log_softmax (dim 0)", {sample({3, 2}, -2, 2)}, [](const T& x) { return xf::log_softmax(x[0], 0); },
     ref_softmax(0, true)},
    {"cross_entropy (2-d logits)", {sample({3, 4}, -2, 2), xf::tensor{0, 3, 1}},
     [](const T& x) { return xf::cross_entropy(x[0], x[1]); }, ref_cross_entropy, true,
     {sample({3, 4}, -1, 2, 7), xf::tensor{2, 0, 3}}},
    {"cross_entropy (1-d logits)", {sample({4}, -2, 2), xf::scalar(std::int64_t{2})},
     [](const T& x) { return xf::cross_entropy(x[0], x[1]); }, ref_cross_entropy, true,
     {sample({4}, -1, 2, 7), xf::scalar(std::int64_t{0})}},
    {"mse_loss", {sample({2, 3}), sample({2, 3}, -1, 1, 2)}, [](const T& x) { return xf::mse_loss(x[0], x[1]); },
     ref_mse},
    {"mse_loss (1-d)", {sample({4}), sample({4}, -1, 1, 2)}, [](const T& x) { return xf::mse_loss(x[0], x[1]); },
     ref_mse},
    {"linear", {sample({3, 4}), sample({2, 4}, -1, 1, 2), sample({2}, -1, 1, 3)},
     [](const T& x) { return xf::linear(x[0], x[1], x[2]); }, ref_linear},
    {"linear (1-d input)", {sample({4}), sample({2, 4}, -1, 1, 2), sample({2}, -1, 1, 3)},
     [](const T& x) { return xf::linear(x[0], x[1], x[2]); }, ref_linear},
    {"linear (3-d input)", {sample({2, 3, 4}), sample({2, 4}, -1, 1, 2), sample({2}, -1, 1, 3)},
     [](const T& x) { return xf::linear(x[0], x[1], x[2]); }, ref_linear},
    {"linear (no bias)", {sample({3, 4}), sample({2, 4}, -1, 1, 2)},
     [](const T& x) { return xf::linear(x[0], x[1], xf::tensor()); }, ref_linear},
});

TEST_CASE("nn: softmax rows sum to one; cross_entropy of f32 logits is f32", "[ops][nn]") {
  xf::tensor s = xf::softmax(sample({3, 5}, -3, 3), 1);
  CHECK(xf::allclose(xf::sum(s, {1}), xf::ones({3}, xf::f64)));
  CHECK(xf::cross_entropy(sample({3, 4}).to(xf::f32), xf::tensor{0, 1, 2}).dtype() == xf::f32);
  CHECK(xf::cross_entropy(sample({3, 4}), xf::tensor{0, 1, 2}).dim() == 0);
}

TEST_CASE("nn: errors", "[ops][nn]") {
  CHECK_THROWS_WITH(xf::cross_entropy(sample({3, 4}), xf::tensor{0.0, 1.0, 2.0}), Catch::Contains("int64"));
  CHECK_THROWS_WITH(xf::cross_entropy(sample({3, 4}), xf::tensor{{0, 1}}), Catch::Contains("expects logits"));
  CHECK_THROWS_WITH(xf::cross_entropy(sample({3, 4}), xf::tensor{0, 4, 1}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::softmax(sample({3, 4}), 2), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(xf::mse_loss(sample({3, 4}), sample({5})), Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(xf::linear(sample({3, 4}), sample({2, 3}), sample({2})), Catch::Contains("cannot be multiplied"));
}
}  // namespace
}  // namespace conformance
