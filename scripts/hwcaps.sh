# shellcheck shell=bash
# Sourced by the scripts that choose a copy of the shared kernel library (NOTE: [Kernels per
# x86-64 level]): tests/backend/kernel_levels.sh, tests/consumer/run.sh,
# benchmarks/kernel_levels.sh.

# loader_of <program>: the dynamic loader (ELF interpreter) that starts the program
loader_of() {
  readelf -l "$1" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p'
}

# supported_levels <loader>: the glibc-hwcaps levels this CPU supports, best first (none before
# glibc 2.33)
supported_levels() {
  "$1" --help 2>/dev/null | sed -n 's/^ *\([^ ]*\) (supported, searched)$/\1/p'
}
