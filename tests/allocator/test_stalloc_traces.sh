#!/bin/sh
# test_stalloc_traces.sh - the shadow-checked replay of test_stalloc_replay
# on plans of recorded programs instead of generated schedules: the
# bundled example (two shapes) and real PyTorch CPU (examples/
# torch_transformer.py; skipped without torch).  Clean, perturbed and from
# four threads: no block may ever overlap a live one.
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:?}
PY=${STPROF_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/stprof" record -q -o "$T/train.stp" -- "$B/train" -i 6 >/dev/null
"$B/stprof" plan -q --min-size 64 -a 64 -o "$T/train.plan" "$T/train.stp"
"$B/stprof" record -q -o "$T/rc.stp" -- "$B/train" -i 6 -r -m 2 -l 6 >/dev/null
"$B/stprof" plan -q -a 16 -o "$T/rc.plan" "$T/rc.stp"
plans="$T/train.plan $T/rc.plan"
if "$PY" -c "import torch" 2>/dev/null; then
	"$B/stprof" record -q -o "$T/torch.stp" -- "$PY" "$S/examples/torch_transformer.py" --iters 3 >/dev/null
	"$B/stprof" plan -q --min-size 4096 -a 64 -o "$T/torch.plan" "$T/torch.stp"
	plans="$plans $T/torch.plan"
fi
# shellcheck disable=SC2086
"$B/test_stalloc_replay" $plans
