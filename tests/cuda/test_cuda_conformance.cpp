// The op conformance table (tests/ops/rows_*.cpp) on cuda tensors, compared with the cpu: the
// forward in float64 and float32, the vjp and jvp, functionalize (without views), make_fx's graph
// replayed on new inputs, and vmap, each with its inputs moved to the device (API.md section 7: rtol 1e-12 for float64, 1e-5 for float32). In CI this runs on the
// fake driver (NOTE: [Kernels compiled twice]); on a GPU (XFUNC_CUDA_DRIVER unset) on the GPU.
// Rows whose op, or an op of its rules, has no cuda kernel yet are listed below: the test fails
// when that list is not exactly the rows that say so, so it stays the truth.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "../ops/conformance.hpp"

namespace {
namespace xf = xfunc;
using conformance::tensors;

tensors to_device(const tensors& in, xf::device d, std::optional<xf::dtype> floating = std::nullopt) {
  tensors out;
  for (const auto& x : in) out.push_back((floating && xf::is_floating(x.dtype()) ? x.to(*floating) : x).to(d));
  return out;
}

/// got (on cuda) has expect's (cpu) shape, dtype and values within rtol.
void same(const xf::tensor& got, const xf::tensor& expect, double rtol) {
  REQUIRE(got.defined() == expect.defined());
  if (!got.defined()) return;
  CHECK(got.device() == xf::cuda);
  REQUIRE(got.shape() == expect.shape());
  CHECK(got.dtype() == expect.dtype());
  const xf::tensor g = got.cpu();
  INFO("cuda: " << g << "\ncpu:  " << expect);
  CHECK(xf::allclose(g, expect, rtol, rtol * 1e-3));
}

template <std::size_t N, class Fn>
auto apply(const Fn& f, const tensors& xs) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) { return f(xs[I]...); }(std::make_index_sequence<N>{});
}

template <std::size_t N>
void check_row(const conformance::op_row& r) {
  auto f = [&r](const auto&... xs) { return r.op(tensors{xs...}); };
  // forward, float64 and float32
  same(r.op(to_device(r.inputs, xf::cuda)), r.op(r.inputs), 1e-12);
  same(r.op(to_device(r.inputs, xf::cuda, xf::f32)), r.op(to_device(r.inputs, xf::cpu, xf::f32)), 1e-5);
  const bool all_floating =
      std::all_of(r.inputs.begin(), r.inputs.end(), [](const xf::tensor& x) { return xf::is_floating(x.dtype()); });
  if (r.differentiable && all_floating) {
    // vjp with a cotangent of ones, and jvp with tangents of ones
    auto pull = [&](const tensors& xs) {
      auto [out, pb] = apply<N>([&](const auto&... a) { return xf::vjp(f, a...); }, xs);
      return pb(xf::ones_like(out));
    };
    const auto g_gpu = pull(to_device(r.inputs, xf::cuda));
    const auto g_cpu = pull(r.inputs);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (same(std::get<I>(g_gpu), std::get<I>(g_cpu), 1e-12), ...);
    }(std::make_index_sequence<N>{});
    auto push = [&](const tensors& xs) {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return xf::jvp(f, std::make_tuple(xs[I]...), std::make_tuple(xf::ones_like(xs[I])...));
      }(std::make_index_sequence<N>{});
    };
    const auto [o_gpu, t_gpu] = push(to_device(r.inputs, xf::cuda));
    const auto [o_cpu, t_cpu] = push(r.inputs);
    same(o_gpu, o_cpu, 1e-12);
    same(t_gpu, t_cpu, 1e-12);
  }
  // a second example (as the cpu table makes it)
  tensors second;
  for (std::size_t i = 0; i < r.inputs.size(); ++i) {
    const xf::tensor& x = r.inputs[i];
    second.push_back(r.inputs2.empty() ? (xf::is_floating(x.dtype()) ? x * 0.9 + 0.05 : x) : r.inputs2[i]);
  }
  // functionalize without views, and make_fx's graph replayed on the device on the second example
  auto functional = [&](const tensors& xs) {
    return apply<N>([&](const auto&... a) { return xf::functionalize(f, xf::remove::mutations_and_views)(a...); }, xs);
  };
  same(functional(to_device(r.inputs, xf::cuda)), r.op(r.inputs), 1e-12);
  const xf::graph g = apply<N>([&](const auto&... a) { return xf::make_fx(f)(a...); }, to_device(r.inputs, xf::cuda));
  same(apply<N>([&](const auto&... a) { return g(a...); }, to_device(second, xf::cuda)).at(0), r.op(second), 1e-12);
  // vmap over two examples stacked at dim 0
  tensors stacked;
  for (std::size_t i = 0; i < r.inputs.size(); ++i) stacked.push_back(xf::stack({r.inputs[i], second[i]}, 0));
  auto batched = [&](const tensors& xs) { return apply<N>([&](const auto&... a) { return xf::vmap(f)(a...); }, xs); };
  same(batched(to_device(stacked, xf::cuda)), batched(stacked), 1e-12);
}

// Rows that need an op with no cuda kernel yet (docs/cuda.md).
const std::set<std::string> not_on_cuda_yet = {
};

}  // namespace

TEST_CASE("the conformance table on cuda", "[cuda]") {
  REQUIRE(xf::cuda_is_available());
  std::set<std::string> missing;
  std::map<std::string, std::string> why;
  for (const auto& r : conformance::rows()) {
    INFO("row: " << r.name);
    try {
      switch (r.inputs.size()) {
        case 1: check_row<1>(r); break;
        case 2: check_row<2>(r); break;
        case 3: check_row<3>(r); break;
        default: check_row<4>(r); break;
      }
    } catch (const xf::error& e) {
      const std::string m = e.what();
      if (m.find("has no cuda kernel yet") == std::string::npos &&
          m.find("does not support these dtypes on cuda") == std::string::npos)
        FAIL_CHECK(m);
      missing.insert(r.name);
      why[r.name] = m.substr(0, m.find(": "));
    }
  }
  std::string listing;
  for (const auto& n : missing) listing += "    \"" + n + "\",  // " + why[n] + "\n";
  INFO("rows without cuda kernels:\n" << listing);
  CHECK(missing == not_on_cuda_yet);
}

// xf::to between devices is an op like the others, but its rows cannot join the table above (whose
// inputs go to cuda first): these take cpu inputs and return to the cpu, so the table's own
// checks (tests/ops/conformance.cpp: the forward, gradcheck, the compositions, vmap against a loop,
// make_fx) run on them unchanged, with both transfers and the work between them inside.
TEST_CASE("xf::to between the cpu and cuda passes the conformance checks", "[cuda]") {
  REQUIRE(xf::cuda_is_available());
  const auto identity = [](const tensors& in) { return in[0]; };
  conformance::check_row({"to(cuda), then to(cpu)", {conformance::sample({3, 4})},
                          [](const tensors& in) { return in[0].cuda().cpu(); }, identity});
  conformance::check_row({"to(cuda), exp and mul there, then to(cpu)",
                          {conformance::sample({3, 4}), conformance::sample({4}, -0.5, 0.5, 2)},
                          [](const tensors& in) { return (xf::exp(in[0].cuda()) * in[1].cuda()).cpu(); },
                          conformance::ref_binary([](double a, double b) { return std::exp(a) * b; })});
}
