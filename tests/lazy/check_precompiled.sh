#!/bin/sh
# Guards NOTE: [Precompiled kernels] (include/xfunc/dispatch/precompiled.hpp):
# 1. every op struct of include/xfunc/ops/*.hpp is in its header's XFUNC_OPS_* list (so
#    xfunc::kernels compiles it and the headers declare it extern);
# 2. with XFUNC_PRECOMPILED_KERNELS, a program using every op (uses_every_op.cpp) defines no
#    op dispatch and no strided copy itself: it calls the library's;
# 3. nor any function of the compiled runtime (NOTE: [Compiled runtime], the functions declared
#    XFUNC_RUNTIME): the library defines them once;
# 4. nor any function of the XFUNC_FUNCTIONS_* lists (NOTE: [Precompiled composites]).
# Usage: check_precompiled.sh <compiler> <include dir> <work dir>
set -eu
CXX=$1
INC=$2
WORK=$3
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK"
status=0
for h in "$INC"/xfunc/ops/*.hpp; do
  for op in $(sed -n 's/^using \([a-z0-9_]*\) = [a-z0-9_]*_t<>;$/\1/p' "$h"); do
    if ! grep -q "X($op)" "$h"; then
      echo "$h: $op is not in the header's XFUNC_OPS_* list, so xfunc::kernels does not compile it"
      status=1
    fi
  done
done
"$CXX" -std=c++20 -O0 -DXTENSOR_USE_XSIMD -DXFUNC_PRECOMPILED_KERNELS -I "$INC" -c "$HERE/uses_every_op.cpp" \
  -o "$WORK/uses_every_op.o"
defined=$(nm -C --defined-only "$WORK/uses_every_op.o" | grep -E 'detail::dispatch<|strided_copy<' || true)
if [ -n "$defined" ]; then
  echo "with XFUNC_PRECOMPILED_KERNELS, uses_every_op.cpp still instantiates these itself:"
  echo "$defined"
  status=1
fi
# none_defined WHAT NAMES MIN REGEX: NAMES (at least MIN of them, one per line) are the functions
# WHAT; none may be defined in uses_every_op.o, matched by REGEX with NAMES for @ ("a|b|c").
none_defined() {
  n=$(echo "$2" | wc -w)
  if [ "$n" -lt "$3" ]; then
    echo "found only $n $1; expected at least $3 (did their pattern in the headers change?)"
    status=1
  fi
  alternatives=$(echo "$2" | tr '\n' '|' | sed 's/|$//')
  regex=$(echo "$4" | sed "s/@/$alternatives/")
  found=$(nm -C --defined-only "$WORK/uses_every_op.o" | grep -E "$regex" || true)
  if [ -n "$found" ]; then
    echo "with XFUNC_PRECOMPILED_KERNELS, uses_every_op.cpp still defines $1 (or code of theirs):"
    echo "$found" | head -n 20
    status=1
  fi
}
runtime=$(grep -rhoE --exclude=linkage.hpp 'XFUNC_RUNTIME [^;{(]*\(' "$INC"/xfunc | sed 's/.*[ :~]\([a-z_]*\)($/\1/' | sort -u)
none_defined "functions of the compiled runtime (XFUNC_RUNTIME)" "$runtime" 10 '::(@)\('
listed=$(grep -rhoE 'X\((tensor|std::vector<tensor>) [a-z_:]+<0>\(' "$INC"/xfunc | sed 's/^X([a-z_:<>]* \([a-z_:]*\)<0>($/\1/' | sort -u)
none_defined "functions of the XFUNC_FUNCTIONS_* lists" "$listed" 50 ' xfunc::(@)<0>\('
pattern=$(echo "$listed" | tr '\n' '|' | sed 's/|$//')
# what it calls in the library: the ops' dispatches, directly or through their listed functions
called=$(nm -C --undefined-only "$WORK/uses_every_op.o" | grep -cE "detail::dispatch<| xfunc::($pattern)<0>\(" || true)
if [ "$called" -lt 50 ]; then
  echo "uses_every_op.cpp calls only $called precompiled dispatches and functions; expected every op's"
  status=1
fi
[ "$status" -eq 0 ] && echo "ok: every op is precompiled, and a program using them instantiates none ($called called)," \
  "defines none of the $(echo "$runtime" | wc -w) functions of the compiled runtime and none of the" \
  "$(echo "$listed" | wc -w) listed functions"
exit "$status"
