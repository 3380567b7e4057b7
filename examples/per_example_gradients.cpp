// Per-example gradients: vmap(grad(loss), in_dims(none, 0, 0)) maps the gradient of a
// one-example loss over a batch, sharing the parameters. The result is checked against a loop
// of grad calls (one per example); the program exits non-zero if they differ.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <tuple>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

// The parameters of a 4-16-3 MLP as a pytree: gradients come back with the same structure.
using params_t = std::tuple<xf::tensor, xf::tensor, xf::tensor, xf::tensor>;  // W1, b1, W2, b2

// Loss of ONE example: x has shape [4], y is a 0-d int64 class index.
xf::tensor loss(const params_t& p, const xf::tensor& x, const xf::tensor& y) {
  const auto& [W1, b1, W2, b2] = p;
  const xf::tensor h = xf::tanh(xf::linear(x, W1, b1));
  return xf::cross_entropy(xf::linear(h, W2, b2), y);
}

int main() try {
  xf::manual_seed(42);
  const std::int64_t N = 32;
  const params_t params{0.5 * xf::randn({16, 4}), xf::zeros({16}), 0.5 * xf::randn({3, 16}), xf::zeros({3})};
  const xf::tensor x = xf::randn({N, 4});
  const xf::tensor y = xf::tensor{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0,
                                  1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1};  // int64

  // All N gradients at once: params unmapped (none), x and y mapped over dim 0.
  auto per_example_grad = xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0, 0));
  const auto t0 = std::chrono::steady_clock::now();
  const params_t g = per_example_grad(params, x, y);
  const auto t1 = std::chrono::steady_clock::now();

  const auto& [gW1, gb1, gW2, gb2] = g;
  std::cout << "per-example gradient shapes (batch first):\n"
            << "  W1 " << gW1.shape() << "  b1 " << gb1.shape() << "  W2 " << gW2.shape() << "  b2 " << gb2.shape()
            << '\n';
  bool ok = gW1.shape() == xf::shape_t{N, 16, 4} && gb1.shape() == xf::shape_t{N, 16} &&
            gW2.shape() == xf::shape_t{N, 3, 16} && gb2.shape() == xf::shape_t{N, 3};

  // Reference: one grad call per example.
  for (std::int64_t i = 0; i < N; ++i) {
    const params_t gi = xf::grad(loss)(params, x.select(0, i), y.select(0, i));
    ok = ok && xf::allclose(gW1.select(0, i), std::get<0>(gi), 1e-4, 1e-6) &&
         xf::allclose(gb1.select(0, i), std::get<1>(gi), 1e-4, 1e-6) &&
         xf::allclose(gW2.select(0, i), std::get<2>(gi), 1e-4, 1e-6) &&
         xf::allclose(gb2.select(0, i), std::get<3>(gi), 1e-4, 1e-6);
  }
  const auto t2 = std::chrono::steady_clock::now();
  std::cout << "vmap(grad(loss)) matches a loop of " << N << " grad calls: " << (ok ? "yes" : "NO") << '\n';

  // The mean of the per-example gradients is the gradient of the mean loss.
  auto batch_loss = [](const params_t& p, const xf::tensor& xs, const xf::tensor& ys) {
    const auto& [W1, b1, W2, b2] = p;
    return xf::cross_entropy(xf::linear(xf::tanh(xf::linear(xs, W1, b1)), W2, b2), ys);
  };
  const params_t gmean = xf::grad(batch_loss)(params, x, y);
  const bool mean_ok = xf::allclose(xf::mean(gW1, {0}), std::get<0>(gmean), 1e-4, 1e-6) &&
                       xf::allclose(xf::mean(gb2, {0}), std::get<3>(gmean), 1e-4, 1e-6);
  std::cout << "mean of per-example gradients == gradient of the mean loss: " << (mean_ok ? "yes" : "NO") << '\n';

  using ms = std::chrono::duration<double, std::milli>;
  std::cout << "time: vmap(grad) " << ms(t1 - t0).count() << " ms, loop of grad (incl. comparison) "
            << ms(t2 - t1).count() << " ms\n";
  if (!ok || !mean_ok) {
    std::cout << "per-example gradient check FAILED\n";
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << '\n';
  return EXIT_FAILURE;
}
