#!/bin/sh
# Leaks on a real program (leak_program.c): the leak that grows every
# iteration is the only finding; libc's stdout buffer, a cache filled once
# and teardown's allocation are set aside and counted; --iterations none
# gives no classes and no host leak.
set -eu
: "${STPROF_BUILD:?run through ctest}"
S="$STPROF_BUILD/stprof"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$S" record -q -o "$T/l.stp" "$STPROF_BUILD/det_leak_program" >/dev/null
"$S" report --top 20 "$T/l.stp" >"$T/r.txt"
grep -q "Memory leak: 12 objects, 11.7 KiB" "$T/r.txt" || fail "the growing leak: $(grep -A3 Findings "$T/r.txt")"
[ "$(grep -c "Memory leak:" "$T/r.txt")" = 1 ] || fail "more than one leak finding: $(grep "Memory leak" "$T/r.txt")"
grep -q "set aside: 3 never-freed objects" "$T/r.txt" || fail "set aside: $(grep -A2 'set aside' "$T/r.txt")"
"$S" report --format json "$T/l.stp" >"$T/r.json"
grep -q '"leaks_set_aside":{"objects":3,' "$T/r.json" || fail "json leaks_set_aside"
"$S" report --iterations none "$T/l.stp" >"$T/n.txt"
grep -q "^Classes" "$T/n.txt" && fail "--iterations none printed classes"
grep -q "Memory leak" "$T/n.txt" && fail "--iterations none found host leaks"
grep -q "set aside: 15 never-freed objects" "$T/n.txt" || fail "none: $(grep -A1 'set aside' "$T/n.txt")"
# a bounded timeline draws the objects with findings first: --top 1 draws a
# leaked 1000-byte block, not the 100000-byte work buffer
"$S" export -q --top 1 "$T/l.stp" -o "$T/t1.pftrace"
grep -aq "1000 B" "$T/t1.pftrace" || fail "--top 1 did not draw a leaked block"
grep -aq "97.66 KiB" "$T/t1.pftrace" && fail "--top 1 drew the work buffer instead of a finding's object"
echo ok
