#!/usr/bin/env bash
# Compares versions of xfunc's headers on the same kernels in one process.
# Usage: ab_headers.sh <version> <version> [<version>...]
#   a version is a git revision of this repository (HEAD, main~3, a commit), "." for the
#   working tree, or a directory holding an include/ tree; the first is the reference.
#   Environment: ROUNDS (default 30), FILTER (run only the kernels whose name contains it),
#   CXX (default g++), OPT (default -O3 -march=native).
# Prints, for each kernel of ab_kernels.cpp, the first version's median time per call and each
# other version's time as a ratio to it: the median over the rounds of the per-round ratios
# (the geometric mean of that median over the orders of loading), with the widest quartiles.
#
# NOTE: [A/B in one process]
# The development VMs change speed in phases of seconds to minutes by up to 2x, and two builds
# run one after the other, or even alternating processes, each land in their own phases: on
# 2026-12-05 (eighth session) the same `x * a + b` binary read 1.10-1.71x a memcpy from one
# process to the next. Here each version's ab_kernels.cpp becomes a shared library with hidden
# visibility (its own copy of xfunc: thread pool, caching allocator, registries), ab_host loads
# them all with RTLD_LOCAL, and each round runs every version's block of calls back to back
# (each block's first call untimed, as in NOTE: [Paired timing]), so a slow phase falls on all
# versions of a round alike; the ratio is taken per round. The order in which the versions are
# loaded matters too: the first to allocate its buffers got huge pages more readily, and the same
# headers read 1.58x slower loaded second in one process and 1.08x in another (2026-12-05). So
# the host runs once per order, each version loaded first in turn, and the orders' ratios are
# combined.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
CXX=${CXX:-g++}
OPT=${OPT:--O3 -march=native}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
libs=()
builds=()
i=0
for version in "$@"; do
  i=$((i + 1))
  dir="$work/v$i"
  mkdir -p "$dir"
  if [ "$version" = . ]; then
    cp -r "$root/include" "$dir/include"
  elif [ -d "$version/include" ]; then
    cp -r "$version/include" "$dir/include"
  else
    git -C "$root" archive "$version" include | tar -x -C "$dir"
  fi
  echo "side $i: $version" >&2
  # shellcheck disable=SC2086
  "$CXX" -std=c++20 $OPT -DNDEBUG -DXTENSOR_USE_XSIMD -fPIC -shared -fvisibility=hidden \
    -Wno-maybe-uninitialized -I "$dir/include" "$here/ab_kernels.cpp" -o "$dir/ab_kernels.so" \
    -lopenblas -lzip -pthread &
  builds+=($!)
  libs+=("$dir/ab_kernels.so")
done
for j in "${!builds[@]}"; do
  wait "${builds[$j]}" || { echo "building side $((j + 1)) failed (see the compiler's messages above)" >&2; exit 1; }
done
"$CXX" -std=c++20 -O2 "$here/ab_host.cpp" -o "$work/ab_host" -ldl
# one process per order of loading (each side's buffers first in turn); per kernel and side, the
# geometric mean of the orders' median ratios, and the widest quartiles
n=${#libs[@]}
for first in $(seq 0 $((n - 1))); do
  echo "loading from side $((first + 1))" >&2
  "$work/ab_host" "${ROUNDS:-30}" "${FILTER:-}" "$first" "${libs[@]}" >>"$work/rows.tsv"
done
awk -F'\t' -v n="$n" '
  !($1 in seen) { seen[$1] = 1; order[++k] = $1 }
  $2 == 1 { ms[$1] += $3 / n; next }
  { key = $1 SUBSEP $2; logsum[key] += log($3); runs[key]++
    if (!(key in q1) || $4 < q1[key]) q1[key] = $4
    if (!(key in q3) || $5 > q3[key]) q3[key] = $5 }
  END {
    printf "%-32s %9s", "kernel (one thread)", "side 1 ms"
    for (v = 2; v <= n; ++v) printf "  side %d / side 1: ratio [q1, q3]", v
    printf "\n"
    for (i = 1; i <= k; ++i) {
      printf "%-32s %9.3f", order[i], ms[order[i]]
      for (v = 2; v <= n; ++v) { key = order[i] SUBSEP v; printf "  %-29s", sprintf("%.3f [%.3f, %.3f]", exp(logsum[key] / runs[key]), q1[key], q3[key]) }
      printf "\n"
    }
  }' "$work/rows.tsv"
