#!/bin/sh
# test_stalloc_loops.sh - libstalloc follows training and inference loops
# written without stprof in mind, with the plan `stprof plan` makes by
# default (no options), on real PyTorch CPU (skipped without torch):
#   - torch_gpt_ckpt.py: a GPT with every block under activation
#     checkpointing, AdamW, 2 micro-batches, clipping, a cosine schedule:
#     peak reserved within 2% of the pool (1.43x before plans had a start-up
#     sequence and tensor plans c10's alignment; 784 fallbacks in the issue);
#   - torch_lstm_varlen.py: an LSTM LM with RMSprop, a different sequence
#     length every step: within 10% (2.58x in the issue);
#   - torch_resnet_infer.py: a residual CNN in eval mode, no markers (the
#     detector finds the period): within 2%, no request to the fallback;
#   - torch_loader_amp.py: a DataLoader with 2 worker processes, bf16
#     autocast, AdamW, 300 steps: within 2%;
#   - torch_lstm_varlen.py again, planned from a recording of another
#     draw of lengths (--seed 9: 12 steps, one of 48 tokens, the longest)
#     and run for 24 steps of the default draw (16 to 45 tokens in another
#     order), on three recordings: within 10% each (1.20x while the fallback
#     cached its blocks, up to 1.16x while start-up drift put optimizer
#     state on iteration ranges), and the plan's summary says that longer
#     runs than the recording's go to the fallback;
# and for each: the same output as without the plan, and the figures the
# plan's summary predicted (its replay through libstalloc's allocator)
# met by the run: peak reserved / pool and the fallbacks.  A plan the
# runtime would not follow (the LSTM's with --varying off) is never called
# optimal, and says what to change.  And torch_encoder_infer.py, a
# transformer encoder answering 2 request threads at once: the same
# outputs, at least 65% of the requests served by the plan, peak reserved
# within 60% of the pool (the threads' order differs from the recording's).
# And torch_eval_every.py, a loop evaluating every 20 steps: the summary
# names the evaluation step as the one whose requests the plan lacks, and
# the run holds the peak it predicted (within 2% of the pool).
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:?}
PY=${STPROF_PYTHON:-/usr/bin/python3}
if ! "$PY" -c "import torch" 2>/dev/null; then
	echo "note: no torch for $PY: skipped"
	exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
stat_of() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"; }

loop() { # NAME LIMIT ARGS...
	name=$1 lim=$2
	shift 2
	"$B/stprof" record -q -o "$name.stp" -- "$PY" "$S/tests/allocator/$name.py" "$@" >"$name.native"
	"$B/stprof" plan -o "$name.plan" "$name.stp" >"$name.summary"
	"$B/stprof" run --plan "$name.plan" --stalloc-stats "$name.stats" -- "$PY" "$S/tests/allocator/$name.py" "$@" >"$name.out"
	cmp -s "$name.native" "$name.out" || fail "$name: output differs with the plan enforced"
	grep "at run time" -A2 "$name.summary"
	head -5 "$name.stats"
	pool=$(stat_of "$name.stats" pool) pr=$(stat_of "$name.stats" peak_reserved)
	fb=$(($(stat_of "$name.stats" fallbacks) - $(stat_of "$name.stats" small)))
	want=$(sed -n 's/.*peak reserved [^=]*= \([0-9.]*\) x pool.*/\1/p' "$name.summary")
	wantfb=$(sed -n 's/.* \([0-9]*\) to the fallback.*/\1/p' "$name.summary")
	awk -v p="$pool" -v r="$pr" -v n="$name" -v l="$lim" -v w="$want" 'BEGIN {
		printf "%s: peak reserved %.4f x pool (at most %s; the plan said %s)\n", n, r / p, l, w
		exit !(r <= l * p && r / p - w < 0.01 && w - r / p < 0.01) }' ||
		fail "$name: peak reserved $pr for pool $pool: above $lim x, or not the $want x the plan said"
	[ "$fb" = "$wantfb" ] || fail "$name: $fb requests to the fallback, the plan said $wantfb"
	grep -q "would not follow" "$name.summary" && fail "$name: the plan says the runtime would not follow it"
	true
}

loop torch_gpt_ckpt 1.02 8
loop torch_lstm_varlen 1.10 12
loop torch_resnet_infer 1.02 10
loop torch_loader_amp 1.02 300
# a deployed plan meets other data: lengths in another order than recorded,
# the first step among them (its operations, and so the start-up sequence
# the plan follows to give each persistent request its slot, differ from
# the recording's).  Held to the 1.10 of the recorded loops on three
# recordings, each planned and run: the layout (one of several with the
# same pool) differs between recordings (their order of equal-size
# requests), and how the start-up drift falls with it.  2026-11-27, 14
# recordings: 1.0000-1.0940 x the pool (1.0783-1.1566 before a persistent
# request met at a late temporary's position took the slot of its size
# just after: allocator/stalloc.c drifted_slot).
L=$S/tests/allocator/torch_lstm_varlen.py
"$PY" "$L" 24 >lstm24.native
for k in 1 2 3; do
	"$B/stprof" record -q -o lstm9.stp -- "$PY" "$L" 12 --seed 9 >/dev/null
	"$B/stprof" plan -o lstm9.plan lstm9.stp >lstm9.summary
	"$B/stprof" run --plan lstm9.plan --stalloc-stats lstm24.stats -- "$PY" "$L" 24 >lstm24.out
	cmp -s lstm24.native lstm24.out || fail "lstm, other lengths, recording $k: output differs with the plan enforced"
	sed -n 1p lstm24.stats
	grep "^stalloc: fallback" lstm24.stats || true
	awk -v p="$(stat_of lstm24.stats pool)" -v r="$(stat_of lstm24.stats peak_reserved)" -v k=$k 'BEGIN {
		printf "torch_lstm_varlen, other lengths, recording %d: peak reserved %.4f x pool (at most 1.10)\n", k, r / p
		exit !(r <= 1.10 * p) }' || fail "lstm, other lengths, recording $k: peak reserved above 1.10 x the pool"
done
grep -q "^note: *shapes vary" lstm9.summary || fail "lstm: no note that longer runs go to the fallback: $(cat lstm9.summary)"
[ "$(stat_of torch_resnet_infer.stats fallbacks)" = 0 ] || fail "torch_resnet_infer: requests to the fallback"
# several request threads at once (MemoMalloc's setting): a transformer
# encoder answering 2 clients, each its own thread, recorded and run with
# the plan; the two threads' requests interleave in another order every run,
# so the replay's figures are not the run's.  The plan is enforced safely
# (the same outputs) and still serves most requests (2026-11-27: 95.9-96.8%
# of them, peak reserved 1.168x the pool, in 3 runs at load 4-6; once, in a
# make check at load ~6, 77.2% and 1.40x: the more the scheduler interleaves
# the two threads, the more goes to the fallback).  The bounds below are set
# past that measured spread; the outputs and the thread count are exact.
E=$S/tests/allocator/torch_encoder_infer.py
"$B/stprof" record -q -o enc2.stp -- "$PY" "$E" 12 --clients 2 >enc2.native
"$B/stprof" plan -o enc2.plan enc2.stp >enc2.summary
"$B/stprof" run --plan enc2.plan --stalloc-stats enc2.stats -- "$PY" "$E" 12 --clients 2 >enc2.out
cmp -s enc2.native enc2.out || fail "encoder, 2 clients: output differs with the plan enforced"
head -6 enc2.stats
tr ' ' '\n' <enc2.stats | awk -F= '{ v[$1] = $2 } END {
	q = v["requests"] - v["small"]; f = v["fallbacks"] - v["small"]
	printf "torch_encoder_infer, 2 clients: %.1f%% served by the plan (at least 65%%), peak reserved %.4f x pool (at most 1.60)\n", 100 * (q - f) / q, v["peak_reserved"] / v["pool"]
	exit !(q > 0 && q - f >= 0.65 * q && v["peak_reserved"] <= 1.60 * v["pool"]) }' ||
	fail "encoder, 2 clients: the plan served too few requests, or reserved too much"
# and says so: its requests came from more than one thread
[ "$(stat_of enc2.stats threads)" -ge 2 ] && grep -q "^stalloc: requests from [0-9]* threads" enc2.stats ||
	fail "encoder, 2 clients: the statistics do not say the requests came from several threads"
[ "$(stat_of torch_resnet_infer.stats threads)" = 1 ] || fail "torch_resnet_infer: more than one thread counted"
# the small-request threshold chosen from the trace (what --min-size 4096
# did by hand): the LSTM's many small per-step tensors left out, at the
# threshold whose replay held the least memory (or one within 0.5% of it)
grep -q "^min size: .* chosen by planning and replaying" torch_lstm_varlen.summary ||
	fail "lstm: no min size chosen: $(cat torch_lstm_varlen.summary)"
chosen=$(grep -A1 "^min size: " torch_lstm_varlen.summary | tail -1 | sed -n 's/.*\[[^:]*: \([0-9.]*\) \([KMG]*i*B\)\].*/\1 \2/p')
best=$(grep -A1 "^min size: " torch_lstm_varlen.summary | tail -1 | tr -d '[]' | tr ' ' '\n' | grep -v '^$' |
	awk 'NR % 4 == 3 { v = $1 } NR % 4 == 0 { v *= $1 ~ /^GiB/ ? 2^30 : $1 ~ /^MiB/ ? 2^20 : $1 ~ /^KiB/ ? 2^10 : 1; if (!m || v < m) m = v } END { print m }')
echo "$chosen" | awk -v m="$best" '{ v = $1 * ($2 ~ /^GiB/ ? 2^30 : $2 ~ /^MiB/ ? 2^20 : $2 ~ /^KiB/ ? 2^10 : 1)
	printf "torch_lstm_varlen: min size chosen holds %d B at most, the best candidate %d B\n", v, m; exit !(v > 0 && v <= 1.005 * m) }' ||
	fail "lstm: the min size chosen is not the one that held the least: $(grep -A1 '^min size' torch_lstm_varlen.summary)"
grep -q "detected from the allocation sequence" torch_resnet_infer.summary || fail "inference: no period detected"

# a plan the runtime would not follow: sizes as recorded in one step of
# varying lengths
"$B/stprof" plan --varying off --min-size 512 -o off.plan torch_lstm_varlen.stp >off.summary
grep -q "would not follow it" off.summary || fail "not followed, and not said: $(cat off.summary)"
grep -q "optimal" off.summary && fail "a plan not followed called optimal: $(grep result: off.summary)"
grep -q "^what to change: " off.summary || fail "no advice: $(cat off.summary)"
# a loop that evaluates every 20 steps: the evaluation steps' requests are
# not in the planned (training) iteration and take the fallback; the
# summary says which iteration they came in and what it means (it said
# "plan with --varying max (the default)", which the run had done), and the
# run holds what it predicted
V=$S/tests/allocator/torch_eval_every.py
"$B/stprof" record -q -o ev.stp -- "$PY" "$V" 100 >ev.native
"$B/stprof" plan -o ev.plan ev.stp >ev.summary
grep -A3 "^what to change" ev.summary
grep -q "^what to change: [0-9]* requests the planned iteration lacks came in 1 of the [0-9]* steady iterations (iteration 20):" ev.summary &&
	grep -q "steps unlike the others (an evaluation, a checkpoint or logging every few steps?)" ev.summary ||
	fail "eval every 20 steps: not said which steps: $(cat ev.summary)"
grep -q "varying max (the default)" ev.summary && fail "eval every 20 steps: advice to use the default: $(cat ev.summary)"
# ranges found in use in those steps are theirs, not objects kept too long
grep -q "objects that live longer than in" ev.summary && fail "eval every 20 steps: advice to free objects earlier: $(cat ev.summary)"
grep -q "^ *in those steps [0-9]* more requests found their planned range still in use" ev.summary ||
	fail "eval every 20 steps: the ranges found in use not told as the steps': $(cat ev.summary)"
"$B/stprof" run --plan ev.plan --stalloc-stats ev.stats -- "$PY" "$V" 100 >ev.out
cmp -s ev.native ev.out || fail "eval every 20 steps: output differs with the plan enforced"
want=$(sed -n 's/.*peak reserved [^=]*= \([0-9.]*\) x pool.*/\1/p' ev.summary)
awk -v p="$(stat_of ev.stats pool)" -v r="$(stat_of ev.stats peak_reserved)" -v w="$want" 'BEGIN {
	printf "torch_eval_every: peak reserved %.4f x pool (at most 1.02; the plan said %s)\n", r / p, w
	exit !(r <= 1.02 * p && r / p - w < 0.01 && w - r / p < 0.01) }' || fail "eval every 20 steps: peak reserved"
echo "test_stalloc_loops: passed"
