#!/bin/bash
# PyTorch's CUDA tensors without a GPU: torch_cuda_driver calls the
# collector's entry points as PyTorch does (the pluggable allocator's
# alloc/free with a stand-in libcudart; the caching allocator's reports to
# the profiler), under stprof record.  The trace holds the expected
# tensor and segment events, the stand-in runtime's own host allocations
# are not recorded, and stprof report measures the real reserved memory
# from the segments and prints the PyTorch model's error against it.
. "$(dirname "$0")/lib.sh"
DRV="$STPROF_BUILD/torch_cuda_driver"
MiB=1048576

# ---- (a) the pluggable allocator
out=$(LD_LIBRARY_PATH="$STPROF_BUILD/fakecuda" "$STPROF" record -q -o "$T/p.stp" -- "$DRV" pluggable)
expect_eq "driver output" "$out" "pluggable: done"
d=$("$STPROF" dump "$T/p.stp")
dev=$(printf '%s\n' "$d" | grep -E ' (alloc|free) ' | grep 'kind=device' | sed 's/^[0-9]* [0-9]* [0-9]* //; s/addr=0x[0-9a-f]* //')
want="alloc size=1000 kind=device device=0 stream=0x5151 pool=1
alloc size=3145728 kind=device device=0 stream=0x5151 pool=1
alloc size=4096 kind=device device=1 stream=0x0 pool=1
free size=1000 kind=device device=0 stream=0x5151 pool=1
free size=4096 kind=device device=1 stream=0x0 pool=1"
expect_eq "pluggable tensor events" "$dev" "$want"
if printf '%s\n' "$d" | grep -q 'size=123457'; then fail "cudaMalloc's own host allocation was recorded"; fi
"$STPROF" dump -s "$T/p.stp" | grep 'size=3145728 kind=device' | grep -q 'stack=0x' ||
  fail "no call path for a tensor"

# ---- (b) the caching allocator's reports
out=$("$STPROF" record -q -o "$T/c.stp" -- "$DRV" caching)
expect_eq "driver output" "$out" "caching: done"
d=$("$STPROF" dump "$T/c.stp" | grep -E ' (alloc|free|segment_reserve|segment_release) .*kind=device' |
    sed 's/^[0-9]* [0-9]* [0-9]* //; s/ stream=0x0//')
want="segment_reserve addr=0x7f0000000000 size=2097152 kind=device device=0 pool=0
alloc addr=0x7f0000000000 size=1048576 kind=device device=0 pool=1
alloc addr=0x7f0000100000 size=1048576 kind=device device=0 pool=1
segment_reserve addr=0x7f0010000000 size=31457280 kind=device device=0 pool=0
alloc addr=0x7f0010000000 size=31457280 kind=device device=0 pool=1
free addr=0x7f0010000000 size=31457280 kind=device device=0 pool=1
free addr=0x7f0000000000 size=1048576 kind=device device=0 pool=1
segment_release addr=0x7f0010000000 size=31457280 kind=device device=0 pool=0
segment_reserve addr=0x7f0020000000 size=12582912 kind=device device=0 pool=0
alloc addr=0x7f0020000000 size=12582912 kind=device device=0 pool=1
free addr=0x7f0000100000 size=1048576 kind=device device=0 pool=1
segment_release addr=0x7f0000000000 size=2097152 kind=device device=0 pool=0
segment_reserve addr=0x7f0030000000 size=20971520 kind=device device=1 pool=0
alloc addr=0x7f0030000000 size=4194304 kind=device device=1 pool=1
segment_reserve addr=0x7f0031400000 size=20971520 kind=device device=1 pool=0
alloc addr=0x7f0030400000 size=20971520 kind=device device=1 pool=1
free addr=0x7f0030400000 size=20971520 kind=device device=1 pool=1
free addr=0x7f0030000000 size=4194304 kind=device device=1 pool=1"
expect_eq "caching tensor and segment events" "$d" "$want"
"$STPROF" info "$T/c.stp" | grep -q "whole:        yes" || fail "caching trace not whole"

# the report measures the real reserved memory from those segments and
# compares the PyTorch model with it
"$STPROF" report "$T/c.stp" >"$T/r.txt" 2>&1 || fail "report failed: $(tail -3 "$T/r.txt")"
grep -q "actual (segment events in the trace)" "$T/r.txt" || fail "no actual line: $(cat "$T/r.txt")"
grep -q "model error vs actual: M_a" "$T/r.txt" || fail "no model error line"
# ---- (c) the caching allocator gives up: its oom report is the request
# refused (a REFUSED of the tensor pool, its bytes requested), on either
# signature, after the segments its cache flush released (the report's
# reserved bytes); the CPU allocator's report is only passed on
out=$("$STPROF" record -q -o "$T/o.stp" -- "$DRV" oom)
expect_eq "driver output" "$out" "oom: done"
d=$("$STPROF" dump "$T/o.stp" | grep -E ' (refused|segment_release) ' | sed 's/^[0-9]* [0-9]* [0-9]* //; s/ stream=0x0//')
expect_eq "oom reports" "$d" "segment_release addr=0x7f0010000000 size=33554432 kind=device device=0 pool=0
refused addr=0x0 size=67108864 kind=device device=0 pool=1
refused addr=0x0 size=3145728 kind=device device=1 pool=1"
"$STPROF" report "$T/o.stp" >"$T/o.txt"
grep -A1 "^  refused   1 request for want of memory; the first asked for 64.0 MiB" "$T/o.txt" |
  grep -q "with 8.00 MiB live of 20.0 MiB reserved" || fail "the refused request: $(grep -A1 refused "$T/o.txt")"
echo ok
