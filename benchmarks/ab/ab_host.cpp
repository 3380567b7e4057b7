// Runs the kernels of several copies of ab_kernels.cpp, each compiled against another version
// of xfunc's headers, in one process (NOTE: [A/B in one process] in ab_headers.sh).
// Usage: ab_host <rounds> <filter substring or ""> <lib.so> <lib.so> ...
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
  std::string path;
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
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s <rounds> <filter> <lib.so> <lib.so> ...\n", argv[0]);
    return 2;
  }
  const int rounds = std::max(3, std::atoi(argv[1]));
  const std::string filter = argv[2];
  std::vector<float> values(std::size_t(1) << 24);
  std::mt19937 g(1);
  std::normal_distribution<float> d;
  for (auto& v : values) v = d(g);

  std::vector<side> sides;
  int n_kernels = -1;
  for (int a = 3; a < argc; ++a) {
    void* h = dlopen(argv[a], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
    side s{argv[a], reinterpret_cast<int (*)(const float*, std::int64_t)>(dlsym(h, "ab_init")),
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
    sides.push_back(s);
  }

  std::printf("%-32s %10s", "kernel (one thread)", "first ms");
  for (std::size_t v = 1; v < sides.size(); ++v) std::printf("  %-30s", ("side " + std::to_string(v + 1) + " / first: median [q1, q3]").c_str());
  std::printf("\n");
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
        const side& s = sides[(i + std::size_t(r)) % sides.size()];  // each side first in turn
        const std::size_t which = (i + std::size_t(r)) % sides.size();
        s.run(k);  // untimed: refills the caches the other side's block emptied
        const auto b0 = std::chrono::steady_clock::now();
        for (int c = 0; c < calls; ++c) s.run(k);
        t[which].push_back(seconds(b0) / calls);
      }
    std::printf("%-32s %10.3f", name.c_str(), quantile(t[0], 0.5) * 1e3);
    for (std::size_t v = 1; v < sides.size(); ++v) {
      std::vector<double> ratio(static_cast<std::size_t>(rounds), 0.0);
      for (int r = 0; r < rounds; ++r) ratio[std::size_t(r)] = t[v][std::size_t(r)] / t[0][std::size_t(r)];
      char cell[64];
      std::snprintf(cell, sizeof cell, "%.3f [%.3f, %.3f]", quantile(ratio, 0.5), quantile(ratio, 0.25), quantile(ratio, 0.75));
      std::printf("  %-30s", cell);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}
