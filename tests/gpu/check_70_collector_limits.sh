#!/bin/sh
# check_70_collector_limits.sh - the collector's limits of issue 26 in a
# real CUDA process (the CPU cases are tests/hardening/test_transparency2.sh):
# a PyTorch program that lowers its RLIMIT_FSIZE soft limit to 64 KiB, makes
# CUDA tensors from 64 threads (1280 kept), runs 200 steps on the GPU, then
# overflows its stack (faulthandler._stack_overflow: SIGSEGV on a full
# stack, after CUDA started its own threads).  Under `stprof record` (the
# default --torch-cuda=caching) the program must end as natively (status
# 139, the same stdout) and the trace must be whole (the END record written
# by the alternate signal stack's handler, the file not cut at 64 KiB) with
# every kept tensor in it.  Prints the statuses, the trace's size and its
# device allocations.  Run by tests/gpu/run.sh (S, B, T, PY set).
set -eu
echo "  RLIMIT_FSIZE lowered, 64 threads of CUDA tensors, a stack overflow: natively and recorded"
cat >"$T/limits.py" <<'PYEOF'
import faulthandler, resource, threading
import torch
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, hard))
keep, lock = [], threading.Lock()
def work(i):
    for j in range(20):
        t = torch.empty(4096 * (i + 1), device="cuda")
        with lock:
            keep.append(t)
ts = [threading.Thread(target=work, args=(i,)) for i in range(64)]
for t in ts: t.start()
for t in ts: t.join()
x = torch.zeros(1 << 20, device="cuda")
for i in range(200):
    x = x + 1
torch.cuda.synchronize()
print("sum", int(x[0].item()), "kept", len(keep), flush=True)
faulthandler._stack_overflow()
PYEOF
fail=0
set +e
(ulimit -c 0; exec "$PY" "$T/limits.py") >"$T/n.out" 2>/dev/null; ns=$?
(ulimit -c 0; exec "$B/stprof" record -q -o "$T/l.stp" -- "$PY" "$T/limits.py") >"$T/s.out" 2>"$T/s.err"; ss=$?
set -e
echo "  status natively $ns, recorded $ss; stdout: $(cat "$T/s.out")"
[ "$ns" = 139 ] && [ "$ss" = "$ns" ] || { echo "FAIL: status $ss, natively $ns (139 wanted)"; fail=1; }
cmp -s "$T/n.out" "$T/s.out" || { echo "FAIL: stdout '$(cat "$T/s.out")', natively '$(cat "$T/n.out")'"; fail=1; }
"$B/stprof" info "$T/l.stp" >"$T/info" 2>&1 || { echo "FAIL: the trace does not read: $(head -3 "$T/info")"; fail=1; }
echo "  trace $(du -k "$T/l.stp" | cut -f1) KiB; $(grep '^whole:' "$T/info" || echo 'no whole: line')"
grep -q '^whole: *yes (killed by signal 11' "$T/info" || { echo "FAIL: no END record after the SIGSEGV"; fail=1; }
[ "$(stat -c %s "$T/l.stp")" -gt 65536 ] || { echo "FAIL: the trace stopped at the program's RLIMIT_FSIZE"; fail=1; }
dev=$("$B/stprof" dump -t alloc "$T/l.stp" | grep -c 'kind=device' || true)
echo "  device allocations in the trace: $dev (1280 tensors kept, more made)"
[ "$dev" -ge 1280 ] || { echo "FAIL: $dev device allocations, 1280 kept tensors at least"; fail=1; }
exit $fail
