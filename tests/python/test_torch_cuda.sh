#!/bin/bash
# The shim's part in recording PyTorch's CUDA memory (stprof.torch_cuda),
# without a GPU:
#  - on the real PyTorch here (Debian's 1.13, CPU only): the default mode is
#    caching, --torch-cuda=off is off, --torch-cuda=pluggable says once that
#    this PyTorch cannot and uses caching; the program's output is the same;
#  - libstprof.so's c10::reportMemoryUsageToProfiler is the one libc10 and
#    libtorch call (the dynamic linker binds them to it), and it passes every
#    report on: the profiler's memory figures are the same under stprof;
#  - the pluggable install on a PyTorch 2.x stand-in (fake_torch_cuda.py:
#    the allocator glue that needs a GPU) gives libstprof.so's path and
#    entry points, and a tensor made from Python carries its Python line;
#  - its device plan, under `stprof run --plan`: libstalloc.so installed as
#    the allocator by the shim, every tensor served by the plan.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
export OMP_NUM_THREADS=1
cat >"$T/mode.py" <<'PYEOF'
import torch
print("sum", float(torch.ones(4, 4).sum()))
try:
    from stprof import torch_cuda
    print("mode", torch_cuda.mode())
except ImportError:
    print("mode", None)
PYEOF
"$STPROF" record -q -o "$T/m.stp" -- "$PY" "$T/mode.py" >"$T/out" 2>"$T/err"
expect_eq "default mode" "$(cat "$T/out")" "sum 16.0
mode caching"
[ ! -s "$T/err" ] || fail "stderr in the default mode: $(cat "$T/err")"
"$STPROF" record -q --torch-cuda=off -o "$T/m.stp" -- "$PY" "$T/mode.py" >"$T/out"
expect_eq "off" "$(tail -1 "$T/out")" "mode off"
"$STPROF" record -q --torch-cuda=pluggable -o "$T/m.stp" -- "$PY" "$T/mode.py" >"$T/out" 2>"$T/err"
if "$PY" -c 'import sys, torch; sys.exit(0 if torch.version.cuda is None else 1)'; then
	expect_eq "pluggable without CUDA" "$(tail -1 "$T/out")" "mode caching"
	grep -q "torch-cuda=pluggable: this PyTorch has no CUDA; using caching" "$T/err" || fail "no notice: $(cat "$T/err")"
else # a CUDA build (PyPI's wheels) takes the allocator even with no GPU to run it on
	expect_eq "pluggable, a CUDA build" "$(tail -1 "$T/out")" "mode pluggable"
fi
"$STPROF" record -q --torch-cuda=sideways -o "$T/m.stp" -- true 2>"$T/err" && fail "bad mode accepted"
grep -q "torch-cuda: 'sideways' is not one of" "$T/err" || fail "bad mode message: $(cat "$T/err")"

# the report to the profiler: interposed, and passed on
cat >"$T/prof.py" <<'PYEOF'
import torch
with torch.autograd.profiler.profile(profile_memory=True) as prof:
    a = torch.ones(1000, 1000)
    b = a * 2
    del a
# the tensors of the block; the profiler sometimes attributes the 4-byte
# scalar of `a * 2` and sometimes not (seen natively too): left out
ev = [e for e in prof.function_events if abs(e.cpu_memory_usage) >= 1024]
print("memory events", len(ev), "net bytes", sum(e.cpu_memory_usage for e in ev))
PYEOF
want=$("$PY" "$T/prof.py")
got=$(LD_DEBUG=bindings LD_DEBUG_OUTPUT="$T/ld" "$STPROF" record -q -o "$T/p.stp" -- "$PY" "$T/prof.py")
expect_eq "profiler memory under stprof" "$got" "$want"
case "$want" in "memory events 0"*) fail "the profiler saw no memory: $want" ;; esac
grep -h 'binding file .*libc10\.so[^ ]* .* to .*libstprof\.so .*reportMemoryUsageToProfiler' "$T"/ld.* >/dev/null ||
  fail "libc10's reportMemoryUsageToProfiler is not bound to libstprof.so"

# the pluggable install, on a PyTorch 2.x stand-in
export LD_LIBRARY_PATH="$STPROF_BUILD/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out=$(cd "$STPROF_SRC/tests/python" && "$STPROF" record -q --torch-cuda=pluggable -o "$T/f.stp" -- "$PY" fake_torch_cuda.py)
expect_eq "stand-in output" "$out" "mode pluggable allocator 1 libstprof.so
tensors 3"
n=$("$STPROF" dump "$T/f.stp" | grep -c ' alloc .*kind=device device=0 stream=0x77 pool=1')
expect_eq "device tensors" "$n" 3
"$STPROF" report "$T/f.stp" 2>&1 | grep -q "at fake_torch_cuda.py:[0-9]* in make_tensor" ||
  fail "no Python line for the device tensors"

# its device plan enforced: under `stprof run --plan` the shim makes
# libstalloc.so PyTorch's CUDA allocator, every tensor is planned (before,
# libstalloc's cudaMalloc found itself as "the real one" and deadlocked)
"$STPROF" plan -q -o "$T/f.plan" "$T/f.stp"
out=$(cd "$STPROF_SRC/tests/python" && timeout 60 "$STPROF" run --plan "$T/f.plan" --stalloc-stats "$T/f.stats" -- "$PY" fake_torch_cuda.py)
expect_eq "stand-in output under the plan" "$out" "mode stalloc allocator 1 libstalloc.so
tensors 3"
tr ' ' '\n' <"$T/f.stats" | grep -qx 'hits=3' && tr ' ' '\n' <"$T/f.stats" | grep -qx 'fallbacks=0' ||
  fail "device plan not followed: $(cat "$T/f.stats")"
echo ok
