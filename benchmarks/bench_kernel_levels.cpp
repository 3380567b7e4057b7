// The same kernels on each copy of the shared kernel library (NOTE: [Kernels per x86-64 level]):
// compiled for the build's baseline like a distribution's program, it prints the SIMD target the
// loader chose and the best of 15 runs of each kernel, one thread. kernel_levels.sh runs it once
// per level this CPU supports, and once compiled header-only with -march=native
// (bench_kernel_levels_native), and prints the ratios against the baseline copy.
#include <chrono>
#include <cstdio>
#include <functional>
#include <tuple>

#include <xfunc/xfunc.hpp>

namespace xf = xfunc;

namespace {

double best_ms(const std::function<xf::tensor()>& f) {
  double best = 1e300;
  for (int i = 0; i < 15; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const xf::tensor r = f();
    r.impl()->prepare_access();  // a deferred pointwise result is computed here
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

using params_t = std::tuple<xf::tensor, xf::tensor, xf::tensor, xf::tensor>;

xf::tensor loss(const params_t& p, const xf::tensor& x, const xf::tensor& y) {
  const auto& [W1, b1, W2, b2] = p;
  return xf::cross_entropy(xf::linear(xf::relu(xf::linear(x, W1, b1)), W2, b2), y);
}

}  // namespace

int main() {
  xf::set_num_threads(1);
  xf::manual_seed(0);
  const xf::tensor a = xf::randn({2048, 2048}), x = xf::randn({1 << 22}), big = xf::randn({1 << 24});
  const xf::tensor idx = (xf::rand({2048, 2048}) * 2047.0).to(xf::dtype::int64);
  const params_t params{0.05 * xf::randn({128, 784}), xf::zeros({128}), 0.05 * xf::randn({10, 128}), xf::zeros({10})};
  const xf::tensor xb = xf::randn({64, 784}), yb = (xf::rand({64}) * 9.0).to(xf::dtype::int64);
  const auto per_example = xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0, 0));

  std::printf("target %s\n", xf::cpu_simd_target());
  const auto row = [](const char* name, double ms) { std::printf("%s\t%.4f\n", name, ms); };
  row("exp 2^22", best_ms([&] { return xf::exp(x); }));
  row("tanh 2^22", best_ms([&] { return xf::tanh(x); }));
  row("x * a + b 2^24", best_ms([&] { return big * 1.5 + 0.5; }));
  row("sum(a, {1})", best_ms([&] { return xf::sum(a, {1}); }));
  row("sum(a, {0})", best_ms([&] { return xf::sum(a, {0}); }));
  row("amax(a, {1})", best_ms([&] { return xf::amax(a, {1}); }));
  row("softmax(a, 1)", best_ms([&] { return xf::softmax(a, 1); }));
  row("logsumexp(a, {1})", best_ms([&] { return xf::logsumexp(a, {1}); }));
  row("a.t().contiguous()", best_ms([&] { return a.t().contiguous(); }));
  row("a.t() + a", best_ms([&] { return a.t() + a; }));
  row("gather dim 1", best_ms([&] { return xf::gather(a, 1, idx); }));
  row("where", best_ms([&] { return xf::where(a > 0.0, a, x.reshape({2048, 2048})); }));
  row("per-example grads B=64", best_ms([&] { return std::get<0>(per_example(params, xb, yb)); }));
  return 0;
}
