#!/bin/sh
# The text report's polish on a real program (leak_program.c, whose call
# sites differ only by line in main): --group function sums them into one
# row, --group line one row per line, --group module by module; a CPU-only trace gets a short models
# summary (--models-detail: the full section, with M_a/M_r/E explained);
# findings explain their units.
set -eu
: "${STPROF_BUILD:?run through ctest}"
S="$STPROF_BUILD/stprof"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$S" record -q -o "$T/l.stp" "$STPROF_BUILD/det_leak_program" >/dev/null
"$S" report --group function "$T/l.stp" >"$T/f.txt"
row=$(grep -E "^ +1 .* main in det_leak_program" "$T/f.txt") || fail "no main row: $(sed -n '/Top call/,/^$/p' "$T/f.txt")"
sites=$(echo "$row" | awk '{print $(NF-3)}')
[ "$sites" -ge 4 ] || fail "main sums $sites sites, want 4 or more: $row"
grep -q "more functions" "$T/f.txt" && fail "one function only, yet more listed"
"$S" report --group module "$T/l.stp" | grep -qE "^ +1 .* det_leak_program$" || fail "module row"
"$S" report --group nonsense "$T/l.stp" 2>"$T/e" && fail "--group nonsense accepted"
grep -q -- "--group wants site, function, line or module" "$T/e" || fail "--group error: $(cat "$T/e")"
# by line: main's sites are on different lines, each its own row
"$S" report --group line "$T/l.stp" >"$T/g.txt"
nl=$(grep -cE "^ +[0-9]+ .* main \(leak_program\.c:[0-9]+\)$" "$T/g.txt") || true
[ "$nl" -ge 2 ] || fail "--group line: $nl rows of main's lines: $(sed -n '/Top call/,/^$/p' "$T/g.txt")"
# models: a short summary on a CPU-only trace, everything on request
"$S" report "$T/l.stp" >"$T/r.txt"
n=$(sed -n '/^Allocator models/,$p' "$T/r.txt" | wc -l)
[ "$n" -le 12 ] || fail "the models summary is $n lines"
grep -q "what-if" "$T/r.txt" || fail "summary does not say what-if"
"$S" report --models-detail "$T/l.stp" >"$T/d.txt"
grep -q "M_r: the most bytes reserved" "$T/d.txt" || fail "--models-detail does not explain M_r"
grep -q "^Fragmentation" "$T/d.txt" || fail "--models-detail: no full table"
grep -q "waste: bytes held needlessly" "$T/r.txt" || fail "findings do not explain waste"
echo ok
