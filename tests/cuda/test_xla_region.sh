#!/bin/sh
# test_xla_region.sh - XLA's own device memory is its allocator's region,
# not an object (collector/cuda_record.c; docs/jax.md): against the fake
# driver, xla_prog takes 64 MiB through a stand-in for JAX's CUDA plugin (a
# module named xla_cuda_plugin.so whose code calls cuMemAlloc, as XLA's BFC
# does for its region) and 1 MiB with cuMemAlloc of its own.  The trace
# has the 64 MiB as SEGMENT_RESERVE / SEGMENT_RELEASE of device 0 in pool
# 2 and the 1 MiB as an ALLOC / FREE, at the addresses the program printed;
# report runs on it.
. "$(dirname "$0")/../collector/lib.sh"
[ -x "${XLA_PROG:-}" ] || skip "xla_prog not built"
export LD_LIBRARY_PATH="$FAKE_CUDA_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# no libcudart beside which to look for libcupti: name the fake one
export STPROF_CUPTI_LIB="$FAKE_CUDA_DIR/libcupti.so.13"
out=$("$STPROF" record -q -o "$T/x.stp" -- "$XLA_PROG") || fail "xla_prog failed under stprof: $out"
region=$(echo "$out" | sed -n 's/^region \(0x[0-9a-f]*\) own .*/\1/p')
own=$(echo "$out" | sed -n 's/.* own \(0x[0-9a-f]*\)$/\1/p')
[ -n "$region" ] && [ -n "$own" ] || fail "no addresses: $out"
"$STPROF" dump "$T/x.stp" | grep -E ' (alloc|free|segment_reserve|segment_release) ' >"$T/d.txt"
cat "$T/d.txt"
grep -q "segment_reserve addr=$region size=67108864 kind=device device=0 .*pool=2" "$T/d.txt" || fail "no XLA region reserved"
grep -q "segment_release addr=$region size=67108864 kind=device device=0 .*pool=2" "$T/d.txt" || fail "no XLA region released"
grep -q " alloc addr=$region " "$T/d.txt" && fail "XLA's region recorded as an object"
grep -q " alloc addr=$own size=1048576 kind=device device=0 " "$T/d.txt" || fail "the program's own allocation is not an object"
grep -q " free addr=$own " "$T/d.txt" || fail "the program's own free is missing"
"$STPROF" report --no-progress "$T/x.stp" >"$T/r.txt" 2>&1 || fail "report: $(cat "$T/r.txt")"
echo "ok"
