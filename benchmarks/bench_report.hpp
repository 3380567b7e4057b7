#pragma once
// A Google Benchmark main that also collects each benchmark's time (the median of the
// repetitions: five by default, interleaved, see default_flags) and prints a table of ratios
// against baselines measured in the same process, or between the two sides of a paired
// benchmark (run_paired): "name  time  baseline  ratio  target  met?".
// Targets are reported, never asserted.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace xfunc_bench {

struct measured {
  double ns = 0;             // real time per iteration (per op with ops_per_iter), in ns
  double items_per_s = 0;    // items_per_second counter, when the benchmark sets it
  double paired_ratio = 0;   // run_paired's a / b time ratio, when the benchmark is a pair
  bool from_median = false;
};

class collecting_reporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, measured> results;

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      if (r.error_occurred) continue;
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (r.run_type == Run::RT_Aggregate && !median) continue;
      measured& m = results[r.run_name.function_name];
      if (m.from_median && !median) continue;
      // Manual-time benchmarks time their own region (real time), and those that use threads ask
      // for real time (UseRealTime); the others are single-threaded and report CPU time, which
      // the other jobs sharing this machine's cores disturb less.
      const bool real = r.run_name.time_type == "manual_time" || r.run_name.time_type == "real_time";
      m.ns = (real ? r.GetAdjustedRealTime() : r.GetAdjustedCPUTime()) * to_ns(r.time_unit);
      // benchmarks that time several operations per iteration say how many
      auto per = r.counters.find("ops_per_iter");
      if (per != r.counters.end() && double(per->second) > 0) m.ns /= double(per->second);
      auto it = r.counters.find("items_per_second");
      m.items_per_s = it != r.counters.end() ? double(it->second) : 0.0;
      auto pr = r.counters.find("paired_ratio");
      m.paired_ratio = pr != r.counters.end() ? double(pr->second) : 0.0;
      // a pair's time is its first callable's, per call
      auto pa = r.counters.find("a_ns");
      if (pa != r.counters.end()) m.ns = double(pa->second);
      m.from_median = median;
    }
  }

 private:
  static double to_ns(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kNanosecond: return 1.0;
      case benchmark::kMicrosecond: return 1e3;
      case benchmark::kMillisecond: return 1e6;
      case benchmark::kSecond: return 1e9;
    }
    return 1.0;
  }
};

/// One row of the summary table.
struct target {
  enum kind_t {
    ratio_max,     // time(name) / time(baseline) <= value
    delta_max_ns,  // time(name) - time(baseline) <= value (ns)
    items_min,     // items_per_second(name) >= value (no baseline)
    paired_max,    // the paired_ratio of pair benchmark `name` (run_paired) <= value (0: no
                   // target); `baseline` names what the pair's second callable ran (printed only)
    info           // ratio printed, no target
  };
  std::string name, baseline;
  kind_t kind;
  double value;
  std::string note;
};

inline std::string fmt_time(double ns) {
  char buf[32];
  if (ns < 1e3) std::snprintf(buf, sizeof buf, "%.1f ns", ns);
  else if (ns < 1e6) std::snprintf(buf, sizeof buf, "%.2f us", ns / 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  return buf;
}

inline void print_table(const std::map<std::string, measured>& res, const std::vector<target>& rows) {
  std::printf("\n%-44s %11s  %-34s %9s  %-22s %s\n", "benchmark", "time", "baseline", "ratio", "target", "met?");
  for (const auto& t : rows) {
    auto a = res.find(t.name);
    if (a == res.end()) continue;
    const double ta = a->second.ns;
    double tb = 0;
    if (!t.baseline.empty() && t.kind != target::paired_max) {
      auto b = res.find(t.baseline);
      if (b == res.end()) continue;
      tb = b->second.ns;
    }
    char ratio[32] = "", tgt[48] = "";
    bool met = true;
    switch (t.kind) {
      case target::ratio_max:
        std::snprintf(ratio, sizeof ratio, "%.2fx", ta / tb);
        std::snprintf(tgt, sizeof tgt, "<= %.2fx", t.value);
        met = ta / tb <= t.value;
        break;
      case target::delta_max_ns:
        std::snprintf(ratio, sizeof ratio, "%+.1f ns", ta - tb);
        std::snprintf(tgt, sizeof tgt, "<= +%.0f ns", t.value);
        met = ta - tb <= t.value;
        break;
      case target::items_min:
        std::snprintf(ratio, sizeof ratio, "%.2f G/s", a->second.items_per_s / 1e9);
        std::snprintf(tgt, sizeof tgt, ">= %.2f G/s", t.value / 1e9);
        met = a->second.items_per_s >= t.value;
        break;
      case target::paired_max:  // (value 0: the pair's ratio as information)
        std::snprintf(ratio, sizeof ratio, "%.2fx", a->second.paired_ratio);
        if (t.value > 0) std::snprintf(tgt, sizeof tgt, "<= %.2fx", t.value);
        else std::snprintf(tgt, sizeof tgt, "(info)");
        met = a->second.paired_ratio > 0 && a->second.paired_ratio <= t.value;
        break;
      case target::info:
        if (tb > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", ta / tb);
        std::snprintf(tgt, sizeof tgt, "(info)");
        break;
    }
    std::printf("%-44s %11s  %-34s %9s  %-22s %s%s%s\n", t.name.c_str(), fmt_time(ta).c_str(),
                t.baseline.empty() ? "-" : t.baseline.c_str(), ratio, tgt,
                t.kind == target::info || t.value <= 0 ? "" : (met ? "yes" : "NO"), t.note.empty() ? "" : "  ",
                t.note.c_str());
  }
  std::fflush(stdout);
}

// NOTE: [Paired timing]
// A ratio between two benchmarks measured one after the other moves with this VM's speed, which
// changes in phases of seconds to minutes (2x at times): rows that read at the memory's speed
// on both sides (the row sums against libtorch) landed at 0.75-1.28x in runs minutes apart.
// run_paired times the two sides in alternating blocks inside one benchmark, so that a phase
// falls on both alike: each block makes one untimed call first (the other side's block has
// just pushed this side's data out of the caches; the separate rows, which repeat one call,
// measure warm caches too), then k timed calls, k chosen for blocks of about 2 ms.
// It reports the ratio of the two totals (counter paired_ratio; the table takes the median
// over the repetitions) and each side's time per call (a_ns, b_ns).

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Times a and b in alternating blocks (NOTE: [Paired timing]).
inline void run_paired(benchmark::State& st, const std::function<void()>& a, const std::function<void()>& b) {
  a();
  b();
  const auto t0 = std::chrono::steady_clock::now();
  a();
  const int k = static_cast<int>(std::clamp(2e-3 / std::max(seconds_since(t0), 1e-9), 1.0, 64.0));
  double ta = 0, tb = 0;
  std::int64_t calls = 0;
  for (auto _ : st) {
    for (const auto* side : {&a, &b}) {
      (*side)();
      const auto s = std::chrono::steady_clock::now();
      for (int i = 0; i < k; ++i) (*side)();
      (side == &a ? ta : tb) += seconds_since(s);
    }
    calls += k;
  }
  if (calls == 0 || tb <= 0) return;
  st.counters["paired_ratio"] = ta / tb;
  st.counters["a_ns"] = ta * 1e9 / static_cast<double>(calls);
  st.counters["b_ns"] = tb * 1e9 / static_cast<double>(calls);
}

/// The flags every run starts with (the command line's own come after them, so they override):
/// five repetitions of 0.1 s in random order across all benchmarks, medians reported. The
/// development VMs change speed in phases longer than one benchmark; interleaving lets a slow
/// phase fall on a row and its baseline alike, where one run per benchmark (Google Benchmark's
/// default) gave ratios off by up to 1.5x (docs/performance.md, "Running the benchmarks").
inline const char* const default_flags[] = {"--benchmark_repetitions=5", "--benchmark_enable_random_interleaving=true",
                                           "--benchmark_min_time=0.1", "--benchmark_report_aggregates_only=true"};

/// Runs the registered benchmarks and prints the table. With `phases` (filters) and no filter
/// on the command line, the benchmarks run one phase after another, each interleaved within
/// itself: for rows that must all run before some others (bench_overhead's single-threaded rows
/// before the ones that start a thread, which random interleaving across all of them mixed).
inline int run_and_report(int argc, char** argv, const std::vector<target>& rows,
                          const std::vector<std::string>& phases = {}) {
  std::vector<char*> args(argv, argv + 1);
  for (const char* f : default_flags) args.push_back(const_cast<char*>(f));  // (Initialize only reads them)
  args.insert(args.end(), argv + 1, argv + argc);
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  collecting_reporter rep;
  const std::string filter = benchmark::GetBenchmarkFilter();
  if (phases.empty() || !(filter.empty() || filter == "." || filter == "all"))
    benchmark::RunSpecifiedBenchmarks(&rep);
  else
    for (const std::string& phase : phases) benchmark::RunSpecifiedBenchmarks(&rep, phase);
  benchmark::Shutdown();
  print_table(rep.results, rows);
  return 0;
}

}  // namespace xfunc_bench
