// CPU kernels at 1 and 2 threads (API.md §6), float32, against baselines measured in the same
// run: a memory copy of the same bytes, hand-written loops, OpenBLAS called directly and, when
// CMake found libtorch (XFUNC_BENCH_TORCH), the same operations on torch::Tensor with
// at::set_num_threads(1 / 2). Every benchmark sets its thread count before timing
// (xf::set_num_threads, which also caps OpenBLAS; at::set_num_threads and
// openblas_set_num_threads for libtorch, which shares the same OpenBLAS) and reports wall
// time (UseRealTime). Results of xfunc calls are evaluated inside the timed region (a large
// pointwise result may be deferred: NOTE: [Deferred elementwise]).
//
// Row names: xf/<op>/t<threads>, torch/<op>/t<threads>, loop/<op> (one thread) and
// copy/<bytes> (memcpy, one thread); loop/<op>/t2 and copy/<bytes>/t2 are the same hand-written
// code cut in two halves on two threads: what a second core gives on this machine, the ceiling
// for the 2-thread targets of memory-bound work. The tables at the end give xf / baseline time
// ratios. Every target is judged on a pair row, pair/<op> vs <baseline>: xfunc and its baseline
// timed in alternating blocks inside one benchmark (NOTE: [Paired timing] in bench_report.hpp),
// which this VM's changes of speed shift far less than two rows measured apart.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <xfunc/xfunc.hpp>

#if defined(XFUNC_BENCH_TORCH)
#include <torch/torch.h>
#endif

#include "bench_report.hpp"

namespace xf = xfunc;

namespace {

constexpr std::int64_t N = std::int64_t(1) << 24;  // pointwise elements
constexpr std::int64_t S = 2048;                   // square matrices for copies and indexing
constexpr double A = 1.7, B = -0.3;

// ---- inputs (made once; the same values feed xfunc, libtorch and the loops) -------------------

std::vector<float> random_floats(std::int64_t n, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(g);
  return v;
}
std::vector<std::int64_t> random_indices(std::int64_t n, std::int64_t bound, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<std::int64_t> d(0, bound - 1);
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(g);
  return v;
}
template <class T>
xf::tensor to_xf(const std::vector<T>& v, const xf::shape_t& shape) {
  xf::tensor t = xf::empty(shape, std::is_same_v<T, float> ? xf::f32 : std::is_same_v<T, bool> ? xf::b8 : xf::i64);
  std::memcpy(t.impl()->template data<T>(), v.data(), v.size() * sizeof(T));
  return t;
}

struct data_set {
  std::vector<float> x = random_floats(N, 1);            // 2^24 values
  std::vector<float> sq = random_floats(S * S, 2);       // 2048 x 2048
  std::vector<float> sq2 = random_floats(S * S, 3);      // another 2048 x 2048
  std::vector<float> big = random_floats(4096 * 4096, 4);  // 4096 x 4096 (reductions)
  std::vector<float> mat = random_floats(1024 * 1024, 5);
  std::vector<float> mat2 = random_floats(1024 * 1024, 6);
  std::vector<float> batch = random_floats(64 * 128 * 128, 7);
  std::vector<float> batch2 = random_floats(64 * 128 * 128, 8);
  std::vector<float> pe_a = random_floats(256 * 128, 13);  // per-example outer products [256,128,1] x
  std::vector<float> pe_b = random_floats(256 * 784, 14);  // [256,1,784]: an MLP's weight gradients under vmap
  std::vector<float> wg_dy = random_floats(8192 * 128, 15);  // a linear layer's weight gradient over a batch
  std::vector<float> wg_x = random_floats(8192 * 784, 16);   // of 8192: dy [8192,128]^T x [8192,784]
  std::vector<float> lin_x = random_floats(32 * 4096, 17);   // a 4096 -> 4096 layer at batch 32: x W
  std::vector<std::int64_t> rows = random_indices(S, S, 9);        // index_select: 2048 rows of 2048
  std::vector<std::int64_t> cols = random_indices(S * S, S, 10);   // gather / scatter_add along dim 1
  std::vector<std::int64_t> targets2k = random_indices(S, S, 11);
  std::vector<std::int64_t> targets4k = random_indices(4096, 4096, 12);
  std::vector<char> mask;  // where's condition (0 / 1)
  data_set() {
    mask.resize(static_cast<std::size_t>(N));
    for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = x[i] > 0.f;
  }
};
const data_set& data() {
  static const data_set d;
  return d;
}

struct xf_inputs {
  xf::tensor x, sq, sq2, big, mat, mat2, batch, batch2, pe_a, pe_b, wg_dy, wg_x, lin_x, rows, cols, targets2k, targets4k, mask, zeros_sq;
  xf_inputs() {
    const data_set& d = data();
    x = to_xf(d.x, {N});
    sq = to_xf(d.sq, {S, S});
    sq2 = to_xf(d.sq2, {S, S});
    big = to_xf(d.big, {4096, 4096});
    mat = to_xf(d.mat, {1024, 1024});
    mat2 = to_xf(d.mat2, {1024, 1024});
    batch = to_xf(d.batch, {64, 128, 128});
    batch2 = to_xf(d.batch2, {64, 128, 128});
    pe_a = to_xf(d.pe_a, {256, 128, 1});
    pe_b = to_xf(d.pe_b, {256, 1, 784});
    wg_dy = to_xf(d.wg_dy, {8192, 128});
    wg_x = to_xf(d.wg_x, {8192, 784});
    lin_x = to_xf(d.lin_x, {32, 4096});
    rows = to_xf(d.rows, {S});
    cols = to_xf(d.cols, {S, S});
    targets2k = to_xf(d.targets2k, {S});
    targets4k = to_xf(d.targets4k, {4096});
    mask = xf::empty({N}, xf::b8);
    std::memcpy(mask.impl()->data<bool>(), d.mask.data(), d.mask.size());
    zeros_sq = xf::zeros({S, S});
  }
};
const xf_inputs& xin() {
  static const xf_inputs in;
  return in;
}

/// Touching the data evaluates a deferred result, so the timed region holds the whole computation.
void consume(const xf::tensor& y) {
  const auto* p = y.impl();
  benchmark::DoNotOptimize(p->dt == xf::f32 ? static_cast<const void*>(p->data<float>())
                                            : static_cast<const void*>(p->data<std::int64_t>()));
}

using xf_fn = std::function<xf::tensor(const xf_inputs&)>;

/// An xfunc call on `threads` threads (for its row, or a pair's side).
std::function<void()> xf_call(const xf_fn& f, int threads) {
  return [f, threads] {
    xf::set_num_threads(threads);  // (a no-op but in a row's or a pair's block's first call)
    consume(f(xin()));
  };
}

void run_xf(benchmark::State& st, int threads, const xf_fn& f) {
  const std::function<void()> call = xf_call(f, threads);
  call();  // warm up (allocations, the thread pool)
  for (auto _ : st) call();
}

// ---- hand-written baselines (one thread) ------------------------------------------------------

struct free_deleter {
  void operator()(void* p) const { std::free(p); }
};
template <class T>
std::unique_ptr<T[], free_deleter> buffer(std::int64_t n) {
  return std::unique_ptr<T[], free_deleter>(
      static_cast<T*>(std::aligned_alloc(64, static_cast<std::size_t>((n * sizeof(T) + 63) / 64 * 64))));
}

template <class F>
void run_loop(benchmark::State& st, std::int64_t out_elems, F f) {
  auto o = buffer<float>(out_elems);
  f(o.get());
  for (auto _ : st) {
    f(o.get());
    benchmark::ClobberMemory();
  }
}

/// Hand-written 2-thread baselines: run(job) calls job(0) on a second thread and job(1) on this
/// one and returns when both are done. The second thread lives as long as the benchmark and spins
/// between calls, as a pool's worker does, so no thread start is timed.
class partner_thread {
 public:
  partner_thread() : worker_([this] { serve(); }) {}
  partner_thread(const partner_thread&) = delete;
  partner_thread& operator=(const partner_thread&) = delete;
  ~partner_thread() {
    quit_.store(true, std::memory_order_release);
    worker_.join();
  }
  template <class F>
  void run(F&& job) {
    job_ = [&job] { job(0); };
    posted_.fetch_add(1, std::memory_order_release);
    job(1);
    while (done_.load(std::memory_order_acquire) != posted_.load(std::memory_order_relaxed)) std::this_thread::yield();
  }

 private:
  void serve() {
    std::uint64_t seen = 0;
    while (!quit_.load(std::memory_order_acquire)) {
      if (posted_.load(std::memory_order_acquire) == seen) continue;
      job_();
      done_.store(++seen, std::memory_order_release);
    }
  }
  std::function<void()> job_;
  std::atomic<std::uint64_t> posted_{0}, done_{0};
  std::atomic<bool> quit_{false};
  std::thread worker_;
};

/// run_loop for 2 threads: f(o, half) computes half 0 or 1 of the result.
template <class F>
void run_loop2(benchmark::State& st, std::int64_t out_elems, F f) {
  auto o = buffer<float>(out_elems);
  partner_thread partner;
  auto both = [&] { partner.run([&](int half) { f(o.get(), half); }); };
  both();
  for (auto _ : st) {
    both();
    benchmark::ClobberMemory();
  }
}

/// The sum of a[0, n) with 16 accumulators (the hand loop of the reduction rows).
__attribute__((noinline)) float loop_sum(const float* a, std::int64_t n) {
  float acc[16] = {};
  for (std::int64_t i = 0; i < n; i += 16)
    for (int l = 0; l < 16; ++l) acc[l] += a[i + l];
  float s = 0;
  for (float v : acc) s += v;
  return s;
}

__attribute__((noinline)) void loop_transpose_add(const float* a, float* o) {
  for (std::int64_t i = 0; i < S; ++i)
    for (std::int64_t j = 0; j < S; ++j) o[i * S + j] = a[j * S + i] + a[i * S + j];
}
__attribute__((noinline)) void loop_transpose(const float* a, float* o, std::int64_t rows, std::int64_t cols) {
  // o [cols, rows] = a [rows, cols]^T, the plain double loop
  for (std::int64_t i = 0; i < cols; ++i)
    for (std::int64_t j = 0; j < rows; ++j) o[i * rows + j] = a[j * cols + i];
}
__attribute__((noinline)) void loop_transpose_tiled(const float* a, float* o, std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t t = 32;
  for (std::int64_t i0 = 0; i0 < cols; i0 += t)
    for (std::int64_t j0 = 0; j0 < rows; j0 += t)
      for (std::int64_t i = i0; i < std::min(cols, i0 + t); ++i)
        for (std::int64_t j = j0; j < std::min(rows, j0 + t); ++j) o[i * rows + j] = a[j * cols + i];
}

// ---- registration -----------------------------------------------------------------------------

std::vector<xfunc_bench::target> rows_out;

void reg(const std::string& name, std::function<void(benchmark::State&)> fn) {
  benchmark::RegisterBenchmark(name.c_str(), [fn](benchmark::State& st) { fn(st); })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->MinTime(0.3);
}

/// The baselines' bodies by row name, so that a pair (add_pair) can run them too: f(o) writes
/// the result into a buffer of `out` floats.
struct loop_body {
  std::int64_t out;
  std::function<void(float*)> f;
};
std::map<std::string, loop_body> loops;

/// The baselines' threads: libtorch's and OpenBLAS's (which libtorch shares).
void set_baseline_threads(int threads) {
#if defined(XFUNC_BENCH_TORCH)
  at::set_num_threads(threads);
#endif
  openblas_set_num_threads(threads);
}

/// A baseline row (loop/..., copy/..., blas/...): one thread, OpenBLAS included.
void reg_loop(const std::string& name, std::int64_t out, std::function<void(float*)> f) {
  loops[name] = {out, f};
  reg(name, [out, f](benchmark::State& st) {
    set_baseline_threads(1);
    run_loop(st, out, f);
  });
}

/// A baseline row's body as a call for add_pair (its result buffer made on first use).
std::function<void()> loop_call(const std::string& name) {
  const loop_body body = loops.at(name);
  auto buf = std::make_shared<std::unique_ptr<float[], free_deleter>>();
  return [body, buf] {
    if (!*buf) *buf = buffer<float>(body.out);
    body.f(buf->get());
    benchmark::ClobberMemory();
  };
}

/// xf/<op>/t1 and /t2, and torch/<op>/t1 and /t2 when libtorch is there; the table rows that
/// compare them with each other and with `baseline` (a loop or copy row), with the targets.
struct op_spec {
  std::string op;
  xf_fn xf;
#if defined(XFUNC_BENCH_TORCH)
  std::function<torch::Tensor()> torch;
#endif
  std::string baseline;       // loop/... or copy/... ("" for none)
  double baseline_target;     // xf t1 / baseline (0: info only)
  double torch_target;        // xf t1 / torch t1 (0: info only)
  std::string note;
};

#if defined(XFUNC_BENCH_TORCH)
/// A libtorch call (for its row, or a pair's side), without autograd recording.
std::function<void()> torch_call(std::function<torch::Tensor()> f) {
  return [f] {
    torch::NoGradGuard no_grad;
    benchmark::DoNotOptimize(f().data_ptr());
  };
}

void run_torch(benchmark::State& st, int threads, const std::function<torch::Tensor()>& f) {
  set_baseline_threads(threads);
  const std::function<void()> call = torch_call(f);
  call();
  for (auto _ : st) call();
}
#endif

/// pair/<op> vs <baseline>: a (xfunc) and b (the baseline) timed in alternating blocks in one
/// benchmark (NOTE: [Paired timing]), and the table's target row for their ratio. Libtorch and
/// the hand loops run on one thread.
void add_pair(const std::string& op, const std::string& baseline, std::function<void()> a, std::function<void()> b,
              double target_ratio, const std::string& note) {
  const std::string name = "pair/" + op + " vs " + baseline;
  reg(name, [a, b](benchmark::State& st) {
    set_baseline_threads(1);
    xfunc_bench::run_paired(st, a, b);
  });
  rows_out.push_back({name, baseline, xfunc_bench::target::paired_max, target_ratio, note + " (paired)"});
}

std::map<std::string, xf_fn> xf_ops;  // add_op's xfunc calls by op name

void add_op(const op_spec& s) {
  using xfunc_bench::target;
  xf_ops[s.op] = s.xf;
  for (int t : {1, 2}) {
    const std::string ts = "/t" + std::to_string(t);
    reg("xf/" + s.op + ts, [f = s.xf, t](benchmark::State& st) { run_xf(st, t, f); });
#if defined(XFUNC_BENCH_TORCH)
    reg("torch/" + s.op + ts, [f = s.torch, t](benchmark::State& st) { run_torch(st, t, f); });
#endif
  }
  const std::string x1 = "xf/" + s.op + "/t1", x2 = "xf/" + s.op + "/t2";
  // a target is judged on the paired ratio (NOTE: [Paired timing]); the separate rows' ratio is
  // printed beside it
  if (!s.baseline.empty()) rows_out.push_back({x1, s.baseline, target::info, 0, s.note});
  if (s.baseline_target > 0)
    add_pair(s.op + "/t1", s.baseline, xf_call(s.xf, 1), loop_call(s.baseline), s.baseline_target, s.note);
#if defined(XFUNC_BENCH_TORCH)
  rows_out.push_back({x1, "torch/" + s.op + "/t1", target::info, 0, "1 thread vs libtorch"});
  if (s.torch_target > 0)
    add_pair(s.op + "/t1", "torch/t1", xf_call(s.xf, 1), torch_call(s.torch), s.torch_target, "1 thread vs libtorch");
  rows_out.push_back({x2, "torch/" + s.op + "/t2", target::info, 0, "2 threads vs libtorch"});
#endif
  rows_out.push_back({x2, x1, target::info, 0, "2 threads vs 1 (speed-up = 1/ratio)"});
}

#if defined(XFUNC_BENCH_TORCH)
struct torch_inputs {
  torch::Tensor x, sq, sq2, big, mat, mat2, batch, batch2, pe_a, pe_b, wg_dy, wg_x, lin_x, rows, cols, targets2k, targets4k, mask, zeros_sq;
  torch_inputs() {
    const data_set& d = data();
    auto f32 = [](const std::vector<float>& v, std::vector<std::int64_t> shape) {
      return torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat32).clone();
    };
    auto i64 = [](const std::vector<std::int64_t>& v, std::vector<std::int64_t> shape) {
      return torch::from_blob(const_cast<std::int64_t*>(v.data()), shape, torch::kInt64).clone();
    };
    x = f32(d.x, {N});
    sq = f32(d.sq, {S, S});
    sq2 = f32(d.sq2, {S, S});
    big = f32(d.big, {4096, 4096});
    mat = f32(d.mat, {1024, 1024});
    mat2 = f32(d.mat2, {1024, 1024});
    batch = f32(d.batch, {64, 128, 128});
    batch2 = f32(d.batch2, {64, 128, 128});
    pe_a = f32(d.pe_a, {256, 128, 1});
    pe_b = f32(d.pe_b, {256, 1, 784});
    wg_dy = f32(d.wg_dy, {8192, 128});
    wg_x = f32(d.wg_x, {8192, 784});
    lin_x = f32(d.lin_x, {32, 4096});
    rows = i64(d.rows, {S});
    cols = i64(d.cols, {S, S});
    targets2k = i64(d.targets2k, {S});
    targets4k = i64(d.targets4k, {4096});
    mask = torch::from_blob(const_cast<char*>(d.mask.data()), {N}, torch::kBool).clone();
    zeros_sq = torch::zeros({S, S});
  }
};
const torch_inputs& tin() {
  static const torch_inputs in;
  return in;
}
#define TORCH_OP(expr) , [] { const torch_inputs& t = tin(); return expr; }
#else
#define TORCH_OP(expr)
#endif

}  // namespace

int main(int argc, char** argv) {
  using xfunc_bench::target;
  using I = xf_inputs;
  // scatter_add is internal (the gradient of gather); called as its op
  auto scatter_add = [](const xf::tensor& base, std::int64_t dim, const xf::tensor& index, const xf::tensor& src) {
    return xf::detail::call<xf::detail::scatter_add_op>({dim}, base, index, src);
  };

  // baselines: copies of the same bytes, and hand loops (one thread)
  for (std::int64_t n : {N, S * S, 2 * S * S})  // (all read from x, which holds N >= 2 * S * S floats)
    reg_loop(n == N ? "copy/2^24 floats" : n == S * S ? "copy/2048^2 floats" : "copy/2x2048^2 floats", n,
             [n](float* o) { std::memcpy(o, data().x.data(), static_cast<std::size_t>(n) * sizeof(float)); });
  reg_loop("loop/affine", N, [](float* o) {
    const float* x = data().x.data();
    const float a = static_cast<float>(A), b = static_cast<float>(B);
    for (std::int64_t i = 0; i < N; ++i) o[i] = x[i] * a + b;
  });
  reg_loop("loop/exp", N, [](float* o) {
    const float* x = data().x.data();
    for (std::int64_t i = 0; i < N; ++i) o[i] = std::exp(x[i]);
  });
  reg_loop("loop/where", N, [](float* o) {
    const float* x = data().x.data();
    const char* m = data().mask.data();
    for (std::int64_t i = 0; i < N; ++i) o[i] = m[i] ? x[i] : 0.5f;
  });
  reg_loop("loop/clamp", N, [](float* o) {
    const float* x = data().x.data();
    for (std::int64_t i = 0; i < N; ++i) o[i] = std::min(std::max(x[i], -0.5f), 0.5f);
  });
  reg_loop("loop/t()+a", S * S, [](float* o) { loop_transpose_add(data().sq.data(), o); });
  reg_loop("loop/t().contiguous()", S * S, [](float* o) { loop_transpose(data().sq.data(), o, S, S); });
  reg_loop("loop/t().contiguous() tiled", S * S, [](float* o) { loop_transpose_tiled(data().sq.data(), o, S, S); });
  reg_loop("loop/permute({2,0,1})", S * S, [](float* o) {
    // [64, 256, 256] -> [256, 64, 256]: o[c][a][b] = x[a][b][c], i.e. a [64*256, 256] transpose
    loop_transpose(data().sq.data(), o, 64 * 256, 256);
  });
  reg_loop("loop/index_select", S * S, [](float* o) {
    const float* a = data().sq.data();
    const std::int64_t* r = data().rows.data();
    for (std::int64_t i = 0; i < S; ++i) std::memcpy(o + i * S, a + r[i] * S, S * sizeof(float));
  });
  reg_loop("loop/gather", S * S, [](float* o) {
    const float* a = data().sq.data();
    const std::int64_t* c = data().cols.data();
    for (std::int64_t i = 0; i < S; ++i)
      for (std::int64_t j = 0; j < S; ++j) o[i * S + j] = a[i * S + c[i * S + j]];
  });
  reg_loop("loop/scatter_add", S * S, [](float* o) {
    const float* a = data().sq.data();
    const std::int64_t* c = data().cols.data();
    std::memset(o, 0, S * S * sizeof(float));
    for (std::int64_t i = 0; i < S; ++i)
      for (std::int64_t j = 0; j < S; ++j) o[i * S + c[i * S + j]] += a[i * S + j];
  });
  reg_loop("blas/mm 1024", 1024 * 1024, [](float* o) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1024, 1024, 1024, 1.f, data().mat.data(), 1024,
                data().mat2.data(), 1024, 0.f, o, 1024);
  });
  reg_loop("blas/mm [32,4096] x [4096,4096]", 32 * 4096, [](float* o) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 32, 4096, 4096, 1.f, data().lin_x.data(), 4096,
                data().big.data(), 4096, 0.f, o, 4096);
  });
  reg_loop("blas/bmm 64x128^3 loop", 64 * 128 * 128, [](float* o) {
    for (std::int64_t p = 0; p < 64; ++p)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 128, 128, 128, 1.f, data().batch.data() + p * 128 * 128,
                  128, data().batch2.data() + p * 128 * 128, 128, 0.f, o + p * 128 * 128, 128);
  });
  // what xf::bmm called before NOTE: [Outer products]
  reg_loop("blas/bmm k=1 loop", 256 * 128 * 784, [](float* o) {
    for (std::int64_t p = 0; p < 256; ++p)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 128, 784, 1, 1.f, data().pe_a.data() + p * 128, 1,
                  data().pe_b.data() + p * 784, 784, 0.f, o + p * 128 * 784, 784);
  });
  reg_loop("loop/sum", 1, [](float* o) { o[0] = loop_sum(data().sq.data(), S * S); });
  reg_loop("loop/sum 4096^2", 1, [](float* o) { o[0] = loop_sum(data().big.data(), 4096 * 4096); });
  // the same hand-written code on two threads, each doing half
  constexpr std::int64_t big_half = 4096 * 4096 / 2;
  reg("loop/sum 4096^2/t2", [](benchmark::State& st) {
    run_loop2(st, 2, [](float* o, int h) { o[h] = loop_sum(data().big.data() + h * big_half, big_half); });
  });
  reg("loop/affine/t2", [](benchmark::State& st) {
    const float* x = data().x.data();
    run_loop2(st, N, [x](float* o, int h) {
      const float a = static_cast<float>(A), b = static_cast<float>(B);
      for (std::int64_t i = h * N / 2; i < (h + 1) * N / 2; ++i) o[i] = x[i] * a + b;
    });
  });
  reg("copy/2^24 floats/t2", [](benchmark::State& st) {
    const float* x = data().x.data();
    run_loop2(st, N, [x](float* o, int h) {
      std::memcpy(o + h * N / 2, x + h * N / 2, static_cast<std::size_t>(N / 2) * sizeof(float));
    });
  });

  const double none = 0;
  // pointwise, 2^24 elements
  add_op({"x*a+b", [](const I& in) { return in.x * A + B; } TORCH_OP(t.x * A + B), "copy/2^24 floats", 1.25, none,
          "vs memcpy of the same bytes (target <= 1.25x)"});
  rows_out.push_back({"xf/x*a+b/t1", "loop/affine", target::info, 0, "vs hand loop"});
  add_op({"exp", [](const I& in) { return xf::exp(in.x); } TORCH_OP(torch::exp(t.x)), "copy/2^24 floats", 1.25, none,
          "vs memcpy of the same bytes (target <= 1.25x)"});
  rows_out.push_back({"xf/exp/t1", "loop/exp", target::info, 0, "vs hand loop (std::exp)"});
  add_op({"where", [](const I& in) { return xf::where(in.mask, in.x, xf::full({}, 0.5)); }
          TORCH_OP(torch::where(t.mask, t.x, torch::scalar_tensor(0.5f))), "loop/where", 0, 1.0, "vs hand loop"});
  add_op({"clamp", [](const I& in) { return xf::clamp(in.x, -0.5, 0.5); } TORCH_OP(torch::clamp(t.x, -0.5, 0.5)),
          "loop/clamp", 0, 1.0, "vs hand loop"});
  // copies of transposed and permuted views, 2048 x 2048
  add_op({"t()+a", [](const I& in) { return in.sq.t() + in.sq; } TORCH_OP(t.sq.t() + t.sq), "loop/t()+a", 0, 1 / 3.0,
          "vs naive hand loop"});
  add_op({"t().contiguous()", [](const I& in) { return in.sq.t().contiguous(); } TORCH_OP(t.sq.t().contiguous()),
          "copy/2048^2 floats", 0, 1 / 3.0, "vs memcpy of the same bytes"});
  rows_out.push_back({"xf/t().contiguous()/t1", "loop/t().contiguous() tiled", target::info, 0, "vs tiled hand loop"});
  add_op({"permute({2,0,1}).contiguous() [64,256,256]",
          [](const I& in) { return in.sq.view({64, 256, 256}).permute({2, 0, 1}).contiguous(); }
          TORCH_OP(t.sq.view({64, 256, 256}).permute({2, 0, 1}).contiguous()),
          "copy/2048^2 floats", 0, 1 / 3.0, "vs memcpy of the same bytes"});
  // indexing, cat, stack
  add_op({"index_select(dim 0)", [](const I& in) { return xf::index_select(in.sq, 0, in.rows); }
          TORCH_OP(torch::index_select(t.sq, 0, t.rows)), "loop/index_select", 0, 1.0, "vs hand loop"});
  add_op({"gather(dim 1)", [](const I& in) { return xf::gather(in.sq, 1, in.cols); }
          TORCH_OP(torch::gather(t.sq, 1, t.cols)), "loop/gather", 0, 1.0, "vs hand loop"});
  add_op({"scatter_add(dim 1)", [scatter_add](const I& in) { return scatter_add(in.zeros_sq, 1, in.cols, in.sq); }
          TORCH_OP(t.zeros_sq.scatter_add(1, t.cols, t.sq)), "loop/scatter_add", 0, 1.0, "vs hand loop"});
  add_op({"cat(dim 0)", [](const I& in) { return xf::cat({in.sq, in.sq2}, 0); } TORCH_OP(torch::cat({t.sq, t.sq2}, 0)),
          "copy/2x2048^2 floats", 0, 1.0, "vs memcpy of the same bytes"});
  add_op({"cat(dim 1)", [](const I& in) { return xf::cat({in.sq, in.sq2}, 1); } TORCH_OP(torch::cat({t.sq, t.sq2}, 1)),
          "copy/2x2048^2 floats", 0, 1.0, "vs memcpy of the same bytes"});
  add_op({"stack(dim 1)", [](const I& in) { return xf::stack({in.sq, in.sq2}, 1); }
          TORCH_OP(torch::stack({t.sq, t.sq2}, 1)), "copy/2x2048^2 floats", 0, 1.0, "vs memcpy of the same bytes"});
  // matmul
  add_op({"mm 1024", [](const I& in) { return xf::mm(in.mat, in.mat2); } TORCH_OP(torch::mm(t.mat, t.mat2)),
          "blas/mm 1024", 1.05, 1.05, "vs cblas_sgemm"});
  add_op({"mm 1024 (a.t(), b)", [](const I& in) { return xf::mm(in.mat.t(), in.mat2); }
          TORCH_OP(torch::mm(t.mat.t(), t.mat2)), "blas/mm 1024", 1.05, 1.05, "vs cblas_sgemm (no transpose)"});
  add_op({"mm 1024 (a, b.t())", [](const I& in) { return xf::mm(in.mat, in.mat2.t()); }
          TORCH_OP(torch::mm(t.mat, t.mat2.t())), "blas/mm 1024", 1.05, 1.05, "vs cblas_sgemm (no transpose)"});
  add_op({"mm [8192,128]^T x [8192,784]", [](const I& in) { return xf::mm(in.wg_dy.t(), in.wg_x); }
          TORCH_OP(torch::mm(t.wg_dy.t(), t.wg_x)), "", 0, 1.05, "a weight gradient: small result, long sum"});
  add_op({"mm [32,4096] x [4096,4096]", [](const I& in) { return xf::mm(in.lin_x, in.big); }
          TORCH_OP(torch::mm(t.lin_x, t.big)), "blas/mm [32,4096] x [4096,4096]", 1.05, 1.05,
          "a layer at batch 32: bands of columns, vs one cblas_sgemm"});
  add_op({"bmm 64x128^3", [](const I& in) { return xf::bmm(in.batch, in.batch2); }
          TORCH_OP(torch::bmm(t.batch, t.batch2)), "blas/bmm 64x128^3 loop", 0, 1.1, "vs a loop of cblas_sgemm"});
  add_op({"vmap(matmul) 64x128^3",
          [](const I& in) {
            return xf::vmap([](const xf::tensor& a, const xf::tensor& b) { return xf::matmul(a, b); })(in.batch,
                                                                                                        in.batch2);
          } TORCH_OP(torch::bmm(t.batch, t.batch2)),
          "blas/bmm 64x128^3 loop", 0, 1.1, "vs a loop of cblas_sgemm; libtorch: torch::bmm"});
  add_op({"bmm [256,128,1]x[256,1,784]", [](const I& in) { return xf::bmm(in.pe_a, in.pe_b); }
          TORCH_OP(torch::bmm(t.pe_a, t.pe_b)), "blas/bmm k=1 loop", 0, none,
          "vs a loop of cblas_sgemm (k = 1: outer products, 100 MiB written)"});
  // reductions and the softmax family: the target is at most 1.0x libtorch on one thread
  constexpr double torch_parity = 1.0;
  add_op({"sum(a) 2048^2", [](const I& in) { return xf::sum(in.sq); } TORCH_OP(torch::sum(t.sq)), "loop/sum", 0,
          torch_parity, "vs hand loop"});
  add_op({"sum(a) 4096^2", [](const I& in) { return xf::sum(in.big); } TORCH_OP(torch::sum(t.big)), "loop/sum 4096^2",
          0, torch_parity, "vs hand loop"});
  add_op({"sum(a,{0}) [256,65536]", [](const I& in) { return xf::sum(in.big.view({256, 65536}), {0}); }
          TORCH_OP(torch::sum(t.big.view({256, 65536}), {0})), "loop/sum 4096^2", 0, torch_parity,
          "vs a hand loop reading the same bytes (few long columns: NOTE: [Row streaming])"});
  for (int n : {2048, 4096}) {
    const std::string sz = " " + std::to_string(n) + "^2";
    auto pick = [n](const I& in) -> const xf::tensor& { return n == 2048 ? in.sq : in.big; };
#if defined(XFUNC_BENCH_TORCH)
    auto tpick = [n]() -> const torch::Tensor& { return n == 2048 ? tin().sq : tin().big; };
#define TORCH_OPN(expr) , [tpick] { const torch::Tensor& a = tpick(); return expr; }
#else
#define TORCH_OPN(expr)
#endif
    add_op({"sum(a,{0})" + sz, [pick](const I& in) { return xf::sum(pick(in), {0}); } TORCH_OPN(torch::sum(a, {0})),
            "", 0, torch_parity, ""});
    add_op({"sum(a,{1})" + sz, [pick](const I& in) { return xf::sum(pick(in), {1}); } TORCH_OPN(torch::sum(a, {1})),
            "", 0, torch_parity, ""});
    add_op({"amax(a,{1})" + sz, [pick](const I& in) { return xf::amax(pick(in), {1}); }
            TORCH_OPN(torch::amax(a, {1})), "", 0, torch_parity, ""});
    add_op({"softmax(a,1)" + sz, [pick](const I& in) { return xf::softmax(pick(in), 1); }
            TORCH_OPN(torch::softmax(a, 1)), "", 0, torch_parity, ""});
    add_op({"log_softmax(a,1)" + sz, [pick](const I& in) { return xf::log_softmax(pick(in), 1); }
            TORCH_OPN(torch::log_softmax(a, 1)), "", 0, torch_parity, ""});
    add_op({"logsumexp(a,{1})" + sz, [pick](const I& in) { return xf::logsumexp(pick(in), {1}); }
            TORCH_OPN(torch::logsumexp(a, {1})), "", 0, torch_parity, ""});
#if defined(XFUNC_BENCH_TORCH)
    auto ttargets = [n]() -> const torch::Tensor& { return n == 2048 ? tin().targets2k : tin().targets4k; };
#endif
    add_op({"cross_entropy" + sz,
            [n, pick](const I& in) { return xf::cross_entropy(pick(in), n == 2048 ? in.targets2k : in.targets4k); }
#if defined(XFUNC_BENCH_TORCH)
            , [tpick, ttargets] { return torch::nn::functional::cross_entropy(tpick(), ttargets()); }
#endif
            , "", 0, torch_parity, ""});
#undef TORCH_OPN
  }
#if defined(XFUNC_BENCH_TORCH)
  // The row sums with libtorch reading xfunc's own input (torch::from_blob), as information: the
  // kernels alone. The target rows above give each library its own input, and on the VM of
  // 2026-12-05 a buffer in transparent huge pages (xfunc's, NOTE: [Buffer allocation]) read from
  // memory 6-14% slower than libtorch's in 4 KiB pages (docs/performance.md, seventh session).
  using torch_reduction = std::function<torch::Tensor(const torch::Tensor&)>;
  const torch_reduction full_sum = [](const torch::Tensor& a) { return a.sum(); },
                        row_sum = [](const torch::Tensor& a) { return a.sum(1); },
                        row_max = [](const torch::Tensor& a) { return a.amax(1); };
  for (std::int64_t n : {2048, 4096}) {
    const std::string sz = " " + std::to_string(n) + "^2";
    for (const auto& [op, f] : {std::pair{"sum(a)", full_sum}, std::pair{"sum(a,{1})", row_sum},
                                  std::pair{"amax(a,{1})", row_max}}) {
      add_pair(op + sz + "/t1", "torch on xfunc's input/t1", xf_call(xf_ops.at(op + sz), 1), torch_call([n, f = f] {
        const xf::tensor& x = n == 2048 ? xin().sq : xin().big;
        return f(torch::from_blob(const_cast<float*>(x.impl()->data<float>()), {n, n}));
      }), 0, "1 thread vs libtorch on the same bytes");
    }
  }
#endif
  // 2 threads against 1, paired: the target (at least 1.6x the throughput) for large
  // pointwise work and 4096^2 reductions
  for (const char* op :
       {"x*a+b", "exp", "sum(a) 4096^2", "sum(a,{1}) 4096^2", "sum(a,{0}) 4096^2", "amax(a,{1}) 4096^2"})
    add_pair(std::string(op) + "/t2", "xf/t1", xf_call(xf_ops.at(op), 2), xf_call(xf_ops.at(op), 1), 1 / 1.6,
             "2 threads >= 1.6x 1-thread throughput");
  // what a second core gives hand-written code on this machine (the ceiling of the rows above
  // when the work is memory-bound), and xfunc on 2 threads against that code
  rows_out.push_back({"loop/sum 4096^2/t2", "loop/sum 4096^2", target::info, 0, "hand loop: 2 threads vs 1"});
  rows_out.push_back({"loop/affine/t2", "loop/affine", target::info, 0, "hand loop: 2 threads vs 1"});
  rows_out.push_back({"copy/2^24 floats/t2", "copy/2^24 floats", target::info, 0, "memcpy: 2 threads vs 1"});
  rows_out.push_back({"xf/sum(a) 4096^2/t2", "loop/sum 4096^2/t2", target::info, 0, "vs hand loop on 2 threads"});
  rows_out.push_back({"xf/sum(a,{1}) 4096^2/t2", "loop/sum 4096^2/t2", target::info, 0, "vs hand loop on 2 threads"});
  rows_out.push_back({"xf/x*a+b/t2", "loop/affine/t2", target::info, 0, "vs hand loop on 2 threads"});
  rows_out.push_back({"xf/exp/t2", "copy/2^24 floats/t2", target::info, 0, "vs memcpy on 2 threads"});
#if !defined(XFUNC_BENCH_TORCH)
  std::printf("libtorch was not found by CMake: xfunc is compared with copies and hand loops only\n");
#endif
  return xfunc_bench::run_and_report(argc, argv, rows_out);
}
