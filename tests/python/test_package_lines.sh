#!/bin/bash
# A model from an installed package (transformers, timm...) run from one
# line of the user's (trainer.train(), model(x)): every row's user line is
# that call, so the report names, below it, the line of the package's model
# that made the tensor ("(in model.py:N in Block.forward)").  A model of the
# user's own, run through torch.nn's layers, gets no such line.  The JSON
# report's package_frame, the HTML report's paths and the allocator models'
# site names (--models-detail) carry it too.
# A program that is itself an installed package (a console script, python -m
# PKG, python -c calling it) has its rows at the package's own lines: its
# code is the user's (stp_det_frame.program), other packages' still not.
# A script of the user's without .py (./train, run by its #! line) is the
# user's code too.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
export OMP_NUM_THREADS=1
cd "$T"
mkdir -p lib/site-packages/fakelib
cat >lib/site-packages/fakelib/__init__.py <<'PY'
PY
cat >lib/site-packages/fakelib/model.py <<'PY'
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x):
        h = torch.tanh(self.up(x))
        return x + self.down(h)


def train(steps, d=64):
    model = nn.Sequential(Block(d), Block(d))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        loss = model(torch.randn(32, d)).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return float(loss)


def main():
    print("%.4f" % train(20))
PY
cat >lib/site-packages/fakelib/__main__.py <<'PY'
from fakelib.model import main
main()
PY
cat >run.py <<'PY'
import fakelib.model
print("%.4f" % fakelib.model.train(20))
PY
PYTHONPATH="$T/lib/site-packages" "$STPROF" record -q -o p.stp -- "$PY" run.py >/dev/null || fail "recorded run failed"
"$STPROF" report -n 6 p.stp >p.txt 2>&1 || fail "report failed"
sed -n '/^Top call sites/,/^$/p' p.txt >rows.txt
grep -q "at run.py:2 in <module> (aten::" rows.txt || fail "rows not at the user's line: $(cat rows.txt)"
grep -q "(in model.py:12 in Block.forward)" rows.txt || fail "no package line under the rows: $(cat rows.txt)"
# the JSON report (package_frame) and the HTML report say it too
"$STPROF" report --format json p.stp | python3 -c '
import json, sys
sites = json.load(sys.stdin)["sites"]
pk = [s["package_frame"]["text"] for s in sites if s.get("package_frame")]
assert "model.py:12 in Block.forward" in pk, pk
assert all("package_frame" in s for s in sites)' || fail "JSON report: no package_frame model.py:12"
"$STPROF" report --format html -o p.html p.stp || fail "HTML report failed"
grep -q "(in model.py:12 in Block.forward)" p.html || fail "HTML report: no package line"
# the allocator models' sites (--models-detail: the worst moment, the sites
# that split segments) read as the rows do; before, "site #N: <module>"
"$STPROF" report --models-detail p.stp | sed -n '/^Worst moment/,/^Recommended/p' >models.txt
grep -q "site #[0-9]*: run.py:2 in <module> (aten::[a-z_]*) (in model.py:[0-9]* in Block\.[_a-z]*)" models.txt ||
	fail "allocator models' sites: $(grep 'site #' models.txt | head -3)"
# a model of the user's own: no package line
"$STPROF" record -q -o u.stp -- "$PY" "$STPROF_SRC/tests/python/fold_loop.py" 20 >/dev/null || fail "fold_loop failed"
"$STPROF" report -n 10 u.stp | grep -q "   (in " && fail "a package line for a model of the user's own: $("$STPROF" report -n 10 u.stp | grep '(in ')"

# the program is the package: a console script (no .py), python -m, python -c
mkdir -p bin
printf '#!%s\nimport sys\nfrom fakelib.model import main\nsys.exit(main())\n' "$PY" >bin/fakelib-train
chmod +x bin/fakelib-train
export PYTHONPATH="$T/lib/site-packages"
"$STPROF" record -q -o c.stp -- "$T/bin/fakelib-train" >/dev/null || fail "console script: recorded run failed"
"$STPROF" record -q -o m.stp -- "$PY" -m fakelib >/dev/null || fail "python -m: recorded run failed"
"$STPROF" record -q -o x.stp -- "$PY" -c 'import fakelib.model as m; m.main()' >/dev/null || fail "python -c: recorded run failed"
for t in c m x; do
	"$STPROF" report -n 40 $t.stp >$t.txt 2>&1 || fail "$t: report failed"
	sed -n '/^Top call sites/,/^$/p' $t.txt >$t.rows
	grep "^      at " $t.rows | grep -v "^      at model.py:" &&
		fail "$t: rows not at the package's lines: $(cat $t.rows)"
	grep -q "at model.py:13 in Block.forward (backward of 1.down: aten::" $t.rows ||
		fail "$t: backward rows not at the package's lines: $(cat $t.rows)"
	grep -q "   (in \|<backward>" $t.rows && fail "$t: the program's package taken for a library: $(cat $t.rows)"
done
# ./train: the user's script without .py
printf '#!%s\nimport torch\nm = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh())\nfor _ in range(5):\n    m(torch.randn(32, 64)).sum().backward()\n' "$PY" >train
chmod +x train
"$STPROF" record -q -o t.stp -- ./train >/dev/null || fail "./train: recorded run failed"
"$STPROF" report -n 6 t.stp >t.txt 2>&1 || fail "./train: report failed"
grep -q "^      at train:5 in <module> (aten::randn)" t.txt || fail "./train: rows not at its lines: $(sed -n '/^Top call sites/,/^$/p' t.txt)"
echo ok
