#!/usr/bin/env bash
# check_failure.sh PROGRAM MPIRUN...: each failure scenario of dist_failure must end the job with a
# non-zero status well within its time limit, and say why.
set -uo pipefail
prog=$1
shift
fail=0
for scenario in throw unwind absent; do
  start=$(date +%s)
  out=$(timeout 90 "$@" -np 2 "$prog" "$scenario" 2>&1)
  rc=$?
  took=$(( $(date +%s) - start ))
  echo "--- $scenario: exit status $rc after ${took} s"
  echo "$out" | head -n 20
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    echo "FAIL: scenario $scenario should end the job with an error (124 means it hung until the timeout)"
    fail=1
  fi
  case $scenario in
    throw) expect="rank 1 fails before the collective" ;;
    unwind) expect="an exception is leaving the scope of xf::dist::environment" ;;
    absent) expect="waited" ;;
  esac
  if ! printf '%s' "$out" | grep -q "$expect"; then
    echo "FAIL: scenario $scenario should print \"$expect\""
    fail=1
  fi
  if printf '%s' "$out" | grep -q "should not get here"; then
    echo "FAIL: scenario $scenario let rank 0 finish its all_reduce alone"
    fail=1
  fi
done
exit $fail
