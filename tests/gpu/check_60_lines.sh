#!/bin/sh
# check_60_lines.sh - every tensor byte points at the user's code on a GPU
# (docs/python.md, "Python lines"; docs/report.md, "Call paths"):
#   1. a GPT-style model trained in the default mode (--torch-cuda=caching:
#      PyTorch's caching allocator kept), bf16 autocast, activation
#      checkpointing, AdamW, 2 micro-batches: at least 90% of the bytes live
#      at the tensor peak are in the report's top 10 call sites at lines of
#      the script (tests/python/line_share.py over the JSON report's
#      user_frame); the Python frames were read in place (annotation
#      stprof.python_frames = 2);
#   2. a CUDA C program whose six cudaMalloc calls go through cuda_runtime.h's
#      inline template: each shows its own line of main, recorded plainly and
#      with --accesses=exact (call paths begin at the program's frames, not
#      libsanitizer's or libcuda's).
# Prints the share, the top sites and each allocation's line.  Run by
# tests/gpu/run.sh (S, B, T, PY, CUDA set).
set -eu
echo "  Python lines of a GPT in the default mode; a CUDA C program's lines"
"$PY" -c 'import sys, torch; print("    python", sys.version.split()[0], "torch", torch.__version__)'
cat >"$T/gpt_lines.py" <<'PYEOF'
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
torch.manual_seed(0)
V, D, H, L, S, B = 4096, 384, 6, 4, 256, 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q, k, v = (t.view(b, s, H, D // H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, D))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, D), nn.Embedding(S, D)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.ln, self.head = nn.LayerNorm(D), nn.Linear(D, V, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for i, blk in enumerate(self.blocks):
            x = checkpoint(blk, x, use_reentrant=False) if i % 2 else blk(x)
        return self.head(self.ln(x))


model = GPT().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
data = torch.randint(0, V, (6, 2, B, S + 1), device="cuda")
for it in range(6):
    opt.zero_grad(set_to_none=True)
    for mb in range(2):
        x, y = data[it, mb, :, :-1], data[it, mb, :, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, V), y.reshape(-1)) / 2
        loss.backward()
    opt.step()
torch.cuda.synchronize()
print("max_memory_allocated", torch.cuda.max_memory_allocated())
PYEOF
fail=0
"$B/stprof" record -q -o "$T/g.stp" -- "$PY" "$T/gpt_lines.py" >"$T/g.out" || { echo "FAIL: the GPT under stprof"; exit 1; }
echo "    $(cat "$T/g.out")"
how=$("$B/stprof" dump -t marker "$T/g.stp" | sed -n 's/.*name="stprof.python_frames" value=\([0-9]*\).*/\1/p' | head -1)
echo "    Python frames read: $([ "$how" = 2 ] && echo "in place (no GIL)" || echo "through the GIL only (value '$how')")"
[ "$how" = 2 ] || { echo "FAIL: this Python's frames are not read in place (collector/torch/pylayout.c's probe)"; fail=1; }
"$B/stprof" report -f json -n 10 "$T/g.stp" >"$T/g.json" 2>/dev/null || { echo "FAIL: report -f json"; exit 1; }
"$PY" "$S/tests/python/line_share.py" "$T/g.json" gpt_lines.py 10 >"$T/share"
share=$(head -1 "$T/share")
echo "    top 10 sites at the script's lines: $share% of the bytes at the tensor peak (target 90%)"
sed -n '2,$s/^/      without: /p' "$T/share"
"$B/stprof" report -n 6 "$T/g.stp" 2>/dev/null | sed -n '/^Top call sites/,/^$/p' | sed 's/^/    /'
awk -v s="$share" 'BEGIN { exit !(s >= 90) }' || { echo "FAIL: $share% < 90%"; fail=1; }

# 2. a CUDA C program: each allocation at its own line
cat >"$T/lines.cu" <<'CUEOF'
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void fill(float *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = (float)i;
}

int main(void)
{
	float *a, *b, *c, *d, *e, *f;
	cudaMalloc(&a, 1 << 20);
	cudaMalloc(&b, 2 << 20);
	cudaMalloc(&c, 3 << 20);
	cudaMalloc(&d, 4 << 20);
	cudaMalloc(&e, 5 << 20);
	cudaMalloc(&f, 6 << 20);
	fill<<<256, 256>>>(a, 1 << 16);
	fill<<<256, 256>>>(f, 1 << 16);
	cudaDeviceSynchronize();
	cudaFree(a); cudaFree(b); cudaFree(c); cudaFree(d); cudaFree(e); cudaFree(f);
	printf("done\n");
	return 0;
}
CUEOF
"$CUDA/bin/nvcc" -g -O2 -o "$T/lines" "$T/lines.cu"
want=$(grep -n 'cudaMalloc(&' "$T/lines.cu" | cut -d: -f1 | tr '\n' ' ')
modes="plain"
"$B/stprof" record --accesses=exact -q -o "$T/probe.stp" -- true 2>/dev/null && modes="plain exact"
for m in $modes; do
	opt=""; [ "$m" = exact ] && opt="--accesses=exact"
	"$B/stprof" record $opt -q -o "$T/l_$m.stp" -- "$T/lines" >/dev/null || { echo "FAIL: lines ($m)"; fail=1; continue; }
	"$B/stprof" report -n 10 "$T/l_$m.stp" 2>/dev/null | sed -n '/^Top call sites/,/^$/p' >"$T/l_$m.txt"
	got=""
	for l in $want; do
		grep -q "^      at main (lines.cu:$l)$" "$T/l_$m.txt" && got="$got $l"
	done
	echo "    $m: cudaMalloc lines $want-> shown as their own:$got"
	[ "$got" = " $(echo $want)" ] || { echo "FAIL: $m: not every allocation at its own line:"; sed 's/^/      /' "$T/l_$m.txt"; fail=1; }
	grep -q "libsanitizer\|libcuda\|cuda_runtime.h" "$T/l_$m.txt" && { echo "FAIL: $m: framework frames shown"; fail=1; }
done
exit $fail
