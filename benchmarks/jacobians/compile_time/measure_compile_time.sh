#!/bin/sh
# Compile-time benchmark: compiles (a) include_only.cpp and (b) all_transforms.cpp with
#   $CXX -std=c++20 -O2 -I <include> -DXTENSOR_USE_XSIMD -c   (xfunc::xfunc's include dir/defines)
# under /usr/bin/time -v (Debian package "time"), REPEAT times each (default 2), and prints the
# best wall time, the best CPU time (user + system: what the compiler itself spent, less noisy on
# a loaded machine) and the largest "Maximum resident set size", with the targets (on wall time):
#   (a) <= 2.5 s;  (b) <= 15 s and <= 2 GB.  Reported, never asserted (exit status 0).
# Usage: measure_compile_time.sh <xfunc include dir> [compiler]
set -u
INC=${1:?usage: $0 <include dir> [compiler]}
CXX=${2:-g++}
REPEAT=${REPEAT:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
FLAGS="-std=c++20 -O2 -I $INC -DXTENSOR_USE_XSIMD"
. "$HERE/../../measure_compile.sh"

echo "compiler: $("$CXX" --version | head -n 1); flags: $FLAGS -c; best of $REPEAT"
set -- $(measure "$HERE/include_only.cpp"); a_s=$1; a_cpu=$2; a_kb=$3
set -- $(measure "$HERE/all_transforms.cpp"); b_s=$1; b_cpu=$2; b_kb=$3
awk -v as="$a_s" -v ac="$a_cpu" -v akb="$a_kb" -v bs="$b_s" -v bc="$b_cpu" -v bkb="$b_kb" 'BEGIN {
  printf "\n%-46s %9s %9s %10s  %-22s %s\n", "translation unit", "wall s", "CPU s", "peak MB", "target", "met?"
  printf "%-46s %9.2f %9.2f %10.0f  %-22s %s\n", "(a) include_only.cpp (#include <xfunc/xfunc.hpp>)", as, ac, akb / 1024, "<= 2.5 s", (as <= 2.5 ? "yes" : "NO")
  printf "%-46s %9.2f %9.2f %10.0f  %-22s %s\n", "(b) all_transforms.cpp (9 transforms x 2 types)", bs, bc, bkb / 1024, "<= 15 s, <= 2048 MB", (bs <= 15 && bkb / 1024 <= 2048 ? "yes" : "NO")
}'
