#!/bin/sh
# The Compute Sanitizer backend end to end on a fake device
# (collector/sanitizer/tests/sz_fake_device.c stands in for libsanitizer-public.so and
# the GPU; the launches' accesses run the patch's own code on the blocks the
# backend uploaded): exact ranges and modes per kernel, copy and set, in
# call order, no access written after its object's free; `stprof report`
# names the dead write and the unused object; 20,000 launches over 2,000
# objects without synchronizing are read back in a few ring-full batches,
# not one synchronization per launch; --sample-launches.
. "$(dirname "$0")/lib.sh"
FAKE="$STPROF_BUILD/libsz_fake_device.so"
PROG="$STPROF_BUILD/sz_fake_program"
export STPROF_SANITIZER_LIB="$FAKE"
[ -r "$STPROF_BUILD/stprof_sanitizer_patch.fatbin" ] || export STPROF_SANITIZER_PATCH="$FAKE"
cd "$T"

"$STPROF" record --accesses=exact -q -o k.stp -- "$PROG" known >k.out || fail "record known"
grep -q '^fake errors=0 syncs=1 blocks=4$' k.out || fail "fake device: $(tail -1 k.out)"
"$STPROF" dump k.stp >k.txt
"$PY" - k.out k.txt <<'PY' || fail "known accesses"
import re, sys
objs = {p[1]: (int(p[2], 16), int(p[3])) for p in (l.split() for l in open(sys.argv[1])) if p and p[0] == 'obj'}
byaddr = {a: n for n, (a, s) in objs.items()}
evs = []
for line in open(sys.argv[2]):
    m = re.search(r' api kind=(\w+) name="([^"]*)"', line)
    if m:
        rs = re.findall(r' (read|write|readwrite)=0x([0-9a-f]+)\+(\d+)', line)
        evs.append(('api', m.group(1), m.group(2), [(byaddr.get(int(a, 16), hex(int(a, 16))), int(s), mo) for mo, a, s in rs]))
    m = re.search(r' free addr=0x([0-9a-f]+)', line)
    if m:
        evs.append(('free', byaddr.get(int(m.group(1), 16))))
    m = re.search(r' alloc addr=0x([0-9a-f]+) .*kind=device', line)
    if m:
        evs.append(('alloc', int(m.group(1), 16)))
apis = [e[1:] for e in evs if e[0] == 'api']
got = [(k, n, sorted((o, mo) for o, s, mo in r if not o.startswith('0x') or k == 'kernel')) for k, n, r in apis]
want = [('memset', 'memset', [('small1500', 'write')]),
        ('memcpy', 'memcpy HtoD', [('in', 'write')]),
        ('kernel', 'k_scale', [('in', 'read'), ('out', 'write')]),
        ('kernel', 'k_fill', [('scratch', 'write')]),
        ('kernel', 'k_fill', [('scratch', 'write')]),
        ('kernel', 'k_touch', [('small1500', 'readwrite'), ('small1999', 'read')]),
        ('memcpy', 'memcpy DtoH', [('out', 'read')])]
if got != want:
    print('got ', got); print('want', want); sys.exit(1)
for k, n, r in apis:  # whole objects, never past their end
    for o, s, mo in r:
        if o in objs and objs[o][1] != s:
            print('range of %s: %d bytes' % (o, s)); sys.exit(1)
# every object's free comes after the last API that touched it
last = {}
for i, e in enumerate(evs):
    if e[0] == 'api':
        for o, s, mo in e[3]:
            last[o] = i
    elif e[1] in last and last[e[1]] > i:
        print('free of %s before its access' % e[1]); sys.exit(1)
# the program's objects only, each allocated once: a peer device's mapping
# and the driver's own buffers are not the program's allocations
allocs = [e[1] for e in evs if e[0] == 'alloc']
if len(allocs) != len(set(allocs)) or len(allocs) != 4 + 2000:
    print('allocations: %d events, %d addresses' % (len(allocs), len(set(allocs)))); sys.exit(1)
print('known: exact')
PY
"$STPROF" report -f json --top 100 -o k.json k.stp || fail "report"
"$PY" - k.out k.json <<'PY' || fail "report findings"
import json, sys
objs = {p[1]: int(p[2], 16) for p in (l.split() for l in open(sys.argv[1])) if p and p[0] == 'obj'}
d = json.load(open(sys.argv[2]))
got = {(f['pattern'], f['worst']['addr']) for f in d['findings'] if 'worst' in f}
for pat, obj in [('dead-write', 'scratch'), ('unused-allocation', 'unused')]:
    assert (pat, objs[obj]) in got, (pat, obj, sorted(got))
assert ('dead-write', objs['out']) not in got and ('unused-allocation', objs['in']) not in got
print('report: dead write of scratch, unused object')
PY

# 20,000 launches over 2,000 objects, no synchronization until the end
"$STPROF" record --accesses=exact -q -o m.stp -- "$PROG" many 20000 >m.out || fail "record many"
syncs=$(sed -n 's/^fake errors=0 syncs=\([0-9]*\) blocks=20000$/\1/p' m.out)
[ -n "$syncs" ] || fail "fake device: $(tail -1 m.out)"
[ "$syncs" -le 20 ] || fail "$syncs synchronizations for 20,000 launches"
"$STPROF" dump m.stp >m.txt
"$PY" - m.txt <<'PY' || fail "many accesses"
import re, sys
base = 0x7f0000000000 + 8 * (1 << 20)
k = 0
for line in open(sys.argv[1]):
    if ' api kind=kernel' not in line:
        continue
    rs = re.findall(r' (read|write|readwrite)=0x([0-9a-f]+)\+(\d+)', line)
    want = [('read', base + (k % 2000) * 1024, 512)]
    if [(m, int(a, 16), int(s)) for m, a, s in rs] != want:
        print('launch %d: %s' % (k, rs)); sys.exit(1)
    k += 1
assert k == 20000, k
print('many: 20000 launches exact')
PY
echo "many: $syncs stream synchronizations for 20,000 launches"

# sampling: every 4th launch
"$STPROF" record --accesses=exact --sample-launches 4 -q -o s.stp -- "$PROG" many 2000 >s.out || fail "record sampled"
grep -q 'blocks=500$' s.out || fail "sampled: $(tail -1 s.out)"
"$STPROF" dump s.stp >s.txt
expect_eq "kernel events" "$(grep -c ' api kind=kernel' s.txt)" 2000
expect_eq "kernel events with ranges" "$(grep ' api kind=kernel' s.txt | grep -c ' read=')" 500
echo ok
