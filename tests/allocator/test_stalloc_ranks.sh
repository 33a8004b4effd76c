#!/bin/bash
# test_stalloc_ranks.sh - plans for a data-parallel job, one per rank, on
# real torchrun (python -m torch.distributed.run, gloo on the CPU, 2
# ranks), with tests/allocator/torch_ddp.py (DDP, DistributedSampler and a
# DataLoader worker, checkpointed blocks, 2 micro-batches, bf16 autocast,
# AdamW), 30 steps, recorded by default (the collector folds the steady
# iterations: docs/record.md, "Long runs"):
# 1. each rank's plan summary replays the folded iterations' allocations
#    that outlive them at the ranges they repeat: no steady iteration sends
#    a request to the fallback (33 did while those, the gradients DDP makes
#    in its backward, were fed to the matcher as a sequence of their own);
# 2. the ranks run with their plans, each in its own process: within 2% of
#    the pool, nothing to the fallback, the output unchanged (below).
set -eu
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch.distributed' 2>/dev/null || skip "no torch.distributed for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1
# Debian's torch 1.13 on Python 3.11 cannot parse its default --redirects 0
# (test_ranks.sh)
RUN=(-m torch.distributed.run --nproc_per_node 2 --redirects 9:0 --tee 9:0)
P="$STPROF_SRC/tests/allocator/torch_ddp.py"
cd "$T"

"$STPROF" record -q -o d.stp -- "$PY" "${RUN[@]}" "$P" 30 >d.native 2>d.err || fail "torchrun under stprof: $(tail -5 d.err)"
for r in 0 1; do
	grep -q "^rank $r steps 30 loss" d.native || fail "rank $r: $(cat d.native)"
	"$STPROF" plan -o "d.rank$r.plan" "d.stp.rank$r" >"s$r.txt" 2>&1 || fail "plan of rank $r: $(cat "s$r.txt")"
	grep -A3 "^at run time" "s$r.txt"
	grep -q "over the trace's [0-9]* iterations written in full" "s$r.txt" || fail "rank $r: $(grep -A2 '^at run' "s$r.txt")"
	grep -q "and the [0-9]* the collector folded (what outlives each, at the ranges it repeats)" "s$r.txt" ||
		fail "rank $r: no folded iterations"
	grep -q " (0 in the [0-9]* steady iterations, at most 0 in one)" "s$r.txt" ||
		fail "rank $r: steady iterations send requests to the fallback: $(grep 'to the fallback' "s$r.txt")"
done

# 2. each rank's default plan holds the job within 2% of its pool, run as
#    torchrun runs it (each rank's process enforcing its own plan through
#    `stprof run --plan`, started by torchrun --no_python): the same losses
#    as without the plans, no request to the fallback, the figures the
#    summary predicted.  DDP's first gradient bucket, made at start-up and
#    freed in the first iteration when DDP rebuilds its buckets, is placed
#    over the slots of the objects made after it (the new buckets, AdamW's
#    state): without that it went to the fallback, 1.1585x the pool.
cat >rank.sh <<EOF2
#!/bin/sh
exec "$STPROF" run --plan "$T/d.rank\$RANK.plan" --stalloc-stats "$T/stats\$RANK" -q -- "$PY" "$P" 30
EOF2
chmod +x rank.sh
"$PY" "${RUN[@]}" --no_python ./rank.sh >d.out 2>d.err || fail "torchrun with the plans: $(tail -5 d.err)"
expect_eq "the ranks' output with their plans" "$(sort d.out)" "$(sort d.native)"
for r in 0 1; do
	grep -q "^start-up:       1 temporary that outlives start-up placed over the slots" "s$r.txt" ||
		fail "rank $r: no start-up placement: $(cat "s$r.txt")"
	grep -q "would not follow" "s$r.txt" && fail "rank $r: the plan says the runtime would not follow it"
	st=$(tail -1 "stats$r")
	pool=$(field pool "$st") pr=$(field peak_reserved "$st")
	fb=$(($(field fallbacks "$st") - $(field small "$st")))
	want=$(sed -n 's/.*peak reserved [^=]*= \([0-9.]*\) x pool.*/\1/p' "s$r.txt")
	awk -v p="$pool" -v r="$pr" -v w="$want" -v k="$r" 'BEGIN {
		printf "rank %s: peak reserved %.4f x pool (the plan said %s)\n", k, r / p, w
		exit !(r <= 1.02 * p && r / p - w < 0.01 && w - r / p < 0.01) }' ||
		fail "rank $r: peak reserved $pr for pool $pool: above 1.02x, or not the $want x the plan said"
	expect_eq "rank $r: requests to the fallback" "$fb" 0
done
echo ok
