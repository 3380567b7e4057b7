// Per-example gradients of an MLP 784-128-10 (relu, softmax cross-entropy), float32, batch 64:
//   xf:        xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0, 0))(params, x, y)
//   (a) loop:  64 calls of xf::grad(loss)(params, x[i], y[i])
//   (b) hand:  a hand-written batched per-example gradient in plain C++ with cblas: forward with
//              sgemm, softmax, backward with sgemm, per-example weight gradients as outer
//              products (into preallocated buffers).
// Targets: xf within 1.5x of (b), and at least 3x faster than (a). The max abs difference
// between (b) and xf is printed.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include <xtensor/xarray.hpp>

#include <xfunc/xfunc.hpp>

#include "bench_report.hpp"

namespace xf = xfunc;

namespace {

constexpr std::int64_t Bn = 64, D = 784, H = 128, C = 10;
using params_t = std::tuple<xf::tensor, xf::tensor, xf::tensor, xf::tensor>;  // w1, b1, w2, b2

xf::tensor loss(const params_t& p, const xf::tensor& x, const xf::tensor& y) {
  const auto& [w1, b1, w2, b2] = p;
  xf::tensor h = xf::relu(xf::linear(x, w1, b1));
  return xf::cross_entropy(xf::linear(h, w2, b2), y);
}

struct problem {
  params_t params;
  xf::tensor x, y;
  problem() {
    xf::manual_seed(42);
    params = {xf::randn({H, D}) * 0.05, xf::randn({H}) * 0.1, xf::randn({C, H}) * 0.1, xf::randn({C}) * 0.1};
    x = xf::randn({Bn, D});
    xt::xarray<std::int64_t> labels = xt::zeros<std::int64_t>({std::size_t(Bn)});
    for (std::int64_t i = 0; i < Bn; ++i) labels(std::size_t(i)) = (i * 7 + 3) % C;
    y = xf::from_xtensor(labels);
  }
};
const problem& prob() {
  static const problem p;
  return p;
}

/// (b): plain C++ + cblas. Outputs per-example gradients [B, ...] in row-major buffers.
struct handwritten {
  std::vector<float> hpre, hact, z, dz, dh;
  std::vector<float> gw1, gb1, gw2, gb2;
  handwritten()
      : hpre(Bn * H), hact(Bn * H), z(Bn * C), dz(Bn * C), dh(Bn * H), gw1(Bn * H * D), gb1(Bn * H),
        gw2(Bn * C * H), gb2(Bn * C) {}

  void run(const float* W1, const float* b1, const float* W2, const float* b2, const float* X,
           const std::int64_t* Y) {
    // forward: hpre = X W1^T + b1, hact = relu(hpre), z = hact W2^T + b2
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Bn, H, D, 1.0f, X, D, W1, D, 0.0f, hpre.data(), H);
    for (std::int64_t i = 0; i < Bn; ++i)
      for (std::int64_t j = 0; j < H; ++j) {
        float v = hpre[i * H + j] + b1[j];
        hpre[i * H + j] = v;
        hact[i * H + j] = v > 0 ? v : 0;
      }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Bn, C, H, 1.0f, hact.data(), H, W2, H, 0.0f, z.data(), C);
    // softmax cross-entropy per example: dz = softmax(z) - onehot(y)
    for (std::int64_t i = 0; i < Bn; ++i) {
      float* zi = z.data() + i * C;
      float m = -INFINITY;
      for (std::int64_t c = 0; c < C; ++c) m = std::max(m, zi[c] += b2[c]);
      float s = 0;
      for (std::int64_t c = 0; c < C; ++c) s += dz[i * C + c] = std::exp(zi[c] - m);
      for (std::int64_t c = 0; c < C; ++c) dz[i * C + c] /= s;
      dz[i * C + Y[i]] -= 1.0f;
    }
    // backward: dh = (dz W2) * relu'(hpre)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Bn, H, C, 1.0f, dz.data(), C, W2, H, 0.0f, dh.data(), H);
    for (std::int64_t i = 0; i < Bn * H; ++i)
      if (!(hpre[i] > 0)) dh[i] = 0;
    // per-example gradients: outer products
    for (std::int64_t i = 0; i < Bn; ++i) {
      for (std::int64_t c = 0; c < C; ++c) {
        float g = dz[i * C + c];
        float* o = gw2.data() + (i * C + c) * H;
        const float* h = hact.data() + i * H;
        for (std::int64_t j = 0; j < H; ++j) o[j] = g * h[j];
        gb2[i * C + c] = g;
      }
      for (std::int64_t r = 0; r < H; ++r) {
        float g = dh[i * H + r];
        float* o = gw1.data() + (i * H + r) * D;
        const float* x = X + i * D;
        for (std::int64_t j = 0; j < D; ++j) o[j] = g * x[j];
        gb1[i * H + r] = g;
      }
    }
  }
  void run(const problem& p) {
    auto d = [](const xf::tensor& t) { return t.contiguous().impl()->template data<float>(); };
    const auto& [w1, b1, w2, b2] = p.params;
    run(d(w1), d(b1), d(w2), d(b2), d(p.x), p.y.contiguous().impl()->template data<std::int64_t>());
  }
};

auto per_example_grads() { return xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0, 0)); }

void xf_vmap_grad(benchmark::State& st) {
  const problem& p = prob();
  auto f = per_example_grads();
  for (auto _ : st) {
    auto g = f(p.params, p.x, p.y);
    benchmark::DoNotOptimize(std::get<0>(g).impl());
  }
}
void loop_of_grads(benchmark::State& st) {
  const problem& p = prob();
  auto g = xf::grad(loss);
  for (auto _ : st) {
    for (std::int64_t i = 0; i < Bn; ++i) {
      auto r = g(p.params, p.x.select(0, i), p.y.select(0, i));
      benchmark::DoNotOptimize(std::get<0>(r).impl());
    }
  }
}
void hand_cblas(benchmark::State& st) {
  const problem& p = prob();
  handwritten h;
  for (auto _ : st) {
    h.run(p);
    benchmark::ClobberMemory();
  }
}

double max_abs_diff(const xf::tensor& t, const std::vector<float>& ref) {
  xf::tensor c = t.contiguous();
  const float* p = c.impl()->template data<float>();
  if (static_cast<std::size_t>(c.numel()) != ref.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) m = std::max(m, double(std::abs(p[i] - ref[i])));
  return m;
}

void check_agreement() {
  const problem& p = prob();
  handwritten h;
  h.run(p);
  auto g = per_example_grads()(p.params, p.x, p.y);
  const double d = std::max({max_abs_diff(std::get<0>(g), h.gw1), max_abs_diff(std::get<1>(g), h.gb1),
                             max_abs_diff(std::get<2>(g), h.gw2), max_abs_diff(std::get<3>(g), h.gb2)});
  // and one example of the loop of grads against the batched result
  auto g0 = xf::grad(loss)(p.params, p.x.select(0, 5), p.y.select(0, 5));
  const double d0 = (std::get<0>(g0) - std::get<0>(g).select(0, 5)).contiguous().numel() ? 
      xf::amax(xf::abs(std::get<0>(g0) - std::get<0>(g).select(0, 5)), {}, false).item<float>() : 0.0;
  std::printf("max |xf - handwritten| over all per-example gradients: %.3g\n", d);
  std::printf("max |grad(loss)(example 5) - vmap(grad) example 5| (w1): %.3g\n", d0);
  std::printf("shapes: w1 grads %s, b1 grads %s, w2 grads %s, b2 grads %s\n\n",
              (std::ostringstream() << std::get<0>(g).shape()).str().c_str(),
              (std::ostringstream() << std::get<1>(g).shape()).str().c_str(),
              (std::ostringstream() << std::get<2>(g).shape()).str().c_str(),
              (std::ostringstream() << std::get<3>(g).shape()).str().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  // One core for everyone (xfunc's matrix products go through the same OpenBLAS), so the
  // comparison is not decided by BLAS threads fighting the other jobs on this machine.
  openblas_set_num_threads(1);
  check_agreement();
  auto reg = [](const char* name, auto fn) {
    benchmark::RegisterBenchmark(name, fn)->Unit(benchmark::kMicrosecond);
  };
  reg("hand/cblas_per_example", hand_cblas);
  reg("xf/vmap(grad(loss))", xf_vmap_grad);
  reg("xf/loop_of_64_grads", loop_of_grads);
  using xfunc_bench::target;
  const std::vector<target> rows = {
      {"xf/vmap(grad(loss))", "hand/cblas_per_example", target::ratio_max, 1.5, "within 1.5x of hand-written"},
      {"xf/vmap(grad(loss))", "xf/loop_of_64_grads", target::ratio_max, 1.0 / 3.0, ">= 3x faster than the loop"},
      {"xf/loop_of_64_grads", "hand/cblas_per_example", target::info, 0, ""},
  };
  return xfunc_bench::run_and_report(argc, argv, rows);
}
