#!/usr/bin/env bash
# Builds and runs tests/consumer/project both ways: add_subdirectory(xfunc), and
# find_package(xfunc) after cmake --install into a scratch prefix.
set -euo pipefail
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
project="$src/tests/consumer/project"

cmake -S "$project" -B "$work/subdir" -DXFUNC_SOURCE="$src" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/subdir" >/dev/null
"$work/subdir/app"

cmake -S "$src" -B "$work/xfunc" -DXFUNC_BUILD_TESTS=OFF -DXFUNC_BUILD_EXAMPLES=OFF -DXFUNC_BUILD_BENCHMARKS=OFF \
  -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --install "$work/xfunc" >/dev/null
cmake -S "$project" -B "$work/installed" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/installed" >/dev/null
"$work/installed/app"
echo "consumer: add_subdirectory and find_package both work"
