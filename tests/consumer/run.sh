#!/usr/bin/env bash
# Builds and runs tests/consumer/project both ways: add_subdirectory(xfunc), and
# find_package(xfunc) after cmake --install of the suite's own build (<build dir>, already built)
# into a scratch prefix; the second way also with the installed precompiled kernel library
# (xfunc::kernels) when that build has it. The consumer is built unoptimised, to keep this short.
# Usage: run.sh <source dir> <work dir> <build dir>
set -euo pipefail
src=$1
work=$2
build=$3
rm -rf "$work"
mkdir -p "$work"
project="$src/tests/consumer/project"

cmake -S "$project" -B "$work/subdir" -DXFUNC_SOURCE="$src" -DCMAKE_BUILD_TYPE= -DXFUNC_BUILD_KERNELS=OFF >/dev/null
cmake --build "$work/subdir" >/dev/null
"$work/subdir/app"

cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$project" -B "$work/installed" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE= >/dev/null
cmake --build "$work/installed" >/dev/null
"$work/installed/app"
if [ -f "$build/libxfunc_kernels.a" ]; then
  "$work/installed/app_kernels"
  echo "consumer: add_subdirectory and find_package both work, find_package also with xfunc::kernels"
else
  echo "consumer: add_subdirectory and find_package both work (this build has no xfunc::kernels)"
fi
