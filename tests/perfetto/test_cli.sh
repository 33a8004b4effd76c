#!/bin/sh
# test_cli.sh - `stprof export` and `stprof lint-perfetto` end to end: every
# export decodes with protoc against the trimmed schema and passes the lint;
# the options work; bad input gets a one-line error and the documented exit
# status.  Exit 77 (skipped) when protoc is missing.
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:?}
stprof=$B/stprof
mk=$B/pftrace_mktrace
command -v protoc >/dev/null 2>&1 || { echo "protoc is not installed: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Every export: protoc decodes it (exit 0) and the lint finds nothing.
check() {
  protoc --decode=perfetto.protos.Trace -I "$S/exporter/perfetto/proto" "$S/exporter/perfetto/proto/perfetto_trace.proto" \
    <"$1" >"$1.txt" || fail "protoc cannot decode $1"
  "$stprof" lint-perfetto "$1" >"$1.lint" || { cat "$1.lint"; fail "lint: $1"; }
  grep -q "no violations" "$1.lint" || fail "lint summary of $1"
}

"$mk" "$tmp/a.stp"
"$stprof" export "$tmp/a.stp" >"$tmp/out" || fail "export a.stp"
test -s "$tmp/a.pftrace" || fail "default output name"
grep -q "wrote $tmp/a.pftrace" "$tmp/out" || fail "summary"
check "$tmp/a.pftrace"
t="$tmp/a.pftrace.txt"
grep -q 'process_name: "python3.11"' "$t" || fail "process descriptor"
grep -q 'name: "cuda:0 requested"' "$t" || fail "counter track"
grep -q 'unit: UNIT_SIZE_BYTES' "$t" || fail "counter unit"
grep -q 'name: "lifetimes"' "$t" || fail "lane tracks"
grep -q 'callstack_iid:' "$t" || fail "callstacks"
grep -q 'callstack_weight:' "$t" || fail "callstack weight"
grep -q 'flow_ids:' "$t" || fail "flows"
grep -q 'terminating_flow_ids:' "$t" || fail "flow ends"
grep -q 'first_packet_on_sequence: true' "$t" || fail "first packet"

"$stprof" export -q -o "$tmp/top.pftrace" --top 3 --top-by size "$tmp/a.stp" >"$tmp/out" || fail "export --top"
test ! -s "$tmp/out" || fail "-q printed"
check "$tmp/top.pftrace"
test "$(grep -c 'name: "lifetimes"' "$tmp/top.pftrace.txt")" -ge 1 || fail "top lanes"

"$stprof" export -o "$tmp/win.pftrace" --window 2us:6us "$tmp/a.stp" >/dev/null || fail "export --window"
check "$tmp/win.pftrace"
"$stprof" export -o "$tmp/win2.pftrace" --window 0.000003s: --max-lanes 1 "$tmp/a.stp" >"$tmp/out" ||
  fail "export --window T0: --max-lanes"
check "$tmp/win2.pftrace"
grep -q "not drawn" "$tmp/out" || fail "max-lanes note"

"$mk" "$tmp/r0.stp" 4242 0 node0 5000000000
"$mk" "$tmp/r1.stp" 4242 1 node1 7000000000
"$stprof" export -o "$tmp/ranks.pftrace" "$tmp/r0.stp" "$tmp/r1.stp" >"$tmp/out" || fail "export ranks"
grep -q "2 processes" "$tmp/out" || fail "ranks summary"
check "$tmp/ranks.pftrace"
test "$(grep -c 'process_name: "rank' "$tmp/ranks.pftrace.txt")" = 2 || fail "two ranks"

# The detector's results (stprof report) in the timeline: lanes grouped by
# class, patterns per object, one instant per finding with its suggestion,
# the simulated allocators' reserved bytes and fragmentation.
if [ -x "$B/det_mktrace" ]; then
  "$B/det_mktrace" train "$tmp/train.stp"
  "$B/det_mktrace" patterns "$tmp/pat.stp"
  "$stprof" export -o "$tmp/train.pftrace" "$tmp/train.stp" >"$tmp/out" || fail "export train"
  grep -q "2 findings" "$tmp/out" || fail "findings in the summary"
  check "$tmp/train.pftrace"
  t="$tmp/train.pftrace.txt"
  for cls in persistent scoped transient leaked; do
    grep -q "name: \"host objects ($cls)\"" "$t" || fail "lanes of class $cls"
  done
  grep -q 'name: "unclassified' "$t" && fail "unclassified lanes despite the detector"
  grep -q 'name: "Memory leak"' "$t" || fail "leak finding instant"
  grep -q 'name: "Late free (host heuristic)"' "$t" || fail "late-free finding instant"
  grep -q 'name: "suggestion"' "$t" || fail "finding suggestion"
  grep -q 'name: "patterns"' "$t" || fail "patterns annotation"
  grep -q 'str: "memory-leak"' "$t" || fail "an object's patterns"
  grep -q 'name: "host reserved (sim: pytorch, host what-if)"' "$t" || fail "simulated reserved"
  grep -q 'name: "host fragmentation (sim: pytorch, host what-if)"' "$t" || fail "fragmentation ratio"
  grep -q 'name: "host reserved (sim: bfc allow_growth, host what-if)"' "$t" || fail "bfc reserved"
  "$stprof" export -q --no-analysis -o "$tmp/train0.pftrace" "$tmp/train.stp" || fail "export --no-analysis"
  check "$tmp/train0.pftrace"
  grep -q 'name: "host objects (unclassified)"' "$tmp/train0.pftrace.txt" || fail "--no-analysis lanes"
  grep -q 'sim:' "$tmp/train0.pftrace.txt" && fail "--no-analysis has models"
  "$stprof" export -q --no-models -o "$tmp/train1.pftrace" "$tmp/train.stp" || fail "export --no-models"
  check "$tmp/train1.pftrace"
  grep -q 'sim:' "$tmp/train1.pftrace.txt" && fail "--no-models has models"
  grep -q 'name: "host objects (persistent)"' "$tmp/train1.pftrace.txt" || fail "--no-models lanes"
  "$stprof" export -q --capacity 4M --alloc-conf expandable_segments:True -o "$tmp/pat.pftrace" "$tmp/pat.stp" ||
    fail "export patterns"
  check "$tmp/pat.pftrace"
  t="$tmp/pat.pftrace.txt"
  grep -q 'name: "cuda:0 reserved (sim: pytorch expandable_segments:True)"' "$t" || fail "device model"
  for f in "Early allocation" "Late deallocation" "Redundant allocation" "Unused allocation" "Dead write"; do
    grep -q "name: \"$f\"" "$t" || fail "finding $f"
  done
  rc=0; "$stprof" export --alloc-conf max_split_size_mb:1 "$tmp/pat.stp" 2>/dev/null || rc=$?
  test $rc = 2 || fail "bad --alloc-conf: exit $rc"
fi

# `stprof PROGRAM` writes the timeline beside its trace (when the collector
# is built).
if [ -f "$B/libstprof.so" ]; then
  "$stprof" -q --no-report -o "$tmp/run.stp" /bin/true || fail "stprof /bin/true"
  check "$tmp/run.pftrace"
  "$stprof" -q --no-report --no-export -o "$tmp/run2.stp" /bin/true || fail "stprof --no-export"
  test ! -e "$tmp/run2.pftrace" || fail "--no-export wrote a timeline"
fi

# Help and usage.
"$stprof" export --help | grep -q "^usage: stprof export" || fail "export --help"
"$stprof" lint-perfetto -h | grep -q "^usage: stprof lint-perfetto" || fail "lint --help"
"$stprof" --help | grep -q "lint-perfetto" || fail "listed in stprof --help"
set +e
"$stprof" export 2>/dev/null; test $? = 2 || fail "export without a trace: exit 2"
"$stprof" export --top 0 "$tmp/a.stp" 2>/dev/null; test $? = 2 || fail "--top 0: exit 2"
"$stprof" export --top-by colour "$tmp/a.stp" 2>/dev/null; test $? = 2 || fail "--top-by: exit 2"
for w in 5s:1s 1parsec:2s abc 1s:2s:3s; do
  "$stprof" export --window "$w" "$tmp/a.stp" 2>/dev/null; test $? = 2 || fail "--window $w: exit 2"
done
"$stprof" lint-perfetto 2>/dev/null; test $? = 2 || fail "lint without a file: exit 2"

# Bad input: one line naming the file, exit 1 (lint: 2 when unreadable).
"$stprof" export -o "$tmp/x.pftrace" "$tmp/missing.stp" 2>"$tmp/err"; test $? = 1 || fail "missing trace: exit 1"
test "$(wc -l <"$tmp/err")" = 1 && grep -q "missing.stp" "$tmp/err" || fail "missing trace message"
printf 'garbage, not a trace' >"$tmp/g.stp"
"$stprof" export -o "$tmp/x.pftrace" "$tmp/g.stp" 2>"$tmp/err"; test $? = 1 || fail "garbage trace: exit 1"
test "$(wc -l <"$tmp/err")" = 1 && grep -q "g.stp" "$tmp/err" || fail "garbage trace message"
"$stprof" export -o /nonexistent/dir/x.pftrace "$tmp/a.stp" 2>"$tmp/err"; test $? = 1 || fail "unwritable: exit 1"
grep -q "/nonexistent/dir/x.pftrace" "$tmp/err" || fail "unwritable message"
"$stprof" lint-perfetto "$tmp/missing.pftrace" 2>/dev/null; test $? = 2 || fail "lint missing: exit 2"
"$stprof" lint-perfetto "$tmp/g.stp" >"$tmp/out"; test $? = 1 || fail "lint garbage: exit 1"
grep -q "packet 0 at offset 0: malformed" "$tmp/out" || { cat "$tmp/out"; fail "lint garbage message"; }
# A file with one bad packet (an instant on an undeclared track).
head -c 200 "$tmp/a.pftrace" >/dev/null
"$stprof" lint-perfetto -q "$tmp/g.stp"; test $? = 1 || fail "lint -q exit"
set -e
echo "ok"
