#!/bin/bash
# stprof import on PyTorch memory snapshots CONSTRUCTED in Python with the
# exact 1.13 and 2.x layouts (make_snapshots.py; no GPU here), pickled with
# protocols 2 (C++ writer), 4 and 5 (Python): the events, the state rebuilt
# from before the ring buffer, frames as call paths, report / plan / export
# taking the pickle directly, and one-line errors for hostile pickles.
. "$(dirname "$0")/lib.sh"

for p in v2_p4 v2_p2 v2_p5 v2_notime v2_expandable v113; do
  "$STPROF" import -q "$T/$p.pickle" -o "$T/$p.stp" || fail "import $p"
done
out=$("$STPROF" import "$T/v2_p4.pickle" -o "$T/x.stp")
echo "$out"
echo "$out" | grep -q "before the first entry: 2 segments, 1 allocations (rebuilt)" || fail "state before the ring"
# protocols 2, 4, 5 give the same trace
expect_eq "protocol 2 = 4" "$(events "$T/v2_p2.stp" | md5sum)" "$(events "$T/v2_p4.stp" | md5sum)"
expect_eq "protocol 5 = 4" "$(events "$T/v2_p5.stp" | md5sum)" "$(events "$T/v2_p4.stp" | md5sum)"
# without time_us: the same memory events in the same order, other times
# (the external annotations keep their times, so they sort elsewhere)
expect_eq "no time_us: same events" "$(events "$T/v2_notime.stp" | grep -v 'module_e' | cut -d' ' -f3- | md5sum)" \
  "$(events "$T/v2_p4.stp" | grep -v 'module_e' | cut -d' ' -f3- | md5sum)"

d=$("$STPROF" dump "$T/v2_p4.stp")
want_lines=(
  "0 1 segment_reserve addr=0x7f0000000000 size=2097152 kind=device"     # rebuilt, at the first entry's time
  "0 1 segment_reserve addr=0x7f0000200000 size=20971520 kind=device"    # freed and re-made inside the ring
  "0 1 alloc addr=0x7f0000000000 size=512 kind=device"                   # allocated before the ring
  "0 1 alloc addr=0x7f0000000200 size=1024 requested=1000 kind=device"
  "10000 1 alloc addr=0x7f0000200000 size=12582912 kind=device"
  "20000 1 alloc addr=0x7f0000000600 size=512 requested=300 kind=device"
  "40000 1 free addr=0x7f0000000600 size=512 kind=device"
  "45000 1 marker kind=module_enter name=\"optimizer.step\""
  "50000 1 marker kind=annotation name=\"snapshot\""
  "80000 1 segment_release addr=0x7f0000200000 size=20971520 kind=device"
  "110000 1 marker kind=annotation name=\"oom\" value=3145728"
)
for w in "${want_lines[@]}"; do
  echo "$d" | grep -qF -- "$w" || fail "v2 dump lacks '$w'"
done
expect_eq "free_requested dropped" "$(echo "$d" | grep -c ' free ')" 2
# expandable segments: segment_map / segment_unmap
d=$("$STPROF" dump "$T/v2_expandable.stp")
echo "$d" | grep -qF "segment_reserve addr=0x7e0001400000 size=20971520" || fail "segment_map"
echo "$d" | grep -qF "segment_release addr=0x7e0001400000 size=20971520" || fail "segment_unmap"
# 1.13: no trace; block addresses from the segment's, sizes in order; the
# live allocation's requested size and frames from the last history entry
d=$("$STPROF" dump "$T/v113.stp")
echo "$d" | grep -qF "alloc addr=0x7f1000000000 size=1024 requested=1000" || fail "1.13 first block"
echo "$d" | grep -qF "alloc addr=0x7f1000000400 size=512 " || fail "1.13 pending-free block"
expect_eq "1.13 segments" "$(echo "$d" | grep -c segment_reserve)" 2

# report, plan, export and info take the pickle directly
r=$("$STPROF" report --no-progress "$T/v2_p4.pickle" 2>&1) || fail "report on a pickle: $r"
echo "$r" | grep -q "reserved  22.0 MiB at most (allocator segments)" || fail "report: actual reserved"
# the user's line first (docs/python.md); the library's Python frames inside
# it are folded away by default, all there with --all-frames
echo "$r" | grep -q "at train.py:12 in step" || fail "report: caller frames"
echo "$r" | grep -q "<- adam.py:155 in _single_tensor_adam" && fail "report: library frames not folded"
a=$("$STPROF" report --no-progress --all-frames --frames 8 "$T/v2_p4.pickle" 2>&1) || fail "report --all-frames: $a"
echo "$a" | grep -q "<- adam.py:155 in _single_tensor_adam" || fail "report: Python frames"
echo "$r" | grep -q "^  pytorch  " || fail "report: the PyTorch model beside the actual figures"
"$STPROF" plan -q "$T/v2_p4.pickle" -o "$T/p.plan" || fail "plan on a pickle"
[ -s "$T/p.plan" ] || fail "plan wrote nothing"
"$STPROF" export -q "$T/v2_p4.pickle" -o "$T/p.pftrace" || fail "export on a pickle"
[ -s "$T/p.pftrace" ] || fail "export wrote nothing"
"$STPROF" lint-perfetto "$T/p.pftrace" | grep -q "no violations" || fail "the timeline of a snapshot has violations"
"$STPROF" info "$T/v113.pickle" | grep -q "whole:        yes" || fail "info on a pickle"

# hostile or foreign pickles: one line naming file and offset, exit 1
bad() { # NAME PYTHON-EXPR WANT
  "$PY" -c "import pickle,sys; sys.stdout.buffer.write($2)" >"$T/$1.pickle"
  set +e; msg=$("$STPROF" import "$T/$1.pickle" -o "$T/bad.stp" 2>&1); rc=$?; set -e
  expect_eq "$1: exit status" "$rc" 1
  expect_eq "$1: one line" "$(printf '%s\n' "$msg" | wc -l)" 1
  case "$msg" in *"$T/$1.pickle: offset "*"$3"*) ;; *) fail "$1: message '$msg'" ;; esac
  set +e; "$STPROF" report "$T/$1.pickle" >/dev/null 2>&1; rc=$?; set -e
  expect_eq "$1: report exit status" "$rc" 1
}
bad global "pickle.dumps(print, protocol=2)" "would import or call code"
bad reduce "pickle.dumps(range(3), protocol=4)" "would import or call code"
bad loop "(lambda l: (l.append(l), pickle.dumps(l, protocol=4))[1])([])" "contains itself"
bad notsnap "pickle.dumps({'a': 1}, protocol=4)" "not a PyTorch memory snapshot"
bad truncated "pickle.dumps({'segments': [1, 2, 3]}, protocol=4)[:-5]" "claimed"
bad nostop "pickle.dumps([1, 2], protocol=2)[:-1]" "no STOP"

# memory is what the import keeps, not the pickle (issue 26: 41-49 bytes per
# input byte): 10 MB of empty lists, of empty trace entries and of entries
# with unknown keys import within 128 MiB of address space (the earlier
# reader needed about 320 MB for each; ASan reserves terabytes: no bound
# under it)
if [ "${STPROF_SANITIZE:-0}" != 1 ]; then
  for shape in "[[] for _ in range(5000000)]" \
               "{'segments': [], 'device_traces': [[{} for _ in range(5000000)]]}" \
               "{'segments': [], 'device_traces': [[{'k%d' % (i % 1000): [i]} for i in range(1000000)]]}"; do
    "$PY" -c "import pickle,sys; sys.stdout.buffer.write(pickle.dumps($shape, protocol=4))" >"$T/big.pickle"
    set +e; msg=$(prlimit --as=$((128 << 20)) "$STPROF" import -q "$T/big.pickle" -o "$T/big.stp" 2>&1); rc=$?; set -e
    expect_eq "import of $(stat -c %s "$T/big.pickle") bytes of $shape: status ($msg)" "$rc" 0
  done
fi
echo ok
