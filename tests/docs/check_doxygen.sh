#!/usr/bin/env bash
# check_doxygen.sh <doxygen> <Doxyfile> <logfile>: builds xfunc's API reference with the given
# doxygen and Doxyfile (the one cmake/xfuncDocs.cmake configures from docs/Doxyfile.in) and fails
# when doxygen fails or writes anything to its warning log (<logfile>, the Doxyfile's
# WARN_LOGFILE): every public declaration in include/xfunc needs a doc comment, and the guides'
# links must resolve. ctest runs it as `doxygen_reference`.
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: $0 <doxygen> <Doxyfile> <logfile>" >&2
  exit 2
fi
doxygen=$1
doxyfile=$2
log=$3

# Doxygen opens the log before it creates its output directory; an old log must not count.
mkdir -p "$(dirname "$log")"
rm -f "$log"

if ! "$doxygen" "$doxyfile"; then
  echo "check_doxygen: $doxygen $doxyfile failed" >&2
  [ -s "$log" ] && cat "$log" >&2
  exit 1
fi
if [ ! -e "$log" ]; then
  echo "check_doxygen: doxygen wrote no warning log at $log (is it the Doxyfile's WARN_LOGFILE?)" >&2
  exit 1
fi
if [ -s "$log" ]; then
  count=$(grep -c 'warning:\|error:' "$log" || true)
  echo "check_doxygen: doxygen reported $count problem(s) (log: $log):" >&2
  cat "$log" >&2
  cat >&2 <<'HINT'
check_doxygen: give each public declaration named above a short `///` comment (what it is, and
why where it helps), or a `///@{ ... ///@}` group for a family of overloads; implementation
belongs in a detail namespace (docs/Doxyfile.in: EXCLUDE_SYMBOLS, EXCLUDE_PATTERNS).
HINT
  exit 1
fi
echo "check_doxygen: no warnings ($("$doxygen" --version)); the reference is in the Doxyfile's OUTPUT_DIRECTORY/html"
