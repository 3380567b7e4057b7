#!/bin/sh
# Guards NOTE: [Lazy instantiation] (include/xfunc/fwd.hpp): a translation unit that only
# includes <xfunc/xfunc.hpp> must not instantiate any op's dispatch. With
# -fkeep-inline-functions every inline function is emitted, so a non-template function that
# calls an op would show its dispatch<...> (or dispatch_dyn<...>) in the object file.
# Usage: check_lazy.sh <compiler> <include dir> <work dir>
set -eu
CXX=$1
INC=$2
WORK=$3
mkdir -p "$WORK"
printf '#include <xfunc/xfunc.hpp>\nint main() {}\n' > "$WORK/include_only.cpp"
"$CXX" -std=c++20 -O0 -fkeep-inline-functions -DXTENSOR_USE_XSIMD -I "$INC" -c "$WORK/include_only.cpp" -o "$WORK/include_only.o"
found=$(nm -C "$WORK/include_only.o" | grep -E 'detail::dispatch<|dispatch_dyn<|dyn_grad_rule<' || true)
if [ -n "$found" ]; then
  echo "including <xfunc/xfunc.hpp> instantiates op dispatch (a non-template function calls an op):"
  echo "$found"
  exit 1
fi
echo "ok: including <xfunc/xfunc.hpp> instantiates no op dispatch"
