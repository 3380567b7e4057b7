#!/usr/bin/env bash
# Tests scripts/install-deps.sh without network and without changing the machine: every run
# sees a fake machine (include and library directories, CMake package files, g++, cmake, sudo,
# apt-get and dpkg-query) under a temporary directory. The fake apt-get records its calls and
# "installs" a package by writing that package's files into the fake tree.
#
# Usage: test_install_deps.sh [REPO_ROOT]
#        test_install_deps.sh --provide ROOT PACKAGE   (used by the fake apt-get)
set -euo pipefail

# ---- the files each fake package provides -------------------------------------------------

# provide ROOT PACKAGE [VERSION]: writes PACKAGE's files under ROOT (a fake /usr)
provide() {
  local root=$1 pkg=$2 v=${3:-}
  local inc=$root/include
  case "$pkg" in
    libboost-dev | libboost1.*-dev)  # Debian's Boost headers include Hana
      v=${v:-108100}
      mkdir -p "$inc/boost"
      printf '#define BOOST_VERSION %s\n#define BOOST_LIB_VERSION "1_xx"\n' "$v" >"$inc/boost/version.hpp"
      echo '// hana' >"$inc/boost/hana.hpp" ;;
    xtl-dev)
      mkdir -p "$inc/xtl" "$root/share/cmake/xtl"
      printf '#define XTL_VERSION_MAJOR 0\n#define XTL_VERSION_MINOR 7\n#define XTL_VERSION_PATCH 5\n' \
        >"$inc/xtl/xtl_config.hpp"
      touch "$root/share/cmake/xtl/xtlConfig.cmake" ;;
    libxsimd-dev)
      mkdir -p "$inc/xsimd/config" "$root/share/cmake/xsimd"
      echo '// xsimd' >"$inc/xsimd/xsimd.hpp"
      printf '#define XSIMD_VERSION_MAJOR 8\n#define XSIMD_VERSION_MINOR 1\n#define XSIMD_VERSION_PATCH 0\n' \
        >"$inc/xsimd/config/xsimd_config.hpp"
      touch "$root/share/cmake/xsimd/xsimdConfig.cmake" ;;
    libxtensor-dev)
      v=${v:-24}
      mkdir -p "$inc/xtensor" "$root/share/cmake/xtensor"
      echo '// xarray' >"$inc/xtensor/xarray.hpp"
      printf '#define XTENSOR_VERSION_MAJOR 0\n#define XTENSOR_VERSION_MINOR %s\n#define XTENSOR_VERSION_PATCH 3\n' \
        "$v" >"$inc/xtensor/xtensor_config.hpp"
      touch "$root/share/cmake/xtensor/xtensorConfig.cmake" ;;
    libxtensor-blas-dev)
      mkdir -p "$inc/xtensor-blas"
      echo '// xlinalg' >"$inc/xtensor-blas/xlinalg.hpp"
      printf '#define XTENSOR_BLAS_VERSION_MAJOR 0\n#define XTENSOR_BLAS_VERSION_MINOR 20\n' \
        >"$inc/xtensor-blas/xblas_config.hpp"
      echo '#define XTENSOR_BLAS_VERSION_PATCH 0' >>"$inc/xtensor-blas/xblas_config.hpp" ;;
    libopenblas-dev)
      mkdir -p "$inc/x86_64-linux-gnu" "$root/lib/x86_64-linux-gnu"
      echo '// cblas' >"$inc/x86_64-linux-gnu/cblas.h"
      touch "$root/lib/x86_64-linux-gnu/libopenblas.so" ;;
    catch2)
      v=${v:-2}
      mkdir -p "$inc/catch2" "$root/lib/cmake/Catch2"
      printf '#define CATCH_VERSION_MAJOR %s\n#define CATCH_VERSION_MINOR 13\n' "$v" >"$inc/catch2/catch.hpp"
      touch "$root/lib/cmake/Catch2/Catch2Config.cmake" ;;
    libbenchmark-dev)
      mkdir -p "$inc/benchmark" "$root/lib/x86_64-linux-gnu/cmake/benchmark"
      echo '// benchmark' >"$inc/benchmark/benchmark.h"
      touch "$root/lib/x86_64-linux-gnu/cmake/benchmark/benchmarkConfig.cmake" ;;
    libzip-dev)
      mkdir -p "$inc" "$root/lib/x86_64-linux-gnu"
      echo '// zip' >"$inc/zip.h"
      touch "$root/lib/x86_64-linux-gnu/libzip.so" ;;
    libdlpack-dev)
      mkdir -p "$inc/dlpack"
      echo '// dlpack' >"$inc/dlpack/dlpack.h" ;;
    doxygen | pkg-config)
      mkdir -p "$root/bin"
      printf '#!/bin/sh\nexit 0\n' >"$root/bin/$pkg"
      chmod +x "$root/bin/$pkg" ;;
    libopenmpi-dev)  # Debian points /usr/include/<triplet>/mpi at Open MPI's include directory
      mkdir -p "$inc/x86_64-linux-gnu/mpi"
      echo '// mpi' >"$inc/x86_64-linux-gnu/mpi/mpi.h" ;;
    openmpi-bin)
      mkdir -p "$root/bin"
      printf '#!/bin/sh\nexit 0\n' >"$root/bin/mpirun"
      chmod +x "$root/bin/mpirun" ;;
    clang-14)  # answers -dumpversion and -print-resource-dir (under ROOT/lib/clang/14)
      mkdir -p "$root/bin"
      printf '#!/bin/sh\ncase "$1" in -dumpversion) echo 14.0.6 ;; -print-resource-dir) echo %s/lib/clang/14 ;; esac\n' \
        "$root" >"$root/bin/clang++-14"
      chmod +x "$root/bin/clang++-14" ;;
    libclang-rt-14-dev)
      mkdir -p "$root/lib/clang/14/lib/linux"
      touch "$root/lib/clang/14/lib/linux/libclang_rt.asan-$(uname -m).a" ;;
    g++ | cmake | make) ;;  # the fake tools read their versions from the environment
    *) echo "fake apt-get: unknown package $pkg" >&2; return 1 ;;
  esac
}

if [ "${1:-}" = --provide ]; then
  provide "$2" "$3"
  exit 0
fi

# ---- the fake machine ---------------------------------------------------------------------

here=$(cd "$(dirname "$0")" && pwd)
self="$here/$(basename "$0")"
repo=${1:-$(cd "$here/../.." && pwd)}
script="$repo/scripts/install-deps.sh"
[ -f "$script" ] || { echo "no $script" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/bin
mkdir -p "$bin"

cat >"$bin/g++" <<'EOF'
#!/usr/bin/env bash
case " $* " in
  *" --version "*) echo "g++ (Debian $FAKE_GCC_VERSION-1) $FAKE_GCC_VERSION" ;;
  *" -dumpfullversion "*) echo "$FAKE_GCC_VERSION" ;;
  *" -print-search-dirs "*) echo "install: /fake/"; echo "libraries: =$FAKE_LIB_DIRS" ;;
  *" -v "*)
    cat >/dev/null
    {
      echo '#include "..." search starts here:'
      echo '#include <...> search starts here:'
      IFS=: read -r -a dirs <<<"$FAKE_INCLUDE_DIRS"
      for d in "${dirs[@]}"; do echo " $d"; done
      echo 'End of search list.'
    } >&2 ;;
  *) exit 1 ;;
esac
EOF
cat >"$bin/cmake" <<'EOF'
#!/usr/bin/env bash
[ "${1:-}" = --version ] && echo "cmake version $FAKE_CMAKE_VERSION"
EOF
printf '#!/bin/sh\nexit 0\n' >"$bin/make"
# passwordless sudo
cat >"$bin/sudo" <<'EOF'
#!/usr/bin/env bash
[ "${1:-}" = -n ] && shift
exec "$@"
EOF
# a machine with libboost1.81-dev and no libboost-dev package (the script must not ask dpkg)
cat >"$bin/dpkg-query" <<'EOF'
#!/usr/bin/env bash
echo "dpkg-query $*" >>"$FAKE_APT_LOG.dpkg"
for a in "$@"; do
  case "$a" in libboost1.81-dev) printf 'install ok installed'; exit 0 ;; esac
done
exit 1
EOF
# apt-get: records each call (arguments, DEBIAN_FRONTEND, where stdin comes from) and installs
# the fake packages
cat >"$bin/apt-get" <<EOF
#!/usr/bin/env bash
echo "apt-get \$* | DEBIAN_FRONTEND=\${DEBIAN_FRONTEND:-} | stdin=\$(readlink /proc/self/fd/0)" >>"\$FAKE_APT_LOG"
[ "\$1" = install ] || exit 0
for p in "\$@"; do
  case "\$p" in -*|install) ;; *) [ "\${FAKE_APT_BROKEN:-0}" = 1 ] || bash "$self" --provide "\$FAKE_ROOT" "\$p" ;; esac
done
EOF
chmod +x "$bin"/*

all_pkgs=(libboost1.81-dev xtl-dev libxsimd-dev libxtensor-dev libxtensor-blas-dev libopenblas-dev libzip-dev catch2
          libdlpack-dev doxygen pkg-config libbenchmark-dev libopenmpi-dev openmpi-bin clang-14 libclang-rt-14-dev)

# new_machine PACKAGE...: a fresh fake /usr with those packages' files
root=""
new_machine() {
  root=$tmp/m$RANDOM$RANDOM/usr
  mkdir -p "$root/include" "$root/lib/x86_64-linux-gnu"
  local p
  for p in "$@"; do provide "$root" "$p"; done
}

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run_script ENV...: runs install-deps.sh on the current fake machine; output in $out, status in $rc
out=""
rc=0
run_script() {
  : >"$tmp/apt.log"
  rc=0
  out=$(env PATH="$bin:$PATH" CXX=g++ FAKE_GCC_VERSION=12.2.0 FAKE_CMAKE_VERSION=3.25.1 FAKE_ROOT="$root" \
          FAKE_INCLUDE_DIRS="$root/include/x86_64-linux-gnu:$root/include" FAKE_LIB_DIRS="$root/lib/x86_64-linux-gnu" \
          FAKE_APT_LOG="$tmp/apt.log" XFUNC_APT_GET="$bin/apt-get" CMAKE_PREFIX_PATH= \
          XFUNC_DEPS_INCLUDE_DIRS="$root/include/x86_64-linux-gnu:$root/include" \
          XFUNC_DEPS_LIB_DIRS="$root/lib/x86_64-linux-gnu" XFUNC_DEPS_MPIRUN="$root/bin/mpirun" \
          XFUNC_DEPS_DOXYGEN="$root/bin/doxygen" XFUNC_DEPS_PKG_CONFIG="$root/bin/pkg-config" \
          XFUNC_DEPS_SANITIZER_CXX="$root/bin/clang++-14" \
          "$@" bash "$script" 2>&1 </dev/null) || rc=$?
}

# expect_plan NAME "PACKAGES" ENV...: a dry run plans exactly PACKAGES ("" for nothing) and
# changes nothing
expect_plan() {
  local name=$1 want=$2 got
  shift 2
  run_script XFUNC_INSTALL_DRY_RUN=1 "$@"
  if [ "$rc" != 0 ]; then fail "$name: exit status $rc"; echo "$out" >&2; return; fi
  if grep -q '^xfunc: nothing to install$' <<<"$out"; then got=""
  else got=$(sed -n 's/^xfunc: would install: //p' <<<"$out"); fi
  [ "$got" = "$want" ] || { fail "$name: planned '$got', expected '$want'"; echo "$out" >&2; }
  [ ! -s "$tmp/apt.log" ] || fail "$name: a dry run called apt-get: $(cat "$tmp/apt.log")"
  [ ! -s "$tmp/apt.log.dpkg" ] || fail "$name: the script asked dpkg about package names"
}

# ---- dry runs -----------------------------------------------------------------------------

# The case that broke scripts/demo.sh and scripts/test.sh: Boost (with Hana) from
# libboost1.81-dev, no libboost-dev package. Nothing is missing, so nothing is installed.
new_machine "${all_pkgs[@]}"
expect_plan "libboost1.81-dev machine" ""
grep -q 'ok       Boost >= 1.71 with Hana: Boost 1.81.0' <<<"$out" || fail "Boost 1.81 not reported: $out"

# The include path taken from the compiler (`g++ -E -x c++ - -v`), not given
run_script XFUNC_INSTALL_DRY_RUN=1 XFUNC_DEPS_INCLUDE_DIRS= XFUNC_DEPS_LIB_DIRS=
grep -q '^xfunc: nothing to install$' <<<"$out" || fail "include path from the compiler: $out"
grep -q "include path: $root/include/x86_64-linux-gnu $root/include;" <<<"$out" || fail "compiler include path: $out"

# Each unmet need plans its one package, and only that
new_machine xtl-dev libxsimd-dev libxtensor-dev libxtensor-blas-dev libopenblas-dev libzip-dev catch2 libdlpack-dev doxygen pkg-config libbenchmark-dev libopenmpi-dev openmpi-bin clang-14 libclang-rt-14-dev
expect_plan "no Boost" "libboost-dev"
provide "$root" libboost1.65-dev 106500
expect_plan "Boost 1.65 (older than the 1.71 CMake asks for)" "libboost-dev"
provide "$root" libboost1.81-dev 108100
rm "$root/include/boost/hana.hpp"
expect_plan "Boost without Hana" "libboost-dev"

new_machine libboost1.81-dev libxsimd-dev libxtensor-dev libxtensor-blas-dev libopenblas-dev libzip-dev catch2 libdlpack-dev doxygen pkg-config libbenchmark-dev libopenmpi-dev openmpi-bin clang-14 libclang-rt-14-dev
expect_plan "no xtl" "xtl-dev"
provide "$root" xtl-dev
rm "$root/share/cmake/xtl/xtlConfig.cmake"
expect_plan "xtl headers without its CMake package file" "xtl-dev"
mkdir -p "$tmp/prefix/lib/cmake/xtl" && touch "$tmp/prefix/lib/cmake/xtl/xtl-config.cmake"
expect_plan "xtl's CMake package file under CMAKE_PREFIX_PATH" "" CMAKE_PREFIX_PATH="$tmp/prefix"

new_machine "${all_pkgs[@]}"
rm -r "$root/include/xtensor"
mkdir -p "$root/include/xtensor/containers"
echo '// xarray' >"$root/include/xtensor/containers/xarray.hpp"  # the 0.26 layout
expect_plan "xtensor 0.26 layout" "libxtensor-dev"
provide "$root" libxtensor-dev 23
expect_plan "xtensor 0.23" "libxtensor-dev"

new_machine "${all_pkgs[@]}"
rm "$root/lib/x86_64-linux-gnu/libopenblas.so"
expect_plan "no libopenblas.so" "libopenblas-dev"
new_machine "${all_pkgs[@]}"
rm "$root/include/x86_64-linux-gnu/cblas.h"
expect_plan "no cblas.h" "libopenblas-dev"

new_machine "${all_pkgs[@]}"
provide "$root" catch2 3
expect_plan "Catch2 3" "catch2"
rm "$root/include/catch2/catch.hpp"
expect_plan "no catch2/catch.hpp" "catch2"

new_machine libboost1.81-dev xtl-dev libxsimd-dev libxtensor-dev libxtensor-blas-dev libopenblas-dev libzip-dev catch2 libdlpack-dev doxygen pkg-config libopenmpi-dev openmpi-bin clang-14 libclang-rt-14-dev
expect_plan "no Google Benchmark" "libbenchmark-dev"
expect_plan "no Google Benchmark, not needed" "" XFUNC_DEPS_BENCHMARKS=0

new_machine libboost1.81-dev xtl-dev libxsimd-dev libxtensor-dev libxtensor-blas-dev libopenblas-dev libzip-dev catch2 libdlpack-dev doxygen pkg-config libbenchmark-dev clang-14 libclang-rt-14-dev
expect_plan "no Open MPI" "libopenmpi-dev openmpi-bin"
expect_plan "no Open MPI, not needed" "" XFUNC_DEPS_DISTRIBUTED=0
provide "$root" openmpi-bin
expect_plan "mpirun without the MPI headers" "libopenmpi-dev"

# The needs added with npz files, DLPack, the API reference and the pkg-config check
new_machine "${all_pkgs[@]}"
rm "$root/include/zip.h"
expect_plan "no zip.h" "libzip-dev"
new_machine "${all_pkgs[@]}"
rm "$root/lib/x86_64-linux-gnu/libzip.so"
expect_plan "no libzip.so" "libzip-dev"
new_machine "${all_pkgs[@]}"
rm -r "$root/include/dlpack" "$root/bin/doxygen" "$root/bin/pkg-config"
expect_plan "no DLPack header, doxygen or pkg-config" "libdlpack-dev doxygen pkg-config"
expect_plan "no DLPack header, doxygen or pkg-config, no tests" "" XFUNC_DEPS_TESTS=0

# The sanitizer build's Clang and its runtime
new_machine "${all_pkgs[@]}"
rm -r "$root/bin/clang++-14" "$root/lib/clang"
expect_plan "no Clang" "clang-14 libclang-rt-14-dev"
expect_plan "no Clang, no tests" "" XFUNC_DEPS_TESTS=0
expect_plan "no Clang, no sanitizer build" "" XFUNC_DEPS_SANITIZERS=0
provide "$root" clang-14
expect_plan "Clang without its sanitizer runtime" "libclang-rt-14-dev"

new_machine "${all_pkgs[@]}"
expect_plan "g++ 10" "g++" FAKE_GCC_VERSION=10.2.1
expect_plan "cmake 3.18" "cmake" FAKE_CMAKE_VERSION=3.18.4
expect_plan "no compiler" "g++" CXX=no-such-compiler-xfunc
new_machine
expect_plan "an empty machine" "libboost-dev xtl-dev libxsimd-dev libxtensor-dev libxtensor-blas-dev libopenblas-dev libzip-dev catch2 libdlpack-dev doxygen pkg-config clang-14 libclang-rt-14-dev libbenchmark-dev libopenmpi-dev openmpi-bin"

# ---- installing (with the fake apt-get and sudo) ------------------------------------------

new_machine libboost1.81-dev libxsimd-dev libxtensor-dev libxtensor-blas-dev libopenblas-dev libzip-dev catch2 libdlpack-dev doxygen pkg-config libopenmpi-dev openmpi-bin clang-14 libclang-rt-14-dev
run_script
[ "$rc" = 0 ] || { fail "install: exit status $rc"; echo "$out" >&2; }
grep -q '^xfunc: all build dependencies are met$' <<<"$out" || fail "install: not met afterwards: $out"
want="apt-get update -qq | DEBIAN_FRONTEND=noninteractive | stdin=/dev/null
apt-get install -y -qq --no-install-recommends xtl-dev libbenchmark-dev | DEBIAN_FRONTEND=noninteractive | stdin=/dev/null"
[ "$(cat "$tmp/apt.log")" = "$want" ] || fail "install: apt-get calls were: $(cat "$tmp/apt.log")"
[ ! -s "$tmp/apt.log.dpkg" ] || fail "install: the script asked dpkg about package names"

# nothing missing: apt-get is not even updated
run_script
if [ "$rc" != 0 ] || [ -s "$tmp/apt.log" ]; then
  fail "install with nothing missing: status $rc, apt-get: $(cat "$tmp/apt.log")"
fi

# a package that does not provide what was missing: the script says so and fails
new_machine libboost1.81-dev xtl-dev libxsimd-dev libxtensor-dev libxtensor-blas-dev libzip-dev catch2 libdlpack-dev doxygen pkg-config libbenchmark-dev libopenmpi-dev openmpi-bin clang-14 libclang-rt-14-dev
run_script FAKE_APT_BROKEN=1
[ "$rc" != 0 ] || fail "install that provides nothing: exit status 0"
grep -q 'still unmet after installing libopenblas-dev: \[OpenBLAS' <<<"$out" || fail "install that provides nothing: $out"

if [ "$failures" -gt 0 ]; then
  echo "test_install_deps: $failures failure(s)" >&2
  exit 1
fi
echo "test_install_deps: all passed"
