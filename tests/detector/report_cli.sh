#!/bin/sh
# report_cli.sh - `stprof report` end to end: a whole trace, a trace cut
# short (reported, marked incomplete), a damaged trace (one-line error with
# the file and offset, exit 1), --help, bad options (exit 2).
set -eu
B=${STPROF_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$B/det_mktrace" train "$T/train.stp"
"$B/stprof" report "$T/train.stp" >"$T/out.txt" || fail "report exited $?"
grep -q "56 allocated" "$T/out.txt" || fail "allocation count"
grep -q "51 freed" "$T/out.txt" || fail "free count"
grep -q "5 still live at the end" "$T/out.txt" || fail "live at end"
grep -q "peak      1.16 MiB live in 11 objects" "$T/out.txt" || fail "peak"
grep -q "iteration 4, phase forward" "$T/out.txt" || fail "where the peak is"
grep -q "Memory leak: 5 objects" "$T/out.txt" || fail "leak finding"
grep -q "prog+0x400400" "$T/out.txt" || fail "leak call site"
grep -q "unavailable: early-allocation" "$T/out.txt" || fail "unavailable patterns"

"$B/det_mktrace" train-cut "$T/cut.stp"
"$B/stprof" report "$T/cut.stp" >"$T/cut.txt" || fail "cut trace: exit $?"
grep -q "INCOMPLETE" "$T/cut.txt" || fail "cut trace not flagged"

# cut inside a chunk (the writer stopped mid-write): reported up to the last
# whole chunk, after one warning naming file and offset (issue 26)
size=$(stat -c %s "$T/train.stp")
head -c $((size - 7)) "$T/train.stp" >"$T/trunc.stp"
set +e
"$B/stprof" report "$T/trunc.stp" >"$T/trunc.out" 2>"$T/trunc.err"
rc=$?
set -e
[ $rc -eq 0 ] || fail "cut trace: exit $rc, wanted 0 ($(cat "$T/trunc.err"))"
[ "$(wc -l <"$T/trunc.err")" -eq 1 ] || fail "cut trace: want one warning line, got: $(cat "$T/trunc.err")"
grep -q "trunc.stp ends inside the chunk at offset [0-9]" "$T/trunc.err" || fail "warning names file and offset: $(cat "$T/trunc.err")"
grep -q "^stprof report:" "$T/trunc.out" || fail "cut trace: no report"

# damage: bytes flipped in the middle
cp "$T/train.stp" "$T/bad.stp"
printf '\377\377\377\377' | dd of="$T/bad.stp" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
set +e
"$B/stprof" report "$T/bad.stp" >"$T/bad.out" 2>"$T/bad.err"
rc=$?
set -e
[ $rc -eq 1 ] || fail "damaged trace: exit $rc, wanted 1"
[ "$(wc -l <"$T/bad.err")" -eq 1 ] || fail "damaged trace: want one error line, got: $(cat "$T/bad.err")"
grep -q "bad.stp: offset [0-9].*--partial" "$T/bad.err" || fail "error names file, offset and --partial: $(cat "$T/bad.err")"
[ ! -s "$T/bad.out" ] || fail "damaged trace printed a report without --partial"
set +e
"$B/stprof" report --partial "$T/bad.stp" >"$T/partial.out" 2>/dev/null
rc=$?
set -e
[ $rc -eq 1 ] || fail "--partial: exit $rc"
grep -q "ERROR" "$T/partial.out" || fail "--partial report names the error"

set +e
"$B/stprof" report "$T/missing.stp" 2>"$T/missing.err"; rc=$?
"$B/stprof" report --format xml "$T/train.stp" 2>/dev/null; rc2=$?
"$B/stprof" report --top zz "$T/train.stp" 2>/dev/null; rc3=$?
"$B/stprof" report --capacity lots "$T/train.stp" 2>/dev/null; rc4=$?
"$B/stprof" report --sim-min-size -1 "$T/train.stp" 2>/dev/null; rc5=$?
set -e
[ $rc4 -eq 2 ] || fail "bad --capacity: exit $rc4"
[ $rc5 -eq 2 ] || fail "bad --sim-min-size: exit $rc5"
[ $rc -eq 1 ] || fail "missing file: exit $rc"
[ $rc2 -eq 2 ] || fail "bad format: exit $rc2"
[ $rc3 -eq 2 ] || fail "bad --top: exit $rc3"
"$B/stprof" report --help | grep -q -- "--format" || fail "--help"
"$B/stprof" report --help | grep -q -- "--alloc-conf" || fail "--help lists the model options"
# the text report ends with the allocator models, and says what was fed
"$B/stprof" report --models-detail "$T/train.stp" >"$T/models.out"
grep -q "^Allocator models" "$T/models.out" || fail "no allocator-model section"
grep -q "fed .* host allocations of 512 B or more" "$T/models.out" || fail "what was fed"
grep -q "^  pytorch  " "$T/models.out" || fail "model table"
"$B/stprof" report --no-models "$T/train.stp" | grep -q "^Allocator models" && fail "--no-models printed models"
echo "report_cli: ok"
