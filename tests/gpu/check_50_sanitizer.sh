#!/bin/sh
# check_50_sanitizer.sh - stprof record --accesses=exact (the Compute
# Sanitizer backend) on a real GPU:
#   1. tests/sanitizer/known_objects.cu: every kernel, copy and set is
#      recorded with exactly the objects it touched and how (in only read
#      by k_scale, out written, scratch written twice and never read, unused
#      never touched, small[1999] read and small[1500] read+written by an
#      atomic among 2,000 live objects), with the parts touched (all of in,
#      out, scratch; one 32nd of each small one), and `stprof report` names
#      scratch's dead write and the unused object;
#   2. overhead of that program (500 iterations) as a ratio to native,
#      without sampling and with --sample-launches 10, with no instruction
#      patched and with the block times alone (where the time goes), and
#      (for comparison only) under compute-sanitizer's memcheck and initcheck;
#   3. a small PyTorch GPU run (20 steps of a 512x512 matmul) and the small
#      GPT of check_40 (tests/gpu/gpt.py, 20 iterations): the training
#      loop's time under --accesses=exact as a ratio to native, the whole
#      process's times, and what the backend did (the stprof.sanitizer_*
#      annotations: drains, headers, maps, launches timed, kinds patched).
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
def owner(a):  # the named object holding address a, and the offset there
    for k, (addr, size) in objs.items():
        if addr <= a < addr + size:
            return k, a - addr
    return hex(a), 0
apis = []
for line in open(sys.argv[2]):
    m = re.search(r' api kind=(\w+) name="([^"]*)"', line)
    if m:
        rs = re.findall(r' (read|write|readwrite)=0x([0-9a-f]+)\+(\d+)', line)
        apis.append((m.group(1), m.group(2), [owner(int(a, 16)) + (int(s), mode) for mode, a, s in rs]))
def acc(kind, nm):
    return [{o: mo for o, off, s, mo in r if o in objs or kind == 'kernel'} for k, n, r in apis
            if k == kind and n == nm]
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
# the parts touched: all of in, out, scratch; k_touch the 32nd of small1999's
# last word (bytes 496..511) and of small1500's 4th word (bytes 0..15)
for k, n, r in apis:
    for o, off, s, mo in r:
        if o in ('in', 'out', 'scratch') and (off, s) != (0, objs[o][1]):
            print('FAIL: %s range of %s at +%d, %d bytes (object %d)' % (n, o, off, s, objs[o][1])); ok = False
        if o in objs and off + s > objs[o][1]:
            print('FAIL: %s range of %s past its end' % (n, o)); ok = False
touch = [r for k, n, r in apis if n == 'k_touch']
parts = sorted((o, off, s) for o, off, s, mo in touch[0]) if touch else []
print('  k_touch parts', parts)
if parts != [('small1500', 0, 16), ('small1999', 496, 16)]:
    print('FAIL: k_touch parts'); ok = False
touched = {o for k, n, r in apis for o, off, s, mo in r}
if 'unused' in touched:
    print('FAIL: unused was touched'); ok = False
copies = [(n, {o: mo for o, off, s, mo in r if o in objs}) for k, n, r in apis if k == 'memcpy']
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
# where the time goes (STPROF_SANITIZER_KINDS, a diagnostic): the Compute
# Sanitizer's callbacks and the backend's per-launch work with no
# instruction patched (0), with the block times alone (0x180), and all
for kw in 0 0x180; do
	rk=$(STPROF_SANITIZER_KINDS=$kw "$B/stprof" record --accesses=exact -q -o "$T/k500k.stp" -- "$T/known" 500 |
		sed -n 's/loop_seconds //p')
	[ -n "$rk" ] && echo "  known_objects x500, instructions patched $kw: ${rk}s, ratio" \
		"$(echo "$rk $nat" | awk '{printf "%.2f", $1 / $2}')x" || echo "  known_objects x500, instructions patched $kw: no figure"
done
# compute-sanitizer's own tools on the same loop, for docs/accesses.md's
# comparison (not a pass/fail check)
CS=$CUDA/bin/compute-sanitizer
[ -x "$CS" ] || CS=$CUDA/compute-sanitizer/compute-sanitizer
for tool in memcheck initcheck; do
	if [ -x "$CS" ]; then
		cs=$(timeout 60 "$CS" --tool "$tool" "$T/known" 500 2>/dev/null | sed -n 's/loop_seconds //p') || true
		[ -n "$cs" ] && echo "  compute-sanitizer --tool $tool, known_objects x500: ${cs}s, ratio" \
			"$(echo "$cs $nat" | awk '{printf "%.2f", $1 / $2}')x" || echo "  compute-sanitizer --tool $tool: no figure"
	fi
done

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
	# a real training loop: check_40's small GPT, 20 iterations
	cp "$S/tests/gpu/gpt.py" "$T/gpt.py"
	g0=$(date +%s.%N)
	"$PY" "$T/gpt.py" "$T/gn.json" 20 >/dev/null
	g1=$(date +%s.%N)
	timeout 300 "$B/stprof" record --accesses=exact -q -o "$T/g.stp" -- "$PY" "$T/gpt.py" "$T/ge.json" 20 >/dev/null ||
		{ echo "FAIL: gpt.py did not finish under --accesses=exact"; exit 1; }
	g2=$(date +%s.%N)
	"$PY" - "$T/gn.json" "$T/ge.json" "$g0" "$g1" "$g2" <<'PY'
import json, sys
n, e = json.load(open(sys.argv[1]))['loop_s'], json.load(open(sys.argv[2]))['loop_s']
g0, g1, g2 = map(float, sys.argv[3:6])
print('  gpt.py 20 iterations: loop native %.3fs, --accesses=exact %.3fs, ratio %.2fx; whole process %.1fs vs %.1fs'
      % (n, e, e / n, g2 - g1, g1 - g0))
PY
	"$B/stprof" dump "$T/g.stp" | grep -o 'name="stprof.sanitizer_[a-z_]*" value=-\?[0-9]*' |
		sed 's/name="stprof.sanitizer_/ /; s/" value=/=/' | tr -d '\n' | sed 's/^/  gpt.py backend:/'
	echo
	"$B/stprof" report --top 8 "$T/g.stp" | sed -n '/^Findings/,/^Allocator/p' | grep -E '^  [0-9]+\.|accesses|expected|lost|place' | head -14
else
	echo "  (no CUDA PyTorch for $PY: PyTorch part skipped)"
fi
