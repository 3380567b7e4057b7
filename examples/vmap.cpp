// Vectorising with xf::vmap: in_dims / out_dims, unmapped arguments, vmap of vmap, batched
// matrix products and randomness. Every result is checked against a per-example loop; the
// program exits non-zero if one is wrong.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <xfunc/xfunc.hpp>

#include "example_check.hpp"

namespace xf = xfunc;

namespace {
using example::check;
using example::failures;
}  // namespace

int main() try {
  xf::manual_seed(7);

  // 1. A function written for one example, mapped over a batch (default in_dims: 0 everywhere).
  std::cout << "1. vmap(dot) over a batch of vector pairs\n";
  const xf::tensor a = xf::randn({5, 3}, xf::f64), b = xf::randn({5, 3}, xf::f64);
  const xf::tensor dots = xf::vmap([](const xf::tensor& u, const xf::tensor& v) { return xf::dot(u, v); })(a, b);
  std::cout << "   dots = " << dots << '\n';
  check(dots.shape() == xf::shape_t{5}, "one dot product per example");
  check(xf::allclose(dots, xf::sum(a * b, {1})), "matches sum(a * b, {1})");

  // 2. in_dims: map over a different dimension, or not at all (xf::none broadcasts the argument).
  std::cout << "2. in_dims(1, xf::none): columns of m against one fixed vector\n";
  const xf::tensor m = xf::randn({3, 4}, xf::f64);  // 4 examples stored as columns
  const xf::tensor w = xf::tensor{1.0, -1.0, 2.0};
  const xf::tensor cols = xf::vmap([](const xf::tensor& col, const xf::tensor& v) { return xf::dot(col, v); },
                                   xf::in_dims(1, xf::none))(m, w);
  check(cols.shape() == xf::shape_t{4}, "one result per column");
  check(xf::allclose(cols, xf::matmul(w, m)), "matches w · m");

  // 3. out_dims: where the batch dimension goes in the output.
  std::cout << "3. out_dims(1): put the batch last\n";
  const xf::tensor scaled = xf::vmap([](const xf::tensor& u) { return u * 2.0; }, xf::out_dims(1))(a);
  std::cout << "   input shape " << a.shape() << " -> output shape " << scaled.shape() << '\n';
  check(scaled.shape() == xf::shape_t{3, 5}, "batch dim moved to position 1");
  check(xf::allclose(scaled, (a * 2.0).t()), "values are the transposed result");

  // 4. vmap of vmap: a pairwise distance matrix from a function of two vectors.
  std::cout << "4. vmap(vmap(dist)): all pairwise distances\n";
  auto dist = [](const xf::tensor& u, const xf::tensor& v) { return xf::norm(u - v); };
  const xf::tensor p = xf::randn({4, 2}, xf::f64), q = xf::randn({6, 2}, xf::f64);
  // inner: map over q's rows with p's row fixed; outer: map over p's rows with q fixed
  const xf::tensor D =
      xf::vmap(xf::vmap(dist, xf::in_dims(xf::none, 0)), xf::in_dims(0, xf::none))(p, q);
  std::cout << "   D has shape " << D.shape() << '\n';
  bool pairwise_ok = D.shape() == xf::shape_t{4, 6};
  for (std::int64_t i = 0; i < 4 && pairwise_ok; ++i)
    for (std::int64_t j = 0; j < 6; ++j)
      pairwise_ok = pairwise_ok && xf::allclose(D.select(0, i).select(0, j), dist(p.select(0, i), q.select(0, j)));
  check(pairwise_ok, "D[i][j] == |p_i - q_j| for every pair");

  // 5. Batched matmul: per-example matrices against one shared matrix, and against per-example ones.
  std::cout << "5. batched matmul\n";
  const xf::tensor X = xf::randn({8, 2, 3}), W = xf::randn({3, 4}), V = xf::randn({8, 3, 4});
  auto mm = [](const xf::tensor& x, const xf::tensor& y) { return xf::matmul(x, y); };
  const xf::tensor shared = xf::vmap(mm, xf::in_dims(0, xf::none))(X, W);
  const xf::tensor per_example = xf::vmap(mm)(X, V);
  bool mm_ok = shared.shape() == xf::shape_t{8, 2, 4} && per_example.shape() == xf::shape_t{8, 2, 4};
  for (std::int64_t i = 0; i < 8; ++i) {
    mm_ok = mm_ok && xf::allclose(shared.select(0, i), xf::matmul(X.select(0, i), W), 1e-4, 1e-5);
    mm_ok = mm_ok && xf::allclose(per_example.select(0, i), xf::matmul(X.select(0, i), V.select(0, i)), 1e-4, 1e-5);
  }
  check(mm_ok, "vmap(matmul) matches a loop of matmuls (shared and per-example right operand)");
  check(xf::allclose(per_example, xf::bmm(X, V), 1e-4, 1e-5), "vmap(matmul)(X, V) == bmm(X, V)");

  // 6. Several outputs: a std::tuple result, each part batched.
  std::cout << "6. tuple outputs and reductions inside vmap\n";
  auto stats = [](const xf::tensor& u) { return std::tuple{xf::mean(u), xf::amax(u, {0})}; };
  auto [means, maxes] = xf::vmap(stats)(a);
  check(xf::allclose(means, xf::mean(a, {1})) && xf::allclose(maxes, xf::amax(a, {1})),
        "per-example mean and max");

  // 7. Randomness: random ops under vmap need an explicit choice.
  std::cout << "7. randomness::same / ::different\n";
  auto noisy = [](const xf::tensor& u) { return u + xf::randn({3}, xf::f64); };
  const xf::tensor zeros = xf::zeros({4, 3}, xf::f64);
  const xf::tensor same = xf::vmap(noisy, xf::randomness::same)(zeros);
  const xf::tensor diff = xf::vmap(noisy, xf::randomness::different)(zeros);
  check(xf::allclose(same.select(0, 0), same.select(0, 3)), "same: one draw shared by the batch");
  check(!xf::allclose(diff.select(0, 0), diff.select(0, 3)), "different: one draw per example");
  try {
    (void)xf::vmap(noisy)(zeros);
    check(false, "randomness::error (the default) throws");
  } catch (const xf::error& e) {
    std::cout << "   caught: " << e.what() << '\n';
    check(std::string(e.what()).find("randomness") != std::string::npos, "message mentions \"randomness\"");
  }

  // 8. Errors: inconsistent batch sizes.
  std::cout << "8. errors\n";
  try {
    (void)xf::vmap([](const xf::tensor& u, const xf::tensor& v) { return u + v; })(xf::zeros({3}), xf::zeros({4}));
    check(false, "mismatched batch sizes throw");
  } catch (const xf::error& e) {
    std::cout << "   caught: " << e.what() << '\n';
    check(std::string(e.what()).find("same size in the mapped dimension") != std::string::npos,
          "message mentions \"same size in the mapped dimension\"");
  }

  if (failures != 0) {
    std::cout << failures << " check(s) FAILED\n";
    return EXIT_FAILURE;
  }
  std::cout << "all vmap checks passed\n";
  return EXIT_SUCCESS;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << '\n';
  return EXIT_FAILURE;
}
