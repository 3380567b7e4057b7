#!/usr/bin/env bash
# Runs the kernel and conformance tests once on each copy of the shared kernel library that this
# CPU can run (NOTE: [Kernels per x86-64 level] in include/xfunc/backend/simd_target.hpp): the
# baseline copy and each x86-64 level built, chosen through the dynamic loader's
# --glibc-hwcaps-mask. Checks that each run loaded the copy it asked for, and that a plain start
# loads the best one this CPU supports.
# Usage: kernel_levels.sh <probe> <levels, comma-separated> <test program>...
set -euo pipefail
probe=$1
IFS=',' read -r -a levels <<<"$2"
shift 2
# shellcheck source=../../scripts/hwcaps.sh
. "$(dirname "$0")/../../scripts/hwcaps.sh"
ld=$(loader_of "$probe")
if ! "$ld" --help 2>/dev/null | grep -q -- --glibc-hwcaps-mask; then
  echo "kernel_levels: $ld has no --glibc-hwcaps-mask (glibc before 2.33): the loader takes the baseline copy"
  exit 77
fi
supported=$(supported_levels "$ld")

# expected_target <level>: a pattern for xsimd's name of that level's instruction set
expected_target() {
  case $1 in
    x86-64-v2) echo "sse4.2" ;;
    x86-64-v3) echo "*avx2" ;;
    x86-64-v4) echo "avx512*" ;;
    *) echo "?" ;;
  esac
}

# run_level <mask> <expected target pattern>: the probe and every test on that mask's copy
run_level() {
  local mask=$1 want=$2 got
  shift 2
  read -r got _ < <("$ld" --glibc-hwcaps-mask "$mask" "$probe")
  # shellcheck disable=SC2053  # $want is a pattern
  if [[ $got != $want ]]; then
    echo "kernel_levels: with --glibc-hwcaps-mask $mask the kernels run $got, expected $want" >&2
    exit 1
  fi
  for t in "$@"; do
    if ! "$ld" --glibc-hwcaps-mask "$mask" "$t" >"${TMPDIR:-/tmp}/kernel_levels.$$.out" 2>&1; then
      cat "${TMPDIR:-/tmp}/kernel_levels.$$.out" >&2
      echo "kernel_levels: $(basename "$t") failed on the $mask copy ($got)" >&2
      exit 1
    fi
  done
  rm -f "${TMPDIR:-/tmp}/kernel_levels.$$.out"
  echo "kernel_levels: ${mask/none/baseline} ($got): $# programs passed"
}

# data_symbols <library>: the data it exports (name, kind, size). The program and every copy share
# these (one instance each), so a copy whose data differ from the baseline's in name or size
# would break NOTE: [Kernels per x86-64 level]: a type or table whose layout follows the target.
data_symbols() {
  nm -D --defined-only -S "$1" | awk '$3 ~ /^[VuDRBdrbv]$/ {print $4, $3, $2}' | sort
}
library=$("$ld" --glibc-hwcaps-mask none --list "$probe" | sed -n 's/.*libxfunc_kernels[^ ]* => \([^ ]*\) .*/\1/p')
for level in "${levels[@]}"; do
  copy="$(dirname "$library")/glibc-hwcaps/$level/$(basename "$library")"
  if ! diff <(data_symbols "$library") <(data_symbols "$copy") >&2; then
    echo "kernel_levels: the $level copy exports other data than the baseline's (above: < baseline, > $level)" >&2
    exit 1
  fi
done
echo "kernel_levels: every copy exports the baseline's data ($(data_symbols "$library" | wc -l) symbols, same sizes)"

read -r _ baseline < <("$probe")
run_level none "$baseline" "$@"   # (no level's directory searched: the baseline copy)
best=$baseline
for level in "${levels[@]}"; do
  if grep -qx "$level" <<<"$supported"; then
    run_level "$level" "$(expected_target "$level")" "$@"
    best=$(expected_target "$level")
  else
    echo "kernel_levels: $level skipped: this CPU cannot run it"
  fi
done
read -r got _ < <("$probe")
# shellcheck disable=SC2053  # $best is a pattern
if [[ $got != $best ]]; then
  echo "kernel_levels: a plain start runs the kernels with $got, expected the best level's $best" >&2
  exit 1
fi
echo "kernel_levels: a plain start loads the best copy this CPU runs ($got)"
