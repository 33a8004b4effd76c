#!/bin/sh
# `cmake --install` gives a working stprof: the binary and the collector
# (libstprof.so) it preloads; the installed copy records, reports and
# plans a real program from its prefix, away from the build tree.
set -eu
: "${STPROF_BUILD:?run through ctest}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$STPROF_BUILD" --prefix "$T/prefix" >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "install"; }
[ -x "$T/prefix/bin/stprof" ] || fail "no bin/stprof"
[ -f "$T/prefix/lib/libstprof.so" ] || fail "no lib/libstprof.so: $(find "$T/prefix" -type f | head)"
cd "$T"
env -u STPROF_LIB "$T/prefix/bin/stprof" -q --no-export -o ls.stp /bin/ls / >out 2>err || fail "the installed stprof cannot record: $(cat err)"
grep -q "^bin" out || fail "ls output changed"
env -u STPROF_LIB "$T/prefix/bin/stprof" info ls.stp >/dev/null || fail "info"
[ -s ls.plan ] || fail "no plan"
echo ok
