#!/usr/bin/env bash
# Builds and runs the demo: DP-SGD training of a small classifier with per-example gradients
# from vmap(grad(loss)). Installs missing Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
# (the demo needs neither the tests' tools, nor Google Benchmark, nor MPI)
XFUNC_DEPS_TESTS=0 XFUNC_DEPS_BENCHMARKS=0 XFUNC_DEPS_DISTRIBUTED=0 bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DXFUNC_BUILD_EXAMPLES=ON -DXFUNC_BUILD_TESTS=OFF \
  -DXFUNC_BUILD_BENCHMARKS=OFF -DXFUNC_BUILD_KERNELS=OFF
cmake --build build -j"${XFUNC_JOBS:-2}" --target demo
./build/examples/demo
