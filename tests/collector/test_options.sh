#!/bin/bash
# Collector options by flag and by environment (minimum size, depth, host-heap
# depth in a Python process, output, flush period), the rank fields of the process event, and the one-line error
# with file and offset that every reader command gives on a damaged trace.
. "$(dirname "$0")/lib.sh"
# --min-size: only the big blocks, and none of the small ones' frees
"$STPROF" record -q -m 1005 -o "$T/m.stp" -- "$WORKLOAD" basic >/dev/null
sizes=$("$STPROF" dump -t alloc "$T/m.stp" | sed 's/.*size=\([0-9]*\).*/\1/' | sort -n | head -1)
[ "$sizes" -ge 1005 ] || fail "--min-size 1005 recorded a $sizes-byte allocation"
# the same through the environment, and a bad value is refused by the CLI
STPROF_MIN_SIZE=1005 LD_PRELOAD="$STPROF_BUILD/libstprof.so" STPROF_OUTPUT="$T/e.stp" "$WORKLOAD" basic >/dev/null
expect_eq "env min size" "$("$STPROF" dump -t alloc "$T/e.stp" | wc -l)" "$("$STPROF" dump -t alloc "$T/m.stp" | wc -l)"
set +e
"$STPROF" record -m 12parsecs -- true 2>"$T/err"; rc=$?
set -e
expect_eq "bad --min-size status" $rc 2
grep -q "min-size: '12parsecs' is not a size" "$T/err" || fail "bad --min-size message: $(cat "$T/err")"
# --depth: at most N frames per call path; 0 records none
"$STPROF" record -q -d 2 -o "$T/d.stp" -- "$WORKLOAD" basic >/dev/null
deep=$("$STPROF" dump -s -t alloc "$T/d.stp" | awk -F'stack=' 'NF > 1 {n = split($2, f, ";"); if (n > m) m = n} END {print m + 0}')
expect_eq "deepest path with -d 2" "$deep" 2
"$STPROF" record -q -d 0 -o "$T/z.stp" -- "$WORKLOAD" basic >/dev/null
"$STPROF" dump -s -t alloc "$T/z.stp" | grep -q stack= && fail "-d 0 recorded call paths"
# host-heap depth: a Python process's malloc paths stop at 8 frames (its
# tensors keep --depth's; test_torch.sh checks those), said by an annotation;
# --host-depth and an explicit --depth set it; a C program keeps 32
deepest() { "$STPROF" dump -s -t alloc "$1" | awk -F'stack=' 'NF > 1 {n = split($2, f, ";"); if (n > m) m = n} END {print m + 0}'; }
PYW="import json; x = [json.dumps({'k': [i] * (i % 7)}) for i in range(3000)]"
"$STPROF" record -q -o "$T/py.stp" -- "$PY" -c "$PYW"
expect_eq "Python host paths, default" "$(deepest "$T/py.stp")" 8
"$STPROF" dump -t marker "$T/py.stp" | grep -q 'annotation name="stprof.host_depth" value=8' || fail "no host_depth annotation"
"$STPROF" record -q --host-depth 20 -o "$T/py20.stp" -- "$PY" -c "$PYW"
[ "$(deepest "$T/py20.stp")" -gt 8 ] || fail "--host-depth 20 gave $(deepest "$T/py20.stp") frames"
"$STPROF" dump -t marker "$T/py20.stp" | grep -q 'stprof.host_depth" value=20' || fail "no annotation of --host-depth 20"
"$STPROF" record -q -d 12 -o "$T/py12.stp" -- "$PY" -c "$PYW"
expect_eq "Python host paths, -d 12" "$(deepest "$T/py12.stp")" 12
[ "$(deepest "$T/m.stp")" -gt 8 ] || fail "a C program's host paths were cut"
set +e
"$STPROF" record --host-depth 300 -- true 2>"$T/err"; expect_eq "--host-depth 300" $? 2
set -e
grep -q "host-depth: '300' is not a number from 0 to 256" "$T/err" || fail "bad --host-depth message: $(cat "$T/err")"
# --flush-ms bounds
set +e
"$STPROF" record --flush-ms 500 -- true 2>/dev/null; expect_eq "--flush-ms 500" $? 2
set -e
# rank, local rank and world size from the environment
RANK=3 LOCAL_RANK=1 WORLD_SIZE=8 "$STPROF" record -q -o "$T/r.stp" -- "$WORKLOAD" basic >/dev/null
"$STPROF" dump -t process "$T/r.stp" | grep -q "rank=3 local_rank=1 world_size=8" || fail "rank fields"
"$STPROF" info "$T/r.stp" | grep -q "rank 3/8, local rank 1" || fail "info rank line"
# damaged traces: one line naming file and offset, exit 1, for every reader;
# a trace cut inside a chunk is read up to it after one warning naming file
# and offset, exit 0 (issue 26)
size=$(wc -c <"$T/r.stp")
head -c $((size - 7)) "$T/r.stp" >"$T/cut.stp"
printf 'not a trace at all' >"$T/junk.stp"
cp "$T/r.stp" "$T/flip.stp"
printf '\377\377\377\377' | dd of="$T/flip.stp" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
for cmd in info dump report; do
  for f in "$T/cut.stp" "$T/junk.stp" "$T/flip.stp"; do
    set +e
    "$STPROF" $cmd "$f" >/dev/null 2>"$T/err"; rc=$?
    set -e
    want=1
    [ "$f" = "$T/cut.stp" ] && want=0
    expect_eq "$cmd on $(basename "$f") status" $rc $want
    expect_eq "$cmd on $(basename "$f") error lines" "$(grep -c . "$T/err")" 1
    grep -q "$f\(: offset\| ends inside the chunk at offset\) [0-9]*" "$T/err" || fail "$cmd: no file and offset in: $(cat "$T/err")"
  done
done
echo ok
