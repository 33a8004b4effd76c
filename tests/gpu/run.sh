#!/bin/sh
# tests/gpu/run.sh - the checks that need a GPU, run end to end by hand on a
# GPU machine (not by ctest: CI has none).  Builds stprof, then:
#   1. libstalloc on the real CUDA runtime: the schedule of
#      tests/allocator/cuda_prog.c (a device plan made here) replayed
#      through cudaMalloc/cudaFree and PyTorch's pluggable-allocator entry
#      points with libstalloc preloaded; every planned request must come
#      from the pool and live blocks never overlap.
#   2. PyTorch on CUDA with libstalloc as its CUDAPluggableAllocator (no
#      plan: the entry points pass through to cudaMalloc), against the
#      default caching allocator: identical losses.
# Prints what it measured; exits non-zero on the first failure.
set -eu
S=$(cd "$(dirname "$0")/../.." && pwd)
B=${STPROF_BUILD:-$S/build-gpu}
PY=${PYTHON:-python3}
cmake -S "$S" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$B" -j "$(nproc)" >/dev/null
nvidia-smi -L || true
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

echo "== 1. libstalloc on the CUDA runtime"
CUDA=${CUDA_HOME:-/usr/local/cuda}
cc -O2 -I"$S/include" -I"$S/tests/allocator" -o "$T/cuda_prog" "$S/tests/allocator/cuda_prog.c" \
	-DREAL_CUDA "$B/planner/libstp_planner.a" "$B/trace/libstp_trace.a" \
	-L"$CUDA/lib64" -lcudart -Wl,-rpath,"$CUDA/lib64" -ldl -lm
"$T/cuda_prog" "$T/dev.plan" make
STALLOC_PLAN="$T/dev.plan" STALLOC_STATS="$T/stats" LD_PRELOAD="$B/libstalloc.so" "$T/cuda_prog" "$T/dev.plan" run
head -5 "$T/stats"
tr ' ' '\n' <"$T/stats" | grep -q '^fallbacks=0$' || { echo "FAIL: fallbacks on the GPU"; exit 1; }

echo "== 2. PyTorch with libstalloc as its CUDA allocator"
cat >"$T/train.py" <<'PYEOF'
import sys, torch
if sys.argv[1] == "stalloc":
    a = torch.cuda.memory.CUDAPluggableAllocator(sys.argv[2], "stalloc_torch_alloc", "stalloc_torch_free")
    torch.cuda.memory.change_current_allocator(a)
torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
m = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).cuda()
opt = torch.optim.Adam(m.parameters(), 1e-3)
x = torch.randn(64, 256, device="cuda")
for i in range(20):
    loss = (m(x) - x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"iter {i} loss {loss.item():.6f}")
PYEOF
"$PY" "$T/train.py" default >"$T/default.out"
"$PY" "$T/train.py" stalloc "$B/libstalloc.so" >"$T/stalloc.out"
cmp "$T/default.out" "$T/stalloc.out" || { echo "FAIL: losses differ"; diff "$T/default.out" "$T/stalloc.out" | head; exit 1; }
tail -1 "$T/stalloc.out"
echo "tests/gpu/run.sh: passed"
