#!/bin/bash
# Batch inference (tests/python/infer_loop.py: a model in eval() mode run
# under torch.no_grad(), as an evaluation or batch-inference script does):
# once 32 such forwards have run in a process that has not trained, the
# shim makes each one an iteration with its phase "forward"
# (collector/torch/python/stprof/torch_markers.py, inference_forward).
# 1. 600 batches: the output is the native one; 567 iterations from
#    markers (forwards 33 to 600, numbered 32 to 598: iteration k is the
#    k-th forward from 0, the script's own request number; the last one
#    is never ended), phase
#    "forward" only (the detector, without markers, split each batch at its
#    peak into a "forward" and a "backward"); steady ones fold; a batch adds
#    at most 1 KiB to the trace (600 batches against 300; 171 bytes before,
#    when nothing folded).
# 2. 100 batches, then 50 training steps: the training steps still end
#    iterations (67 of inference, 32 to 98; 50 of training, 99 on), and
#    the report's steady iteration is a training one.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1 PYTHONHASHSEED=0
P="$STPROF_SRC/tests/python/infer_loop.py"
cd "$T"

# 1.
"$STPROF" record -q -o i.stp -- "$PY" "$P" 600 >i.out || fail "recorded run failed"
expect_eq "output under stprof" "$(cat i.out)" "$("$PY" "$P" 600)"
"$STPROF" report i.stp >i.txt || fail "report failed"
grep -q "^Iterations: 567 from markers" i.txt || fail "iterations: $(grep -A2 '^Iterations' i.txt)"
"$STPROF" report -f json i.stp | "$PY" -c '
import json, sys
it = json.load(sys.stdin)["timeline"]["iterations"]
assert (it[0]["index"], it[-1]["index"]) == (32, 598), (it[0], it[-1])' || fail "iterations not numbered by forward"
grep -q "^  phases    forward (markers)" i.txt || fail "phases: $(grep '^  phases' i.txt)"
folded=$("$STPROF" dump -t fold i.stp | wc -l)
[ "$folded" -ge 560 ] || fail "$folded iterations folded (at least 560)"
"$STPROF" record -q -o i300.stp -- "$PY" "$P" 300 >/dev/null
a=$(stat -c %s i300.stp) b=$(stat -c %s i.stp)
per=$(((b - a) / 300))
echo "  600 batches: $folded iterations folded; 300 batches $a bytes, 600 batches $b bytes: $per bytes a batch"
[ "$per" -le 1024 ] || fail "a batch adds $per bytes (at most 1 KiB)"

# 2.
"$STPROF" record -q -o t.stp -- "$PY" "$P" 100 train 50 >t.out || fail "recorded run failed (train)"
expect_eq "train: output under stprof" "$(cat t.out)" "$("$PY" "$P" 100 train 50)"
"$STPROF" report t.stp >t.txt
grep -q "^Iterations: 117 from markers" t.txt || fail "train: iterations: $(grep -A2 '^Iterations' t.txt)"
grep -q "^  phases    forward backward optimizer (markers)" t.txt || fail "train: phases: $(grep '^  phases' t.txt)"
steady=$(sed -n 's/^  steady    iteration \([0-9]*\):.*/\1/p' t.txt)
[ -n "$steady" ] && [ "$steady" -ge 99 ] || fail "train: the steady iteration is $steady, not a training one (99 on)"
echo ok
