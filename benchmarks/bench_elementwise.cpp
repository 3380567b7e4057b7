// Elementwise throughput on 2^24 float32 elements: `x * a + b` (a, b C++ doubles, as a user
// writes it) and `exp(x)`, against raw C++ loops measured in the same run.
// Baselines write into a preallocated output (the best a hand-written loop can do); xfunc makes
// a fresh tensor per op, as its value semantics require, and evaluates `x * a + b` as one pass
// (a deferred product consumed by the add; NOTE: [Deferred elementwise]). The "fresh output" loop variants show
// what allocating the result costs a plain loop too. Throughput is reported as elements/s.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <xsimd/xsimd.hpp>
#include <xfunc/xfunc.hpp>

#include "bench_report.hpp"

namespace xf = xfunc;

namespace {

constexpr std::int64_t N = std::int64_t(1) << 24;
constexpr std::int64_t N_small = std::int64_t(1) << 15;  // 128 KiB per array: stays in L2
constexpr double A = 1.7, B = -0.3;

const xf::tensor& input() {
  static const xf::tensor x = xf::randn({N});
  return x;
}
const float* input_data() { return input().impl()->template data<float>(); }

struct free_deleter {
  void operator()(float* p) const { std::free(p); }
};
using buffer = std::unique_ptr<float[], free_deleter>;
buffer make_buffer() { return buffer(static_cast<float*>(std::aligned_alloc(64, N * sizeof(float)))); }

// Large pointwise results may be deferred (NOTE: [Deferred elementwise]); touching the data
// evaluates them, so every timed xfunc call below includes the whole computation.
const float* evaluated(const xf::tensor& y) { return y.impl()->template data<float>(); }

__attribute__((noinline)) void affine_loop(const float* x, float* o, std::int64_t n) {
  const float a = static_cast<float>(A), b = static_cast<float>(B);
  for (std::int64_t i = 0; i < n; ++i) o[i] = x[i] * a + b;
}
__attribute__((noinline)) void exp_loop(const float* x, float* o, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) o[i] = std::exp(x[i]);
}

// The timing loops, once: a hand loop into a preallocated output, the same with a fresh output
// per iteration, and an xfunc expression (evaluated, see above); n elements each.
template <class Kernel>
void hand_preallocated(benchmark::State& st, Kernel kernel, std::int64_t n = N) {
  const float* x = input_data();
  buffer o = make_buffer();
  for (auto _ : st) {
    kernel(x, o.get(), n);
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(st.iterations() * n);
}
template <class Kernel>
void hand_fresh_output(benchmark::State& st, Kernel kernel) {
  const float* x = input_data();
  for (auto _ : st) {
    buffer o = make_buffer();
    kernel(x, o.get(), N);
    benchmark::DoNotOptimize(o.get());
  }
  st.SetItemsProcessed(st.iterations() * N);
}
template <class F>
void xf_expression(benchmark::State& st, F f, std::int64_t n = N) {
  const xf::tensor x = n == N ? input() : input().narrow(0, 0, n);
  for (auto _ : st) {
    xf::tensor y = f(x);
    benchmark::DoNotOptimize(evaluated(y));
  }
  st.SetItemsProcessed(st.iterations() * n);
}

void loop_affine(benchmark::State& st) { hand_preallocated(st, affine_loop); }
void loop_affine_fresh(benchmark::State& st) { hand_fresh_output(st, affine_loop); }
void xf_affine(benchmark::State& st) {
  xf_expression(st, [](const xf::tensor& x) { return x * A + B; });
}
void loop_exp(benchmark::State& st) { hand_preallocated(st, exp_loop); }
void loop_exp_fresh(benchmark::State& st) { hand_fresh_output(st, exp_loop); }
void xf_exp(benchmark::State& st) {
  xf_expression(st, [](const xf::tensor& x) { return xf::exp(x); });
}

// The memory ceiling: copying the same bytes (read 2^24 floats, write 2^24 floats). No
// elementwise op over arrays this large can run faster than this on one core.
void loop_copy(benchmark::State& st) {
  hand_preallocated(st, [](const float* x, float* o, std::int64_t n) { std::memcpy(o, x, static_cast<std::size_t>(n) * sizeof(float)); });
}

// exp on an L2-resident array: the compute throughput, without the memory bound of 2^24.
void loop_exp_l2(benchmark::State& st) { hand_preallocated(st, exp_loop, N_small); }
// xsimd's own exp over the same L2-resident array (the library xfunc's kernels use): the
// compute ceiling for exp on this core.
void xsimd_exp_l2(benchmark::State& st) {
  using batch = xsimd::batch<float>;
  hand_preallocated(
      st,
      [](const float* x, float* o, std::int64_t n) {
        for (std::int64_t i = 0; i < n; i += batch::size) xsimd::exp(batch::load_unaligned(x + i)).store_aligned(o + i);
      },
      N_small);
}
void xf_exp_l2(benchmark::State& st) {
  xf_expression(st, [](const xf::tensor& x) { return xf::exp(x); }, N_small);
}

}  // namespace

int main(int argc, char** argv) {
  auto reg = [](const char* name, auto fn) {
    benchmark::RegisterBenchmark(name, fn)->Unit(benchmark::kMillisecond);
  };
  reg("loop/copy", loop_copy);
  reg("loop/affine", loop_affine);
  reg("loop/affine_fresh_output", loop_affine_fresh);
  reg("xf/affine(x*a+b)", xf_affine);
  reg("loop/exp", loop_exp);
  reg("loop/exp_fresh_output", loop_exp_fresh);
  reg("xf/exp", xf_exp);
  benchmark::RegisterBenchmark("loop/exp_2^15", loop_exp_l2)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("xsimd/exp_2^15", xsimd_exp_l2)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("xf/exp_2^15", xf_exp_l2)->Unit(benchmark::kMicrosecond);

  // throughput >= 0.85x the loop's  <=>  time <= loop time / 0.85
  using xfunc_bench::target;
  const std::vector<target> rows = {
      {"xf/affine(x*a+b)", "loop/affine", target::ratio_max, 1 / 0.85, "throughput >= 0.85x loop"},
      {"xf/affine(x*a+b)", "loop/affine_fresh_output", target::info, 0, "vs loop with fresh output"},
      {"xf/affine(x*a+b)", "", target::items_min, 0, "elements/s"},
      {"loop/affine", "", target::items_min, 0, "elements/s"},
      {"loop/copy", "", target::items_min, 5e9, "memory ceiling: a plain copy"},
      {"xf/exp", "loop/exp", target::ratio_max, 1 / 0.85, "throughput >= 0.85x loop"},
      {"xf/exp", "loop/exp_fresh_output", target::info, 0, "vs loop with fresh output"},
      {"xf/exp", "", target::items_min, 5e9, "exp on one core"},
      {"loop/exp", "", target::items_min, 5e9, "exp on one core"},
      {"xf/exp_2^15", "loop/exp_2^15", target::ratio_max, 1 / 0.85, "L2-resident"},
      {"xf/exp_2^15", "", target::items_min, 5e9, "L2-resident: compute bound"},
      {"loop/exp_2^15", "", target::items_min, 5e9, "L2-resident: compute bound"},
      {"xf/exp_2^15", "xsimd/exp_2^15", target::info, 0, "vs xsimd::exp itself"},
      {"xsimd/exp_2^15", "", target::items_min, 5e9, "L2-resident: xsimd::exp itself"},
  };
  return xfunc_bench::run_and_report(argc, argv, rows);
}
