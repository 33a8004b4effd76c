#!/bin/bash
# Several ranks on real torchrun (python -m torch.distributed.run, gloo on
# CPU, 2 processes):
# 1. ddp_batch.py (rank 1 has 8x rank 0's batch): a trace per rank named
#    FILE.rank<R> with its rank in the header, the launcher's trace apart;
#    `stprof report FILE` says rank 1 peaks and names make_batch's line
#    among the call sites that differ most (text, JSON, HTML); export draws
#    one process per rank;
# 2. ddp_other.py (a conv net, Adam, a DataLoader worker forked from each
#    rank, all_reduce) through the one-shot mode: a trace per rank, the
#    workers' traces not taken for ranks, the merged report, a plan per rank
#    and one timeline, and the command that enforces the plans;
# 3. spawn_batch.py, started with torch.multiprocessing.spawn (no RANK in
#    the workers' environment; init_process_group(rank=R) says it): each
#    worker's trace becomes FILE.rank<R> then (the shim tells the
#    collector), the merged report compares them as torchrun's, and one
#    plan (the larger rank's) is enforced in each worker, as the ranks
#    cannot pick theirs (ddp_batch.py's loop).
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch.distributed' 2>/dev/null || skip "no torch.distributed for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1
# Debian's torch 1.13 on Python 3.11 cannot parse its default --redirects 0
# (Std.from_str returns None); a mapping for a local rank that does not
# exist means the same: no redirection.  A free port, not the default
# 29500 that another job on the machine (another test's torchrun) may hold
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
RUN=(-m torch.distributed.run --nproc_per_node 2 --master_port "$port" --redirects 9:0 --tee 9:0)
S="$STPROF_SRC/tests/python"
cd "$T"

# 1. a run shaped for the test
"$STPROF" record -q -o "$T/b.stp" -- "$PY" "${RUN[@]}" "$S/ddp_batch.py" >"$T/out.txt" 2>"$T/err.txt" ||
	fail "torchrun under stprof: $(tail -5 "$T/err.txt")"
grep -q "rank 0 done" "$T/out.txt" && grep -q "rank 1 done" "$T/out.txt" || fail "output: $(cat "$T/out.txt")"
for r in 0 1; do
	"$STPROF" info "$T/b.stp.rank$r" | grep -q "rank $r/2, local rank $r" || fail "b.stp.rank$r: no rank $r"
done
"$STPROF" info "$T/b.stp" | grep -q "torch.distributed.run" || fail "b.stp is not the launcher's"
"$STPROF" info "$T/b.stp" | grep -q "rank [0-9]" && fail "the launcher's trace has a rank"
"$STPROF" report --no-progress "$T/b.stp" >"$T/r.txt" 2>/dev/null || fail "report failed"
grep -q "^stprof report: 3 traces, 2 ranks (world size 2)" "$T/r.txt" || fail "report head: $(head -3 "$T/r.txt")"
grep -q "rank 1 peaks" "$T/r.txt" || fail "rank 1 does not peak: $(cat "$T/r.txt")"
grep -q "not a rank: b.stp " "$T/r.txt" || fail "launcher not listed apart"
# the first differing site is the script's own line (batch or activations)
first=$(sed -n '/^Call sites whose bytes/,/^$/p' "$T/r.txt" | sed -n 4p)
case "$first" in *+*ddp_batch.py:*) ;; *) fail "first differing site: '$first'" ;; esac
grep -q "ddp_batch.py:[0-9]* in make_batch" "$T/r.txt" || fail "make_batch's line not named: $(cat "$T/r.txt")"
"$STPROF" report --no-progress -f json -o "$T/r.json" "$T/b.stp" 2>/dev/null
"$PY" - "$T/r.json" <<'PYEOF' || fail "JSON report"
import json, sys
r = json.load(open(sys.argv[1]))
t, m = r["traces"], r["merged"]
assert [x["role"] for x in t] == ["rank", "rank", "other"], t
assert [x["rank"] for x in t] == [0, 1, None], t
assert m["peak_rank"] == 1 and m["peak_bytes"] == t[1]["peak_bytes"] > t[0]["peak_bytes"], m
assert m["above_mean_bytes"] == t[1]["peak_bytes"] - t[0]["peak_bytes"], m
assert all(x["iterations"] == 4 for x in t[:2]), t
s = m["sites"]
assert s and s[0]["difference"] > 0 and "ddp_batch.py" in s[0]["name"], s
assert any("in make_batch" in x["name"] and x["bytes"][1] > x["bytes"][0] for x in s), s
PYEOF
"$STPROF" report --no-progress -f html -o "$T/r.html" "$T/b.stp" 2>/dev/null
grep -q "<b>rank 1</b> peaks" "$T/r.html" || fail "HTML report"
"$STPROF" export -q -o "$T/b.pftrace" "$T/b.stp" 2>/dev/null || fail "export"
for r in 0 1; do grep -qa "rank $r: python3" "$T/b.pftrace" || fail "no process 'rank $r' in the timeline"; done

# 2. another program, through the one-shot mode
"$STPROF" "$PY" "${RUN[@]}" "$S/ddp_other.py" >"$T/out2.txt" 2>"$T/err2.txt" || fail "one-shot: $(tail -5 "$T/err2.txt")"
grep -q "epoch 1 mean loss" "$T/out2.txt" || fail "output: $(cat "$T/out2.txt")"
for f in ddp_other.stp ddp_other.stp.rank0 ddp_other.stp.rank1 ddp_other.rank0.plan ddp_other.rank1.plan \
	ddp_other.pftrace; do
	[ -f "$T/$f" ] || fail "no $f: $(ls "$T")"
done
expect_eq "rank traces" "$(ls "$T" | grep -c '^ddp_other\.stp\.rank')" 2
# the DataLoader workers (forked from the ranks, RANK inherited) keep the pid naming
workers=$(ls "$T" | grep -cE '^ddp_other\.stp\.[0-9]+$' || true)
[ "$workers" -ge 2 ] || fail "the DataLoader workers' traces: $(ls "$T")"
grep -q "^stprof report: [0-9]* traces, 2 ranks (world size 2)" "$T/err2.txt" || fail "one-shot report: $(cat "$T/err2.txt")"
grep -q "^Merged view" "$T/err2.txt" || fail "no merged view"
grep -q "timeline of the 2 ranks written" "$T/err2.txt" || fail "no timeline message"
# and the command that enforces the ranks' plans (test_stalloc_ranks.sh runs one)
grep -qxF "enforce:        stprof run --plan $T/ddp_other.plan -- $PY ${RUN[*]} $S/ddp_other.py" "$T/err2.txt" ||
	fail "no enforce line: $(grep -A1 '^written:' "$T/err2.txt")"

# 3. torch.multiprocessing.spawn: ranks learnt in init_process_group
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$STPROF" -o "$T/s.stp" "$PY" "$S/spawn_batch.py" "$port" >"$T/out3.txt" 2>"$T/err3.txt" ||
	fail "one-shot, spawn: $(tail -5 "$T/err3.txt")"
grep -q "rank 0 done" "$T/out3.txt" && grep -q "rank 1 done" "$T/out3.txt" || fail "output: $(cat "$T/out3.txt")"
for f in s.stp s.stp.rank0 s.stp.rank1 s.plan; do [ -f "$T/$f" ] || fail "spawn: no $f: $(ls "$T")"; done
for r in 0 1; do
	"$STPROF" dump "$T/s.stp.rank$r" | grep -q "marker kind=annotation name=\"stprof.rank\" value=$r" ||
		fail "spawn: no rank annotation in s.stp.rank$r"
done
grep -q "^stprof report: [0-9]* traces, 2 ranks (world size 2)" "$T/err3.txt" || fail "spawn report: $(cat "$T/err3.txt")"
grep -q "rank 1 peaks" "$T/err3.txt" || fail "spawn: rank 1 does not peak: $(grep -A2 '^Merged' "$T/err3.txt")"
grep -q "ddp_batch.py:[0-9]* in make_batch" "$T/err3.txt" || fail "spawn: make_batch's line not named"
grep -q "one plan$" "$T/err3.txt" && grep -q "serves them all: the one of the rank that needs the most, $T/s.stp.rank1" "$T/err3.txt" ||
	fail "spawn: the plan: $(grep -A3 '^Allocation plan' "$T/err3.txt")"
grep -q "in each worker .* starts with python -c, as torch.multiprocessing.spawn does" "$T/err3.txt" ||
	fail "spawn: enforce line: $(grep -A1 '^enforce' "$T/err3.txt")"
ls "$T" | grep -q '^s\.rank[0-9]*\.plan$' && fail "spawn: rank plans no worker can pick: $(ls "$T")"
echo ok
