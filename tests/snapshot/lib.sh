# lib.sh - shared by the snapshot test scripts (sourced).
# Provides: STPROF, PY (a Python with torch: Debian's 1.13), a scratch dir T
# (removed on exit) holding the constructed snapshots of make_snapshots.py,
# fail MSG, skip MSG (exit 77), expect_eq WHAT GOT WANT, events FILE.stp
# (the dump without the process line, which names the file).
set -eu
: "${STPROF_BUILD:?run through ctest}"
STPROF="$STPROF_BUILD/stprof"
PY="${STPROF_PYTHON:-/usr/bin/python3}"
HERE="$(cd "$(dirname "$0")" && pwd)"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }
events() { "$STPROF" dump -s "$1" | grep -v ' process '; }
"$PY" "$HERE/make_snapshots.py" "$T" || fail "cannot make the test snapshots"
