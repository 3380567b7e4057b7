#!/usr/bin/env bash
# Compiles src/cuda/kernels.cu to PTX for sm_90 (as the build's fatbinary is) and checks that
# every kernel stores a result (or adds atomically): nvcc compiles a call that device code cannot make into an empty
# body without an error, so an empty kernel means an element function that is not callable on
# the device. Also checks that the fake driver (FAKE, the same file compiled for the host:
# NOTE: [Kernels compiled twice]) has the same kernels, so the tests run what the GPU would.
# Usage: check_kernels_ptx.sh NVCC SOURCE_DIR FAKE_DRIVER_LIBRARY
set -euo pipefail
nvcc=$1
src=$2
fake=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$nvcc" -std=c++20 -arch=sm_90 --expt-relaxed-constexpr -Werror all-warnings -DXTENSOR_USE_XSIMD \
  -I "$src/include" -I "$src/src" -ptx "$src/src/cuda/kernels.cu" -o "$out/k.ptx"
awk '
  /^\.visible \.entry/ { name = $3; sub(/\(.*/, "", name); entries++; print name > "/dev/stderr"; next }
  name != "" && /(st|red|atom)\.global/ { stored[name] = 1 }
  END {
    for (n in stored) ok++
    printf "%d kernels in the PTX, %d store a result\n", entries, ok
    if (entries < 100 || ok != entries) exit 1
  }' "$out/k.ptx" 2> "$out/ptx_names"
sort -u "$out/ptx_names" > "$out/ptx_sorted"
# (XFUNC_KERNEL defines name_run for the emulation: NOTE: [Kernels compiled twice])
nm -C "$fake" | grep -o 'xf_[a-z0-9_]*_run(' | sed 's/_run($//' | sort -u > "$out/fake_sorted"
if ! diff "$out/ptx_sorted" "$out/fake_sorted" > "$out/diff"; then
  echo "the PTX and the fake driver have different kernels:"
  cat "$out/diff"
  exit 1
fi
echo "the fake driver has the same $(wc -l < "$out/fake_sorted") kernels"
