// xfunc demo: differentially-private SGD (DP-SGD) on two interleaved spirals.
//
// DP-SGD needs the gradient of every example separately, so that each one can be clipped to a
// norm bound C before they are averaged and noised. With xfunc that is one line:
//
//     auto per_example_grads = xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0, 0));
//
// `loss` is written for ONE example; grad differentiates it with respect to the parameters
// (a pytree: std::tuple of tensors); vmap maps that over the batch (params shared: none; x and y
// mapped over dim 0). Clipping each example is vmap again, over xf::optim::clip_by_global_norm,
// and the noisy average gradient goes to an xf::optim optimizer (functional, like optax). The
// program trains a 2-64-2 MLP, prints one line per epoch, fails if the final training accuracy is
// not clearly better than chance, and then times vmap(grad) against a loop of grad calls over the
// same batch.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <random>
#include <tuple>
#include <vector>

#include <xtensor/xadapt.hpp>

#include <xfunc/optim.hpp>
#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

namespace {

// ---- hyper-parameters ------------------------------------------------------------------------
constexpr std::int64_t points_per_class = 200;  // 400 points in all
constexpr std::int64_t hidden = 64;
constexpr std::int64_t batch_size = 32;
constexpr int epochs = 50;
constexpr double learning_rate = 0.5;
constexpr double clip_norm = 1.0;         // C: each example's gradient is clipped to this norm
constexpr double noise_multiplier = 0.3;  // sigma: noise std is sigma * C on the summed gradient
constexpr double required_accuracy = 0.80;
constexpr std::int64_t timing_batch = 128;  // batch used to time vmap(grad) against a loop of grad

// ---- data: two interleaved spirals, generated with xfunc ops ---------------------------------
struct dataset {
  xf::tensor x;  // [N, 2] float32
  xf::tensor y;  // [N] int64 class index
};

dataset make_spirals(std::int64_t n) {
  // radius grows with the angle; class 1 is class 0 rotated by pi
  const xf::tensor t = xf::linspace(0.25, 1.0, n);                          // [n]
  const xf::tensor angle = 3.0 * std::numbers::pi * t;                       // 1.5 turns
  const xf::tensor noise0 = 0.02 * xf::randn({n, 2}), noise1 = 0.02 * xf::randn({n, 2});
  const xf::tensor arm = xf::stack({t * xf::cos(angle), t * xf::sin(angle)}, 1);  // [n, 2]
  const xf::tensor x = xf::cat({arm + noise0, -arm + noise1}, 0);               // [2n, 2]
  const xf::tensor y = xf::cat({xf::zeros({n}, xf::i64), xf::ones({n}, xf::i64)}, 0);
  return {x, y};
}

// ---- model -------------------------------------------------------------------------------------
using params_t = std::tuple<xf::tensor, xf::tensor, xf::tensor, xf::tensor>;  // W1, b1, W2, b2

params_t init_params() {
  // wide first-layer weights and biases give the tanh units sharp, varied boundaries to start from
  return {xf::randn({hidden, 2}) * 3.0, xf::randn({hidden}) * 2.0,
          xf::randn({2, hidden}) * (1.0 / std::sqrt(static_cast<double>(hidden))), xf::zeros({2})};
}

// Works for one example (x [2], y 0-d) and for a batch (x [N, 2], y [N]) alike.
xf::tensor logits_of(const params_t& p, const xf::tensor& x) {
  const auto& [W1, b1, W2, b2] = p;
  return xf::linear(xf::tanh(xf::linear(x, W1, b1)), W2, b2);
}
xf::tensor loss(const params_t& p, const xf::tensor& x, const xf::tensor& y) {
  return xf::cross_entropy(logits_of(p, x), y);
}
double accuracy(const params_t& p, const dataset& d) {
  const xf::tensor predicted = xf::argmax(logits_of(p, d.x), 1);
  return xf::mean((predicted == d.y).to(xf::f32)).item<double>();
}

// ---- DP-SGD gradient ---------------------------------------------------------------------------
// Per-example gradients [B, ...] → clip each example's whole gradient (all parameters together)
// to norm <= C → sum → add N(0, (sigma C)^2) → divide by B. The optimizer takes it from there.
params_t private_gradient(const params_t& per_example, std::int64_t B) {
  const params_t clipped =
      xf::vmap([](const params_t& g) { return xf::optim::clip_by_global_norm(g, clip_norm); })(per_example);
  auto noisy_mean = [&](const xf::tensor& g) {  // g: [B, ...] → [...]
    const xf::tensor noise = (noise_multiplier * clip_norm) * xf::randn_like(g.select(0, 0));
    return (xf::sum(g, {0}) + noise) / static_cast<double>(B);
  };
  return std::apply([&](const auto&... g) { return params_t{noisy_mean(g)...}; }, clipped);
}

xf::tensor index_tensor(const std::vector<std::int64_t>& idx) {
  return xf::from_xtensor(xt::adapt(idx, {idx.size()}));
}

template <class F>
double best_ms(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

}  // namespace

int main() try {
  xf::manual_seed(2024);
  const dataset data = make_spirals(points_per_class);
  const std::int64_t N = data.x.size(0);
  params_t params = init_params();
  const xf::optim::sgd optimizer(learning_rate);  // or xf::optim::adam(1e-2), xf::optim::adamw(...)
  auto opt_state = optimizer.init(params);        // a pytree of tensors, like params
  std::printf("xfunc demo: DP-SGD on two spirals (%lld points, 2-%lld-2 tanh MLP, batch %lld,\n"
              "            clip C=%.2f, noise multiplier %.2f, lr %.2f)\n",
              static_cast<long long>(N), static_cast<long long>(hidden), static_cast<long long>(batch_size),
              clip_norm, noise_multiplier, learning_rate);

  // The one line that makes DP-SGD easy: per-example gradients of a one-example loss.
  const auto per_example_grads = xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0, 0));

  std::vector<std::int64_t> order(static_cast<std::size_t>(N));
  for (std::int64_t i = 0; i < N; ++i) order[static_cast<std::size_t>(i)] = i;
  std::mt19937_64 shuffle_rng(7);
  const auto t_train = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    for (std::int64_t start = 0; start < N; start += batch_size) {
      const std::int64_t B = std::min(batch_size, N - start);
      const xf::tensor idx = index_tensor(std::vector<std::int64_t>(order.begin() + start, order.begin() + start + B));
      const xf::tensor xb = xf::index_select(data.x, 0, idx), yb = xf::index_select(data.y, 0, idx);
      const params_t grads = private_gradient(per_example_grads(params, xb, yb), B);
      std::tie(params, opt_state) = optimizer.update(params, grads, opt_state);  // out of place
    }
    std::printf("epoch %2d  loss %.4f  train accuracy %5.1f%%\n", epoch, loss(params, data.x, data.y).item<double>(),
                100.0 * accuracy(params, data));
  }
  const double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_train).count();
  const double final_accuracy = accuracy(params, data);
  std::printf("final train accuracy: %.1f%% (chance: 50%%; required: > %.0f%%), trained in %.2f s\n",
              100.0 * final_accuracy, 100.0 * required_accuracy, train_s);

  // ---- vmap(grad) against a loop of grad calls, on the same batch ----------------------------
  const std::int64_t B = timing_batch;
  const xf::tensor xb = data.x.narrow(0, 0, B), yb = data.y.narrow(0, 0, B);
  params_t vmapped;
  std::vector<params_t> looped(static_cast<std::size_t>(B));
  const int reps = 5;
  const double vmap_ms = best_ms(reps, [&] { vmapped = per_example_grads(params, xb, yb); });
  const double loop_ms = best_ms(reps, [&] {
    for (std::int64_t i = 0; i < B; ++i)
      looped[static_cast<std::size_t>(i)] = xf::grad(loss)(params, xb.select(0, i), yb.select(0, i));
  });
  bool same = true;
  for (std::int64_t i = 0; i < B; ++i)
    same = same && xf::allclose(std::get<0>(vmapped).select(0, i), std::get<0>(looped[static_cast<std::size_t>(i)]),
                                1e-4, 1e-6) &&
           xf::allclose(std::get<2>(vmapped).select(0, i), std::get<2>(looped[static_cast<std::size_t>(i)]), 1e-4, 1e-6);
  std::printf("per-example gradients of a batch of %lld (best of %d):\n", static_cast<long long>(B), reps);
  std::printf("  vmap(grad(loss))   %8.3f ms\n", vmap_ms);
  std::printf("  loop of grad(loss) %8.3f ms\n", loop_ms);
  std::printf("  speed-up           %8.1fx   (results agree: %s)\n", loop_ms / vmap_ms, same ? "yes" : "NO");

  if (!(final_accuracy > required_accuracy)) {
    std::printf("FAILED: accuracy %.1f%% is not above %.0f%%\n", 100.0 * final_accuracy, 100.0 * required_accuracy);
    return EXIT_FAILURE;
  }
  if (!same) {
    std::printf("FAILED: vmap(grad) and the loop of grad disagree\n");
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return EXIT_FAILURE;
}
