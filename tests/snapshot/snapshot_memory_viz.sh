#!/bin/bash
# PyTorch's own readers accept what `stprof export --format torch-snapshot`
# writes.  Here that is Debian's PyTorch 1.13 (CPU): `python3 -m
# torch.cuda._memory_viz stats` on the 1.13 layout, and its stats / segments /
# memory functions (the flamegraph step replaced by the identity: it would
# download flamegraph.pl) on both layouts, plus the 2.x invariants
# (check_snapshot.py).  2.x's own _memory_viz runs in tests/gpu (GPU machine).
# Traces: a real PyTorch CPU run recorded by stprof (its tensors: what a
# snapshot of a PyTorch run holds by default; the script leaves them live at
# the end, as a snapshot taken mid-run does), and the constructed 2.x
# snapshot imported.
. "$(dirname "$0")/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
export OMP_NUM_THREADS=1

cat >"$T/torch_run.py" <<'PY'
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters())
for _ in range(3):
    x = torch.randn(64, 256)
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
import os, sys
sys.stdout.flush()
os._exit(0)  # the model and the optimizer's state stay live in the trace
PY
# allocations of 16 KiB and more: the tensors, not the interpreter's million
# small objects of `import torch` (a 400 MB pickle otherwise)
out=$("$STPROF" record -q -m 16k -o "$T/torch.stp" -- "$PY" "$T/torch_run.py") || fail "record the torch run"
expect_eq "torch run output" "$out" "done"
"$STPROF" import -q "$T/v2_p4.pickle" -o "$T/v2.stp" || fail "import"

# the snapshot of a PyTorch CPU run holds its tensors, not the interpreter's heap
"$STPROF" export --format torch-snapshot "$T/torch.stp" -o "$T/t.pickle" >"$T/exp" || fail "export the torch run"
grep -q "^  the tensors: [0-9]* allocations; [0-9]* of other memory spaces left out (--space)" "$T/exp" ||
  fail "the torch run's snapshot is not its tensors: $(cat "$T/exp")"
mv "$T/exp" "$T/exp_t"
"$STPROF" export --format torch-snapshot --space host "$T/torch.stp" -o "$T/h.pickle" >"$T/exp" || fail "export --space host"
grep -q "^  the host heap: [0-9]* allocations" "$T/exp" || fail "--space host ignored: $(cat "$T/exp")"
# and the pickles hold what they say: as many allocations as the report's
# tensor space and host heap, the tensors far fewer (they once held the heap)
"$STPROF" report -f json --no-models "$T/torch.stp" -o "$T/torch.json" || fail "report the torch run"
"$PY" - "$T/t.pickle" "$T/exp_t" "$T/h.pickle" "$T/exp" "$T/torch.json" <<'PY' || fail "the snapshots do not hold what they say"
import json, pickle, re, sys
def allocs(p):
    d = pickle.load(open(p, 'rb'))
    return sum(1 for dt in d['device_traces'] for e in dt if e['action'] == 'alloc')
said = lambda p: int(re.search(r': (\d+) allocations', open(p).read()).group(1))
sp = json.load(open(sys.argv[5]))['spaces']
ten = [s['allocs'] for s in sp if s['tensors']][0]
host = [s['allocs'] for s in sp if s['kind'] == 'host' and not s['tensors']][0]
t, h = allocs(sys.argv[1]), allocs(sys.argv[3])
assert t == said(sys.argv[2]) == ten, (t, said(sys.argv[2]), ten)
assert h == said(sys.argv[4]) == host, (h, said(sys.argv[4]), host)
assert t < h, (t, h)
print('snapshots: %d tensor allocations, %d of the host heap with --space host' % (t, h))
PY
for tr in torch v2; do
  for layout in 2 1.13; do
    p="$T/$tr.$layout.pickle"
    "$STPROF" export -q --format torch-snapshot --torch-layout $layout "$T/$tr.stp" -o "$p" || fail "export $tr $layout"
    "$PY" "$HERE/check_snapshot.py" "$p" 3 || fail "$tr, layout $layout: PyTorch's reader refused it"
  done
  # the command line of PyTorch 1.13's reader, as a user runs it
  "$PY" -m torch.cuda._memory_viz stats "$T/$tr.1.13.pickle" >"$T/stats" 2>"$T/err" ||
    { cat "$T/err"; fail "python3 -m torch.cuda._memory_viz stats $tr"; }
  grep -q "'total_size'" "$T/stats" || fail "stats printed no total_size"
  echo "$tr: $(tr -d '\n' <"$T/stats")"
done
# the frames of the torch run are named: Python's and libtorch's functions
"$PY" - "$T/torch.2.pickle" <<'PY' || fail "torch run frames not named"
import pickle, sys
d = pickle.load(open(sys.argv[1], 'rb'))
names = {f['name'] for e in d['device_traces'][0] for f in e['frames']}
assert any('at::' in n or 'torch' in n or 'Py' in n for n in names), sorted(names)[:20]
print(f'{len(names)} distinct frame names in the torch run, e.g. ' +
      ', '.join(sorted(n for n in names if 'at::' in n)[:2]))
PY
echo ok
