#!/usr/bin/env bash
# Builds and runs the whole test suite into build/ (Release), then again under ASan+UBSan
# into build/asan. Installs missing Debian packages first. Exits non-zero if any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=${XFUNC_JOBS:-2}
# (TESTS=ON: build/ may have been configured by demo.sh, which turns the tests off)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DXFUNC_BUILD_TESTS=ON -DXFUNC_BUILD_BENCHMARKS=OFF -DXFUNC_BUILD_KERNELS=ON
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure --no-tests=error -j"$jobs")
if [ "${XFUNC_SKIP_SANITIZERS:-0}" != "1" ]; then
  # the whole suite under ASan+UBSan
  cmake -S . -B build/asan -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS="-O0 -g0" -DXFUNC_SANITIZE=address \
    -DXFUNC_BUILD_BENCHMARKS=OFF -DXFUNC_BUILD_EXAMPLES=OFF
  cmake --build build/asan -j"$jobs"
  (cd build/asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$jobs")
  # the thread tests (with the 8-thread stress test) and the thread pool's under TSan
  # (header-only: two test programs do not repay building the kernel library under TSan)
  cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS="-O1 -g0" -DXFUNC_SANITIZE=thread -DXFUNC_BUILD_KERNELS=OFF \
    -DXFUNC_BUILD_BENCHMARKS=OFF -DXFUNC_BUILD_EXAMPLES=OFF
  # (and the CUDA caching allocator's bookkeeping, where the CUDA toolkit makes it a target)
  tsan_tests="test_threads test_threads_stress test_backend_parallel"
  if cmake --build build/tsan --target help | grep test_cuda_caching_allocator >/dev/null; then
    tsan_tests="$tsan_tests test_cuda_caching_allocator"
  fi
  # shellcheck disable=SC2086  # a list of target names
  cmake --build build/tsan -j"$jobs" --target $tsan_tests
  (cd build/tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -R "^(${tsan_tests// /|})\$")
fi
