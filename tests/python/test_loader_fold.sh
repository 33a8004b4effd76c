#!/bin/bash
# DataLoader workers on a long run: each batch a worker fetches is an
# iteration of the worker's own trace (the shim's fetch hook), so its steady
# batches are folded as the loop's steps are.  Without it a worker's trace
# grew by every tensor of every batch (882 bytes a batch of 32 samples
# here).  Checked: the output is the native one; a worker trace has its
# batches as iterations from markers, their fetch as phase "fetch", folded,
# with every event of a batch unlike the others (a 1 MiB temporary) and its
# row at the dataset's line; the workers' traces grow at most 1 KiB a batch
# (400 steps against 100); the loop's own trace keeps its steps as
# iterations; with num_workers=0 the loop fetches its batches itself and
# nothing else is marked.  The loop's report (text, JSON, HTML and the one-shot
# `stprof PROGRAM`'s) lists the two workers under "Child processes", each
# with its trace, pid and peaks: the one that made the 1 MiB temporary has
# a tensor peak of at least 1 MiB, the other less; the sum of their host
# peaks is the same sentence in text and HTML.  The batches, made in shared
# memory by the workers and mapped by the loop, are in both processes'
# tensor spaces, and out of the loop's plan; their rows read "(DataLoader
# batch)", and "(DataLoader batch: aten::...)" with num_workers=0.  A
# damaged or empty worker trace is listed, with why it was not read.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1 PYTHONHASHSEED=0
P="$STPROF_SRC/tests/python/loader_loop.py"
line=$(grep -n "scratch = torch.ones" "$P" | cut -d: -f1)
cd "$T"
"$STPROF" record -q -o d.stp -- "$PY" "$P" 200 2 100 >d.out || fail "recorded run failed"
expect_eq "output under stprof" "$(cat d.out)" "$("$PY" "$P" 200 2 100)"
"$STPROF" report d.stp | grep -q "^Iterations: 200 from markers" || fail "the loop: $("$STPROF" report d.stp | grep -A1 '^Iterations')"
n=0 dev=0
for w in d.stp.*; do
	"$STPROF" report "$w" >w.txt || fail "$w: report failed"
	n=$((n + 1))
	grep -q "^Iterations: [0-9]* from markers" w.txt || fail "$w: $(grep -A1 '^Iterations' w.txt)"
	grep -q "^  phases    fetch (markers)" w.txt || fail "$w: phases: $(grep '^  phases' w.txt)"
	grep -q "^  folded    [0-9]* steady iterations" w.txt || fail "$w: not folded: $(grep -A3 '^Iterations' w.txt)"
	grep -q "at loader_loop.py:[0-9]* in Samples.__getitem__" w.txt || fail "$w: no row at the dataset's line"
	grep -q "at loader_loop.py:$line in Samples.__getitem__" w.txt && dev=$((dev + 1))
done
expect_eq "worker traces" "$n" 2
expect_eq "workers with the deviating batch's row" "$dev" 1
"$STPROF" report d.stp >d.txt
sed -n '/^Child processes/,/^$/p' d.txt >c.txt
grep -q "^Child processes (2 recorded beside this trace" c.txt || fail "no Child processes section: $(tail -5 d.txt)"
expect_eq "children rows" "$(grep -c '  d\.stp\.[0-9]*  (DataLoader worker, pid [0-9]*)$' c.txt)" 2
"$STPROF" report --format json d.stp | python3 -c '
import json, sys
c = json.load(sys.stdin)["children"]
assert len(c) == 2 and all(k["what"] == "DataLoader worker" and k["host_peak_bytes"] > 0 for k in c), c
big = [k for k in c if k["tensor_peak_bytes"] >= 1 << 20]
assert len(big) == 1, c' || fail "JSON children"
"$STPROF" report --format html --no-viewer -o d.html d.stp || fail "HTML report failed"
grep -q "<h2>Child processes</h2>" d.html || fail "HTML report: no Child processes"
expect_eq "HTML children rows" "$(grep -c 'DataLoader worker, pid [0-9]*</td>' d.html)" 2
# the workers' sum: the same figure in the text and the HTML
tsum=$(sed -n 's/^  together \(.*\) of host heap allocated in them.*/\1/p' c.txt)
hsum=$(sed -n 's/.*<p>Together \(.*\) of host heap allocated in them.*/\1/p' d.html)
[ -n "$tsum" ] || fail "text: no sum of the workers' peaks: $(cat c.txt)"
expect_eq "HTML sum of the workers' peaks" "$hsum" "$tsum"
# the batches themselves: a worker's collate makes each in shared memory
# and the loop maps it when it receives it (at::MapAllocator; c10's
# allocator never sees them: before, neither trace had them).  Both are
# tensor storages now, marked mapped (stream 1), the loop's at its `for`
# line; a plan leaves them out (no allocator serves them)
mapped() { "$STPROF" dump -t alloc "$1" | grep -c ' stream=0x1 pool=1$' || true; }
[ "$(mapped d.stp)" -ge 4 ] || fail "the loop: $(mapped d.stp) mapped batches"
for k in d.stp.*; do [ "$(mapped "$k")" -ge 4 ] || fail "worker $k: $(mapped "$k") batches made in shared memory"; done
"$STPROF" dump -t alloc d.stp | grep -q ' size=8192 kind=host device=-1 stream=0x1 pool=1$' || fail "no 8 KiB batch (32 x 64 floats)"
forline=$(grep -n "^for step, (x, y) in enumerate(loader):" "$P" | cut -d: -f1)
# (the row says what it is: a DataLoader's batch, a mapping, no operator)
"$STPROF" report --top 60 d.stp | grep -q "^      at loader_loop.py:$forline in <module> (DataLoader batch)$" ||
	fail "no call site at the loop's for line: $("$STPROF" report --top 60 d.stp | grep "loader_loop.py:$forline")"
# held by the DataLoader's reordering (a batch that arrives early waits a
# step): never an actionable finding at the for line, at most an expected
# one ("a DataLoader's batch")
"$STPROF" report d.stp | sed -n '/^Findings/,/^  expected, not counted/p' | grep -q "at loader_loop.py:$forline in" &&
	fail "a finding at the loop's for line: $("$STPROF" report d.stp | sed -n '/^Findings/,/^$/p')"
"$STPROF" plan -o d.plan d.stp >d.plan.txt 2>&1 || fail "plan: $(tail -3 d.plan.txt)"
"$STPROF" run --plan d.plan -- "$PY" "$P" 200 2 100 >/dev/null 2>d.run || fail "run --plan: $(tail -3 d.run)"
grep -q "^stalloc: requests [0-9]*: planned hits [1-9][0-9]*, .* (100.0% of the requests of the plan's sizes in the pool)" d.run ||
	fail "run --plan: $(grep '^stalloc: requests' d.run)"
"$STPROF" -o o.stp --no-plan --no-html --no-export -- "$PY" "$P" 30 2 >/dev/null 2>o.err || fail "one-shot run failed"
grep -q "^Child processes (2 recorded beside this trace" o.err || fail "one-shot: no Child processes: $(tail -5 o.err)"
"$STPROF" record -q -o s100.stp -- "$PY" "$P" 100 2 >/dev/null
"$STPROF" record -q -o s400.stp -- "$PY" "$P" 400 2 >/dev/null
a=$(cat s100.stp.* | wc -c) b=$(cat s400.stp.* | wc -c)
per=$(((b - a) / 300))
echo "  workers: 100 steps $a bytes, 400 steps $b bytes: $per bytes per batch"
[ "$per" -le 1024 ] || fail "a steady batch adds $per bytes to the workers' traces (at most 1 KiB)"
"$STPROF" record -q -o z.stp -- "$PY" "$P" 50 0 >/dev/null
ls z.stp.* >/dev/null 2>&1 && fail "num_workers=0: child traces: $(ls z.stp.*)"
"$STPROF" report z.stp | grep -q "^Iterations: 50 from markers" || fail "num_workers=0: $("$STPROF" report z.stp | grep -A1 '^Iterations')"
# in-process, the default collate's batch: its operator beside the label
"$STPROF" report z.stp | grep -q "^      at loader_loop.py:$forline in <module> (DataLoader batch: aten::[a-z_]*)$" ||
	fail "num_workers=0: the for line's row: $("$STPROF" report z.stp | grep "loader_loop.py:$forline")"
# A child trace that cannot be read (damaged; empty: a worker killed
# before it wrote anything) is listed with why, not dropped (it was left
# out without a word); so is the reason any row was not read.
mkdir u
cp d.stp d.stp.* u/
set -- u/d.stp.*
python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[200] ^= 0xff; open(sys.argv[2], "wb").write(d)' "$1" u/d.stp.99998
head -c 64 "$1" >u/d.stp.99999
"$STPROF" report u/d.stp >u.txt 2>&1 || fail "report with a damaged child: $(tail -3 u.txt)"
grep -q "^Child processes (4 recorded beside this trace" u.txt || fail "damaged children: $(sed -n '/^Child/,/^$/p' u.txt)"
grep -q "  u/d.stp.99998  (a process, pid 99998, not read: u/d.stp.99998: offset [0-9]*: .*)$" u.txt ||
	fail "damaged child: $(sed -n '/^Child/,/^$/p' u.txt)"
grep -q "  u/d.stp.99999  (a process, pid 99999, not read: u/d.stp.99999: holds no event .*)$" u.txt ||
	fail "empty child: $(sed -n '/^Child/,/^$/p' u.txt)"
"$STPROF" report --format json u/d.stp | python3 -c '
import json, sys
c = {k["pid"]: k for k in json.load(sys.stdin)["children"]}
assert "offset" in c[99998]["not_read"] and c[99998]["host_peak_bytes"] is None, c
assert all(k["not_read"] is None for p, k in c.items() if p < 99998 and "not_read" in k), c' || fail "JSON: damaged children"
echo ok
