// Control flow under transforms: xf::cond and xf::scan (and briefly map and while_loop) under
// vmap and grad. Every result is checked against a loop or an analytic value; the program exits
// non-zero if one is wrong.
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

// A piecewise function: x^2 where the row sums to a positive number, -x elsewhere. A C++ `if` on
// sum(x) would be data-dependent under vmap; xf::cond is not.
xf::tensor piecewise(const xf::tensor& x) {
  return xf::cond(
      xf::sum(x) > 0.0, [](const xf::tensor& a) { return a * a; }, [](const xf::tensor& a) { return -a; }, x);
}

// An exponential moving average over the rows of xs, returning the final average and every step.
std::pair<xf::tensor, xf::tensor> ema(const xf::tensor& xs, double decay) {
  return xf::scan(
      [decay](const xf::tensor& avg, const xf::tensor& x) {
        xf::tensor next = avg * decay + x * (1.0 - decay);
        return std::pair{next, next};
      },
      xf::zeros_like(xs.select(0, 0)), xs);
}
}  // namespace

int main() try {
  // 1. cond outside transforms: one branch runs (the other is checked on shapes only).
  std::cout << "1. cond picks a branch\n";
  const xf::tensor up{1.0, 2.0}, down{-3.0, 0.5};
  check(xf::allclose(piecewise(up), up * up), "sum > 0: x^2");
  check(xf::allclose(piecewise(down), -down), "sum <= 0: -x");

  // 2. cond under vmap: the predicate differs per example, so both branches run and the result is
  //    selected per example.
  std::cout << "2. vmap(cond) with a per-example predicate\n";
  const xf::tensor X = xf::stack({up, down, xf::tensor{0.25, 0.5}}, 0);
  const xf::tensor batched = xf::vmap(piecewise)(X);
  std::cout << "   vmap(piecewise)(X) = " << batched << '\n';
  std::vector<xf::tensor> rows;
  for (std::int64_t i = 0; i < X.size(0); ++i) rows.push_back(piecewise(X.select(0, i)));
  check(xf::allclose(batched, xf::stack(rows, 0)), "matches a loop over the rows");

  // 3. grad through cond differentiates the branch taken; vmap(grad) gives per-example gradients.
  std::cout << "3. grad and vmap(grad) through cond\n";
  auto loss = [](const xf::tensor& x) { return xf::sum(piecewise(x)); };
  check(xf::allclose(xf::grad(loss)(up), 2.0 * up), "grad on the x^2 branch is 2x");
  check(xf::allclose(xf::grad(loss)(down), xf::full({2}, -1.0, xf::f64)), "grad on the -x branch is -1");
  const xf::tensor per_example = xf::vmap(xf::grad(loss))(X);
  check(xf::allclose(per_example.select(0, 1), xf::full({2}, -1.0, xf::f64)) &&
            xf::allclose(per_example.select(0, 2), 2.0 * X.select(0, 2)),
        "vmap(grad) picks each example's branch");

  // 4. scan: a recurrence whose steps are ordinary ops, so it is differentiable and batchable.
  std::cout << "4. scan: an exponential moving average\n";
  const xf::tensor xs{1.0, 2.0, 4.0, 8.0};
  auto [last, steps] = ema(xs, 0.5);
  std::cout << "   steps = " << steps << '\n';
  check(xf::allclose(steps, xf::tensor{0.5, 1.25, 2.625, 5.3125}), "the averages step by step");
  check(xf::allclose(last, xf::scalar(5.3125)), "the final carry is the last step");
  // d last / d xs_i = (1 - decay) * decay^(n - 1 - i)
  const xf::tensor g = xf::grad([](const xf::tensor& v) { return ema(v, 0.5).first; })(xs);
  check(xf::allclose(g, xf::tensor{0.0625, 0.125, 0.25, 0.5}), "grad of the final average");
  const xf::tensor series = xf::stack({xs, xs * -1.0, xs + 1.0}, 0);  // three series at once
  const xf::tensor finals = xf::vmap([](const xf::tensor& s) { return ema(s, 0.5).first; })(series);
  check(xf::allclose(finals, xf::tensor{5.3125, -5.3125, 6.25}), "vmap over three series");
  const xf::tensor grads = xf::vmap(xf::grad([](const xf::tensor& s) { return ema(s, 0.5).first; }))(series);
  check(xf::allclose(grads.select(0, 2), g), "vmap(grad(scan)) per series");

  // 5. map and while_loop.
  std::cout << "5. map and while_loop\n";
  check(xf::allclose(xf::map([](const xf::tensor& r) { return xf::sum(r * r); }, X), xf::sum(X * X, {1})),
        "map over the rows");
  auto grow = [](const xf::tensor& x) {
    return xf::while_loop([](const xf::tensor& c) { return c < 10.0; }, [](const xf::tensor& c) { return c * 2.0; },
                          x);
  };
  check(xf::allclose(xf::vmap(grow)(xf::tensor{0.5, 3.0, 20.0}), xf::tensor{16.0, 12.0, 20.0}),
        "vmap(while_loop): each example stops on its own");
  check(xf::allclose(xf::jvp(grow, xf::scalar(3.0), xf::scalar(1.0)).second, xf::scalar(4.0)),
        "jvp through two doublings is 4");

  std::cout << (failures == 0 ? "all checks passed\n" : "some checks FAILED\n");
  return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << '\n';
  return EXIT_FAILURE;
}
