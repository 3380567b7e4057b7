// In-place update loop `x.mul_(a).add_(b)` 100 times on 2^20 float32 elements: plain, under
// functionalize and under grad, against the out-of-place version `x = x * a + b` (baseline).
#include <xfunc/xfunc.hpp>

#include "bench_report.hpp"

namespace xf = xfunc;

namespace {
constexpr std::int64_t N = std::int64_t(1) << 20;
constexpr int steps = 100;

const xf::tensor& start() {
  static const xf::tensor x = xf::randn({N});
  return x;
}
const xf::tensor& a() {
  static const xf::tensor t = xf::full({N}, 0.999);
  return t;
}
const xf::tensor& b() {
  static const xf::tensor t = xf::full({N}, 0.001);
  return t;
}

xf::tensor update_in_place(const xf::tensor& x0) {
  xf::tensor x = x0.clone();
  for (int i = 0; i < steps; ++i) x.mul_(a()).add_(b());
  return x;
}
xf::tensor update_out_of_place(const xf::tensor& x0) {
  xf::tensor x = x0;
  for (int i = 0; i < steps; ++i) x = x * a() + b();
  return x;
}

void out_of_place(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(update_out_of_place(start()).impl());
}
void in_place(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(update_in_place(start()).impl());
}
void functionalized(benchmark::State& st) {
  auto f = xf::functionalize(update_in_place);
  for (auto _ : st) benchmark::DoNotOptimize(f(start()).impl());
}
void grad_in_place(benchmark::State& st) {
  auto g = xf::grad([](const xf::tensor& x) { return xf::sum(update_in_place(x)); });
  for (auto _ : st) benchmark::DoNotOptimize(g(start()).impl());
}
void grad_out_of_place(benchmark::State& st) {
  auto g = xf::grad([](const xf::tensor& x) { return xf::sum(update_out_of_place(x)); });
  for (auto _ : st) benchmark::DoNotOptimize(g(start()).impl());
}
}  // namespace

int main(int argc, char** argv) {
  for (auto [name, fn] : {std::pair{"out_of_place", &out_of_place}, {"in_place", &in_place},
                          {"functionalize(in_place)", &functionalized}, {"grad(in_place)", &grad_in_place},
                          {"grad(out_of_place)", &grad_out_of_place}})
    benchmark::RegisterBenchmark(name, fn)->Unit(benchmark::kMillisecond);
  using xfunc_bench::target;
  const std::vector<target> rows = {
      {"in_place", "out_of_place", target::info, 0, "plain in-place loop"},
      {"functionalize(in_place)", "out_of_place", target::ratio_max, 1.3, "functionalize <= 1.3x"},
      {"grad(in_place)", "out_of_place", target::info, 0, "under grad"},
      {"grad(in_place)", "grad(out_of_place)", target::info, 0, "grad: in-place vs out-of-place"},
  };
  return xfunc_bench::run_and_report(argc, argv, rows);
}
