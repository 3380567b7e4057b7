#!/usr/bin/env bash
# Builds and runs the whole test suite into build/ (Release, GCC or $CXX), then again under
# ASan+UBSan into build/asan (Clang), then the thread tests under TSan into build/tsan. Installs
# missing Debian packages first. Exits non-zero if any test fails.
# XFUNC_SKIP_SANITIZERS=1 runs the Release suite only; XFUNC_SANITIZER_CXX names the Clang.
set -euo pipefail
cd "$(dirname "$0")/.."
skip_sanitizers=${XFUNC_SKIP_SANITIZERS:-0}
XFUNC_DEPS_SANITIZERS=$([ "$skip_sanitizers" = 1 ] && echo 0 || echo 1) bash scripts/install-deps.sh
jobs=${XFUNC_JOBS:-2}
# (TESTS=ON: build/ may have been configured by demo.sh, which turns the tests off.) The kernel
# library shared, with its copies per x86-64 level: the suite runs on the best copy this CPU
# supports, and the kernel_levels test runs the kernel tests on each (NOTE: [Kernels per x86-64
# level]); the sanitizer builds below use the static baseline library.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DXFUNC_BUILD_TESTS=ON -DXFUNC_BUILD_BENCHMARKS=OFF -DXFUNC_BUILD_KERNELS=ON \
  -DXFUNC_KERNELS_SHARED=ON
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure --no-tests=error -j"$jobs")
if [ "$skip_sanitizers" != 1 ]; then
  # The whole suite under ASan+UBSan, built by Clang: its front end builds these tests in half
  # GCC's time, its UBSan also checks float-to-integer conversions (GCC's does not), and so every
  # test is compiled by both compilers with -Werror (docs/performance.md, "The suite").
  san_cxx=${XFUNC_SANITIZER_CXX:-$(command -v clang++-14 || command -v clang++)}
  # (CMake keeps the compiler a build directory was first configured with: start afresh)
  if [ -f build/asan/CMakeCache.txt ] && ! grep -qx "CMAKE_CXX_COMPILER:[A-Z]*=$san_cxx" build/asan/CMakeCache.txt; then
    rm -rf build/asan
  fi
  cmake -S . -B build/asan -DCMAKE_CXX_COMPILER="$san_cxx" -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS="-O0 -g0" \
    -DXFUNC_SANITIZE=address -DXFUNC_BUILD_BENCHMARKS=OFF -DXFUNC_BUILD_EXAMPLES=OFF
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
