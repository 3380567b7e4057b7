#!/usr/bin/env bash
# Compiles element_kernels.cu to PTX for sm_90 and checks that it holds the expected number of
# kernels, each of which stores a result (nvcc compiles a call that device code cannot make into
# an empty body without an error, so an empty kernel means a per-element function that is not
# callable on the device).
# Usage: check_element_kernels.sh NVCC SOURCE_DIR
set -euo pipefail
nvcc=$1
src=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$nvcc" -std=c++20 -arch=sm_90 --expt-relaxed-constexpr -Werror all-warnings -DXTENSOR_USE_XSIMD \
  -I "$src/include" -ptx "$src/tests/cuda/element_kernels.cu" -o "$out/k.ptx"
expected=$(grep -cE '^XFUNC_(UNARY|BINARY|COMPARISON)_KERNELS\(' "$src/tests/cuda/element_kernels.cu")
expected=$((expected * 2))  # float and double
awk -v expected="$expected" '
  /^\.visible \.entry/ { name = $3; entries++; body = 0; next }
  name != "" && /st\.global/ { stored[name] = 1 }
  END {
    for (n in stored) ok++
    printf "%d kernels in the PTX (expected %d), %d store a result\n", entries, expected, ok
    if (entries != expected || ok != entries) exit 1
  }' "$out/k.ptx"
