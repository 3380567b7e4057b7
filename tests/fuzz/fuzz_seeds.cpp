// The fuzzer over a deterministic range of seeds (NOTE: [Fuzzer] in fuzz.hpp):
//   fuzz_seeds FIRST COUNT [--seconds S] [--verbose]
// runs the cases of seeds FIRST .. FIRST+COUNT-1 (every tenth a "big" one, past the thread
// pool's thresholds), stopping early after S seconds; prints a shrunk reproducer for each
// failure and exits non-zero if there was one.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "fuzz/fuzz.hpp"

int main(int argc, char** argv) {
  const std::uint64_t first = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 0;
  const std::uint64_t count = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 200;
  double seconds = 0;
  bool verbose = false;
  for (int k = 3; k < argc; ++k) {
    if (std::strcmp(argv[k], "--seconds") == 0 && k + 1 < argc) seconds = std::atof(argv[++k]);
    if (std::strcmp(argv[k], "--verbose") == 0) verbose = true;
  }
  fuzz::stats st;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t seed = first;
  for (; seed < first + count; ++seed) {
    if (seconds > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) break;
    fuzz::chooser ch(seed);
    fuzz::fuzz_case c = fuzz::make_case(ch, seed % 10 == 9);
    fuzz::fit_out_dims(c);
    ++st.programs;
    if (verbose) std::cout << "seed " << seed << ": " << fuzz::describe(c.stack) << "\n" << c.prog.cpp();
    if (auto f = fuzz::run_case(c, st)) {
      ++st.failures;
      const fuzz::fuzz_case small = fuzz::shrink(c, f->first, f->second.kind);
      fuzz::stats ignored;
      auto again = fuzz::run_case(small, ignored);
      std::cout << fuzz::reproducer(small, "seed " + std::to_string(seed), again ? again->first : f->first,
                                    again ? again->second : f->second)
                << std::endl;
    }
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "fuzz_seeds: seeds " << first << ".." << seed - 1 << ": " << st.programs << " programs, " << st.checks
            << " transform-level checks, " << st.thread_checks << " thread checks, " << st.nonfinite
            << " skipped (non-finite values), " << st.restricted << " documented errors (in-place restrictions), " << st.failures << " failures, " << took << " s" << std::endl;
  return st.failures == 0 ? 0 : 1;
}
