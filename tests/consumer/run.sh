#!/usr/bin/env bash
# Builds and runs tests/consumer/project both ways: add_subdirectory(xfunc), and
# find_package(xfunc) after cmake --install into a scratch prefix; the second way also with the
# installed precompiled kernel library (xfunc::kernels). Everything is built unoptimised, to keep the test short.
set -euo pipefail
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
project="$src/tests/consumer/project"

cmake -S "$project" -B "$work/subdir" -DXFUNC_SOURCE="$src" -DCMAKE_BUILD_TYPE= -DXFUNC_BUILD_KERNELS=OFF >/dev/null
cmake --build "$work/subdir" >/dev/null
"$work/subdir/app"

cmake -S "$src" -B "$work/xfunc" -DXFUNC_BUILD_TESTS=OFF -DXFUNC_BUILD_EXAMPLES=OFF -DXFUNC_BUILD_BENCHMARKS=OFF \
  -DXFUNC_BUILD_KERNELS=ON -DCMAKE_BUILD_TYPE= -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --build "$work/xfunc" -j"${XFUNC_JOBS:-2}" >/dev/null
cmake --install "$work/xfunc" >/dev/null
cmake -S "$project" -B "$work/installed" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE= >/dev/null
cmake --build "$work/installed" >/dev/null
"$work/installed/app"
"$work/installed/app_kernels"
echo "consumer: add_subdirectory and find_package both work, find_package also with xfunc::kernels"
