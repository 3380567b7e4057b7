// Hessian of f(x) = sum(tanh(W x + b)), W [32, 512], x [512], float32:
//   xf::hessian(f), xf::jacrev(xf::jacrev(f)), xf::jacfwd(xf::jacfwd(f)), and
//   xf::jacfwd(xf::jacrev(f, xf::chunk_size(c))) for c in {64, 8} (c = none is xf::hessian);
//   baseline: the analytic Hessian W^T diag(-2 y (1 - y^2)) W, y = tanh(W x + b), in plain C++:
//   cblas_sgemv for W x + b, a loop for the diagonal scaling of W's rows, cblas_sgemm for
//   W^T (D W) (preallocated buffers).
// Peak memory: each configuration runs once more in a forked child that resets its peak RSS
// (/proc/self/clear_refs "5"), runs the configuration, and reports VmHWM - VmRSS at start (the
// memory the configuration itself added at its peak) and the wall time of that one run.
// A last table shows chunk_size on a vmap whose per-example intermediates dominate memory.
// Targets: xf::hessian within 3x of analytic; with chunk_size(c), the extra peak memory falls
// roughly in proportion to c / 512 (reported: <= 2x the proportional share of the unchunked
// figure) for at most 1.5x the unchunked time. Max abs differences are printed first.
#include <cblas.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
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

constexpr std::int64_t M = 32, N = 512;

struct problem : jac_bench::tanh_layer {
  problem() : tanh_layer(M, N, 77) {}
  auto f() const {
    return [this](const xf::tensor& v) { return xf::sum(xf::tanh(xf::mv(W, v) + b)); };
  }
};
const problem& prob() {
  static const problem p;
  return p;
}

struct analytic {
  std::vector<float> z, DW, H;
  void run(const problem& p) {
    z.assign(p.bv.begin(), p.bv.end());
    DW.resize(std::size_t(M * N));
    H.resize(std::size_t(N * N));
    cblas_sgemv(CblasRowMajor, CblasNoTrans, int(M), int(N), 1.0f, p.Wv.data(), int(N), p.xv.data(), 1, 1.0f, z.data(),
                1);
    for (std::int64_t i = 0; i < M; ++i) {
      const float y = std::tanh(z[std::size_t(i)]);
      const float d = -2.0f * y * (1.0f - y * y);
      const float* w = p.Wv.data() + i * N;
      float* o = DW.data() + i * N;
      for (std::int64_t j = 0; j < N; ++j) o[j] = d * w[j];
    }
    // H = W^T (D W): [N, M] x [M, N]
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(N), int(N), int(M), 1.0f, p.Wv.data(), int(N), DW.data(),
                int(N), 0.0f, H.data(), int(N));
  }
};

struct config {
  std::string name;
  std::function<xf::tensor()> run;
};

std::vector<config> configs() {
  const problem& p = prob();
  auto f = p.f();
  return {
      {"analytic", [&p] {
         analytic a;
         a.run(p);
         return xf::tensor();
       }},
      {"xf::hessian", [f, &p] { return xf::hessian(f)(p.x); }},
      {"jacrev(jacrev)", [f, &p] { return xf::jacrev(xf::jacrev(f))(p.x); }},
      {"jacfwd(jacfwd)", [f, &p] { return xf::jacfwd(xf::jacfwd(f))(p.x); }},
      {"jacfwd(jacrev(chunk_size(64)))", [f, &p] { return xf::jacfwd(xf::jacrev(f, xf::chunk_size(64)))(p.x); }},
      {"jacfwd(jacrev(chunk_size(8)))", [f, &p] { return xf::jacfwd(xf::jacrev(f, xf::chunk_size(8)))(p.x); }},
      // Chunking the transform that maps over the 512 Hessian rows (the inner jacrev of a scalar
      // f has a single row, so chunking it cannot save anything; jacfwd takes no chunk_size).
      {"jacrev(jacrev,chunk_size(64))", [f, &p] { return xf::jacrev(xf::jacrev(f), xf::chunk_size(64))(p.x); }},
      {"jacrev(jacrev,chunk_size(8))", [f, &p] { return xf::jacrev(xf::jacrev(f), xf::chunk_size(8))(p.x); }},
  };
}

long status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(key);
  while (std::getline(in, line))
    if (line.compare(0, n, key) == 0) return std::stol(line.substr(n + 1));
  return -1;
}

struct mem_result {
  double extra_mb = -1, hwm_mb = -1, seconds = -1;
};

/// Runs fn once in a forked child; returns its added peak RSS and its wall time.
mem_result measure_in_child(const std::function<xf::tensor()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    { std::ofstream("/proc/self/clear_refs") << "5"; }  // reset VmHWM to the current RSS
    const long rss0 = status_kb("VmRSS:");
    const auto t0 = std::chrono::steady_clock::now();
    { xf::tensor r = fn(); }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const long hwm = status_kb("VmHWM:");
    mem_result m{double(hwm - rss0) / 1024.0, double(hwm) / 1024.0, s};
    if (write(fds[1], &m, sizeof m) != sizeof m) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  mem_result m;
  if (read(fds[0], &m, sizeof m) != sizeof m) m = {};
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return m;
}

void check_agreement(const std::vector<config>& cs) {
  analytic a;
  a.run(prob());
  std::printf("agreement with the analytic Hessian [%lld x %lld] (max |H| %.3g):\n", (long long)N, (long long)N,
              jac_bench::max_abs(a.H));
  for (const auto& c : cs) {
    if (c.name == "analytic") continue;
    xf::tensor h = c.run();
    std::printf("  %-34s max abs diff %.3g\n", c.name.c_str(), max_abs_diff(to_vector(h), a.H));
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  // Every block of 64 KiB or more gets its own mapping and goes back to the system when freed
  // (no dynamic mmap threshold, no cached heap top), so a child's peak RSS counts what it
  // allocated itself, not memory glibc kept from earlier runs.
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  const auto cs = configs();

  // Peak memory, one forked child per configuration (three runs each, the median time kept),
  // before anything large has run in this process.
  std::vector<mem_result> mem;
  for (const auto& c : cs) {
    std::vector<mem_result> r;
    for (int k = 0; k < 3; ++k) r.push_back(measure_in_child(c.run));
    std::sort(r.begin(), r.end(), [](auto& u, auto& v) { return u.seconds < v.seconds; });
    mem_result m = r[1];
    for (auto& q : r) m.extra_mb = std::max(m.extra_mb, q.extra_mb), m.hwm_mb = std::max(m.hwm_mb, q.hwm_mb);
    mem.push_back(m);
  }
  check_agreement(cs);

  for (const auto& c : cs)
    benchmark::RegisterBenchmark(c.name.c_str(),
                                 [run = c.run](benchmark::State& st) {
                                   for (auto _ : st) {
                                     xf::tensor h = run();
                                     benchmark::DoNotOptimize(h.impl());
                                   }
                                 })
        ->Unit(benchmark::kMicrosecond);

  using xfunc_bench::target;
  const std::vector<target> rows = {
      {"xf::hessian", "analytic", target::ratio_max, 3.0, "hessian within 3x of analytic"},
      {"jacrev(jacrev)", "analytic", target::info, 0, ""},
      {"jacfwd(jacfwd)", "analytic", target::info, 0, ""},
      {"jacfwd(jacrev(chunk_size(64)))", "xf::hessian", target::ratio_max, 1.5, "chunk 64: <= 1.5x unchunked time"},
      {"jacfwd(jacrev(chunk_size(8)))", "xf::hessian", target::ratio_max, 1.5, "chunk 8: <= 1.5x unchunked time"},
      {"jacrev(jacrev,chunk_size(64))", "jacrev(jacrev)", target::ratio_max, 1.5, "chunk 64: <= 1.5x unchunked"},
      {"jacrev(jacrev,chunk_size(8))", "jacrev(jacrev)", target::ratio_max, 1.5, "chunk 8: <= 1.5x unchunked"},
  };
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  xfunc_bench::collecting_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();
  xfunc_bench::print_table(rep.results, rows);

  // Memory table
  // chunk ratios against the unchunked form of the same nesting
  auto base_of = [&](const std::string& name) {
    return name.rfind("jacrev(jacrev", 0) == 0 ? mem[2].extra_mb : mem[1].extra_mb;
  };
  std::printf("\n%-34s %12s %12s %12s %10s  %-26s %s\n", "peak memory (forked child)", "extra MB", "VmHWM MB",
              "1 run time", "mem ratio", "target", "met?");
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const auto& m = mem[i];
    const double base = base_of(cs[i].name);
    char tgt[40] = "(info)", ratio[16] = "", met[8] = "";
    std::int64_t c = cs[i].name.find("(64)") != std::string::npos ? 64 : cs[i].name.find("(8)") != std::string::npos ? 8 : 0;
    if (i >= 1 && base > 0) std::snprintf(ratio, sizeof ratio, "%.3fx", m.extra_mb / base);
    if (c > 0) {
      const double limit = 2.0 * double(c) / double(N);
      std::snprintf(tgt, sizeof tgt, "<= %.3fx (2 x %lld/%lld)", limit, (long long)c, (long long)N);
      std::snprintf(met, sizeof met, "%s", m.extra_mb / base <= limit ? "yes" : "NO");
    }
    std::printf("%-34s %12.1f %12.1f %12s %10s  %-26s %s\n", cs[i].name.c_str(), m.extra_mb, m.hwm_mb,
                xfunc_bench::fmt_time(m.seconds * 1e9).c_str(), ratio, tgt, met);
  }

  // Chunked vmap where the per-example intermediates dominate: f(x) = sum(tanh(outer(x, x)), 1)
  // for B = 512 examples of n = 256 floats holds [B, n, n] at once unchunked (256 MB for the outer
  // product and its tanh), [c, n, n] with chunk_size(c): peak memory should fall in proportion.
  {
    const std::int64_t B = 512, n = 256;
    const xf::tensor xs = xf::randn({B, n});
    const auto per_example = [](const xf::tensor& x) { return xf::sum(xf::tanh(xf::outer(x, x)), {1}); };
    const std::vector<std::pair<std::int64_t, std::function<xf::tensor()>>> vc = {
        {0, [&] { return xf::vmap(per_example)(xs); }},
        {64, [&] { return xf::vmap(per_example, xf::chunk_size(64))(xs); }},
        {8, [&] { return xf::vmap(per_example, xf::chunk_size(8))(xs); }}};
    std::printf("\n%-34s %12s %12s %12s %10s %10s  %-26s %s\n", "chunked vmap, B=512, [n,n]/example",
                "extra MB", "VmHWM MB", "1 run time", "mem ratio", "time ratio", "target", "met?");
    std::vector<mem_result> vm;
    for (const auto& [c, fn] : vc) {
      std::vector<mem_result> r;
      for (int k = 0; k < 3; ++k) r.push_back(measure_in_child(fn));
      std::sort(r.begin(), r.end(), [](auto& u, auto& v) { return u.seconds < v.seconds; });
      mem_result m = r[1];
      for (auto& q : r) m.extra_mb = std::max(m.extra_mb, q.extra_mb), m.hwm_mb = std::max(m.hwm_mb, q.hwm_mb);
      vm.push_back(m);
      char name[40], tgt[48] = "(baseline)", mr[16] = "", tr[16] = "", met[8] = "";
      std::snprintf(name, sizeof name, c ? "vmap chunk_size(%lld)" : "vmap (unchunked)", (long long)c);
      if (c) {
        const double mem_ratio = m.extra_mb / vm[0].extra_mb, time_ratio = m.seconds / vm[0].seconds;
        const double limit = 2.0 * double(c) / double(B);
        std::snprintf(mr, sizeof mr, "%.3fx", mem_ratio);
        std::snprintf(tr, sizeof tr, "%.2fx", time_ratio);
        std::snprintf(tgt, sizeof tgt, "mem <= %.3fx, time <= 1.5x", limit);
        std::snprintf(met, sizeof met, "%s", mem_ratio <= limit && time_ratio <= 1.5 ? "yes" : "NO");
      }
      std::printf("%-34s %12.1f %12.1f %12s %10s %10s  %-26s %s\n", name, m.extra_mb, m.hwm_mb,
                  xfunc_bench::fmt_time(m.seconds * 1e9).c_str(), mr, tr, tgt, met);
    }
  }
  std::fflush(stdout);
  return 0;
}
