#!/bin/sh
# check_25_stalloc_torch_plan.sh - a PyTorch GPU training run with its own
# plan enforced (docs/stalloc.md, "PyTorch on a GPU"):
#   1. natively, PyTorch's caching allocator: losses, max_memory_reserved(),
#      the device's total memory;
#   2. recorded with `--torch-cuda=pluggable` (one cudaMalloc per tensor, at
#      its requested size, which is what libstalloc later sees);
#   3. `stprof plan` of that trace (a device plan);
#   4. `stprof run --plan`: the shim installs libstalloc.so as PyTorch's
#      CUDAPluggableAllocator, every tensor is matched against the plan.
# Checks: the plan is a device plan; identical losses; libstalloc's peak
# reserved within 1% of the plan's pool.  Prints peak reserved against the
# default caching allocator's and the OOM margin of each (device total
# minus peak reserved).  Run by tests/gpu/run.sh (S, B, T, PY, CUDA set).
set -eu
echo "  a transformer trained with its own device plan enforced by libstalloc"
cat >"$T/train.py" <<'PYEOF'
import json, sys, torch
import torch.nn as nn
torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.backends.cuda.matmul.allow_tf32 = False
layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
model = nn.Sequential(nn.Embedding(1000, 256), nn.TransformerEncoder(layer, num_layers=4), nn.Linear(256, 1000)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
data = torch.randint(0, 1000, (12, 32, 65), device="cuda")
for it in range(12):
    x, y = data[it, :, :-1], data[it, :, 1:]
    loss = nn.functional.cross_entropy(model(x).reshape(-1, 1000), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    print(f"iter {it} loss {loss.item():.6f}")
torch.cuda.synchronize()
st = {"total": torch.cuda.mem_get_info()[1]}
try:
    st["max_reserved"] = torch.cuda.max_memory_reserved()
except Exception:
    st["max_reserved"] = None
json.dump(st, open(sys.argv[1], "w"))
PYEOF
jget() { "$PY" -c "import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print('' if v is None else v)" "$1" "$2"; }
stat_of() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
fail=0

"$PY" "$T/train.py" "$T/native.json" >"$T/native.out"
"$B/stprof" record -q --torch-cuda=pluggable -o "$T/p.stp" -- "$PY" "$T/train.py" "$T/rec.json" >"$T/rec.out"
cmp -s "$T/native.out" "$T/rec.out" || { echo "FAIL: recorded run's losses differ"; fail=1; }
"$B/stprof" plan -q -o "$T/p.plan" "$T/p.stp"
"$B/stprof" plan --show "$T/p.plan" | sed -n '/^memory:/p;/^requests:/p;/^pool:/p' | sed 's/^/    /'
"$B/stprof" plan --show "$T/p.plan" | grep -q '^memory:.*device' || { echo "FAIL: not a device plan"; fail=1; }
"$B/stprof" run --plan "$T/p.plan" --stalloc-stats "$T/stats" -- "$PY" "$T/train.py" "$T/plan.json" >"$T/plan.out" 2>"$T/plan.err"
grep -q "stprof run --plan" "$T/plan.err" && { echo "FAIL: libstalloc not installed: $(cat "$T/plan.err")"; fail=1; }
sed -n '1,5p' "$T/stats" | sed 's/^/    /'
cmp -s "$T/native.out" "$T/plan.out" && echo "  losses identical to the native run ($(tail -1 "$T/plan.out"))" ||
	{ echo "FAIL: losses differ with the plan enforced"; diff "$T/native.out" "$T/plan.out" | head -5; fail=1; }
pool=$(stat_of "$T/stats" pool) pr=$(stat_of "$T/stats" peak_reserved)
total=$(jget "$T/native.json" total) nres=$(jget "$T/native.json" max_reserved)
echo "  peak reserved: libstalloc $(mib "$pr") (pool $(mib "$pool")), PyTorch's caching allocator $(mib "$nres")"
echo "  OOM margin (device total $(mib "$total") minus peak reserved): libstalloc $(mib $((total - pr))), caching $(mib $((total - nres)))"
awk -v p="$pool" -v r="$pr" 'BEGIN { exit !(r <= 1.01 * p) }' || { echo "FAIL: peak reserved above 1.01 x pool"; fail=1; }
exit $fail
