// Differentially private SGD (DP-SGD, Abadi et al. 2016, as Opacus implements it), data-parallel
// over MPI ranks with xf::dist. Each step:
//   1. every rank takes its part of the global batch (xf::dist::shard),
//   2. computes one gradient per example with vmap(grad(loss), in_dims(none, 0, 0)),
//   3. clips each example's gradient to L2 norm <= C (the norm over all parameters together)
//      and sums the clipped gradients over its examples,
//   4. sums those across ranks in ONE bucketed message (xf::dist::average_gradients),
//   5. adds Gaussian noise N(0, (sigma C)^2) once, the same draw on every rank, divides by the
//      global batch size and takes an SGD step, so every rank holds the same parameters.
// Clipping is per example, so the per-example gradients never leave their rank: only one sum
// per rank travels. (Opacus samples batches with Poisson sampling for its privacy accounting;
// fixed batches keep this example short.) At the end every rank reruns the same algorithm alone
// on the whole batch and checks that it gets the same parameters. Run with
// `mpirun -np N ./distributed_dp_sgd`, or without mpirun as a world of one; the program exits
// non-zero if a check fails on any rank.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <xfunc/distributed.hpp>

#include "example_check.hpp"

namespace xf = xfunc;
using xf::tensor;

namespace {
// A 20-32-4 MLP on a synthetic 4-class problem, float64 (a realistic size would be 784-128-10).
constexpr std::int64_t n_in = 20, n_hidden = 32, n_classes = 4;
constexpr std::int64_t global_batch = 64, steps = 10;
constexpr double clip_norm = 1.0;         // C: the largest L2 norm one example's gradient may have
constexpr double noise_multiplier = 1.0;  // sigma: the noise's std is sigma * C
constexpr double lr = 0.5;
constexpr std::uint64_t seed = 2024;

// The parameters as a pytree (a vector of leaves: W1, b1, W2, b2); gradients have the same shape.
using params_t = std::vector<tensor>;

// Loss of ONE example: x has shape [n_in], y is a 0-d int64 class index.
tensor loss(const params_t& p, const tensor& x, const tensor& y) {
  const tensor h = xf::tanh(xf::linear(x, p[0], p[1]));
  return xf::cross_entropy(xf::linear(h, p[2], p[3]), y);
}

// Per-example gradients (params shared, x and y mapped over dim 0) and losses.
const auto per_example_grad = xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0, 0));
const auto per_example_loss = xf::vmap(loss, xf::in_dims(xf::none, 0, 0));

// What one process contributes to a step: the sum over its examples of the clipped gradients,
// and the sum of their losses (for printing).
struct contribution {
  params_t clipped_sum;
  tensor loss_sum;
};

contribution clipped_gradient_sum(const params_t& p, const tensor& x, const tensor& y) {
  const params_t g = per_example_grad(p, x, y);  // leaf i: [n, ...p[i].shape()]
  const std::int64_t n = x.size(0);
  // each example's norm over all leaves together
  tensor sq = xf::zeros({n}, xf::f64);
  for (const tensor& gi : g) sq = sq + xf::sum(xf::square(gi.reshape({n, -1})), {1});
  // min(1, C / (norm + 1e-6)), as Opacus (the factor is positive, so clamping below at 0 is a no-op)
  const tensor factor = xf::clamp(clip_norm / (xf::sqrt(sq) + 1e-6), 0.0, 1.0);
  contribution c;
  for (std::size_t i = 0; i < g.size(); ++i)  // sum_k factor[k] * g[k]: a [n] x [n, numel] product
    c.clipped_sum.push_back(xf::matmul(factor, g[i].reshape({n, -1})).reshape(p[i].shape()));
  c.loss_sum = xf::sum(per_example_loss(p, x, y));
  return c;
}

// The noisy mean gradient and the SGD step, from the clipped sum over the WHOLE global batch.
// The noise is drawn from a seed that depends only on the step: every rank draws the same noise,
// so it is added once (as Opacus does), not once per rank. A real deployment keeps that seed
// secret (e.g. drawn from std::random_device on rank 0 and sent with xf::dist::broadcast); a fixed
// one makes the final check reproducible.
params_t noisy_sgd_step(const params_t& p, const params_t& clipped_sum, std::int64_t step) {
  xf::manual_seed(seed + 1 + static_cast<std::uint64_t>(step));
  params_t next;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const tensor noise = noise_multiplier * clip_norm * xf::randn(p[i].shape(), xf::f64);
    next.push_back(p[i] - lr * (clipped_sum[i] + noise) / static_cast<double>(global_batch));
  }
  return next;
}

tensor flatten(const params_t& p) {
  std::vector<tensor> flat;
  for (const tensor& t : p) flat.push_back(t.reshape({-1}));
  return xf::cat(flat, 0);
}

// A check that passes only if it passes on every rank: rank 0 prints it, and every rank counts
// it, so that every rank's main returns the same status.
void check_everywhere(bool ok, const std::string& what) {
  const tensor all = xf::dist::all_reduce(xf::scalar(std::int64_t{ok ? 1 : 0}), xf::dist::reduce_op::min);
  const bool ok_everywhere = all.item<std::int64_t>() == 1;
  if (xf::dist::world().rank() == 0) example::check(ok_everywhere, what);
  else if (!ok_everywhere) ++example::failures;
}

int run() {
  const xf::dist::communicator world = xf::dist::world();
  const bool root = world.rank() == 0;

  // The same seed on every rank: every rank builds the same data and initial parameters.
  xf::manual_seed(seed);
  const params_t init{0.3 * xf::randn({n_hidden, n_in}, xf::f64), xf::zeros({n_hidden}, xf::f64),
                      0.3 * xf::randn({n_classes, n_hidden}, xf::f64), xf::zeros({n_classes}, xf::f64)};
  // One pass over steps * global_batch examples, labelled by a random linear "teacher".
  const tensor X = xf::randn({steps * global_batch, n_in}, xf::f64);
  const tensor Y = xf::argmax(xf::matmul(X, xf::randn({n_in, n_classes}, xf::f64)), 1);
  auto batch = [&](const tensor& t, std::int64_t step) { return t.narrow(0, step * global_batch, global_batch); };

  if (root)
    std::cout << "DP-SGD on " << world.size() << " rank(s): global batch " << global_batch << ", C = " << clip_norm
              << ", sigma = " << noise_multiplier << '\n';

  // ---- data-parallel training ----
  params_t params = init;
  std::vector<double> losses;
  for (std::int64_t step = 0; step < steps; ++step) {
    const tensor x = xf::dist::shard(batch(X, step), 0);  // this rank's rows of the batch
    const tensor y = xf::dist::shard(batch(Y, step), 0);
    const contribution local = clipped_gradient_sum(params, x, y);
    // One bucketed message carries every leaf (and the loss, which rides along): the mean over
    // ranks, times the number of ranks, is the sum over the global batch.
    const auto avg = xf::dist::average_gradients(std::make_pair(local.clipped_sum, local.loss_sum));
    params_t clipped_sum;
    for (const tensor& g : avg.first) clipped_sum.push_back(g * static_cast<double>(world.size()));
    losses.push_back(avg.second.item<double>() * world.size() / global_batch);
    if (root) std::cout << "  step " << std::setw(2) << step << "  loss " << std::fixed << std::setprecision(6)
                        << losses.back() << '\n';
    params = noisy_sgd_step(params, clipped_sum, step);
  }

  // ---- the same algorithm in one process: the whole batch, no collectives ----
  params_t ref = init;
  std::vector<double> ref_losses;
  for (std::int64_t step = 0; step < steps; ++step) {
    const contribution all = clipped_gradient_sum(ref, batch(X, step), batch(Y, step));
    ref_losses.push_back(all.loss_sum.item<double>() / global_batch);
    ref = noisy_sgd_step(ref, all.clipped_sum, step);
  }

  if (root) std::cout << "checks (on every rank):\n";
  bool same = true;
  for (std::size_t i = 0; i < params.size(); ++i) same = same && xf::allclose(params[i], ref[i], 1e-9, 1e-12);
  check_everywhere(same, "distributed parameters == single-process DP-SGD (rtol 1e-9, atol 1e-12)");
  bool same_losses = true;
  for (std::size_t s = 0; s < losses.size(); ++s)
    same_losses = same_losses && std::abs(losses[s] - ref_losses[s]) <= 1e-9 * std::abs(ref_losses[s]) + 1e-12;
  check_everywhere(same_losses, "per-step losses == single-process ones");

  // Every rank's parameters side by side (one row per rank): all rows must be rank 0's, bit for bit.
  const tensor every = xf::dist::all_gather(flatten(params).unsqueeze(0), 0);
  bool identical = true;
  for (std::int64_t r = 1; r < world.size(); ++r) identical = identical && xf::equal(every.select(0, r), every.select(0, 0));
  check_everywhere(identical, "every rank holds the same parameters");

  // The loss over the whole training set, before and after (computed alike on every rank).
  const double before = xf::mean(per_example_loss(init, X, Y)).item<double>();
  const double after = xf::mean(per_example_loss(params, X, Y)).item<double>();
  if (root) std::cout << "  training-set loss " << before << " -> " << after << '\n';
  check_everywhere(after < before, "the loss went down");

  return example::failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
}  // namespace

int main(int argc, char** argv) try {
  xf::dist::environment env(argc, argv);
  try {
    return run();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    // Leaving env's scope with an exception aborts the whole job: the other ranks may be waiting
    // for this one in a collective.
    throw;
  }
} catch (const std::exception&) {
  return EXIT_FAILURE;  // a world of one: env has finalised MPI
}
