// Jacobian of f(x) = tanh(W x + b), float32, W [out, in], for (in, out) in
// {(16,16), (32,2048), (2048,32), (512,512)}:
//   xf::jacrev(f), xf::jacfwd(f), a loop of `out` vjp calls (one pullback per row of the
//   jacobian, after one xf::vjp), and the analytic jacobian diag(1 - y^2) W in plain C++:
//   y = W x + b with cblas_sgemv, tanh in a loop, then each row of W scaled by 1 - y_i^2 into a
//   preallocated buffer (loops; the compiler vectorises them).
// Also timed, for the analysis: the GEMM each batched mode performs at least (W times an
// identity basis: [out,in]x[in,in] for jacfwd, [out,out]x[out,in] for jacrev), straight cblas.
// Targets: the right mode (jacrev when out << in, jacfwd when in << out) at least 5x faster
// than the other on the two skewed shapes; the better of jacrev/jacfwd within 2.5x of the
// analytic jacobian at (512,512). The max abs difference of every result against the analytic
// one is printed before the timings. OpenBLAS runs single-threaded (as in the other benchmarks).
#include <cblas.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <xfunc/xfunc.hpp>

#include "../bench_report.hpp"
#include "jac_common.hpp"

extern "C" void openblas_set_num_threads(int);

namespace xf = xfunc;
using jac_bench::max_abs_diff;
using jac_bench::to_vector;

namespace {

struct shape_case {
  std::int64_t in, out;
};
const shape_case kShapes[] = {{16, 16}, {32, 2048}, {2048, 32}, {512, 512}};

std::string tag(const shape_case& s) { return "in" + std::to_string(s.in) + "_out" + std::to_string(s.out); }

struct problem : jac_bench::tanh_layer {
  std::int64_t in, out;
  explicit problem(shape_case s)
      : tanh_layer(s.out, s.in, 1234 + std::uint64_t(s.in) * 7 + std::uint64_t(s.out)), in(s.in), out(s.out) {}
  auto f() const {
    return [this](const xf::tensor& v) { return xf::tanh(xf::mv(W, v) + b); };
  }
};

/// Analytic jacobian diag(1 - y^2) W, y = tanh(W x + b): cblas_sgemv + loops.
struct analytic {
  std::vector<float> y, J;
  void run(const problem& p) {
    const std::int64_t m = p.out, n = p.in;
    y.assign(p.bv.begin(), p.bv.end());
    J.resize(std::size_t(m * n));
    cblas_sgemv(CblasRowMajor, CblasNoTrans, int(m), int(n), 1.0f, p.Wv.data(), int(n), p.xv.data(), 1, 1.0f,
                y.data(), 1);
    for (std::int64_t i = 0; i < m; ++i) {
      const float t = std::tanh(y[std::size_t(i)]);
      const float d = 1.0f - t * t;
      const float* w = p.Wv.data() + i * n;
      float* o = J.data() + i * n;
      for (std::int64_t j = 0; j < n; ++j) o[j] = d * w[j];
    }
  }
};

/// `out` pullbacks of one vjp, one row each; returns the rows stacked [out, in].
struct vjp_loop {
  xf::tensor basis;  // eye(out), rows selected as cotangents
  explicit vjp_loop(const problem& p) : basis(xf::eye(p.out)) {}
  template <class Sink>
  void run(const problem& p, Sink&& sink) const {
    auto [y, pullback] = xf::vjp(p.f(), p.x);
    for (std::int64_t i = 0; i < p.out; ++i) sink(i, std::get<0>(pullback(basis.select(0, i))));
  }
};

std::map<std::string, std::unique_ptr<problem>>& problems() {
  static std::map<std::string, std::unique_ptr<problem>> m;
  return m;
}

void check_agreement() {
  std::printf("agreement with the analytic jacobian (max abs diff; max |J| for scale):\n");
  for (const auto& s : kShapes) {
    const problem& p = *problems().at(tag(s));
    analytic a;
    a.run(p);
    const auto jr = to_vector(xf::jacrev(p.f())(p.x));
    const auto jf = to_vector(xf::jacfwd(p.f())(p.x));
    std::vector<float> jl(std::size_t(p.out * p.in));
    vjp_loop(p).run(p, [&](std::int64_t i, const xf::tensor& row) {
      const auto r = to_vector(row);
      std::copy(r.begin(), r.end(), jl.begin() + i * p.in);
    });
    std::printf("  %-14s jacrev %.3g   jacfwd %.3g   vjp loop %.3g   (max |J| %.3g)\n", tag(s).c_str(),
                max_abs_diff(jr, a.J), max_abs_diff(jf, a.J), max_abs_diff(jl, a.J), jac_bench::max_abs(a.J));
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  for (const auto& s : kShapes) problems().emplace(tag(s), std::make_unique<problem>(s));
  check_agreement();

  using xfunc_bench::target;
  std::vector<target> rows;
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> best_of;  // best, (jacrev, jacfwd)
  for (const auto& s : kShapes) {
    const problem* p = problems().at(tag(s)).get();
    const std::string t = tag(s);
    auto reg = [&](const std::string& name, auto fn) {
      benchmark::RegisterBenchmark((t + "/" + name).c_str(), fn)->Unit(benchmark::kMicrosecond);
    };
    reg("analytic", [p](benchmark::State& st) {
      analytic a;
      for (auto _ : st) {
        a.run(*p);
        benchmark::ClobberMemory();
      }
    });
    // The one matrix product each batched mode cannot avoid (its floor on one core):
    // jacfwd pushes the identity's `in` columns through W: [out, in] x [in, in];
    // jacrev pulls the identity's `out` rows back through W: [out, out] x [out, in].
    reg("sgemm_floor_fwd", [p](benchmark::State& st) {
      std::vector<float> I(std::size_t(p->in * p->in), 0.0f), C(std::size_t(p->out * p->in));
      for (std::int64_t i = 0; i < p->in; ++i) I[std::size_t(i * p->in + i)] = 1.0f;
      for (auto _ : st) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(p->out), int(p->in), int(p->in), 1.0f,
                    p->Wv.data(), int(p->in), I.data(), int(p->in), 0.0f, C.data(), int(p->in));
        benchmark::ClobberMemory();
      }
    });
    reg("sgemm_floor_rev", [p](benchmark::State& st) {
      std::vector<float> I(std::size_t(p->out * p->out), 0.0f), C(std::size_t(p->out * p->in));
      for (std::int64_t i = 0; i < p->out; ++i) I[std::size_t(i * p->out + i)] = 1.0f;
      for (auto _ : st) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(p->out), int(p->in), int(p->out), 1.0f, I.data(),
                    int(p->out), p->Wv.data(), int(p->in), 0.0f, C.data(), int(p->in));
        benchmark::ClobberMemory();
      }
    });
    reg("jacrev", [p](benchmark::State& st) {
      auto jf = xf::jacrev(p->f());
      for (auto _ : st) {
        auto J = jf(p->x);
        benchmark::DoNotOptimize(J.impl());
      }
    });
    reg("jacfwd", [p](benchmark::State& st) {
      auto jf = xf::jacfwd(p->f());
      for (auto _ : st) {
        auto J = jf(p->x);
        benchmark::DoNotOptimize(J.impl());
      }
    });
    reg("vjp_loop", [p](benchmark::State& st) {
      vjp_loop l(*p);
      for (auto _ : st) l.run(*p, [](std::int64_t, const xf::tensor& r) { benchmark::DoNotOptimize(r.impl()); });
    });
    const std::string a = t + "/analytic", r = t + "/jacrev", f = t + "/jacfwd", l = t + "/vjp_loop";
    if (s.out > 4 * s.in) {
      rows.push_back({f, r, target::ratio_max, 0.2, "in << out: jacfwd >= 5x faster than jacrev"});
    } else if (s.in > 4 * s.out) {
      rows.push_back({r, f, target::ratio_max, 0.2, "out << in: jacrev >= 5x faster than jacfwd"});
    }
    if (s.in == 512 && s.out == 512) {
      const std::string best = t + "/best(jacrev,jacfwd)";
      best_of.push_back({best, {r, f}});
      rows.push_back({best, a, target::ratio_max, 2.5, "best mode within 2.5x of analytic"});
    }
    rows.push_back({r, a, target::info, 0, ""});
    rows.push_back({f, a, target::info, 0, ""});
    rows.push_back({r, t + "/sgemm_floor_rev", target::info, 0, "jacrev vs its GEMM floor"});
    rows.push_back({f, t + "/sgemm_floor_fwd", target::info, 0, "jacfwd vs its GEMM floor"});
    rows.push_back({l, a, target::info, 0, ""});
    rows.push_back({l, r, target::info, 0, "vjp loop vs jacrev"});
  }

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  xfunc_bench::collecting_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();
  for (const auto& [best, modes] : best_of) {
    auto r = rep.results.find(modes.first), f = rep.results.find(modes.second);
    if (r == rep.results.end() || f == rep.results.end()) continue;
    rep.results[best] = r->second.ns <= f->second.ns ? r->second : f->second;
  }
  xfunc_bench::print_table(rep.results, rows);
  return 0;
}
