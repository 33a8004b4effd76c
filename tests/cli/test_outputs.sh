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
echo ok
