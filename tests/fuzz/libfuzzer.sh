#!/usr/bin/env bash
# Builds the libFuzzer target (clang++-14, -fsanitize=fuzzer,address,undefined) into
# build/fuzz and runs it: tests/fuzz/libfuzzer.sh [SECONDS] [extra libFuzzer flags...]
# The corpus grows in build/fuzz/corpus; a failing input is saved as build/fuzz/crash-*.
# Header-only: the build takes a few minutes; a long run is the point.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
shift || true
cxx=${CXX_FUZZ:-clang++-14}
out=$root/build/fuzz
mkdir -p "$out/corpus"
if [ ! -x "$out/fuzz_libfuzzer" ] || [ -n "$(find "$root/include" "$root/tests/fuzz" -newer "$out/fuzz_libfuzzer" -name '*.hpp' -o -newer "$out/fuzz_libfuzzer" -name '*.cpp' | head -n1)" ]; then
  echo "libfuzzer.sh: building $out/fuzz_libfuzzer with $cxx"
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer -DXTENSOR_USE_XSIMD \
    -I"$root/include" -I"$root/tests" "$root/tests/fuzz/fuzz_libfuzzer.cpp" -o "$out/fuzz_libfuzzer" -lopenblas -lpthread
fi
cd "$out"
# (OPENBLAS_NUM_THREADS=1: OpenBLAS's own threads are not what is being fuzzed)
OPENBLAS_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ./fuzz_libfuzzer -max_total_time="$seconds" -max_len=512 -print_final_stats=1 "$@" corpus
