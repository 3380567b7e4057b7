#!/usr/bin/env bash
# Builds and runs tests/consumer/project the ways a downstream user consumes xfunc:
#  1. add_subdirectory(xfunc), header-only;
#  2. find_package(xfunc 0.2 REQUIRED [COMPONENTS distributed cuda]) after cmake --install of
#     the suite's own build (<build dir>, already built) into a scratch prefix, with the installed
#     precompiled kernel library (xfunc::kernels) when that build has it, and each component that
#     build has (a program on xfunc::cuda must start and answer without a GPU);
#  3. what find_package must refuse: another minor version (0.3), a component the build lacks,
#     and an unknown component, each with a message saying why;
#  4. pkg-config: g++ with `pkg-config --cflags --libs xfunc-kernels` (or xfunc, where the build
#     has no kernel library) on the same program.
# The consumer is built unoptimised, to keep this short.
# Usage: run.sh <source dir> <work dir> <build dir>
set -euo pipefail
src=$1
work=$2
build=$3
rm -rf "$work"
mkdir -p "$work"
project="$src/tests/consumer/project"

cmake -S "$project" -B "$work/subdir" -DXFUNC_SOURCE="$src" -DCMAKE_BUILD_TYPE= -DXFUNC_BUILD_KERNELS=OFF >/dev/null
# (the program only: building all would compile xfunc's CUDA kernels by nvcc again, 35 s)
cmake --build "$work/subdir" --target app >/dev/null
"$work/subdir/app"

prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
components=""
missing=""
if [ -f "$build/pkgconfig/xfunc-distributed.pc" ]; then components="distributed"; else missing="distributed"; fi
if grep -q 'xfunc::cuda' "$prefix"/lib*/cmake/xfunc/xfuncTargets.cmake; then
  components="${components:+$components;}cuda"
else
  missing="${missing:+$missing }cuda"
fi
cmake -S "$project" -B "$work/installed" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE= \
  -DXFUNC_WANT_COMPONENTS="$components" >/dev/null
cmake --build "$work/installed" >/dev/null
if [ -f "$work/installed/app_kernels" ]; then "$work/installed/app_kernels"; else "$work/installed/app"; fi
# A shared kernel library is installed with its copies per x86-64 level (NOTE: [Kernels per
# x86-64 level]): the installed program loads the installed library, from the directory of the
# best level this CPU supports when one was built for it.
if [ -f "$work/installed/app_kernels" ] && ldd "$work/installed/app_kernels" | grep -q libxfunc_kernels; then
  loaded=$(ldd "$work/installed/app_kernels" | sed -n 's/.*libxfunc_kernels[^ ]* => \([^ ]*\) .*/\1/p')
  case $loaded in
    "$prefix"/*) ;;
    *) echo "consumer: the installed program loads $loaded, not the installed kernel library" >&2; exit 1 ;;
  esac
  # shellcheck source=../../scripts/hwcaps.sh
  . "$src/scripts/hwcaps.sh"
  for level in $(supported_levels "$(loader_of "$work/installed/app_kernels")"); do
    if compgen -G "$prefix/lib*/glibc-hwcaps/$level/libxfunc_kernels.so.*" >/dev/null; then
      case $loaded in
        */glibc-hwcaps/"$level"/*) ;;
        *) echo "consumer: the installed program loads $loaded, not the $level copy" >&2; exit 1 ;;
      esac
      break
    fi
  done
  echo "consumer: the installed program loads $loaded"
fi
if [ -f "$work/installed/app_cuda" ]; then "$work/installed/app_cuda"; fi
if [ -f "$work/installed/app_distributed" ]; then
  # a world of one, without mpirun (settings as for our MPI tests: no CMA, yield while waiting)
  env OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_pml=ob1 \
    "$work/installed/app_distributed"
fi

# refused: configure must fail, and its output must say why
expect_refusal() {  # expect_refusal NAME PHRASE cmake-args...
  local name=$1 phrase=$2 out
  shift 2
  if out=$(cmake -S "$project" -B "$work/$name" -DCMAKE_PREFIX_PATH="$prefix" "$@" 2>&1); then
    echo "consumer: find_package accepted $name; it must refuse it" >&2
    exit 1
  fi
  if ! grep -q -- "$phrase" <<<"$out"; then
    printf 'consumer: find_package refused %s without saying "%s":\n%s\n' "$name" "$phrase" "$out" >&2
    exit 1
  fi
}
expect_refusal version_0.3 "0.2.0" -DXFUNC_WANT_VERSION=0.3
for component in $missing; do
  expect_refusal "$component" "no xfunc::$component" -DXFUNC_WANT_COMPONENTS="$component"
done
expect_refusal unknown "no component 'sparse'" -DXFUNC_WANT_COMPONENTS=sparse

# pkg-config, from the installed .pc files
pcdir=$(dirname "$(find "$prefix" -name xfunc.pc | head -n1)")
export PKG_CONFIG_PATH="$pcdir"
[ "$(pkg-config --modversion xfunc)" = "$(sed -n 's/^Version: //p' "$pcdir/xfunc.pc")" ]
# (xfunc-kernels.pc requires xfunc.pc: its flags and libraries are on that line too)
pc=xfunc
if [ -f "$pcdir/xfunc-kernels.pc" ]; then pc=xfunc-kernels; fi
# shellcheck disable=SC2046  # the flags are words
g++ "$project/main.cpp" -o "$work/app_pkgconfig" $(pkg-config --cflags --libs "$pc")
"$work/app_pkgconfig"
echo "consumer: add_subdirectory, find_package (version 0.2${components:+, components: $components}," \
     "refusals${missing:+ of $missing}) and pkg-config all work"
