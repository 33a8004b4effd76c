#!/bin/sh
# test_plan_real.sh - plans real traces: the bundled example program and a
# PyTorch CPU training step recorded by `stprof record`.  Skipped (77) while
# the collector or the programs are not there.  Every plan is verified and
# its pool/bound ratio printed.
set -eu
B=${STPROF_BUILD:?}
S=${STPROF_SRC:?}
ST="$B/stprof"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$ST" record --help >/dev/null 2>&1 || { echo "skip: stprof record is not built yet"; exit 77; }
ran=0
plan_one() { # trace
  "$ST" plan -o "$T/p.plan" "$1" >"$T/out.txt" || { cat "$T/out.txt"; echo "FAIL: plan $1"; exit 1; }
  cat "$T/out.txt"
  "$ST" plan -q --verify "$T/p.plan" || { echo "FAIL: verify $1"; exit 1; }
  ran=$((ran + 1))
}
if [ -x "$B/train" ] || [ -x "$B/examples/train" ]; then
  ex="$B/train"; [ -x "$ex" ] || ex="$B/examples/train"
  "$ST" record -o "$T/ex.stp" "$ex" >/dev/null 2>&1 && plan_one "$T/ex.stp"
fi
PY=${STPROF_PYTHON:-}
if [ -n "$PY" ] && "$PY" -c "import torch" 2>/dev/null; then
  cat >"$T/tiny.py" <<'PYEOF'
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
opt = torch.optim.Adam(model.parameters())
x = torch.randn(64, 256)
for it in range(4):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
PYEOF
  "$ST" record -o "$T/py.stp" "$PY" "$T/tiny.py" >/dev/null 2>&1 && plan_one "$T/py.stp"
fi
[ $ran -gt 0 ] || { echo "skip: nothing could be recorded"; exit 77; }
echo "test_plan_real: planned $ran real traces"
