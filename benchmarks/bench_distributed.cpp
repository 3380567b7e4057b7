// xf::dist as an MPI job: `mpirun -np 2 bench_distributed` (target run_bench_distributed starts it
// with XFUNC_MPIRUN and XFUNC_MPI_ENV). Three targets, each against a baseline measured in the
// same run:
//   1. all_reduce (sum) of a 64 MiB float32 tensor vs a bare MPI_Allreduce(MPI_IN_PLACE) on a
//      std::vector<float> of the same size: bandwidth (bytes / time) of both, with the cross-rank
//      checks on (the default) and off (xf::dist::set_checks(false)). Target: >= 0.8x. Info rows:
//      the copy all_reduce makes, average_gradients of the same tensor, and a bare MPI_Iallreduce
//      (the call average_gradients uses) against the same baseline.
//   2. A data-parallel training step of an MLP 784-128-10 (relu, cross_entropy, float32), global
//      batch 256: per-example gradients by vmap(grad(loss), in_dims(none, 0, 0)) on this rank's
//      shard, their mean over the local batch, average_gradients, an SGD update. N ranks (256 / N
//      examples each, the world communicator) vs rank 0 alone with all 256 examples (a
//      communicator of size 1 from world().split(rank, 0)) while the other ranks wait. One xfunc
//      (and BLAS) thread per rank: this is weak scaling over cores. Throughput (examples/s) of
//      both; target: >= 0.8 N x (1.6x on 2 ranks). Info rows, to explain it: rank 0 alone with N
//      threads; the same step without per-example gradients (grad of the mean loss, which does not
//      write and read back 100 MiB of per-example gradients); and the copy bandwidth of N ranks
//      copying 100 MiB at once against rank 0 alone (the machine's shared memory bandwidth).
//      The same step with the per-example gradients computed 16 examples at a time and summed at
//      once (Opacus' physical batches), N ranks against 1, is a second row with the same target.
//   3. average_gradients of 100 leaves of shape [64] float32 vs 100 all_reduce(leaf, mean) calls:
//      time of each and the messages each starts (xf::dist::detail::config().messages). Targets:
//      average_gradients >= 5x faster, and at most 3 messages.
// Timing (MPI benchmarks run in lockstep): each repetition is MPI_Barrier, steady_clock, the work
// (`inner` calls), steady_clock; its time per call is the maximum over the ranks. Tables show the
// median over the repetitions, after warm-up calls; the variants of a target are interleaved
// repetition by repetition, so that the drift of a shared machine hits them alike. A rank with
// nothing to do waits in a barrier that sleeps (outside the timed region). Only rank 0 prints.
// Targets are reported, never asserted.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <xtensor/xarray.hpp>

#include <xfunc/distributed.hpp>

namespace xf = xfunc;
namespace dist = xfunc::dist;

namespace {

using clk = std::chrono::steady_clock;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

/// A world barrier in which the rank sleeps between polls (an idle rank leaves its core to the
/// working ones). Every rank calls it at the same points; never inside a timed region.
void sleepy_barrier() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  int done = 0;
  for (;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

/// Reads a tensor's data (settles a deferred result, NOTE: [Deferred elementwise]).
void settle(const xf::tensor& t) {
  const void* volatile p = t.impl()->template data<float>();
  (void)p;
}

// ---- measurement ----------------------------------------------------------------------------

struct variant {
  std::string name;
  int inner = 1;                   // calls per repetition (times are per call)
  bool active = true;              // whether this rank works (else it only waits for the others)
  std::function<void()> fn;        // one call
  std::function<void()> setup;     // before each repetition, outside the timed region (optional)
  std::function<void()> teardown;  // after each repetition, outside the timed region (optional)
  std::vector<double> s;           // seconds per call, max over ranks, one per repetition
};

struct stats {
  double median = 0, lo = 0, hi = 0;
};
stats summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  stats st;
  if (v.empty()) return st;
  const std::size_t n = v.size();
  st.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  st.lo = v.front();
  st.hi = v.back();
  return st;
}

/// Runs every variant `warmup` times, then `reps` repetitions of each, interleaved.
void measure(std::vector<variant*> vs, int warmup, int reps) {
  auto once = [](variant& v, int calls) -> double {
    if (v.active && v.setup) v.setup();
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = clk::now();
    if (v.active)
      for (int i = 0; i < calls; ++i) v.fn();
    const auto t1 = clk::now();
    sleepy_barrier();
    if (v.active && v.teardown) v.teardown();
    return std::chrono::duration<double>(t1 - t0).count() / calls;
  };
  for (variant* v : vs)
    for (int i = 0; i < warmup; ++i) once(*v, 1);
  const auto n = static_cast<std::size_t>(reps);
  std::vector<double> mine(vs.size() * n), worst(mine.size());  // [variant][repetition]
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t k = 0; k < vs.size(); ++k) mine[k * n + r] = once(*vs[k], vs[k]->inner);
  // a repetition lasts as long as its slowest rank
  MPI_Allreduce(mine.data(), worst.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (std::size_t k = 0; k < vs.size(); ++k)
    vs[k]->s.assign(worst.begin() + static_cast<std::ptrdiff_t>(k * n), worst.begin() + static_cast<std::ptrdiff_t>((k + 1) * n));
}

// ---- the table ------------------------------------------------------------------------------

std::string fmt(const char* f, double v) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string fmt_time(double s) {
  if (s < 1e-3) return fmt("%.2f us", s * 1e6);
  if (s < 1.0) return fmt("%.2f ms", s * 1e3);
  return fmt("%.3f s", s);
}
/// "median [min-max]" of a variant's repetitions.
std::string fmt_spread(const variant& v) {
  const stats st = summarize(v.s);
  return fmt_time(st.median) + " [" + fmt_time(st.lo) + " - " + fmt_time(st.hi) + "]";
}

struct row {
  std::string name, time, baseline, base_time, ratio, target, met, note;
};
std::vector<row> table;

/// A row whose ratio is how many times faster (or higher in throughput) `a` is than `b`:
/// time(b) / time(a) * scale (scale: work of a per call over work of b per call).
void add_speedup(const std::string& name, const variant& a, const std::string& baseline, const variant& b, double target,
                 const std::string& note, double scale = 1.0, bool info = false) {
  const double ta = summarize(a.s).median, tb = summarize(b.s).median;
  const double r = tb / ta * scale;
  table.push_back({name, fmt_time(ta), baseline, fmt_time(tb), fmt("%.2fx", r), info ? "(info)" : fmt(">= %.2fx", target),
                   info ? "" : (r >= target ? "yes" : "NO"), note});
}

void print_table(const char* title) {
  if (world_rank() != 0) return;
  std::printf("\n%s\n", title);
  std::printf("%-44s %10s  %-34s %10s %8s  %-9s %-4s %s\n", "benchmark", "time", "baseline", "time", "ratio", "target",
              "met?", "");
  for (const row& r : table)
    std::printf("%-44s %10s  %-34s %10s %8s  %-9s %-4s %s\n", r.name.c_str(), r.time.c_str(), r.baseline.c_str(),
                r.base_time.c_str(), r.ratio.c_str(), r.target.c_str(), r.met.c_str(), r.note.c_str());
  std::fflush(stdout);
  table.clear();
}
void say(const std::string& s) {
  if (world_rank() == 0) {
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
  }
}

// ---- 1. all_reduce of 64 MiB ----------------------------------------------------------------

void bench_all_reduce() {
  constexpr std::int64_t n = std::int64_t{16} << 20;  // float32 elements: 64 MiB
  const double bytes = static_cast<double>(n) * sizeof(float);
  const int rank = world_rank(), size = world_size();
  const xf::tensor t = xf::full({n}, 1.0 + rank, xf::f32);
  std::vector<float> bare(static_cast<std::size_t>(n), 0.0f);  // zeros: stays finite under repeated in-place sums

  {  // the values, once
    const xf::tensor r = dist::all_reduce(t);
    const double want = size * (size + 1) / 2.0;
    const bool ok = r.select(0, 0).item<float>() == want && r.select(0, n - 1).item<float>() == want;
    say(std::string("all_reduce 64 MiB: values ") + (ok ? "correct" : "WRONG"));
  }

  variant v_bare{"bare", 1, true, [&] {
                   MPI_Allreduce(MPI_IN_PLACE, bare.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                 }, {}, {}, {}};
  variant v_on{"xf on", 1, true, [&] { settle(dist::all_reduce(t)); }, {}, {}, {}};
  variant v_off{"xf off", 1, true, [&] {
                  dist::set_checks(false);
                  settle(dist::all_reduce(t));
                  dist::set_checks(true);
                }, {}, {}, {}};
  // the copy all_reduce makes of its input (a new tensor is its result), on every rank at once
  variant v_clone{"clone", 1, true, [&] { settle(t.clone()); }, {}, {}, {}};
  // average_gradients of the same tensor (one leaf: one 64 MiB bucket, reduced with MPI_Iallreduce), and
  // that MPI call bare
  const std::vector<xf::tensor> one_leaf{t};
  variant v_avg{"average_gradients", 1, true, [&] { settle(dist::average_gradients(one_leaf)[0]); }, {}, {}, {}};
  variant v_ibare{"bare Iallreduce", 1, true, [&] {
                    MPI_Request req;
                    MPI_Iallreduce(MPI_IN_PLACE, bare.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
                    MPI_Wait(&req, MPI_STATUS_IGNORE);
                  }, {}, {}, {}};
  measure({&v_bare, &v_on, &v_off, &v_clone, &v_avg, &v_ibare}, 3, 15);

  auto gbs = [&](const variant& v) { return bytes / summarize(v.s).median / 1e9; };
  const std::string base = "MPI_Allreduce in place (vector)";
  add_speedup("all_reduce 64 MiB f32 (checks on)", v_on, base, v_bare, 0.8,
              fmt("xf %.2f GB/s", gbs(v_on)) + fmt(", bare %.2f GB/s", gbs(v_bare)));
  add_speedup("all_reduce 64 MiB f32 (checks off)", v_off, base, v_bare, 0.8,
              fmt("xf %.2f GB/s", gbs(v_off)) + fmt(", bare %.2f GB/s", gbs(v_bare)));
  add_speedup("  clone 64 MiB f32 (all_reduce's copy)", v_clone, base, v_bare, 0, fmt("%.2f GB/s", gbs(v_clone)), 1.0,
              true);
  add_speedup("  average_gradients of it (1 leaf, 1 bucket)", v_avg, base, v_bare, 0, fmt("%.2f GB/s", gbs(v_avg)), 1.0,
              true);
  add_speedup("  bare MPI_Iallreduce + MPI_Wait", v_ibare, base, v_bare, 0, fmt("%.2f GB/s", gbs(v_ibare)), 1.0, true);
  print_table("1. all_reduce (sum) of 64 MiB float32 (ratio: xf bandwidth / bare bandwidth; [min - max] of 15 reps)");
  say("   xf checks on  " + fmt_spread(v_on) + "\n   xf checks off " + fmt_spread(v_off) + "\n   bare          " +
      fmt_spread(v_bare) + "\n   clone         " + fmt_spread(v_clone) + "\n   avg_gradients " + fmt_spread(v_avg) +
      "\n   bare Iallred. " + fmt_spread(v_ibare));
}

// ---- 2. data-parallel per-example-gradient step -----------------------------------------------

constexpr std::int64_t B = 256, D = 784, H = 128, C = 10;
constexpr double lr = 0.01;
using params_t = std::tuple<xf::tensor, xf::tensor, xf::tensor, xf::tensor>;  // w1, b1, w2, b2

xf::tensor loss(const params_t& p, const xf::tensor& x, const xf::tensor& y) {
  const auto& [w1, b1, w2, b2] = p;
  const xf::tensor h = xf::relu(xf::linear(x, w1, b1));
  return xf::cross_entropy(xf::linear(h, w2, b2), y);
}

const auto per_example = xf::vmap(xf::grad(loss), xf::in_dims(xf::none, 0, 0));

/// The gradient of the loss averaged over the global batch: per-example gradients of this rank's
/// examples, their mean, averaged across the ranks of comm.
params_t dp_grads(const params_t& p, const xf::tensor& x, const xf::tensor& y, const dist::communicator& comm) {
  const auto g = per_example(p, x, y);  // [local batch, ...] per leaf
  const std::vector<std::int64_t> batch{0};
  const params_t local{xf::mean(std::get<0>(g), batch), xf::mean(std::get<1>(g), batch), xf::mean(std::get<2>(g), batch),
                       xf::mean(std::get<3>(g), batch)};
  return dist::average_gradients(local, comm);
}
/// The same, with the per-example gradients computed `chunk` examples at a time and summed at
/// once (as Opacus' physical batches): each chunk's 6.4 MB of per-example gradients is summed
/// while it is still in cache, instead of 50-100 MB written to memory and read back.
constexpr std::int64_t chunk = 16;
params_t dp_grads_chunked(const params_t& p, const xf::tensor& x, const xf::tensor& y, const dist::communicator& comm) {
  const std::vector<std::int64_t> batch{0};
  const std::int64_t n = x.size(0);
  params_t sum;
  for (std::int64_t c = 0; c < n; c += chunk) {
    const std::int64_t len = std::min(chunk, n - c);
    const auto g = per_example(p, x.narrow(0, c, len), y.narrow(0, c, len));
    params_t part{xf::sum(std::get<0>(g), batch), xf::sum(std::get<1>(g), batch), xf::sum(std::get<2>(g), batch),
                  xf::sum(std::get<3>(g), batch)};
    if (c == 0) sum = std::move(part);
    else sum = {std::get<0>(sum) + std::get<0>(part), std::get<1>(sum) + std::get<1>(part),
                std::get<2>(sum) + std::get<2>(part), std::get<3>(sum) + std::get<3>(part)};
  }
  const double inv = 1.0 / static_cast<double>(n);
  return dist::average_gradients(
      params_t{std::get<0>(sum) * inv, std::get<1>(sum) * inv, std::get<2>(sum) * inv, std::get<3>(sum) * inv}, comm);
}
/// The same gradient without per-example gradients: grad of the loss's mean over the local batch.
params_t dp_grads_of_mean(const params_t& p, const xf::tensor& x, const xf::tensor& y, const dist::communicator& comm) {
  static const auto g = xf::grad(loss);
  return dist::average_gradients(g(p, x, y), comm);
}
template <class Grads>
params_t train_step(const params_t& p, const xf::tensor& x, const xf::tensor& y, const dist::communicator& comm,
                    Grads&& grads) {
  const params_t g = grads(p, x, y, comm);
  params_t out{std::get<0>(p) - lr * std::get<0>(g), std::get<1>(p) - lr * std::get<1>(g),
               std::get<2>(p) - lr * std::get<2>(g), std::get<3>(p) - lr * std::get<3>(g)};
  std::apply([](const auto&... t) { (settle(t), ...); }, out);
  return out;
}

double max_abs_diff(const params_t& a, const params_t& b) {
  double m = 0;
  auto one = [&](const xf::tensor& x, const xf::tensor& y) {
    m = std::max(m, static_cast<double>(xf::amax(xf::abs(x - y), {}, false).item<float>()));
  };
  one(std::get<0>(a), std::get<0>(b));
  one(std::get<1>(a), std::get<1>(b));
  one(std::get<2>(a), std::get<2>(b));
  one(std::get<3>(a), std::get<3>(b));
  return m;
}

void bench_data_parallel() {
  const int rank = world_rank(), size = world_size();
  // the same parameters and the same global batch on every rank
  xf::manual_seed(42);
  const params_t p0{xf::randn({H, D}) * 0.05, xf::randn({H}) * 0.1, xf::randn({C, H}) * 0.1, xf::randn({C}) * 0.1};
  const xf::tensor x = xf::randn({B, D});
  xt::xarray<std::int64_t> labels = xt::zeros<std::int64_t>({std::size_t(B)});
  for (std::int64_t i = 0; i < B; ++i) labels(std::size_t(i)) = (i * 7 + 3) % C;
  const xf::tensor y = xf::from_xtensor(labels);
  const xf::tensor xs = dist::shard(x), ys = dist::shard(y);
  const dist::communicator world = dist::world();
  const dist::communicator solo = world.split(rank, 0);  // this rank alone

  {  // the N-rank gradient equals rank 0's gradient over the whole batch, chunked or not
    const params_t g_n = dp_grads(p0, xs, ys, world), g_nc = dp_grads_chunked(p0, xs, ys, world);
    if (rank == 0) {
      const params_t g_1 = dp_grads(p0, x, y, solo);
      say(fmt("data-parallel step: max |grad on %.0f ranks - grad on 1 rank| = ", size) +
          fmt("%.3g", max_abs_diff(g_n, g_1)) + fmt(" (local batch %.0f", static_cast<double>(xs.size(0))) +
          fmt(" vs %.0f)", static_cast<double>(B)) + fmt("; chunks of %.0f: ", static_cast<double>(chunk)) +
          fmt("%.3g", max_abs_diff(g_nc, g_1)));
    }
    sleepy_barrier();
  }

  params_t p_n = p0, p_1 = p0, p_1t = p0, q_n = p0, q_1 = p0, k_n = p0, k_1 = p0;
  variant v_n{"N ranks", 3, true, [&] { p_n = train_step(p_n, xs, ys, world, dp_grads); }, {}, {}, {}};
  variant v_1{"1 rank", 3, rank == 0, [&] { p_1 = train_step(p_1, x, y, solo, dp_grads); }, {}, {}, {}};
  variant v_1t{"1 rank, N threads", 3, rank == 0, [&] { p_1t = train_step(p_1t, x, y, solo, dp_grads); },
               [&] { xf::set_num_threads(size); }, [&] { xf::set_num_threads(1); }, {}};
  // explanations: the same step without per-example gradients, and the memory bandwidth
  variant w_n{"N ranks, grad of mean", 10, true, [&] { q_n = train_step(q_n, xs, ys, world, dp_grads_of_mean); }, {}, {},
              {}};
  variant w_1{"1 rank, grad of mean", 10, rank == 0, [&] { q_1 = train_step(q_1, x, y, solo, dp_grads_of_mean); }, {},
              {}, {}};
  variant k_vn{"N ranks, chunked", 3, true, [&] { k_n = train_step(k_n, xs, ys, world, dp_grads_chunked); }, {}, {}, {}};
  variant k_v1{"1 rank, chunked", 3, rank == 0, [&] { k_1 = train_step(k_1, x, y, solo, dp_grads_chunked); }, {}, {},
               {}};
  const xf::tensor big = xf::ones({std::int64_t{25} << 20});  // 100 MiB, the size of the w1 per-example gradients
  variant c_n{"clone, every rank", 1, true, [&] { settle(big.clone()); }, {}, {}, {}};
  variant c_1{"clone, rank 0", 1, rank == 0, [&] { settle(big.clone()); }, {}, {}, {}};
  measure({&v_n, &v_1, &v_1t, &k_vn, &k_v1, &w_n, &w_1, &c_n, &c_1}, 2, 11);

  auto eps = [&](const variant& v) { return static_cast<double>(B) / summarize(v.s).median; };
  const std::string n_name = std::to_string(size);
  const std::string local = std::to_string(xs.size(0));
  add_speedup("dp step, " + n_name + " ranks x " + local + " examples", v_n, "1 rank x 256 examples", v_1, 0.8 * size,
              fmt("%.0f ex/s", eps(v_n)) + fmt(" vs %.0f ex/s", eps(v_1)) +
                  fmt(" (efficiency %.0f%%)", 100.0 * eps(v_n) / eps(v_1) / size));
  add_speedup("dp step in chunks of " + std::to_string(chunk) + ", " + n_name + " ranks", k_vn, "the same, 1 rank",
              k_v1, 0.8 * size,
              fmt("%.0f ex/s", eps(k_vn)) + fmt(" vs %.0f ex/s", eps(k_v1)) +
                  fmt(" (efficiency %.0f%%", 100.0 * eps(k_vn) / eps(k_v1) / size) +
                  fmt("; 1 rank %.2fx the unchunked step's time)", summarize(k_v1.s).median / summarize(v_1.s).median));
  add_speedup("  1 rank x 256, " + n_name + " threads", v_1t, "1 rank x 256 examples", v_1, 0,
              fmt("%.0f ex/s", eps(v_1t)), 1.0, true);
  add_speedup("  dp step, no per-example grads, " + n_name + " ranks", w_n, "the same, 1 rank x 256", w_1, 0,
              fmt("grad(mean loss): %.0f ex/s", eps(w_n)) + fmt(" vs %.0f ex/s", eps(w_1)), 1.0, true);
  add_speedup("  copy 100 MiB on " + n_name + " ranks at once", c_n, "on rank 0 alone", c_1, 0,
              fmt("aggregate copy bandwidth (read + write) vs 1 rank: per rank %.1f GB/s", 2 * 104.8576 / 1e3 / summarize(c_n.s).median) +
                  fmt(", alone %.1f GB/s", 2 * 104.8576 / 1e3 / summarize(c_1.s).median),
              static_cast<double>(size), true);
  print_table(("2. data-parallel step, MLP 784-128-10, global batch 256 (ratio: throughput / baseline's; 1 thread per "
               "rank; [min - max] of 11 reps)"));
  say("   " + n_name + " ranks          " + fmt_spread(v_n) + "\n   1 rank           " + fmt_spread(v_1) +
      "\n   1 rank, " + n_name + " thr.   " + fmt_spread(v_1t) + "\n   chunked, " + n_name + " ranks " +
      fmt_spread(k_vn) + "\n   chunked, 1 rank  " + fmt_spread(k_v1) + "\n   grad of mean, " + n_name + " ranks " +
      fmt_spread(w_n) + "\n   grad of mean, 1 rank  " + fmt_spread(w_1) + "\n   copy, " + n_name + " ranks  " +
      fmt_spread(c_n) + "\n   copy, 1 rank   " + fmt_spread(c_1));
}

// ---- 3. average_gradients over 100 small leaves -----------------------------------------------

void bench_small_leaves() {
  const int rank = world_rank(), size = world_size();
  constexpr int leaves_n = 100;
  std::vector<xf::tensor> leaves;
  for (int k = 0; k < leaves_n; ++k) leaves.push_back(xf::full({64}, rank + 0.01 * k, xf::f32));

  auto avg_grads = [&] {
    const std::vector<xf::tensor> r = dist::average_gradients(leaves);
    settle(r.back());
  };
  auto loop = [&] {
    for (const xf::tensor& l : leaves) settle(dist::all_reduce(l, dist::reduce_op::mean));
  };
  auto count = [](auto&& f) {
    auto& m = dist::detail::config().messages;
    const std::uint64_t before = m.load();
    f();
    return static_cast<double>(m.load() - before);
  };
  {  // the values, once
    const std::vector<xf::tensor> r = dist::average_gradients(leaves);
    const double want = (size - 1) / 2.0 + 0.01 * 37;
    const bool ok = std::abs(r[37].select(0, 5).item<float>() - want) < 1e-5 &&
                    xf::allclose(r[37], dist::all_reduce(leaves[37], dist::reduce_op::mean));
    say(std::string("average_gradients of 100 leaves: values ") + (ok ? "correct" : "WRONG"));
  }
  const double m_avg = count(avg_grads), m_loop = count(loop);
  dist::set_checks(false);
  const double m_avg_off = count(avg_grads), m_loop_off = count(loop);
  dist::set_checks(true);

  auto no_checks = [](std::function<void()> f) {
    return [f] {
      dist::set_checks(false);
      f();
      dist::set_checks(true);
    };
  };
  variant v_avg{"avg", 200, true, avg_grads, {}, {}, {}};
  variant v_loop{"loop", 30, true, loop, {}, {}, {}};
  variant v_avg_off{"avg off", 200, true, no_checks(avg_grads), {}, {}, {}};
  variant v_loop_off{"loop off", 30, true, no_checks(loop), {}, {}, {}};
  measure({&v_avg, &v_loop, &v_avg_off, &v_loop_off}, 20, 11);

  const std::string base = "100 x all_reduce(leaf, mean)";
  add_speedup("average_gradients 100 x [64] f32 (checks on)", v_avg, base, v_loop, 5.0, "");
  add_speedup("average_gradients 100 x [64] f32 (checks off)", v_avg_off, base + ", off", v_loop_off, 5.0, "");
  table.push_back({"messages: average_gradients (checks on)", fmt("%.0f", m_avg), base, fmt("%.0f", m_loop),
                   fmt("%.0fx", m_loop / m_avg), "<= 3", m_avg <= 3 ? "yes" : "NO", "(counts, not times)"});
  table.push_back({"messages: average_gradients (checks off)", fmt("%.0f", m_avg_off), base + ", off",
                   fmt("%.0f", m_loop_off), fmt("%.0fx", m_loop_off / m_avg_off), "<= 3", m_avg_off <= 3 ? "yes" : "NO",
                   "(counts, not times)"});
  print_table("3. averaging 100 leaves of [64] float32 (ratio: how many times faster; [min - max] of 11 reps)");
  say("   average_gradients on  " + fmt_spread(v_avg) + "\n   100 all_reduce on     " + fmt_spread(v_loop) +
      "\n   average_gradients off " + fmt_spread(v_avg_off) + "\n   100 all_reduce off    " + fmt_spread(v_loop_off));
}

void run() {
  const int size = world_size();
  if (size < 2) {
    say("bench_distributed: run it as an MPI job of 2 ranks (mpirun -np 2, or the target run_bench_distributed); "
        "it has nothing to compare on 1 rank");
    return;
  }
  // one xfunc thread (and so one BLAS thread) per rank: N ranks use N cores
  xf::set_num_threads(1);
  if (world_rank() == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<std::size_t>(len));
    v = v.substr(0, v.find_first_of(",\n"));
    const char* cma = std::getenv("OMPI_MCA_btl_vader_single_copy_mechanism");
    std::printf("bench_distributed: %d ranks, %s, btl_vader_single_copy_mechanism=%s, %u hardware threads, "
                "1 xfunc thread per rank\n",
                size, v.c_str(), cma ? cma : "(default)", std::thread::hardware_concurrency());
    std::fflush(stdout);
  }
  bench_all_reduce();
  bench_data_parallel();
  bench_small_leaves();
}

}  // namespace

int main(int argc, char** argv) {
  dist::environment env(argc, argv);
  run();
  return 0;
}
