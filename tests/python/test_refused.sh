#!/bin/bash
# A program that catches a refused allocation and goes on
# (tests/python/refused_batch.py):
# 1. every tensor after the refusal is recorded: c10::alloc_cpu throws
#    through the collector's interposed frame (collector/torch/torch_cpu.c),
#    whose busy mark is now a cleanup; before, the thread stayed busy and
#    "count" recorded 12 of its 40 tensors, none after step 5.  The refusal
#    itself is a REFUSED event (trace format 1.4) of the tensor pool, with
#    the bytes asked for and the call path; the report says it in the
#    space's memory lines ("refused   1 request for want of memory ...")
#    at the line that asked, the JSON report in spaces[].refused, the
#    timeline as an instant ("refused: 256.00 TiB of cpu tensors").
# 2. a batch-size finder (batch 512 refused, 256, 128, then 64 trains):
#    every module's entry has its exit, and the modules after the one that
#    raised keep their rows, as when the finder starts at 64.  On PyTorch
#    1.x no forward hook runs when a forward raises: the shim closes the
#    modules it left at the next forward (torch_markers.py, close_stale);
#    before, module "1" read 3 allocations instead of 10 and "0" had the
#    rest of the run.  The same request refused three times: the report
#    says the first, no line for the last.
# 3. a refusal elsewhere at the end (find 512 late: an evaluation asking
#    for 512 TiB): the report says the last too, at its own line.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
export OMP_NUM_THREADS=1 PYTHONHASHSEED=0
cd "$T"
P="$STPROF_SRC/tests/python/refused_batch.py"

# 1.
"$STPROF" record -q -o "$T/c.stp" -- "$PY" "$P" count >/dev/null || fail "record count"
"$STPROF" report "$T/c.stp" >"$T/c.txt" || fail "report count"
got=$(sed -n '/^Memory (cpu tensors)/,/^  peak/s/^  objects   \([0-9,]*\) allocated.*/\1/p' "$T/c.txt")
expect_eq "cpu tensors recorded around a caught refusal" "$got" "40"
expect_eq "REFUSED events" "$("$STPROF" dump -t refused "$T/c.stp" | sed 's/^[0-9]* [0-9]* [0-9]* //')" \
	"refused addr=0x0 size=281474976710656 kind=host device=-1 stream=0x0 pool=1"
# the timeline: an instant on the training track, and a trace the UI takes
"$STPROF" export -q -o "$T/c.pftrace" "$T/c.stp" || fail "export"
grep -aq "refused: 256.00 TiB of cpu tensors" "$T/c.pftrace" || fail "no refused instant on the timeline"
"$STPROF" lint-perfetto "$T/c.pftrace" >/dev/null || fail "lint: $("$STPROF" lint-perfetto "$T/c.pftrace")"
grep -q "^  refused   1 request for want of memory; the first asked for 256 TiB at " "$T/c.txt" ||
	fail "report: no refused line: $(sed -n '/^Memory (cpu/,/^$/p' "$T/c.txt")"
grep -q "^            with [0-9.]* [KM]iB live, at refused_batch.py:21 in refuse (aten::[a-z_]*) <- refused_batch.py:42 in count$" "$T/c.txt" ||
	fail "report: the refusal's line: $(sed -n '/^  refused/,+1p' "$T/c.txt")"
"$STPROF" report --format json "$T/c.stp" | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
r = [s["refused"] for s in j["spaces"] if "refused" in s]
assert len(r) == 1 and r[0]["count"] == 1 and r[0]["first"]["bytes"] == 1 << 48, r
assert r[0]["first"]["frames"][0]["line"] == 21 and r[0]["first"]["live_bytes"] > 0, r[0]
assert r[0]["last"] == r[0]["first"], r[0]
assert j["trace"]["events_by_type"]["refused"] == 1' || fail "JSON report: spaces[].refused"

# 2.
rows() { # TRACE: bytes-by-module rows of the modules after "0"
	"$STPROF" report "$1" | sed -n '/^Bytes by module/,/^$/p' | grep -E '  (1|1\.fc|2)$' | sort -k4
}
for b in 512 64; do
	"$STPROF" record -q -o "$T/f$b.stp" -- "$PY" "$P" find $b >"$T/f$b.out" || fail "record find $b"
done
grep -q "batch 512 refused" "$T/f512.out" || fail "the finder was not refused: $(cat "$T/f512.out")"
enters=$("$STPROF" dump -t marker "$T/f512.stp" | grep -c 'kind=module_enter')
exits=$("$STPROF" dump -t marker "$T/f512.stp" | grep -c 'kind=module_exit')
expect_eq "module exits for entries after refusals" "$exits" "$enters"
expect_eq "module rows after refusals" "$(rows "$T/f512.stp")" "$(rows "$T/f64.stp")"
"$STPROF" report "$T/f512.stp" >"$T/f512.txt"
grep -q "^  refused   3 requests for want of memory; the first asked for 256 TiB at .* (iteration 0)$" "$T/f512.txt" ||
	fail "finder: refused line: $(grep -A1 '^  refused' "$T/f512.txt")"
# the same request each time: no line for the last
grep -q "^            the last " "$T/f512.txt" && fail "finder: a last line for the same request"
# 3. a refusal at the end, elsewhere (an evaluation), after the finder's:
#    the last is said too, at its own line
"$STPROF" record -q -o "$T/l.stp" -- "$PY" "$P" find 512 late >/dev/null || fail "record find late"
"$STPROF" report "$T/l.stp" >"$T/l.txt"
grep -q "^  refused   4 requests for want of memory; the first asked for 256 TiB" "$T/l.txt" &&
	grep -q "^            the last asked for 512 TiB at " "$T/l.txt" &&
	grep -q "^            with [0-9.]* [KM]*i*B live, at refused_batch.py:[0-9]* in evaluate (aten::[a-z_]*) <- refused_batch.py:[0-9]* in find$" "$T/l.txt" ||
	fail "the last refusal: $(grep -A3 '^  refused' "$T/l.txt")"
echo ok
