# Sourced by the compile-time benchmarks (compile_time.sh, jacobians/compile_time/
# measure_compile_time.sh): `measure <source> [extra flags...]` compiles <source> with
#   "$CXX" $FLAGS [extra flags] -c
# under GNU time, REPEAT times, and prints "best_wall_seconds best_cpu_seconds max_peak_kB".
# The caller sets CXX, FLAGS and REPEAT; TMP is a scratch directory made here and removed on exit.
TIME=/usr/bin/time
if [ ! -x "$TIME" ]; then
  echo "GNU time not found at $TIME: apt-get install time" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

measure() {
  src=$1; shift
  best_s=""; best_cpu=""; max_kb=0; i=0
  while [ "$i" -lt "$REPEAT" ]; do
    # shellcheck disable=SC2086
    if ! "$TIME" -v -o "$TMP/time.txt" "$CXX" $FLAGS "$@" -c "$src" -o "$TMP/out.o" 2>"$TMP/err.txt"; then
      cat "$TMP/err.txt" >&2
      echo "compilation of $src failed" >&2
      exit 1
    fi
    s=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); t = 0; for (k = 1; k <= n; ++k) t = t * 60 + p[k]; print t }' "$TMP/time.txt")
    cpu=$(awk -F': ' '/User time|System time/ { t += $2 } END { print t }' "$TMP/time.txt")
    kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$TMP/time.txt")
    if [ -z "$best_s" ] || awk "BEGIN { exit !($s < $best_s) }"; then best_s=$s; fi
    if [ -z "$best_cpu" ] || awk "BEGIN { exit !($cpu < $best_cpu) }"; then best_cpu=$cpu; fi
    if [ "$kb" -gt "$max_kb" ]; then max_kb=$kb; fi
    i=$((i + 1))
  done
  echo "$best_s $best_cpu $max_kb"
}
