// Runs the kernels of several copies of ab_kernels.cpp, each compiled against another version
// of xfunc's headers, in one process (NOTE: [A/B in one process] in ab_headers.sh).
// Usage: ab_host <rounds> <filter substring or ""> <first side loaded> <lib.so> <lib.so> ...
// The sides are loaded and given their inputs starting from the named one (0-based), in turn:
// the order decides which side's buffers get the memory first (ab_headers.sh runs every order).
// Prints one line per kernel and side after the first: "kernel<TAB>side<TAB>median<TAB>q1<TAB>q3"
// of the per-round ratios of that side's time to the first side's, and the first side's median
// time per call in ms as side 1.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

struct side {
  int (*init)(const float*, std::int64_t);
  const char* (*name)(int);
  void (*run)(int);
};

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * double(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s <rounds> <filter> <first side loaded> <lib.so> <lib.so> ...\n", argv[0]);
    return 2;
  }
  const int rounds = std::max(3, std::atoi(argv[1]));
  const std::string filter = argv[2];
  const int first_loaded = std::atoi(argv[3]);
  const int n_sides = argc - 4;
  std::vector<float> values(std::size_t(1) << 24);
  std::mt19937 g(1);
  std::normal_distribution<float> d;
  for (auto& v : values) v = d(g);

  std::vector<side> sides(static_cast<std::size_t>(n_sides));
  int n_kernels = -1;
  for (int j = 0; j < n_sides; ++j) {
    const int v = (first_loaded + j) % n_sides;
    const int a = 4 + v;
    void* h = dlopen(argv[a], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
    side s{reinterpret_cast<int (*)(const float*, std::int64_t)>(dlsym(h, "ab_init")),
           reinterpret_cast<const char* (*)(int)>(dlsym(h, "ab_name")), reinterpret_cast<void (*)(int)>(dlsym(h, "ab_run"))};
    if (!s.init || !s.name || !s.run) {
      std::fprintf(stderr, "%s does not export ab_init, ab_name and ab_run\n", argv[a]);
      return 1;
    }
    const int n = s.init(values.data(), std::int64_t(values.size()));
    if (n_kernels >= 0 && n != n_kernels) {
      std::fprintf(stderr, "%s has %d kernels, the first library %d\n", argv[a], n, n_kernels);
      return 1;
    }
    n_kernels = n;
    sides[static_cast<std::size_t>(v)] = s;
  }
  for (int k = 0; k < n_kernels; ++k) {
    const std::string name = sides[0].name(k);
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    // calls per block: about 2 ms of the first side
    for (auto& s : sides) s.run(k);
    const auto t0 = std::chrono::steady_clock::now();
    sides[0].run(k);
    const int calls = static_cast<int>(std::clamp(2e-3 / std::max(seconds(t0), 1e-9), 1.0, 64.0));
    std::vector<std::vector<double>> t(sides.size());
    for (int r = 0; r < rounds; ++r)
      for (std::size_t i = 0; i < sides.size(); ++i) {
        const std::size_t which = (i + std::size_t(r)) % sides.size();  // each side first in turn
        sides[which].run(k);  // untimed: refills the caches the other side's block emptied
        const auto b0 = std::chrono::steady_clock::now();
        for (int c = 0; c < calls; ++c) sides[which].run(k);
        t[which].push_back(seconds(b0) / calls);
      }
    std::printf("%s\t1\t%.4f\t0\t0\n", name.c_str(), quantile(t[0], 0.5) * 1e3);
    for (std::size_t v = 1; v < sides.size(); ++v) {
      std::vector<double> ratio(static_cast<std::size_t>(rounds), 0.0);
      for (int r = 0; r < rounds; ++r) ratio[std::size_t(r)] = t[v][std::size_t(r)] / t[0][std::size_t(r)];
      std::printf("%s\t%zu\t%.4f\t%.4f\t%.4f\n", name.c_str(), v + 1, quantile(ratio, 0.5), quantile(ratio, 0.25),
                  quantile(ratio, 0.75));
    }
    std::fflush(stdout);
  }
  return 0;
}
