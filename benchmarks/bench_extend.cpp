// Cost of the extension points (API.md §4), against built-in ops measured in the same run.
//
// (a) Call overhead. The same computation, sin of a 1-element float32 tensor, three ways: the
//     built-in xf::sin; a custom op whose kernel is xf::sin (so the difference is the custom-op
//     call path: schema-typed argument tuple, runtime-rule dispatch, alias check), with a
//     register_autograd formula g * cos(x); and an xf::autograd::function whose forward is
//     xf::sin and whose backward is g * cos(x). Measured at depth 0 (a plain call) and as one
//     whole xf::grad call of sum(f(x)) (entering the grad layer, the forward, the backward pass).
//     Target: custom / built-in <= 1.3x.
// (b) vmap of a custom op, per-example work sin of a float32 vector of 16, batch B in
//     {8, 64, 512}: the fallback (no register_vmap: a loop over the batch), the same op with a
//     real vmap rule, and a hand loop over the batch at depth 0 (op on x.select(0, b), then
//     xf::stack). Target: fallback / hand loop <= 1.2x.
#include <vector>

#include <xfunc/xfunc.hpp>

#include "bench_report.hpp"

namespace xf = xfunc;

namespace {

// --- the three ways of computing sin ---------------------------------------------------------

struct sin_function : xf::autograd::function<sin_function> {
  static xf::tensor forward(const xf::tensor& x) { return xf::sin(x); }
  static void setup_context(xf::autograd::context& ctx, const std::tuple<xf::tensor>& in, const xf::tensor&) {
    ctx.save_for_backward(std::get<0>(in));
  }
  static xf::tensor backward(xf::autograd::context& ctx, const xf::tensor& g) {
    return g * xf::cos(ctx.saved_tensors()[0]);
  }
  static constexpr bool generate_vmap_rule = true;
};

auto sin_kernel = [](const xf::tensor& x) { return xf::sin(x); };
auto sin_backward = [](xf::autograd::context& ctx, const xf::tensor& g) { return g * xf::cos(ctx.saved_tensors()[0]); };
auto sin_setup = [](xf::autograd::context& ctx, const std::tuple<xf::tensor>& in, const xf::tensor&) {
  ctx.save_for_backward(std::get<0>(in));
};

// Registered once, before the benchmarks run.
auto make_sin_op() {
  auto op = xf::custom_op("bench::sin", sin_kernel);
  op.register_fake([](const xf::tensor& x) { return xf::empty_like(x); });
  op.register_autograd(sin_backward, sin_setup);
  return op;
}
auto make_sin_op_with_rule() {
  auto op = xf::custom_op("bench::sin_rule", sin_kernel);
  op.register_autograd(sin_backward, sin_setup);
  op.register_vmap([op](const xf::vmap_info&, const std::array<std::optional<std::int64_t>, 1>& in_dims,
                        const xf::tensor& x) { return std::pair{op(x), in_dims[0]}; });
  return op;
}
const auto sin_op = make_sin_op();            // no vmap rule: vmap falls back to a loop
const auto sin_op_rule = make_sin_op_with_rule();

const auto f_builtin = [](const xf::tensor& x) { return xf::sin(x); };
const auto f_custom_op = [](const xf::tensor& x) { return sin_op(x); };
const auto f_function = [](const xf::tensor& x) { return sin_function::apply(x); };

// --- (a) call overhead -----------------------------------------------------------------------

template <class F>
void depth0(benchmark::State& st, F f) {
  const xf::tensor x = xf::randn({1});
  for (auto _ : st) {
    xf::tensor y = f(x);
    benchmark::DoNotOptimize(y.impl());
  }
}

template <class F>
void grad_call(benchmark::State& st, F f) {
  const xf::tensor x = xf::randn({1});
  auto g = xf::grad([f](const xf::tensor& t) { return xf::sum(f(t)); });
  for (auto _ : st) {
    xf::tensor y = g(x);
    benchmark::DoNotOptimize(y.impl());
  }
}

// --- (b) vmap fallback -----------------------------------------------------------------------

constexpr std::int64_t N = 16;  // per-example vector length

template <class Op>
void vmap_op(benchmark::State& st, const Op& op) {
  const xf::tensor x = xf::randn({st.range(0), N});
  auto v = xf::vmap([&op](const xf::tensor& t) { return op(t); });
  for (auto _ : st) {
    xf::tensor y = v(x);
    benchmark::DoNotOptimize(y.impl());
  }
}

void hand_loop(benchmark::State& st) {
  const xf::tensor x = xf::randn({st.range(0), N});
  const std::int64_t B = st.range(0);
  for (auto _ : st) {
    std::vector<xf::tensor> parts;
    parts.reserve(static_cast<std::size_t>(B));
    for (std::int64_t b = 0; b < B; ++b) parts.push_back(sin_op(x.select(0, b)));
    xf::tensor y = xf::stack(parts, 0);
    benchmark::DoNotOptimize(y.impl());
  }
}

void builtin_batched(benchmark::State& st) {  // for scale: the whole batch in one built-in call
  const xf::tensor x = xf::randn({st.range(0), N});
  for (auto _ : st) {
    xf::tensor y = xf::sin(x);
    benchmark::DoNotOptimize(y.impl());
  }
}

}  // namespace

int main(int argc, char** argv) {
  using benchmark::RegisterBenchmark;
  RegisterBenchmark("builtin/depth0", [](benchmark::State& s) { depth0(s, f_builtin); });
  RegisterBenchmark("custom_op/depth0", [](benchmark::State& s) { depth0(s, f_custom_op); });
  RegisterBenchmark("function/depth0", [](benchmark::State& s) { depth0(s, f_function); });
  RegisterBenchmark("builtin/grad", [](benchmark::State& s) { grad_call(s, f_builtin); });
  RegisterBenchmark("custom_op/grad", [](benchmark::State& s) { grad_call(s, f_custom_op); });
  RegisterBenchmark("function/grad", [](benchmark::State& s) { grad_call(s, f_function); });

  const std::vector<std::int64_t> batches{8, 64, 512};
  for (auto B : batches) {
    const std::string b = "/B" + std::to_string(B);
    RegisterBenchmark(("vmap_hand_loop" + b).c_str(), hand_loop)->Arg(B);
    RegisterBenchmark(("vmap_fallback" + b).c_str(), [](benchmark::State& s) { vmap_op(s, sin_op); })->Arg(B);
    RegisterBenchmark(("vmap_rule" + b).c_str(), [](benchmark::State& s) { vmap_op(s, sin_op_rule); })->Arg(B);
    RegisterBenchmark(("builtin_batched" + b).c_str(), builtin_batched)->Arg(B);
  }

  using xfunc_bench::target;
  std::vector<target> rows;
  for (std::string w : {"depth0", "grad"}) {
    rows.push_back({"custom_op/" + w, "builtin/" + w, target::ratio_max, 1.3, "custom op vs xf::sin"});
    rows.push_back({"function/" + w, "builtin/" + w, target::ratio_max, 1.3, "autograd::function vs xf::sin"});
  }
  // The table is keyed by the registered name (Google Benchmark keeps the Arg apart).
  for (auto B : batches) {
    const std::string b = "/B" + std::to_string(B);
    rows.push_back({"vmap_fallback" + b, "vmap_hand_loop" + b, target::ratio_max, 1.2, "fallback vs hand loop"});
    rows.push_back({"vmap_rule" + b, "vmap_hand_loop" + b, target::info, 0, "real vmap rule vs hand loop"});
    rows.push_back({"builtin_batched" + b, "vmap_hand_loop" + b, target::info, 0, "one xf::sin on [B, 16]"});
  }
  return xfunc_bench::run_and_report(argc, argv, rows);
}
