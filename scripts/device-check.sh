#!/usr/bin/env bash
# Builds and runs xfunc's CUDA tests and the CUDA-relevant benchmarks on the GPU machine, from the
# source tree and .device-bundle/ alone (scripts/device-bundle.sh made it here): no apt-get, no
# network. Run it in the repository root there, with `.device-bundle` carried
# (docs/design/device_runs.md). Logs go to "$OUT" where it is set (the device tool brings that
# folder back), else to <build dir>/logs. Ends with a summary; exits 0 only when every step passed.
#
# Steps, each under a time limit taken from one budget (XFUNC_DEVICE_CHECK_BUDGET_S, 450 s):
#   1. machine: GPU, compilers, CMake (env.log)
#   2. the bundle's libraries unpacked into the build directory; a fallback one (libgfortran, ...)
#      only where the machine lacks it
#   3. configure with the bundle only (configure.log): explicit <Package>_DIR for each package,
#      CMAKE_PREFIX_PATH/CMAKE_LIBRARY_PATH at the bundle, XFUNC_ENABLE_CUDA=ON,
#      XFUNC_ENABLE_DISTRIBUTED=OFF, no examples, no libtorch, Release
#   4. build the executables of the tests that `ctest -L cuda` selects, every target whose name
#      says cuda, and bench_kernels (plus bench_*cuda*/bench_*gpu*), all in one build that keeps
#      going past a failed target (build.log)
#   5. ctest -L cuda --output-on-failure (ctest.log)
#   6. the benchmarks with a short minimum time (bench.log)
#   7. no header or library of a bundled package came from /usr (deps.log): the compilers'
#      dependency records and the link lines are searched
#
# Environment:
#   XFUNC_DEVICE_CHECK_LOCAL=1   a dry run on a machine without a GPU (this one): a fresh scratch
#                                build directory under /tmp, -j${XFUNC_DEVICE_JOBS:-1},
#                                XFUNC_ENABLE_CUDA=ON only where a CUDA toolkit is found; tests
#                                that need a GPU skip themselves (return code 77)
#   XFUNC_DEVICE_CHECK_ISOLATE=1 (local only, as root) run the whole check in a private mount
#                                namespace where the bundled packages' headers, CMake files and
#                                libraries under /usr are hidden, so the build can only use the
#                                bundle (proves the bundle is self-contained)
#   XFUNC_DEVICE_BUNDLE          the bundle (default: <repo>/.device-bundle)
#   XFUNC_DEVICE_BUILD_DIR       the build directory (default /tmp/xfunc-device-build; local: a
#                                new /tmp/xfunc-devcheck.XXXXXX)
#   XFUNC_DEVICE_JOBS            build jobs (default 16; local 1)
#   XFUNC_DEVICE_TEST_ARGS       ctest's test selection (default: -L cuda)
#   XFUNC_DEVICE_CTEST_JOBS      tests run at once (default 1)
#   XFUNC_DEVICE_BENCH_TARGETS   benchmarks to build and run (default: bench_kernels and any
#                                bench_* target whose name has cuda or gpu); "none" for none
#   XFUNC_DEVICE_BENCH_ARGS      extra benchmark arguments (e.g. --benchmark_filter=exp)
#   XFUNC_DEVICE_BENCH_MIN_TIME  --benchmark_min_time in seconds (default 0.05)
#   XFUNC_DEVICE_WERROR          1: keep -Werror; 0: warnings do not stop the build (default: 0
#                                on the GPU machine, whose compiler differs from CI's; 1 locally)
#   XFUNC_DEVICE_CHECK_BUDGET_S  the time all steps may take together (default 450)
#   XFUNC_DEVICE_CMAKE_ARGS      more configure arguments
set -uo pipefail
shopt -s nullglob

script=$(readlink -f "${BASH_SOURCE[0]}")
repo=$(cd "$(dirname "$script")/.." && pwd)
local_run=${XFUNC_DEVICE_CHECK_LOCAL:-0}
bundle=$(readlink -f "${XFUNC_DEVICE_BUNDLE:-$repo/.device-bundle}")

# ---- isolation (local only): hide the bundled packages under /usr ----------------------------
# make_shadow SRC DST PATTERNS...: DST gets a link to each entry of SRC but those matching a
# pattern (relative to SRC); a pattern a/b makes DST/a a real directory shadowing SRC/a likewise.
make_shadow() {
  local src=$1 dst=$2 e name p hide sub
  shift 2
  mkdir -p "$dst"
  for e in "$src"/* "$src"/.[!.]*; do
    name=${e##*/}
    hide=0 sub=()
    for p in "$@"; do
      # shellcheck disable=SC2053
      if [[ $name == $p ]]; then hide=1; break; fi
      case "$p" in "$name"/*) sub+=("${p#"$name"/}") ;; esac
    done
    if [ "$hide" = 1 ]; then
      echo "hidden: $e"
    elif [ "${#sub[@]}" -gt 0 ] && [ -d "$e" ] && [ ! -L "$e" ]; then
      make_shadow "$e" "$dst/$name" "${sub[@]}"
    else
      ln -s "$e" "$dst/$name"
    fi
  done
}
# hide DIR PATTERNS...: over DIR, a view of it without the entries that match
hide() {
  local dir=$1 key
  shift
  [ -d "$dir" ] || return 0
  key=$(echo "$dir" | tr / _)
  mkdir -p "$iso/orig$key"
  mount --bind "$dir" "$iso/orig$key"
  make_shadow "$iso/orig$key" "$iso/shadow$key" "$@" >>"$iso/hidden.txt"
  mount --bind "$iso/shadow$key" "$dir"
}
if [ "${1:-}" = "__isolated" ]; then
  shift
  iso=$XFUNC_DEVICE_CHECK_ISO_DIR
  a=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  pkg_headers=(xtensor xtensor.hpp xtl xsimd xtensor-blas boost catch2 benchmark dlpack zip.h zipconf.h
               'cblas*' 'openblas*' 'lapack*' 'f77blas*')
  hide /usr/include "${pkg_headers[@]}" "${pkg_headers[@]/#/$a/}"
  hide /usr/local/include "${pkg_headers[@]}"
  # (not /usr/lib or /usr/share as a whole: GCC reaches its headers by /usr/lib/gcc/.../../../..,
  # which a link out of a shadowed /usr/lib would send elsewhere)
  hide "/usr/lib/$a" cmake 'libopenblas*' 'openblas*' 'libblas*' 'blas' 'liblapack*' 'lapack' 'libbenchmark*' \
       'libzip*' 'libgfortran*' 'libquadmath*'
  for d in /usr/lib/cmake /usr/share/cmake /usr/local/lib/cmake /usr/local/share/cmake; do
    [ -d "$d" ] && mount -t tmpfs -o size=1m xfunc-hidden "$d" && echo "hidden: $d/*" >>"$iso/hidden.txt"
  done
  echo "device-check: isolated: $(wc -l <"$iso/hidden.txt") entries under /usr hidden:"
  sed 's|^hidden: .*/||' "$iso/hidden.txt" | tr '\n' ' '
  echo
  export XFUNC_DEVICE_CHECK_ISOLATED=1
elif [ "${XFUNC_DEVICE_CHECK_ISOLATE:-0}" = 1 ] && [ -z "${XFUNC_DEVICE_CHECK_ISOLATED:-}" ]; then
  [ "$local_run" = 1 ] || { echo "device-check: XFUNC_DEVICE_CHECK_ISOLATE needs XFUNC_DEVICE_CHECK_LOCAL=1" >&2; exit 2; }
  iso=$(mktemp -d /tmp/xfunc-devcheck-iso.XXXXXX)
  XFUNC_DEVICE_CHECK_ISO_DIR=$iso unshare --mount --propagation private -- bash "$script" __isolated "$@"
  rc=$?
  # the namespace and its mounts ended with its last process: links and empty mount points are
  # left (--one-file-system: never into a mount, should one be left)
  rm -rf --one-file-system "$iso"
  exit "$rc"
fi

# ---- settings ----------------------------------------------------------------------------------
start_s=$SECONDS
budget=${XFUNC_DEVICE_CHECK_BUDGET_S:-450}
if [ "$local_run" = 1 ]; then
  build=${XFUNC_DEVICE_BUILD_DIR:-$(mktemp -d /tmp/xfunc-devcheck.XXXXXX)}
  jobs=${XFUNC_DEVICE_JOBS:-1}
  werror=${XFUNC_DEVICE_WERROR:-1}
else
  build=${XFUNC_DEVICE_BUILD_DIR:-/tmp/xfunc-device-build}
  jobs=${XFUNC_DEVICE_JOBS:-16}
  werror=${XFUNC_DEVICE_WERROR:-0}
fi
mkdir -p "$build"
build=$(readlink -f "$build")
logs=${OUT:-$build/logs}
mkdir -p "$logs"
for f in env configure build ctest ctest-LastTest bench deps summary; do rm -f "$logs/$f.log" "$logs/$f.txt"; done
read -r -a test_args <<<"${XFUNC_DEVICE_TEST_ARGS:--L cuda}"
ctest_jobs=${XFUNC_DEVICE_CTEST_JOBS:-1}
bench_min_time=${XFUNC_DEVICE_BENCH_MIN_TIME:-0.05}
read -r -a bench_args <<<"${XFUNC_DEVICE_BENCH_ARGS:-}"
read -r -a extra_cmake_args <<<"${XFUNC_DEVICE_CMAKE_ARGS:-}"

summary=()   # "STEP|STATUS|seconds|detail"
failed=0
record() {  # record STEP STATUS SECONDS DETAIL
  summary+=("$1|$2|$3|$4")
  case "$2" in FAIL|TIMEOUT) failed=1 ;; esac
  printf '\n=== device-check: %s: %s (%ss) %s\n' "$1" "$2" "$3" "$4"
}
left() {  # seconds left of the budget, at most $1 on the GPU machine (locally: no step limit)
  local l=$((budget - (SECONDS - start_s)))
  [ "$local_run" != 1 ] && [ "$l" -gt "$1" ] && l=$1
  [ "$l" -lt 1 ] && l=1
  echo "$l"
}
# run_step LOG LIMIT CMD...: runs CMD under `timeout`, its output into LOG and on the terminal;
# sets step_rc and step_s
run_step() {
  local log=$1 limit=$2 t0=$SECONDS
  shift 2
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$log"
  step_rc=${PIPESTATUS[0]}
  step_s=$((SECONDS - t0))
}
status_of() { case "$1" in 0) echo PASS ;; 124|137) echo TIMEOUT ;; *) echo FAIL ;; esac; }

finish() {
  local line step st s detail total=$((SECONDS - start_s))
  {
    echo
    echo "=================== xfunc device check: summary ==================="
    echo "machine:  $(hostname 2>/dev/null) $(gpu_name)"
    echo "mode:     $([ "$local_run" = 1 ] && echo "local dry run${XFUNC_DEVICE_CHECK_ISOLATED:+ (isolated from the packages under /usr)}" || echo device)"
    echo "bundle:   $bundle ($(du -sh "$bundle" 2>/dev/null | cut -f1))"
    echo "build:    $build"
    echo "logs:     $logs"
    for line in "${summary[@]}"; do
      IFS='|' read -r step st s detail <<<"$line"
      printf '%-10s %-8s %5ss  %s\n' "$step" "$st" "$s" "$detail"
    done
    echo "total:    ${total}s of a ${budget}s budget"
    echo "RESULT:   $([ "$failed" = 0 ] && echo PASS || echo FAIL)"
  } | tee "$logs/summary.txt"
  exit "$failed"
}
gpu_name() {
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1
  else
    echo "(no GPU)"
  fi
}

# ---- 1. machine ----------------------------------------------------------------------------------
t0=$SECONDS
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)   mode: $([ "$local_run" = 1 ] && echo local || echo device)"
  uname -a
  [ -r /etc/os-release ] && . /etc/os-release && echo "os: ${PRETTY_NAME:-?}"
  echo "cpus: $(nproc)"
  echo "gpu: $(gpu_name)"
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi 2>&1 | head -n 20
  for c in "${CXX:-g++}" cmake ninja make; do
    command -v "$c" >/dev/null 2>&1 && echo "$c: $(command -v "$c"): $("$c" --version 2>&1 | head -n1)"
  done
  ldd --version 2>&1 | head -n1
  echo "--- bundle"
  sed -n '1,/^$/p;/^Size/p' "$bundle/MANIFEST.txt" 2>/dev/null
} >"$logs/env.log" 2>&1
nvcc=${XFUNC_DEVICE_NVCC:-$(command -v nvcc || true)}
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
[ -n "$nvcc" ] && echo "nvcc: $nvcc: $("$nvcc" --version | tail -n 2 | tr '\n' ' ')" >>"$logs/env.log"
cat "$logs/env.log"
if [ ! -r "$bundle/bundle.conf" ]; then
  record bundle FAIL 0 "no $bundle/bundle.conf: run scripts/device-bundle.sh here and carry .device-bundle"
  finish
fi
# shellcheck source=/dev/null
. "$bundle/bundle.conf"
record machine PASS $((SECONDS - t0)) "$(gpu_name); ${CXX:-g++} $("${CXX:-g++}" -dumpfullversion 2>/dev/null); cmake $(cmake --version | head -n1 | awk '{print $3}')${nvcc:+; nvcc $("$nvcc" --version | sed -nE 's/.*release ([0-9.]+).*/\1/p')}"

# ---- 2. the bundle's libraries -------------------------------------------------------------------
t0=$SECONDS
rt=$build/bundle-lib
rm -rf "$rt"
mkdir -p "$rt/fallback"
unxz_to() {  # unxz_to SRC.xz DEST
  if command -v xz >/dev/null 2>&1; then
    xz -dc "$1" >"$2"
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"
  fi
}
# whether the machine's loader finds SONAME by itself (its cache, and the file still there)
have_lib() {
  local p
  for p in $(ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n { print $NF }') \
           /lib/"$XFUNC_BUNDLE_ARCH"/"$1" /usr/lib/"$XFUNC_BUNDLE_ARCH"/"$1" /lib64/"$1" /usr/lib64/"$1"; do
    [ -e "$p" ] && return 0
  done
  return 1
}
lib_ok=1 used_fallback=()
for entry in $XFUNC_BUNDLE_LIBS; do
  so=${entry%%:*} link=${entry#*:}
  unxz_to "$bundle/lib/xz/$so.xz" "$rt/$so" || lib_ok=0
  ln -sf "$so" "$rt/$link"
done
for entry in $XFUNC_BUNDLE_EXTRA_SONAMES; do
  ln -sf "$bundle/${entry%%:*}" "$rt/${entry#*:}"
done
for so in $XFUNC_BUNDLE_FALLBACK_LIBS; do
  if [ -n "${XFUNC_DEVICE_CHECK_ISOLATED:-}" ] || ! have_lib "$so"; then
    unxz_to "$bundle/lib/xz/fallback/$so.xz" "$rt/fallback/$so" || lib_ok=0
    used_fallback+=("$so")
  fi
done
export LD_LIBRARY_PATH=$rt:$rt/fallback${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# nvcc run by the build (xfunc's kernels) and by a test script (cuda_kernels_ptx) finds the
# bundle's headers through CPATH
export CPATH=$bundle/include${CPATH:+:$CPATH}
record libs "$([ "$lib_ok" = 1 ] && echo PASS || echo FAIL)" $((SECONDS - t0)) \
  "unpacked into $rt; fallback used: ${used_fallback[*]:-none}"
[ "$lib_ok" = 1 ] || finish

# ---- 3. configure --------------------------------------------------------------------------------
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cuda_args=()
if [ -n "$nvcc" ]; then
  cuda_root=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
  cuda_args=(-DXFUNC_ENABLE_CUDA=ON "-DCUDAToolkit_ROOT=$cuda_root" "-DCMAKE_CUDA_COMPILER=$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90)
  # on the GPU the backend tests and the conformance table run on the device, not the fake driver
  [ "$local_run" = 1 ] || cuda_args+=(-DXFUNC_TEST_CUDA_FAKE=OFF)
elif [ "$local_run" = 1 ]; then
  cuda_args=(-DXFUNC_ENABLE_CUDA=AUTO)
else
  cuda_args=(-DXFUNC_ENABLE_CUDA=ON)   # fails at configure, saying why
fi
pkg_args=()
for entry in $XFUNC_BUNDLE_PACKAGE_DIRS; do
  pkg_args+=("-D${entry%%=*}=$bundle/${entry#*=}")
done
launcher_args=()
if [ "$werror" != 1 ]; then
  # appended last, -Wno-error overrides the -Werror of xfunc_dev: warnings are logged, not fatal
  printf '#!/bin/sh\nexec "$@" -Wno-error\n' >"$build/no-werror.sh"
  chmod +x "$build/no-werror.sh"
  launcher_args=("-DCMAKE_CXX_COMPILER_LAUNCHER=$build/no-werror.sh")
fi
rm -f "$build/CMakeCache.txt"
run_step "$logs/configure.log" "$(left 120)" cmake -S "$repo" -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DXFUNC_BUILD_TESTS=ON -DXFUNC_BUILD_BENCHMARKS=ON -DXFUNC_BUILD_EXAMPLES=OFF \
  -DXFUNC_ENABLE_DISTRIBUTED=OFF -DXFUNC_BENCH_WITH_TORCH=OFF -DCMAKE_DISABLE_FIND_PACKAGE_Doxygen=ON \
  "${cuda_args[@]}" "${pkg_args[@]}" "${launcher_args[@]}" \
  "-DCMAKE_PREFIX_PATH=$bundle" "-DCMAKE_LIBRARY_PATH=$rt" "-DCMAKE_INCLUDE_PATH=$bundle/include" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
  -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
  "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$rt:$rt/fallback -Wl,-rpath,$rt:$rt/fallback" \
  "${extra_cmake_args[@]}"
record configure "$(status_of $step_rc)" "$step_s" "$(grep -E 'xfunc::cuda|Found BLAS|bench_kernels:' "$logs/configure.log" | sed 's/^-- //' | tr '\n' ';')"
[ "$step_rc" = 0 ] || finish

# ---- 4. build ------------------------------------------------------------------------------------
t0=$SECONDS
(cd "$build" && ctest -N "${test_args[@]}" --show-only=json-v1) >"$build/tests.json" 2>>"$logs/configure.log"
cmake --build "$build" --target help >"$build/targets.txt" 2>&1
mapfile -t known < <(sed -E 's/^\.\.\. //; s/:.*$//; s/^[[:space:]]+//; s/[[:space:]].*$//' "$build/targets.txt" |
                     grep -E '^[A-Za-z0-9_.+-]+$' | grep -vE '\.(o|i|s|obj)$' | sort -u)
known_re=" ${known[*]} "
targets=()
add_target() { case " ${targets[*]} " in *" $1 "*) ;; *) [[ $known_re == *" $1 "* ]] && targets+=("$1") ;; esac; }
# what the selected tests run: executables of the build (the first word, or any word of a script)
n_tests=0
if command -v python3 >/dev/null 2>&1; then
  n_tests=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1])).get("tests", [])))' "$build/tests.json" 2>/dev/null || echo 0)
  # (ctest gives no command for a test whose executable is not built yet: then the add_test line
  # of the CTestTestfile.cmake files, and the test's own name, stand in)
  while IFS= read -r w; do add_target "$w"; done < <(python3 -c '
import glob, json, os, re, shlex, sys
build = sys.argv[2]
listed = {}
for f in glob.glob(build + "/**/CTestTestfile.cmake", recursive=True):
    for m in re.finditer(r"^add_test\((\[=\[(.*?)\]=\]|\S+)\s+(.*)\)\s*$", open(f).read(), re.M):
        name = m.group(2) if m.group(2) is not None else m.group(1)
        try:
            listed[name] = shlex.split(m.group(3).replace("[==[", "\"").replace("]==]", "\""))
        except ValueError:
            listed[name] = m.group(3).split()
for t in json.load(open(sys.argv[1])).get("tests", []):
    print(t["name"])
    for w in t.get("command") or listed.get(t["name"], []):
        if w.startswith(build + "/"):
            print(os.path.basename(w))' "$build/tests.json" "$build")
else
  echo "device-check: no python3: building every test target" | tee -a "$logs/build.log"
  for t in "${known[@]}"; do case "$t" in test_*) add_target "$t" ;; esac; done
fi
[ -z "${XFUNC_DEVICE_TEST_ARGS:-}" ] && for t in "${known[@]}"; do
  case "$t" in *cuda*|*CUDA*) case "$t" in bench_*|run_*|*_autogen|*_tests) ;; *) add_target "$t" ;; esac ;; esac
done
benches=()
if [ "${XFUNC_DEVICE_BENCH_TARGETS:-}" = none ]; then
  :
elif [ -n "${XFUNC_DEVICE_BENCH_TARGETS:-}" ]; then
  read -r -a benches <<<"$XFUNC_DEVICE_BENCH_TARGETS"
else
  benches=(bench_kernels)
  for t in "${known[@]}"; do case "$t" in bench_*cuda*|bench_*gpu*) benches+=("$t") ;; esac; done
fi
for b in "${benches[@]}"; do add_target "$b"; done
keep_going=(-k)
[ ${#generator[@]} -gt 0 ] && keep_going=(-k 0)
echo "device-check: $n_tests tests selected by ctest ${test_args[*]}; building: ${targets[*]:-(nothing)}" | tee -a "$logs/build.log"
touch "$build/.build-start"
sleep 1
if [ ${#targets[@]} -gt 0 ]; then
  run_step "$logs/build.log" "$(left 330)" cmake --build "$build" -j "$jobs" --target "${targets[@]}" -- "${keep_going[@]}"
  build_rc=$step_rc
else
  build_rc=0
fi
built=() not_built=()
for t in "${targets[@]}"; do
  # built: its output is there, and was written by this build or is up to date
  f=$(find "$build" \( -name "$t" -o -name "lib$t.a" -o -name "lib$t.so" \) -type f -print -quit)
  if [ -n "$f" ] && { [ "$f" -nt "$build/.build-start" ] ||
       { [ -f "$build/build.ninja" ] && ninja -C "$build" -n "$t" 2>/dev/null | grep -q 'no work to do'; }; }; then
    built+=("$t")
  else
    not_built+=("$t")
  fi
done
# a benchmark that does not build is reported, but only a test target that does not build fails
bst=$(status_of "$build_rc")
if [ "$build_rc" != 0 ] && [ "$build_rc" != 124 ] && [ "$build_rc" != 137 ]; then
  bst=PASS
  for t in "${not_built[@]}"; do case " ${benches[*]} " in *" $t "*) ;; *) bst=FAIL ;; esac; done
  [ "$bst" = PASS ] && bst=WARN
fi
warnings=$(grep -c 'warning:' "$logs/build.log" 2>/dev/null || true)
record build "$bst" $((SECONDS - t0)) "built: ${built[*]:-none}${not_built:+; NOT built: ${not_built[*]}}; $warnings compiler warnings$([ "$werror" != 1 ] && echo ' (-Wno-error)')"

# ---- 5. tests ------------------------------------------------------------------------------------
if [ "$n_tests" = 0 ]; then
  record ctest FAIL 0 "no test selected by: ctest ${test_args[*]}"
else
  run_step "$logs/ctest.log" "$(left 240)" ctest --test-dir "$build" "${test_args[@]}" --output-on-failure \
    --no-tests=error --timeout 180 -j "$ctest_jobs"
  cp "$build/Testing/Temporary/LastTest.log" "$logs/ctest-LastTest.log" 2>/dev/null
  res=$(grep -E 'tests passed|tests failed' "$logs/ctest.log" | tail -n1)
  skipped=$(grep -c '\*\*\*Skipped' "$logs/ctest.log" || true)
  failed_tests=$(sed -n '/The following tests FAILED/,$p' "$logs/ctest.log" | grep -E '^[[:space:]]+[0-9]+ - ' | sed -E 's/^[[:space:]]+[0-9]+ - //' | tr '\n' ';')
  record ctest "$(status_of $step_rc)" "$step_s" "${res:-no result}; $skipped skipped${failed_tests:+; FAILED: $failed_tests}"
fi

# ---- 6. benchmarks -------------------------------------------------------------------------------
for b in "${benches[@]}"; do
  exe=$(find "$build" -name "$b" -type f -perm -u+x -print -quit)
  if [ -z "$exe" ]; then
    record "$b" WARN 0 "not built (see build.log)"
    continue
  fi
  echo "=== $b" >>"$logs/bench.log"
  # (one repetition: bench_report.hpp runs five by default, too long for this budget)
  run_step "$logs/bench.log" "$(left 120)" "$exe" "--benchmark_min_time=$bench_min_time" --benchmark_repetitions=1 \
    --benchmark_color=false "${bench_args[@]}"
  record "$b" "$(status_of $step_rc)" "$step_s" "$(grep -cE '^[A-Za-z].* (ns|us|ms|s) ' "$logs/bench.log") timing lines; table in bench.log"
done

# torch.func on the same GPU, bench_cuda's peer (where PyTorch is: the GPU machine has it)
if [ "$local_run" != 1 ] && python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
  echo "=== torch.func" >>"$logs/bench.log"
  run_step "$logs/bench.log" "$(left 60)" python3 "$repo/scripts/bench_torch_cuda.py"
  record torch "$(status_of $step_rc)" "$step_s" "$(grep -m1 'torch.func' "$logs/bench.log" | tail -n1)"
fi

# ---- 7. where the headers and libraries came from ------------------------------------------------
t0=$SECONDS
{
  if [ -f "$build/build.ninja" ]; then
    (cd "$build" && ninja -t deps)
    cat "$build/build.ninja"
  else
    find "$build" \( -name '*.d' -o -name 'compiler_depend.make' -o -name 'depend.make' -o -name 'link.txt' \) -exec cat {} +
  fi
  cat "$build/CMakeCache.txt"
} >"$build/deps.txt" 2>/dev/null
pkg_re='/usr/(local/)?include/([a-z0-9_]+-linux-gnu/)?(xtensor|xtl|xsimd|xtensor-blas|boost|catch2|benchmark|dlpack|zip\.h|zipconf\.h|cblas|openblas|f77blas|lapack)|/usr/(local/)?lib[^ ]*/(lib(open)?blas|liblapack|libbenchmark|libzip|libCatch2|libgfortran)[^ /]*'
leaks=$(grep -oE "$pkg_re[^ :]*" "$build/deps.txt" | sort -u)
from_bundle=$(grep -oE "$bundle/[^ :]*" "$build/deps.txt" | sort -u | wc -l)
{
  echo "files of the bundle in dependency records and link lines: $from_bundle"
  echo "headers and libraries of bundled packages from /usr (should be none):"
  echo "${leaks:-  none}"
  grep -E 'BLAS_LIBRARIES|XFUNC_LIBZIP|XFUNC_DLPACK|_DIR:PATH=' "$build/CMakeCache.txt" | grep -vE '^(CMAKE|FETCH)'
} >"$logs/deps.log"
cat "$logs/deps.log"
if [ -n "$leaks" ]; then
  record deps FAIL $((SECONDS - t0)) "$(echo "$leaks" | wc -l) files of bundled packages came from /usr (deps.log)"
else
  record deps PASS $((SECONDS - t0)) "$from_bundle bundle files used, none of the bundled packages from /usr"
fi
finish
