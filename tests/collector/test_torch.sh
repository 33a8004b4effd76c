#!/bin/bash
# Real PyTorch: /usr/bin/python3 (Debian's python3-torch) trains a small
# transformer for 2 iterations under stprof.  The trace is whole and
# consistent, holds the script's iteration markers, and its allocation count
# and peak live bytes agree with an independent recording of the same run by
# heaptrack (within 0.5%: the two tools' own start-up differs slightly),
# recorded with --full (every heap allocation; a Python process's default
# samples the host heap: tests/collector/test_heap_sample.sh).
. "$(dirname "$0")/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
command -v heaptrack >/dev/null || skip "heaptrack not installed"
export PYTHONHASHSEED=0 OMP_NUM_THREADS=1
script="$STPROF_SRC/examples/torch_transformer.py"
want=$("$PY" "$script" --iters 2)
got=$("$STPROF" record --full -q -o "$T/t.stp" -- "$PY" "$script" --iters 2)
expect_eq "script output under stprof" "$got" "$want"
"$STPROF" info "$T/t.stp" | grep -q "whole:        yes (exited with status 0)" || fail "trace not whole"
res=$("$CHECK_HEAP" "$T/t.stp") || fail "trace inconsistent: $res"
ours_allocs=$(printf '%s\n' "$res" | sed 's/.*allocs=\([0-9]*\).*/\1/')
ours_peak=$(printf '%s\n' "$res" | sed 's/.*peak=\([0-9]*\).*/\1/')
case "$res" in *lost=0*) ;; *) fail "lost events: $res" ;; esac
iters=$("$STPROF" dump -t marker "$T/t.stp" | grep -c 'kind=iteration_end')
expect_eq "iteration markers" "$iters" 2

heaptrack -o "$T/ht" "$PY" "$script" --iters 2 >/dev/null 2>"$T/heaptrack.log" || fail "heaptrack failed: $(tail -3 "$T/heaptrack.log")"
heaptrack_print "$T"/ht.* >"$T/ht.txt" 2>/dev/null
ht_allocs=$(sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' "$T/ht.txt")
ht_peak=$(sed -n 's/^peak heap memory consumption: \(.*\)$/\1/p' "$T/ht.txt")
[ -n "$ht_allocs" ] && [ -n "$ht_peak" ] || fail "cannot read heaptrack's figures"
# heaptrack prints decimal units: 74.80M = 74,800,000 bytes
ht_peak_b=$(awk -v v="$ht_peak" 'BEGIN { u = substr(v, length(v)); n = v + 0;
  m = u == "K" ? 1e3 : u == "M" ? 1e6 : u == "G" ? 1e9 : 1; printf "%.0f", n * m }')
echo "stprof: allocs=$ours_allocs peak=$ours_peak; heaptrack: allocs=$ht_allocs peak=$ht_peak ($ht_peak_b)"
awk -v a="$ours_allocs" -v b="$ht_allocs" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.005 * b) }' ||
  fail "allocation counts differ by more than 0.5%: $ours_allocs vs $ht_allocs"
awk -v a="$ours_peak" -v b="$ht_peak_b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.005 * b) }' ||
  fail "peaks differ by more than 0.5%: $ours_peak vs $ht_peak_b"
echo ok
