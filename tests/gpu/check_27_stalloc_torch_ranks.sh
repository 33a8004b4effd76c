#!/bin/sh
# check_27_stalloc_torch_ranks.sh - a torchrun job's device plans, one per
# rank, enforced per rank (docs/stalloc.md, "Ranks"): 2 ranks of DDP over
# gloo sharing the one GPU (an MLP on cuda:0, AdamW, a DataLoader worker,
# 12 steps):
#   1. natively (PyTorch's caching allocator): each rank's loss;
#   2. recorded with `--torch-cuda=pluggable`, each rank planned
#      (t.rank<R>.plan: device plans);
#   3. `stprof run --plan t.plan --stalloc-stats S -- <the same torchrun>`:
#      in each rank the shim installs libstalloc.so as PyTorch's CUDA
#      allocator with that rank's plan.
# Checks: the same losses; S.rank0 and S.rank1, each headed by its rank and
# plan, with that plan's pool and most requests served by the plan; no
# statistics of the launcher's or the worker's.  Prints each rank's peak
# reserved / pool against what its plan's replay predicted.  Run by
# tests/gpu/run.sh (S, B, T, PY set).
set -eu
echo "  2 DDP ranks on one GPU, each with its own device plan"
cat >"$T/ddp.py" <<'PYEOF'
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
model = DDP(nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 10)).cuda(),
            device_ids=[0])
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(1)
data = TensorDataset(torch.randn(12 * 64 * 2, 256, generator=g), torch.randint(0, 10, (12 * 64 * 2,), generator=g))
loader = DataLoader(data, batch_size=32 * (rank + 1), sampler=DistributedSampler(data, seed=0), num_workers=1)
for step, (x, y) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if step == 11:
        break
print(f"rank {rank} steps {step + 1} loss {loss.item():.6f}", flush=True)
dist.destroy_process_group()
PYEOF
. "$S/tests/gpu/plan_lib.sh"
fail=0
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# torch 1.13 on Python 3.11 cannot parse torchrun's default --redirects 0
# (tests/python/test_ranks.sh); later ones can
fix=$("$PY" -c 'import torch; print("--redirects 9:0 --tee 9:0" if torch.__version__ < "2" else "")')
cd "$T"
losses() { grep -o "rank [0-9] steps [0-9]* loss [0-9.]*" "$1" | sort; }
"$PY" -m torch.distributed.run --nproc_per_node 2 --master_port "$port" $fix ddp.py >native.out 2>native.err ||
	{ echo "FAIL: native run: $(tail -3 native.err)"; exit 1; }
losses native.out >native.losses
[ "$(wc -l <native.losses)" = 2 ] || { echo "FAIL: native losses: $(cat native.out)"; exit 1; }
"$B/stprof" record -q --torch-cuda=pluggable -o t.stp -- "$PY" -m torch.distributed.run --nproc_per_node 2 \
	--master_port "$port" $fix ddp.py >rec.out 2>rec.err || { echo "FAIL: recorded run: $(tail -3 rec.err)"; exit 1; }
for r in 0 1; do
	"$B/stprof" plan -o t.rank$r.plan t.stp.rank$r >summary$r 2>&1 || { echo "FAIL: plan of rank $r: $(tail -3 summary$r)"; fail=1; }
	"$B/stprof" plan --show t.rank$r.plan | grep -q '^memory:.*device' || { echo "FAIL: rank $r: not a device plan"; fail=1; }
done
"$B/stprof" run --plan t.plan --stalloc-stats S -- "$PY" -m torch.distributed.run --nproc_per_node 2 \
	--master_port "$port" $fix ddp.py >plan.out 2>plan.err || { echo "FAIL: enforced run: $(tail -3 plan.err)"; exit 1; }
head -1 plan.err | sed 's/^/    /'
if losses plan.out | cmp -s native.losses -; then
	echo "  losses identical to the native run ($(tr '\n' ';' <native.losses))"
else
	echo "FAIL: losses differ with the plans enforced: $(cat plan.out)"
	fail=1
fi
[ "$(ls S* 2>/dev/null | tr '\n' ' ')" = "S.rank0 S.rank1 " ] || { echo "FAIL: statistics files: $(ls)"; fail=1; }
for r in 0 1; do
	[ -f S.rank$r ] || continue
	sed -n '1,3p' S.rank$r | sed 's/^/    /'
	sed -n 1p S.rank$r | grep -qxF "stalloc: rank $r (plan $T/t.rank$r.plan)" || { echo "FAIL: S.rank$r's head"; fail=1; }
	pool=$(stat_of S.rank$r pool) want_pool=$(sed -n 's/^pool: .*(\([0-9]*\) bytes)$/\1/p' summary$r)
	[ "$pool" = "$want_pool" ] || { echo "FAIL: rank $r: pool $pool, its plan's $want_pool"; fail=1; }
	want=$(sed -n 's/.*peak reserved [^=]*= \([0-9.]*\) x pool.*/\1/p' summary$r)
	tr ' ' '\n' <S.rank$r | awk -F= -v r=$r -v w="$want" '{ v[$1] = $2 } END {
		q = v["requests"] - v["small"]
		printf "  rank %d: %d requests of the plan sizes, %.1f%% planned hits or slots; peak reserved %.4f x pool (the plan said %s)\n",
			r, q, q ? 100 * (v["hits"] + v["slot_hits"]) / q : 0, v["peak_reserved"] / v["pool"], w
		exit !(q > 0 && v["hits"] + v["slot_hits"] > 0.5 * q) }' || { echo "FAIL: rank $r: its plan served too little"; fail=1; }
done
exit $fail
