#!/bin/bash
# Ranks (collector/core/output.c): an image started with RANK=R writes
# FILE.rank<R> and claims the rank; its fork child and that child's exec'd
# image keep the <pid> naming (they are not the rank); an image that the
# rank's process execs writes FILE.rank<R>.1; stprof report FILE names the
# ranks' traces and lists the launcher without comparing it.
. "$(dirname "$0")/lib.sh"
# env (the launcher: no RANK) execs the workload with RANK=0, which forks a
# child that allocates and execs `workload basic`
"$STPROF" record -q -o "$T/f.stp" -- env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 "$WORKLOAD" fork >/dev/null
[ -f "$T/f.stp.rank0" ] || fail "no f.stp.rank0: $(ls "$T")"
"$STPROF" info "$T/f.stp.rank0" | grep -q "rank 0/2, local rank 0" || fail "rank 0's process event"
"$STPROF" dump "$T/f.stp.rank0" | grep -qE ' alloc .*size=3333( |$)' || fail "the rank's own allocation"
child=$(ls "$T" | grep -E '^f\.stp\.[0-9]+$') || fail "the fork child's trace is not f.stp.<pid>: $(ls "$T")"
"$STPROF" dump "$T/$child" | grep -qE ' alloc .*size=2222( |$)' || fail "the child's allocation"
[ -f "$T/$child.1" ] || fail "the child's exec'd image is not $child.1: $(ls "$T")"
expect_eq "rank traces" "$(ls "$T" | grep -c rank)" 1
# a rank's process that execs: its next image is FILE.rank<R>.1
"$STPROF" record -q -o "$T/g.stp" -- env RANK=1 sh -c "exec '$WORKLOAD' basic" >/dev/null
[ -f "$T/g.stp.rank1" ] && [ -f "$T/g.stp.rank1.1" ] || fail "rank 1's images: $(ls "$T")"
"$STPROF" info "$T/g.stp.rank1" | grep -q "replaced by execve" || fail "g.stp.rank1 does not end with exec"
# two ranks beside a launcher: the report compares the ranks, names the launcher
"$STPROF" record -q -o "$T/h.stp" -- sh -c "RANK=0 '$WORKLOAD' fork >/dev/null; RANK=1 '$WORKLOAD' basic >/dev/null"
"$STPROF" report --no-progress "$T/h.stp" >"$T/r.txt" 2>"$T/r.err"
grep -q "2 ranks" "$T/r.txt" || fail "report: $(cat "$T/r.txt")"
grep -q "not a rank: h.stp" "$T/r.txt" || fail "launcher not listed: $(cat "$T/r.txt")"
grep -q "rank 1 peaks" "$T/r.txt" || fail "the peaking rank: $(cat "$T/r.txt")"
grep -q "stands for 2 rank traces" "$T/r.err" || fail "no note on stderr: $(cat "$T/r.err")"
"$STPROF" report --no-progress --no-ranks "$T/h.stp" | grep -q "^stprof report: $T/h.stp" || fail "--no-ranks"
# a directory of rank traces; JSON
mkdir "$T/dir" && cp "$T"/h.stp.rank* "$T/dir/"
"$STPROF" report --no-progress -f json "$T/dir" 2>/dev/null >"$T/r.json"
"$PY" - "$T/r.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["schema"] == "stprof-report-ranks" and r["version"] == 1, r
assert [t["rank"] for t in r["traces"]] == [0, 1], r["traces"]
assert r["merged"]["peak_rank"] == 1, r["merged"]
PYEOF
# bad input: a directory without rank traces
mkdir "$T/empty"
"$STPROF" report "$T/empty" 2>"$T/e.err" && fail "empty directory accepted"
grep -q "no rank traces" "$T/e.err" || fail "error: $(cat "$T/e.err")"
echo ok
