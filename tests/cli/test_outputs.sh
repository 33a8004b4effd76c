#!/bin/sh
# Outputs: -q quiet in the one-shot mode too; named after the script an interpreter runs, an earlier run's kept
# as .old, a file stprof did not write never touched, an output equal to an
# input refused.
set -eu
: "${STPROF_BUILD:?run through ctest}"
S="$STPROF_BUILD/stprof"
PY="${STPROF_PYTHON:-/usr/bin/python3}"
[ -x "$PY" ] || PY=python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$T"
printf 'x = [bytearray(1000) for _ in range(50)]\nprint("hi")\n' >job.py

# named after the script, not the interpreter
"$S" -q "$PY" job.py >out 2>err0
grep -qx hi out || fail "the script's output changed"
for f in job.stp job.plan job.pftrace; do [ -s "$f" ] || fail "$f not written"; done
# -q: nothing of stprof's own, not even the report or the plan summary
[ ! -s err0 ] || fail "-q printed: $(head -3 err0)"
ls | grep -q '^python' && fail "outputs named after the interpreter: $(ls)"
# an earlier run's outputs are kept as .old
cp job.plan first.plan
"$S" -q "$PY" job.py >/dev/null 2>&1
for f in job.stp.old job.plan.old job.pftrace.old; do [ -s "$f" ] || fail "$f not kept"; done
cmp -s job.plan.old first.plan || fail "job.plan.old is not the earlier plan"
# a file stprof did not write is left alone: the outputs take the pid
echo "my notes" >job.plan
"$S" -q "$PY" job.py >/dev/null 2>err
[ "$(cat job.plan)" = "my notes" ] || fail "job.plan was overwritten"
grep -q "not written by stprof" err || fail "no word on the file left alone: $(cat err)"
ls job.*.stp >/dev/null 2>&1 || fail "no job.<pid>.stp: $(ls)"
# with -o the trace is the user's choice; a foreign plan beside it is skipped
echo "keep me" >mine.pftrace
"$S" -q -o mine.stp "$PY" job.py >/dev/null 2>err
[ "$(cat mine.pftrace)" = "keep me" ] || fail "mine.pftrace was overwritten"
[ -s mine.plan ] || fail "mine.plan not written"
# python3 -m pkg.mod is named after mod
"$S" -q --no-report --no-plan --no-export "$PY" -m json.tool /dev/null >/dev/null 2>&1 || true
[ -s tool.stp ] || fail "python3 -m json.tool: no tool.stp: $(ls)"

# the JSON report is bounded by --top like the text; --all lists everything
"$S" report --format json job.stp >b.json
"$S" report --format json --all job.stp >all.json
"$PY" - b.json all.json <<'PY'
import json, sys
b, a = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert b['sites_total'] > 30 and b['sites_listed'] == len(b['sites']), (b['sites_total'], b['sites_listed'])
assert len(b['sites']) < 30 and len(b['findings']) <= 10, len(b['sites'])
assert [s['id'] for s in b['sites']][:10] == list(range(10))
assert len(a['sites']) == a['sites_total'] == b['sites_total'] and len(a['findings']) == a['findings_total']
ids = {s['id'] for s in b['sites']}
assert all(f['site'] in ids for f in b['findings'])
PY

# --min-size: frees of the allocations it ignores are not "addresses not allocated"
"$S" report --min-size 4k job.stp >ms.txt
grep -q "allocations under --min-size ignored" ms.txt || fail "--min-size note missing"
grep -q "not allocated" ms.txt && fail "--min-size claims frees of addresses not allocated: $(grep 'not allocated' ms.txt)"

# output equal to input: refused, the input intact
cp job.stp same.stp
size=$(wc -c <same.stp)
for cmd in "export same.stp -o same.stp" "plan same.stp -o same.stp" "report same.stp -o same.stp" \
           "report -o ./same.stp same.stp"; do
	rc=0; "$S" $cmd 2>err || rc=$?
	[ "$rc" != 0 ] || fail "$cmd: exit 0"
	grep -q "is the input" err || fail "$cmd: $(cat err)"
	[ "$(wc -c <same.stp)" = "$size" ] || fail "$cmd: the trace changed"
done
"$S" info same.stp >/dev/null || fail "the trace does not read after the refusals"

# refusing to overwrite a file stprof did not write is stprof's own error:
# exit 1, not the shell's 127 ("command not found")
echo "not a trace" >foreign.stp
for cmd in "-o foreign.stp /bin/true" "record -o foreign.stp /bin/true"; do
	rc=0; "$S" $cmd 2>err || rc=$?
	[ "$rc" = 1 ] || fail "$cmd over a foreign file: exit $rc, want 1 ($(cat err))"
	[ "$(cat foreign.stp)" = "not a trace" ] || fail "$cmd: foreign.stp changed"
done

# export keeps an earlier timeline or snapshot as .old, as the one-shot keeps
# its sidecars, and never overwrites a file stprof did not write
"$S" export -q job.stp -o t.pftrace && cp t.pftrace t1.pftrace
"$S" export -q job.stp -o t.pftrace
cmp -s t.pftrace.old t1.pftrace || fail "export: the earlier timeline was not kept as .old"
echo "my notes" >notes.pftrace
rc=0; "$S" export -q job.stp -o notes.pftrace 2>err || rc=$?
[ "$rc" = 1 ] && [ "$(cat notes.pftrace)" = "my notes" ] || fail "export over a foreign file: exit $rc, $(cat err)"
"$S" export -q --format torch-snapshot --space host job.stp -o s.pickle && cp s.pickle s1.pickle
"$S" export -q --format torch-snapshot --space host job.stp -o s.pickle
cmp -s s.pickle.old s1.pickle || fail "export: the earlier snapshot was not kept as .old"

# `stprof python3 missing.py`: the interpreter's own error and exit status,
# and no report, plan or timeline of its start-up
rc=0; "$S" "$PY" missing.py >out 2>err || rc=$?
[ "$rc" = 2 ] || fail "python3 missing.py: exit $rc, want Python's 2"
grep -q "can't open file" err || fail "python's own message lost: $(cat err)"
grep -q "^stprof: missing.py: No such file or directory: nothing to profile" err || fail "no word from stprof: $(cat err)"
grep -q "stprof report" err && fail "a report of the interpreter's start-up"
ls missing.* 2>/dev/null && fail "outputs for a missing script: $(ls missing.*)"
echo ok
