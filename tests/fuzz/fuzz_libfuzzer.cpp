// The fuzzer as a libFuzzer target (NOTE: [Fuzzer] in fuzz.hpp): every choice of the generator
// comes from the input's bytes, so libFuzzer's coverage feedback steers the programs. Build and
// run it with tests/fuzz/libfuzzer.sh (clang, -fsanitize=fuzzer,address,undefined). A failure
// prints the shrunk reproducer and aborts, and libFuzzer saves the input that caused it.
#include <cstdint>
#include <cstdlib>
#include <iostream>

#include "fuzz/fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::chooser ch(data, size);
  fuzz::fuzz_case c = fuzz::make_case(ch, size > 0 && data[0] % 10 == 9);
  fuzz::fit_out_dims(c);
  fuzz::stats st;
  if (auto f = fuzz::run_case(c, st)) {
    const fuzz::fuzz_case small = fuzz::shrink(c, f->first, f->second.kind);
    fuzz::stats ignored;
    auto again = fuzz::run_case(small, ignored);
    std::cerr << fuzz::reproducer(small, "libFuzzer input", again ? again->first : f->first, again ? again->second : f->second)
              << std::endl;
    std::abort();
  }
  return 0;
}
