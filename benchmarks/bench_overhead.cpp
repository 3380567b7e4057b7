// Per-op overhead of 1-element float32 `add` and `sin` at transform depth 0 (plain call),
// 1 (grad), 2 (vmap(grad)) and 3 (vmap(vmap(grad))), against xtensor's `c = a + b` (and
// `c = sin(a)`) on 1-element xt::xarray<float> measured in the same run.
//
// Method: an op at depth d must run on inputs already wrapped by d layers, i.e. inside the
// innermost transformed function. So the benchmark calls the transformed function once per
// iteration and, inside it, times a loop of K ops on the wrapped inputs with a steady clock;
// the iteration time handed to Google Benchmark (UseManualTime) is that loop's time, and the
// counter ops_per_iter = K makes the table divide it by K. The number in the table is
// therefore the forward cost of one op at that depth (dispatch through
// every layer, wrapping, recording the grad node, the kernel, and destroying the result),
// without the cost of entering/leaving the transforms or of the backward pass. Every transform
// has batch size 1 and every innermost (logical) input has shape [1], so each level's physical
// tensors hold one element.
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#endif

#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>

#include <xfunc/xfunc.hpp>

#include "bench_report.hpp"

namespace xf = xfunc;
using clk = std::chrono::steady_clock;

namespace {

/// Whether no thread has been started yet (glibc), i.e. libstdc++ counts references non-atomically.
bool single_threaded_process() {
#if __has_include(<sys/single_threaded.h>)
  return __libc_single_threaded != 0;
#else
  return false;
#endif
}

constexpr int K = 256;  // ops timed per transform call

template <class Op>
void timed_ops(benchmark::State& st, const xf::tensor& a, const xf::tensor& b, Op op) {
  const auto t0 = clk::now();
  for (int i = 0; i < K; ++i) {
    xf::tensor c = op(a, b);
    benchmark::DoNotOptimize(c.impl());
  }
  const auto t1 = clk::now();
  st.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  st.counters["ops_per_iter"] = K;
}

const auto add_fn = [](const xf::tensor& a, const xf::tensor& b) { return xf::add(a, b); };
const auto sin_fn = [](const xf::tensor& a, const xf::tensor&) { return xf::sin(a); };

// f for the transforms: runs the timed ops on its (wrapped) arguments, returns a scalar.
template <class Op>
auto inner_fn(benchmark::State& st, Op op) {
  return [&st, op](const xf::tensor& a, const xf::tensor& b) {
    timed_ops(st, a, b, op);
    return xf::sum(a);
  };
}

template <class Op>
void depth0(benchmark::State& st, Op op) {
  xf::tensor a = xf::randn({1}), b = xf::randn({1});
  for (auto _ : st) timed_ops(st, a, b, op);
}
template <class Op>
void depth1(benchmark::State& st, Op op) {
  xf::tensor a = xf::randn({1}), b = xf::randn({1});
  auto g = xf::grad(inner_fn(st, op), xf::argnums<0, 1>);
  for (auto _ : st) benchmark::DoNotOptimize(g(a, b));
}
template <class Op>
void depth2(benchmark::State& st, Op op) {
  xf::tensor a = xf::randn({1, 1}), b = xf::randn({1, 1});
  auto g = xf::vmap(xf::grad(inner_fn(st, op), xf::argnums<0, 1>));
  for (auto _ : st) benchmark::DoNotOptimize(g(a, b));
}
template <class Op>
void depth3(benchmark::State& st, Op op) {
  xf::tensor a = xf::randn({1, 1, 1}), b = xf::randn({1, 1, 1});
  auto g = xf::vmap(xf::vmap(xf::grad(inner_fn(st, op), xf::argnums<0, 1>)));
  for (auto _ : st) benchmark::DoNotOptimize(g(a, b));
}

// Baselines: 1-element xt::xarray<float>, a fresh result array per op (as xfunc makes a fresh
// tensor per op), timed the same way.
void xarray_add(benchmark::State& st) {
  xt::xarray<float> a = {1.5f}, b = {2.5f};
  for (auto _ : st) {
    const auto t0 = clk::now();
    for (int i = 0; i < K; ++i) {
      xt::xarray<float> c = a + b;
      benchmark::DoNotOptimize(c.data());
    }
    st.SetIterationTime(std::chrono::duration<double>(clk::now() - t0).count());
  }
  st.counters["ops_per_iter"] = K;
}
void xarray_sin(benchmark::State& st) {
  xt::xarray<float> a = {1.5f};
  for (auto _ : st) {
    const auto t0 = clk::now();
    for (int i = 0; i < K; ++i) {
      xt::xarray<float> c = xt::sin(a);
      benchmark::DoNotOptimize(c.data());
    }
    st.SetIterationTime(std::chrono::duration<double>(clk::now() - t0).count());
  }
  st.counters["ops_per_iter"] = K;
}

}  // namespace

int main(int argc, char** argv) {
  // Every benchmark runs twice (they run in registration order): first in a single-threaded
  // process, where libstdc++ counts shared_ptr references with plain increments, then, after a
  // thread has been started, with atomic ones (prefix mt/), as in any program that has started
  // a thread (a BLAS pool, a server). On this machine an atomic count pair costs about 15 ns.
  const std::vector<std::pair<std::string, void (*)(benchmark::State&)>> benches = {
      {"xarray/add", xarray_add},
      {"xarray/sin", xarray_sin},
      {"xf/add/depth0", [](benchmark::State& s) { depth0(s, add_fn); }},
      {"xf/add/depth1_grad", [](benchmark::State& s) { depth1(s, add_fn); }},
      {"xf/add/depth2_vmap_grad", [](benchmark::State& s) { depth2(s, add_fn); }},
      {"xf/add/depth3_vmap_vmap_grad", [](benchmark::State& s) { depth3(s, add_fn); }},
      {"xf/sin/depth0", [](benchmark::State& s) { depth0(s, sin_fn); }},
      {"xf/sin/depth1_grad", [](benchmark::State& s) { depth1(s, sin_fn); }},
      {"xf/sin/depth2_vmap_grad", [](benchmark::State& s) { depth2(s, sin_fn); }},
      {"xf/sin/depth3_vmap_vmap_grad", [](benchmark::State& s) { depth3(s, sin_fn); }},
  };
  for (const auto& [name, fn] : benches)
    benchmark::RegisterBenchmark(name.c_str(), [fn = fn](benchmark::State& s) {
      if (!single_threaded_process()) return s.SkipWithError("the process is already multithreaded");
      fn(s);
    })->UseManualTime();
  for (const auto& [name, fn] : benches)
    benchmark::RegisterBenchmark(("mt/" + name).c_str(), [fn = fn](benchmark::State& s) {
      static std::once_flag started;
      std::call_once(started, [] { std::thread([] {}).join(); });
      fn(s);
    })->UseManualTime();

  using xfunc_bench::target;
  std::vector<target> rows;
  for (const std::string mode : {"", "mt/"})
    for (const std::string op : {"add", "sin"}) {
      const std::string p = mode + "xf/" + op + "/", x = mode + "xarray/";
      const std::string where = mode.empty() ? "" : " (multithreaded process)";
      rows.push_back({p + "depth0", x + "add", target::ratio_max, 2.5, "issue baseline: xarray c = a + b" + where});
      if (op == "sin") rows.push_back({p + "depth0", x + "sin", target::info, 0, "vs xarray c = sin(a)" + where});
      rows.push_back({p + "depth1_grad", p + "depth0", target::delta_max_ns, 60, "grad level" + where});
      rows.push_back({p + "depth2_vmap_grad", p + "depth1_grad", target::delta_max_ns, 60, "vmap level" + where});
      rows.push_back({p + "depth3_vmap_vmap_grad", p + "depth2_vmap_grad", target::delta_max_ns, 60, "vmap level" + where});
    }
  // the single-threaded rows first: once the mt/ rows have started a thread, the process stays
  // multithreaded (each phase is still interleaved within itself)
  return xfunc_bench::run_and_report(argc, argv, rows, {"^(xarray|xf)/", "^mt/"});
}
