#!/usr/bin/env bash
# Makes sure the machine has what xfunc's build needs, installing Debian packages only for the
# needs that are unmet. It checks what the build uses (headers in the compiler's include path
# and their versions, libraries, tools), not package names: Boost may come from libboost-dev or
# any libboost1.NN-dev, for example, and nothing is installed for a need that is already met.
#
# Needs (package installed when unmet):
#   C++20 compiler: ${CXX:-g++}, GCC >= 12 or Clang >= 14          g++
#   cmake >= 3.20                                                  cmake
#   make                                                           make
#   Boost >= 1.71 with Hana (boost/version.hpp, boost/hana.hpp)    libboost-dev
#   xtl >= 0.7 (xtl/xtl_config.hpp)                               xtl-dev
#   xsimd >= 8 (xsimd/xsimd.hpp)                                   libxsimd-dev
#   xtensor 0.24 or 0.25 (xtensor/xarray.hpp)                      libxtensor-dev
#   xtensor-blas >= 0.20 (xtensor-blas/xlinalg.hpp)                libxtensor-blas-dev
#   OpenBLAS: cblas.h and libopenblas.so                           libopenblas-dev
#   libzip: zip.h and libzip.so (npz files)                        libzip-dev
#   Catch2 2.x (catch2/catch.hpp; tests)                           catch2
#   DLPack header (dlpack/dlpack.h; tests of <xfunc/dlpack.hpp>)   libdlpack-dev
#   doxygen (tests: the API reference builds without warnings)     doxygen
#   pkg-config (tests: the installed xfunc.pc works)               pkg-config
#   Clang >= 14 (tests: the ASan+UBSan build)                       clang-14
#   Clang's sanitizer runtime (libclang_rt.asan; tests)             libclang-rt-14-dev
#   Google Benchmark (benchmark/benchmark.h; benchmarks only)      libbenchmark-dev
#   MPI headers (mpi.h or mpi/mpi.h; xfunc::distributed)           libopenmpi-dev
#   mpirun (xfunc::distributed tests and examples)                 openmpi-bin
# xtl, xsimd, xtensor, Catch2 and Google Benchmark also need their CMake package files
# (<Name>Config.cmake or <name>-config.cmake) under the prefix their headers are in, or under
# $CMAKE_PREFIX_PATH.
#
# Runs as root, or as a user with passwordless sudo; never reads stdin (apt-get runs with
# DEBIAN_FRONTEND=noninteractive and </dev/null). Exits non-zero when a need is still unmet.
#
# Environment:
#   XFUNC_INSTALL_DRY_RUN=1   report the needs and print what would be installed; change nothing
#   XFUNC_DEPS_TESTS=0        the needs marked "tests" are not needed (no tests will be built)
#   XFUNC_DEPS_BENCHMARKS=0   Google Benchmark is not needed (no benchmarks will be built)
#   XFUNC_DEPS_SANITIZERS=0   Clang is not needed (the tests will not be built under the
#                             sanitizers; default: needed when the tests are)
#   XFUNC_DEPS_SANITIZER_CXX  the Clang to look for (default: clang++-14, else clang++, in PATH)
#   XFUNC_DEPS_DISTRIBUTED=0  Open MPI is not needed (xfunc::distributed will not be built)
#   XFUNC_DEPS_MPIRUN         the mpirun to look for (default: mpirun in PATH)
#   XFUNC_DEPS_DOXYGEN, XFUNC_DEPS_PKG_CONFIG   the doxygen and pkg-config to look for (default:
#                             those in PATH)
#   XFUNC_DEPS_INCLUDE_DIRS   include directories to search, ':'-separated (default: those the
#                             compiler searches, from `$CXX -E -x c++ - -v`)
#   XFUNC_DEPS_LIB_DIRS       library directories to search, ':'-separated (default: the
#                             compiler's, from `$CXX -print-search-dirs`)
#   XFUNC_APT_GET             the apt-get to run (default: apt-get)
set -euo pipefail
shopt -s nullglob

dry_run=${XFUNC_INSTALL_DRY_RUN:-0}
want_tests=${XFUNC_DEPS_TESTS:-1}
want_benchmark=${XFUNC_DEPS_BENCHMARKS:-1}
want_sanitizers=${XFUNC_DEPS_SANITIZERS:-$want_tests}
want_distributed=${XFUNC_DEPS_DISTRIBUTED:-1}
mpirun_cmd=${XFUNC_DEPS_MPIRUN:-mpirun}
apt_get=${XFUNC_APT_GET:-apt-get}
cxx=${CXX:-g++}

# ---- helpers -------------------------------------------------------------------------------

# version_ge A B: whether dotted version A >= B
version_ge() {
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

# The value of `#define MACRO <number>` in FILE (empty if none).
define_value() {
  sed -n "s/^[[:space:]]*#[[:space:]]*define[[:space:]]\{1,\}$2[[:space:]]\{1,\}\([0-9]\{1,\}\).*/\1/p" "$1" | head -n1
}

include_dirs=()
lib_dirs=()
load_search_dirs() {
  include_dirs=()
  lib_dirs=()
  local line in_list=0
  if [ -n "${XFUNC_DEPS_INCLUDE_DIRS:-}" ]; then
    IFS=: read -r -a include_dirs <<<"$XFUNC_DEPS_INCLUDE_DIRS"
  elif command -v "$cxx" >/dev/null 2>&1; then
    while IFS= read -r line; do
      case "$line" in
        '#include <...> search starts here:'*) in_list=1 ;;
        'End of search list.'*) in_list=0 ;;
        *) if [ "$in_list" = 1 ]; then
             line=${line# }
             include_dirs+=("${line% (framework directory)}")
           fi ;;
      esac
    done < <("$cxx" -E -x c++ - -v 2>&1 </dev/null || true)
  fi
  if [ -n "${XFUNC_DEPS_LIB_DIRS:-}" ]; then
    IFS=: read -r -a lib_dirs <<<"$XFUNC_DEPS_LIB_DIRS"
  elif command -v "$cxx" >/dev/null 2>&1; then
    line=$("$cxx" -print-search-dirs 2>/dev/null </dev/null | sed -n 's/^libraries: =//p' || true)
    IFS=: read -r -a lib_dirs <<<"$line"
  fi
}

# The first include directory holding HEADER, as the compiler would find it (empty if none).
find_header() {
  local d
  for d in "${include_dirs[@]}"; do
    if [ -n "$d" ] && [ -f "$d/$1" ]; then
      printf '%s\n' "$d"
      return 0
    fi
  done
  return 1
}

# Whether a library directory holds FILE (e.g. libopenblas.so).
find_library() {
  local d
  for d in "${lib_dirs[@]}"; do
    if [ -n "$d" ] && [ -e "$d/$1" ]; then
      printf '%s\n' "$d"
      return 0
    fi
  done
  return 1
}

# Whether CMake can find package NAME: a NameConfig.cmake / name-config.cmake under the prefix
# of include directory DIR (DIR minus its /include... part) or under $CMAKE_PREFIX_PATH.
has_cmake_config() {
  local name=$1 dir=$2 lower prefix f
  lower=$(printf '%s' "$name" | tr '[:upper:]' '[:lower:]')
  local prefixes=("${dir%/include*}")
  if [ -n "${CMAKE_PREFIX_PATH:-}" ]; then
    local extra=()
    IFS=: read -r -a extra <<<"$CMAKE_PREFIX_PATH"
    prefixes+=("${extra[@]}")
  fi
  for prefix in "${prefixes[@]}"; do
    [ -n "$prefix" ] || continue
    for f in "$prefix"/{lib,lib64,lib/*,share}/cmake/"$name"*/{"$name"Config,"$lower"-config}.cmake \
             "$prefix"/{lib,lib64,lib/*,share}/"$name"*/cmake/{"$name"Config,"$lower"-config}.cmake; do
      [ -f "$f" ] && return 0
    done
  done
  return 1
}

# ---- the needs -----------------------------------------------------------------------------

unmet_pkgs=()   # one package per unmet need
unmet_needs=()
report() {  # report STATUS NEED DETAIL [PACKAGE]
  if [ "$1" = ok ]; then
    printf '  ok       %s: %s\n' "$2" "$3"
  else
    printf '  missing  %s: %s (package %s)\n' "$2" "$3" "$4"
    unmet_pkgs+=("$4")
    unmet_needs+=("$2")
  fi
}

check_compiler() {
  local need="C++20 compiler ($cxx: GCC >= 12 or Clang >= 14)" ver min=12 kind=GCC
  if ! command -v "$cxx" >/dev/null 2>&1; then
    report missing "$need" "$cxx not found" g++
    return
  fi
  local first
  first=$("$cxx" --version 2>/dev/null </dev/null | head -n1 || true)
  case "$first" in
    *[Cc]lang*) kind=Clang min=14
                ver=$("$cxx" -dumpversion 2>/dev/null </dev/null | head -n1 || true) ;;
    *) ver=$("$cxx" -dumpfullversion -dumpversion 2>/dev/null </dev/null | head -n1 || true) ;;
  esac
  if [ -n "$ver" ] && version_ge "$ver" "$min"; then
    report ok "$need" "$kind $ver"
  else
    report missing "$need" "$kind ${ver:-of unknown version} is too old" g++
  fi
}

check_cmake() {
  local need="cmake >= 3.20" ver
  if ! command -v cmake >/dev/null 2>&1; then
    report missing "$need" "cmake not found" cmake
    return
  fi
  ver=$(cmake --version 2>/dev/null </dev/null | sed -n 's/^cmake version \([0-9][0-9.]*\).*/\1/p' | head -n1)
  if [ -n "$ver" ] && version_ge "$ver" 3.20; then
    report ok "$need" "$ver"
  else
    report missing "$need" "cmake ${ver:-of unknown version} is too old" cmake
  fi
}

check_make() {
  if command -v make >/dev/null 2>&1; then
    report ok make "$(command -v make)"
  else
    report missing make "make not found" make
  fi
}

check_boost() {
  local need="Boost >= 1.71 with Hana" dir hana v
  if ! dir=$(find_header boost/version.hpp); then
    report missing "$need" "boost/version.hpp not found" libboost-dev
    return
  fi
  v=$(define_value "$dir/boost/version.hpp" BOOST_VERSION)
  if [ -z "$v" ] || [ "$v" -lt 107100 ]; then
    report missing "$need" "Boost ${v:+$((v / 100000)).$((v / 100 % 1000)) }in $dir is too old" libboost-dev
  elif ! hana=$(find_header boost/hana.hpp); then
    report missing "$need" "boost/hana.hpp not found (Boost $((v / 100000)).$((v / 100 % 1000)) in $dir)" libboost-dev
  else
    report ok "$need" "Boost $((v / 100000)).$((v / 100 % 1000)).$((v % 100)) in $dir${hana:+ (Hana in $hana)}"
  fi
}

# check_versioned NEED PACKAGE CMAKE_NAME HEADER VERSION_FILE MACRO_PREFIX MIN [MAX_EXCLUSIVE]
check_versioned() {
  local need=$1 pkg=$2 cmake_name=$3 header=$4 vfile=$5 macro=$6 min=$7 max=${8:-} dir vdir ver="" major minor
  if ! dir=$(find_header "$header"); then
    report missing "$need" "$header not found" "$pkg"
    return
  fi
  if vdir=$(find_header "$vfile"); then
    major=$(define_value "$vdir/$vfile" "${macro}_MAJOR")
    minor=$(define_value "$vdir/$vfile" "${macro}_MINOR")
    if [ -n "$major" ] && [ -n "$minor" ]; then
      ver="$major.$minor.$(define_value "$vdir/$vfile" "${macro}_PATCH")"
      ver=${ver%.}
    fi
  fi
  if [ -z "$ver" ] || ! version_ge "$ver" "$min" ||
     { [ -n "$max" ] && version_ge "$ver" "$max"; }; then
    report missing "$need" "version ${ver:-unknown} in $dir does not fit" "$pkg"
  elif [ -n "$cmake_name" ] && ! has_cmake_config "$cmake_name" "$dir"; then
    report missing "$need" "$header in $dir, but no CMake package file for $cmake_name" "$pkg"
  else
    report ok "$need" "$ver in $dir"
  fi
}

# check_header_and_library NEED HEADER LIBRARY PACKAGE: a header in the include path and a
# shared library in the library path, both from PACKAGE
check_header_and_library() {
  local need="$1 ($2, $3)" inc lib
  if ! inc=$(find_header "$2"); then
    report missing "$need" "$2 not found" "$4"
  elif ! lib=$(find_library "$3"); then
    report missing "$need" "$3 not found in the library path" "$4"
  else
    report ok "$need" "$2 in $inc, $3 in $lib"
  fi
}

check_dlpack() {
  local need="DLPack header (tests)" dir
  if dir=$(find_header dlpack/dlpack.h); then
    report ok "$need" "dlpack/dlpack.h in $dir"
  else
    report missing "$need" "dlpack/dlpack.h not found" libdlpack-dev
  fi
}

# check_tool NEED COMMAND PACKAGE: whether COMMAND is in PATH
check_tool() {
  if command -v "$2" >/dev/null 2>&1; then
    report ok "$1" "$(command -v "$2")"
  else
    report missing "$1" "$2 not found" "$3"
  fi
}

check_catch2() {
  local need="Catch2 2.x (tests)" dir major
  if ! dir=$(find_header catch2/catch.hpp); then
    report missing "$need" "catch2/catch.hpp not found" catch2
    return
  fi
  major=$(define_value "$dir/catch2/catch.hpp" CATCH_VERSION_MAJOR)
  if [ "$major" != 2 ]; then
    report missing "$need" "Catch2 ${major:-of unknown version} in $dir is not 2.x" catch2
  elif ! has_cmake_config Catch2 "$dir"; then
    report missing "$need" "catch2/catch.hpp in $dir, but no CMake package file for Catch2" catch2
  else
    report ok "$need" "2.$(define_value "$dir/catch2/catch.hpp" CATCH_VERSION_MINOR) in $dir"
  fi
}

check_benchmark() {
  local need="Google Benchmark (benchmarks)" dir
  if ! dir=$(find_header benchmark/benchmark.h); then
    report missing "$need" "benchmark/benchmark.h not found" libbenchmark-dev
  elif ! has_cmake_config benchmark "$dir"; then
    report missing "$need" "benchmark/benchmark.h in $dir, but no CMake package file for benchmark" libbenchmark-dev
  else
    report ok "$need" "in $dir"
  fi
}

check_mpi() {
  local need="MPI headers (xfunc::distributed)" dir
  if dir=$(find_header mpi.h); then
    report ok "$need" "mpi.h in $dir"
  elif dir=$(find_header mpi/mpi.h); then
    report ok "$need" "mpi/mpi.h in $dir"
  else
    report missing "$need" "mpi.h not found" libopenmpi-dev
  fi
  if command -v "$mpirun_cmd" >/dev/null 2>&1; then
    report ok "mpirun (xfunc::distributed tests)" "$(command -v "$mpirun_cmd")"
  else
    report missing "mpirun (xfunc::distributed tests)" "$mpirun_cmd not found" openmpi-bin
  fi
}

# The sanitizer build's compiler (scripts/test.sh): Clang >= 14 and its ASan/UBSan runtime.
check_sanitizer_compiler() {
  local need="Clang >= 14 (tests: the ASan+UBSan build)" rt_need="Clang's sanitizer runtime (tests)" clang ver rt
  clang=${XFUNC_DEPS_SANITIZER_CXX:-$(command -v clang++-14 || command -v clang++ || echo clang++-14)}
  if ! command -v "$clang" >/dev/null 2>&1; then
    report missing "$need" "$clang not found" clang-14
    report missing "$rt_need" "no Clang" libclang-rt-14-dev
    return
  fi
  ver=$("$clang" -dumpversion 2>/dev/null </dev/null | head -n1 || true)
  if [ -n "$ver" ] && version_ge "$ver" 14; then
    report ok "$need" "$clang, Clang $ver"
  else
    report missing "$need" "$clang is Clang ${ver:-of unknown version}, too old" clang-14
  fi
  rt="$("$clang" -print-resource-dir 2>/dev/null </dev/null || true)/lib/linux/libclang_rt.asan-$(uname -m).a"
  if [ -f "$rt" ]; then
    report ok "$rt_need" "$rt"
  else
    report missing "$rt_need" "$rt not found" libclang-rt-14-dev
  fi
}

check_all() {
  unmet_pkgs=()
  unmet_needs=()
  load_search_dirs
  echo "  (include path: ${include_dirs[*]:-none found}; library path: ${#lib_dirs[@]} directories)"
  check_compiler
  check_cmake
  check_make
  check_boost
  check_versioned "xtl >= 0.7" xtl-dev xtl xtl/xtl_config.hpp xtl/xtl_config.hpp XTL_VERSION 0.7
  check_versioned "xsimd >= 8" libxsimd-dev xsimd xsimd/xsimd.hpp xsimd/config/xsimd_config.hpp XSIMD_VERSION 8
  # 0.26 moved the headers (xtensor/containers/xarray.hpp); xfunc includes the 0.24/0.25 paths
  check_versioned "xtensor 0.24 or 0.25" libxtensor-dev xtensor xtensor/xarray.hpp xtensor/xtensor_config.hpp \
    XTENSOR_VERSION 0.24 0.26
  check_versioned "xtensor-blas >= 0.20" libxtensor-blas-dev "" xtensor-blas/xlinalg.hpp \
    xtensor-blas/xblas_config.hpp XTENSOR_BLAS_VERSION 0.20
  check_header_and_library OpenBLAS cblas.h libopenblas.so libopenblas-dev
  check_header_and_library libzip zip.h libzip.so libzip-dev
  if [ "$want_tests" != 0 ]; then
    check_catch2
    check_dlpack
    check_tool "doxygen (tests)" "${XFUNC_DEPS_DOXYGEN:-doxygen}" doxygen
    check_tool "pkg-config (tests)" "${XFUNC_DEPS_PKG_CONFIG:-pkg-config}" pkg-config
  fi
  if [ "$want_sanitizers" != 0 ]; then check_sanitizer_compiler; fi
  if [ "$want_benchmark" != 0 ]; then check_benchmark; fi
  if [ "$want_distributed" != 0 ]; then check_mpi; fi
}

# ---- main ----------------------------------------------------------------------------------

echo "xfunc: checking build dependencies"
check_all
if [ ${#unmet_pkgs[@]} -eq 0 ]; then
  echo "xfunc: nothing to install"
  exit 0
fi
# one package per need, in order, without repeats
pkgs=()
for p in "${unmet_pkgs[@]}"; do
  case " ${pkgs[*]} " in *" $p "*) ;; *) pkgs+=("$p") ;; esac
done
if [ "$dry_run" = 1 ]; then
  echo "xfunc: would install: ${pkgs[*]}"
  exit 0
fi

run_root=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true </dev/null 2>/dev/null; then
    run_root=(sudo -n)
  else
    echo "xfunc: needs root to install ${pkgs[*]}: run this script as root or with passwordless sudo," \
         "or install them yourself (apt-get install ${pkgs[*]})" >&2
    exit 1
  fi
fi
echo "xfunc: installing ${pkgs[*]}"
"${run_root[@]}" env DEBIAN_FRONTEND=noninteractive "$apt_get" update -qq </dev/null
"${run_root[@]}" env DEBIAN_FRONTEND=noninteractive "$apt_get" install -y -qq --no-install-recommends "${pkgs[@]}" \
  </dev/null

echo "xfunc: checking again"
check_all
if [ ${#unmet_needs[@]} -gt 0 ]; then
  printf 'xfunc: still unmet after installing %s:' "${pkgs[*]}" >&2
  printf ' [%s]' "${unmet_needs[@]}" >&2
  printf '\n' >&2
  exit 1
fi
echo "xfunc: all build dependencies are met"
