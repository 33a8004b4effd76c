#!/bin/sh
# check_50_sanitizer.sh - stprof record --accesses=exact (the Compute
# Sanitizer backend) on a real GPU:
#   1. tests/sanitizer/known_objects.cu: every kernel, copy and set is
#      recorded with exactly the objects it touched and how (in only read
#      by k_scale, out written, scratch written twice and never read, unused
#      never touched, small[1999] read and small[1500] read+written by an
#      atomic among 2,000 live objects), and `stprof report` names scratch's
#      dead write and the unused object;
#   2. overhead of that program (500 iterations) as a ratio to native;
#   3. a small PyTorch GPU run finishes under it (ratio to native).
# Run by tests/gpu/run.sh, which sets S, B, T, PY and CUDA.  Prints what it
# measured; exits non-zero on the first failure.
set -eu
echo "  Compute Sanitizer backend (--accesses=exact)"
"$B/stprof" record --accesses=exact -q -o "$T/probe.stp" -- true ||
	{ echo "FAIL: stprof was built without the Compute Sanitizer API"; exit 1; }
"$CUDA/bin/nvcc" -O2 -o "$T/known" "$S/tests/sanitizer/known_objects.cu"

# 1. exact accesses
"$T/known" >"$T/native.txt"
"$B/stprof" record --accesses=exact -q -o "$T/k.stp" -- "$T/known" >"$T/rec.txt"
grep checksum "$T/native.txt"
[ "$(grep checksum "$T/native.txt")" = "$(grep checksum "$T/rec.txt")" ] ||
	{ echo "FAIL: the program's output changed under stprof"; exit 1; }
"$B/stprof" dump "$T/k.stp" >"$T/k.txt"
grep -q 'name="stprof.sanitizer" value=1' "$T/k.txt" ||
	{ echo "FAIL: backend not started:"; grep 'stprof.sanitizer' "$T/k.txt"; exit 1; }
# what instrumenting did: contexts and modules patched, lazily loaded
# functions, sampled launches, the first patching error if any
grep -o 'name="stprof.sanitizer_[a-z_]*" value=-\?[0-9]*' "$T/k.txt" | sed 's/name="stprof.sanitizer_/    /; s/" value=/ /' | tr '\n' ' '
echo
"$PY" - "$T/rec.txt" "$T/k.txt" <<'PY'
import re, sys
objs = {}
for line in open(sys.argv[1]):
    p = line.split()
    if p and p[0] == 'obj':
        objs[p[1]] = (int(p[2], 16), int(p[3]))
apis = []
for line in open(sys.argv[2]):
    m = re.search(r' api kind=(\w+) name="([^"]*)"', line)
    if m:
        rs = re.findall(r' (read|write|readwrite)=0x([0-9a-f]+)\+(\d+)', line)
        apis.append((m.group(1), m.group(2), {(int(a, 16), int(s)): mode for mode, a, s in rs}))
def name(a):
    for k, (addr, size) in objs.items():
        if addr == a:
            return k
    return hex(a)
def acc(kind, nm):
    got = [{name(a): m for (a, s), m in r.items() if name(a) in objs or kind == 'kernel'} for k, n, r in apis
           if k == kind and n == nm]
    return got
want = {
    'k_scale': [{'in': 'read', 'out': 'write'}],
    'k_fill': [{'scratch': 'write'}, {'scratch': 'write'}],
    'k_touch': [{'small1999': 'read', 'small1500': 'readwrite'}],
}
ok = True
for k, w in want.items():
    g = acc('kernel', k)
    print('  %-8s %s' % (k, g))
    if g != w:
        print('FAIL: %s touched %s, expected %s' % (k, g, w)); ok = False
# sizes are the objects' own: no range past an object's end
for k, n, r in apis:
    for (a, s), m in r.items():
        nm = name(a)
        if nm in objs and objs[nm][1] != s:
            print('FAIL: %s range of %s is %d bytes, object is %d' % (n, nm, s, objs[nm][1])); ok = False
touched = {name(a) for k, n, r in apis for (a, s) in r}
if 'unused' in touched:
    print('FAIL: unused was touched'); ok = False
copies = [(n, {name(a): m for (a, s), m in r.items() if name(a) in objs}) for k, n, r in apis if k == 'memcpy']
print('  copies', copies)
if ('memcpy HtoD', {'in': 'write'}) not in copies or ('memcpy DtoH', {'out': 'read'}) not in copies:
    print('FAIL: copies'); ok = False
sys.exit(0 if ok else 1)
PY
"$B/stprof" report -f json --top 100 -o "$T/k.json" "$T/k.stp"
"$PY" - "$T/rec.txt" "$T/k.json" <<'PY'
import json, sys
objs = {p[1]: int(p[2], 16) for p in (l.split() for l in open(sys.argv[1])) if p and p[0] == 'obj'}
d = json.load(open(sys.argv[2]))
got = {(f['pattern'], f['worst']['addr']) for f in d['findings'] if 'worst' in f}
for pat, obj in [('dead-write', 'scratch'), ('unused-allocation', 'unused')]:
    if (pat, objs[obj]) not in got:
        print('FAIL: %s of %s not reported: %s' % (pat, obj, sorted(got))); sys.exit(1)
    print('  report: %s of %s' % (pat, obj))
PY

# 2. overhead, CUDA C: 500 iterations of the four kernels
nat=$("$T/known" 500 | sed -n 's/loop_seconds //p')
rec=$("$B/stprof" record --accesses=exact -q -o "$T/k500.stp" -- "$T/known" 500 | sed -n 's/loop_seconds //p')
echo "  known_objects x500: native ${nat}s, --accesses=exact ${rec}s, ratio $(echo "$rec $nat" | awk '{printf "%.2f", $1 / $2}')x"
rec10=$("$B/stprof" record --accesses=exact --sample-launches 10 -q -o "$T/k500s.stp" -- "$T/known" 500 |
	sed -n 's/loop_seconds //p')
echo "  known_objects x500, --sample-launches 10: ${rec10}s, ratio $(echo "$rec10 $nat" | awk '{printf "%.2f", $1 / $2}')x"

# 3. PyTorch on the GPU under it
if "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	cat >"$T/t.py" <<'PYT'
import time, torch
x = torch.randn(512, 512, device='cuda')
w = torch.randn(512, 512, device='cuda', requires_grad=True)
torch.cuda.synchronize()
t = time.perf_counter()
for i in range(20):
    y = torch.relu(x @ w).sum()
    y.backward()
    w.grad = None
torch.cuda.synchronize()
print('torch_seconds %.6f' % (time.perf_counter() - t))
PYT
	s0=$(date +%s.%N)
	tn=$("$PY" "$T/t.py" | sed -n 's/torch_seconds //p')
	s1=$(date +%s.%N)
	tr=$(timeout 900 "$B/stprof" record --accesses=exact -q -o "$T/t.stp" -- "$PY" "$T/t.py" | sed -n 's/torch_seconds //p')
	s2=$(date +%s.%N)
	[ -n "$tr" ] || { echo "FAIL: the PyTorch run did not finish under --accesses=exact"; exit 1; }
	echo "  torch 20 steps: native ${tn}s, --accesses=exact ${tr}s, ratio $(echo "$tr $tn" | awk '{printf "%.2f", $1 / $2}')x;" \
		"whole process $(echo "$s1 $s0 $s2" | awk '{printf "%.1fs vs %.1fs", $3 - $1, $1 - $2}')"
	"$B/stprof" dump "$T/t.stp" | grep -c ' api kind=kernel' | sed 's/^/  torch kernel events: /'
else
	echo "  (no CUDA PyTorch for $PY: PyTorch part skipped)"
fi
