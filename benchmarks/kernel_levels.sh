#!/usr/bin/env bash
# Runs bench_kernel_levels on each copy of the shared kernel library this CPU supports (the
# dynamic loader's --glibc-hwcaps-mask chooses it), and the same program compiled header-only with
# -march=native, and prints each kernel's time with its ratio against the baseline copy (NOTE:
# [Kernels per x86-64 level]). Usage: kernel_levels.sh <bench_kernel_levels> <levels, comma-separated>
#                                                      [<bench_kernel_levels_native>]
set -euo pipefail
bench=$1
IFS=',' read -r -a levels <<<"$2"
native=${3:-}
# shellcheck source=../scripts/hwcaps.sh
. "$(dirname "$0")/../scripts/hwcaps.sh"
ld=$(loader_of "$bench")
supported=$(supported_levels "$ld")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
names=(baseline)
"$ld" --glibc-hwcaps-mask none "$bench" >"$work/0"
for level in "${levels[@]}"; do
  if grep -qx "$level" <<<"$supported"; then
    names+=("$level")
    "$ld" --glibc-hwcaps-mask "$level" "$bench" >"$work/${#names[@]}"
  else
    echo "($level skipped: this CPU cannot run it)"
  fi
done
if [ -n "$native" ]; then
  names+=("-march=native, header-only")
  "$native" >"$work/${#names[@]}"
fi
# one column per run: the time, and the ratio against the baseline copy's
files=("$work/0")
for i in $(seq 2 "${#names[@]}"); do files+=("$work/$i"); done
printf '%-26s' "kernel (ms, one thread)"
for i in "${!names[@]}"; do printf ' | %-26s' "${names[$i]} ($(sed -n 's/^target //p' "${files[$i]}"))"; done
printf '\n'
paste "${files[@]}" | awk -F'\t' -v n="${#names[@]}" 'NR > 1 {
  printf "%-26s", $1
  for (i = 0; i < n; ++i) {
    t = $(2 * i + 2)
    printf " | %8.3f (%5.2fx)           ", t, t / $2
  }
  printf "\n"
}'
