#!/bin/sh
# The Compute Sanitizer backend end to end on a fake device
# (collector/sanitizer/tests/sz_fake_device.c stands in for libsanitizer-public.so and
# the GPU; the launches' accesses run the patch's own code on the blocks the
# backend uploaded): exact ranges and modes per kernel, copy and set, in
# call order, no access written after its object's free; `stprof report`
# names the dead write and the unused object; 20,000 launches over 2,000
# objects without synchronizing are read back in a few ring-full batches,
# not one synchronization per launch; a new map before every launch (churn)
# decoded exactly; --sample-launches; planted.cu's
# patterns at their lines (the intra-object ones from each launch's own
# parts: structured access, non-uniform frequency); a library's workspace
# kept apart.
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
def owner(a):  # the named object a range falls in, and its offset there
    for n, (b, s) in objs.items():
        if b <= a < b + s:
            return n, a - b
    return hex(a), 0
evs = []
for line in open(sys.argv[2]):
    m = re.search(r' api kind=(\w+) name="([^"]*)"', line)
    if m:
        rs = re.findall(r' (read|write|readwrite)=0x([0-9a-f]+)\+(\d+)', line)
        evs.append(('api', m.group(1), m.group(2), [owner(int(a, 16)) + (int(s), mo) for mo, a, s in rs]))
    m = re.search(r' free addr=0x([0-9a-f]+)', line)
    if m:
        evs.append(('free', owner(int(m.group(1), 16))[0]))
    m = re.search(r' alloc addr=0x([0-9a-f]+) .*kind=device', line)
    if m:
        evs.append(('alloc', int(m.group(1), 16)))
apis = [e[1:] for e in evs if e[0] == 'api']
got = [(k, n, sorted((o, mo) for o, off, s, mo in r if not o.startswith('0x') or k == 'kernel')) for k, n, r in apis]
want = [('memset', 'memset', [('small1500', 'write')]),
        ('memcpy', 'memcpy HtoD', [('in', 'write')]),
        ('kernel', 'k_scale', [('in', 'read'), ('out', 'write')]),
        ('kernel', 'k_fill', [('scratch', 'write')]),
        ('kernel', 'k_fill', [('scratch', 'write')]),
        ('kernel', 'k_touch', [('small1500', 'readwrite'), ('small1999', 'read')]),
        ('memcpy', 'memcpy DtoH', [('out', 'read')])]
if got != want:
    print('got ', got); print('want', want); sys.exit(1)
# the parts touched: all of in, out and scratch (never past their end);
# k_touch: the 32nd of small1999's last word and of small1500's 4th word
for k, n, r in apis:
    for o, off, s, mo in r:
        if o in ('in', 'out', 'scratch') and (off, s) != (0, objs[o][1]):
            print('%s: range of %s at +%d, %d bytes' % (n, o, off, s)); sys.exit(1)
touch = [r for k, n, r in apis if n == 'k_touch'][0]
parts = sorted((o, off, s) for o, off, s, mo in touch)
if parts != [('small1500', 0, 16), ('small1999', 496, 16)]:
    print('k_touch parts', parts); sys.exit(1)
# every object's free comes after the last API that touched it
last = {}
for i, e in enumerate(evs):
    if e[0] == 'api':
        for o, off, s, mo in e[3]:
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
# no structured access or non-uniform frequency on known_objects
intra = [f['pattern'] for f in d['findings'] + d['expected']
         if f['pattern'] in ('structured-access', 'non-uniform-frequency')]
assert not intra, intra
print('report: dead write of scratch, unused object')
PY

# planted.cu's calls: each DrGPUM pattern found on its object, ranked
# first, and nothing else (the clean object and the patterns' other
# objects have no finding)
"$STPROF" record --accesses=exact -q -o p.stp -- "$PROG" planted >p.out || fail "record planted"
grep -q '^fake errors=0 ' p.out || fail "fake device: $(tail -1 p.out)"
"$STPROF" report -f json --top 100 -o p.json p.stp || fail "report planted"
"$PY" - p.out p.json <<'PY' || fail "planted findings"
import json, sys
objs = {p[1]: int(p[2], 16) for p in (l.split() for l in open(sys.argv[1])) if p and p[0] == 'obj'}
name = {a: n for n, a in objs.items()}
d = json.load(open(sys.argv[2]))
got = sorted((f['pattern'], name.get(f['worst']['addr'], hex(f['worst']['addr']))) for f in d['findings'])
want = sorted([('early-allocation', 'early'), ('late-deallocation', 'late'), ('unused-allocation', 'unused'),
               ('dead-write', 'dead'), ('temporary-idleness', 'idle'), ('redundant-allocation', 'red2'),
               ('overallocation', 'part'), ('memory-leak', 'leak'), ('structured-access', 'slices'),
               ('non-uniform-frequency', 'hot')])
assert got == want, (got, want)
assert d['expected'] == [], d['expected']
f = {x['pattern']: x for x in d['findings']}
# distances in kernels: early's first use came 11 calls after it (10 kernels, a memset)
assert f['early-allocation']['distance_unit'] == 'kernels' and f['early-allocation']['max_distance'] == 11
assert f['temporary-idleness']['max_distance'] == 8
o = f['overallocation']['worst']
assert (o['used_bytes'], o['used_from'], o['used_to']) == (20 << 20 >> 3, 0, 20 << 20 >> 3), o
# structured access: 8 launches, each its own eighth (3 MiB) of 24 MiB
o = f['structured-access']
assert (o['max_distance'], o['distance_unit'], o['worst']['used_bytes']) == (8, 'parts', 3 << 20), o
assert (o['worst']['used_from'], o['worst']['used_to']) == (0, 24 << 20), o
# non-uniform: the first sixteenth touched by 12 launches, the rest by 2
o = f['non-uniform-frequency']
assert (o['worst']['used_from'], o['worst']['used_to'], o['worst']['hot_apis']) == (0, 28 << 20 >> 4, 12), o
assert o['worst']['cold_apis'] == 2.0 and o['distance_unit'] == 'kernels', o
assert d['accesses']['sanitizer'] == 1 and d['accesses']['sampled'] == d['accesses']['launches'] == 39
print('planted: the 10 patterns on their objects, nothing else')
PY
# the same at the lines marked PLANT:<pattern> in the fake program's source,
# by the checker tests/gpu/check_52_planted.sh runs on planted.cu
"$STPROF" report -f json --top 200 --frames 16 -o pf.json p.stp || fail "report planted --frames 16"
"$PY" "$STPROF_SRC/tests/python/planted_check.py" pf.json "$STPROF_SRC/collector/sanitizer/tests/sz_fake_program.c" \
	early-allocation late-deallocation unused-allocation dead-write temporary-idleness redundant-allocation \
	overallocation memory-leak structured-access non-uniform-frequency >pc.txt || fail "planted lines: $(cat pc.txt)"
# a library's workspace (allocated under a function naming it, as cuBLAS's
# under PyTorch's getCurrentCUDABlasHandle) is kept apart; the program's own
# unused object of the same size is the one finding
"$STPROF" record --accesses=exact -q -o l.stp -- "$PROG" library >l.out || fail "record library"
"$STPROF" report -f json --top 100 -o l.json l.stp || fail "report library"
"$PY" - l.out l.json <<'PY' || fail "library workspace"
import json, sys
objs = {p[1]: int(p[2], 16) for p in (l.split() for l in open(sys.argv[1])) if p and p[0] == 'obj'}
d = json.load(open(sys.argv[2]))
got = [(f['pattern'], f['worst']['addr']) for f in d['findings']]
assert got == [('unused-allocation', objs['mine'])], got
apart = [(f['pattern'], f['expected'], f['objects']) for f in d['expected']]
assert apart == [('unused-allocation', 'library', 1)], apart
lib = [(s['library'], s['peak_bytes']) for s in d['sites'] if s['peak_bytes']]
assert lib == [(True, 32 << 20), (False, 32 << 20), (False, 1 << 20)], lib
PY
# the call sites table says which row is the library's, and how much
"$STPROF" report -n 5 l.stp | sed -n '/^Top call sites/,/^$/p' >l.txt
grep -q "^   1    32.0 MiB .* library$" l.txt && grep -q "^   2    32.0 MiB .* unclassified$" l.txt &&
	grep -q "^  (1 of these sites, 32.0 MiB at the peak, are a library's own buffers" l.txt ||
	fail "the workspace's row: $(cat l.txt)"

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
    want = [('read', base + (k % 2000) * 1024, 16)]  # bytes 8..11: the first 32nd
    if [(m, int(a, 16), int(s)) for m, a, s in rs] != want:
        print('launch %d: %s' % (k, rs)); sys.exit(1)
    k += 1
assert k == 20000, k
print('many: 20000 launches exact')
PY
# 2,000 live objects: over PARTS_OWN_MAX (1,024), so the parts of a launch
# are its header's (said in the trace); planted's few objects: each its own
expect_eq "launches with their header's parts" \
	"$(sed -n 's/.*name="stprof.sanitizer_shared_parts" value=\([0-9]*\).*/\1/p' m.txt)" 20000
"$STPROF" dump p.stp | grep -q 'stprof.sanitizer_shared_parts' && fail "planted: launches with shared parts"
echo "many: $syncs stream synchronizations for 20,000 launches"

# sampling: every 4th launch
# a new map before every launch (an activation allocated, one freed, as a
# caching allocator does between a step's kernels): each launch still
# decodes against its own map (map memory is reused once freed)
"$STPROF" record --accesses=exact -q -o c.stp -- "$PROG" churn 3000 >c.out || fail "record churn"
grep -q '^fake errors=0 ' c.out || fail "fake device, churn: $(tail -1 c.out)"
"$STPROF" dump c.stp >c.txt
"$PY" - c.txt <<'PY' || fail "churn accesses"
import re, sys
small, act = 0x7f0000000000 + 8 * (1 << 20), 0x7f0000000000 + 32 * (1 << 20)
k, maps = 0, None
for line in open(sys.argv[1]):
    m = re.search(r'name="stprof.sanitizer_maps" value=(\d+)', line)
    if m:
        maps = int(m.group(1))
    if ' api kind=kernel' not in line:
        continue
    rs = re.findall(r' (read|write|readwrite)=0x([0-9a-f]+)\+(\d+)', line)
    want = [('read', small + (k % 2000) * 1024, 16), ('write', act + (k % 32) * 4096, 128)]
    if [(m, int(a, 16), int(s)) for m, a, s in rs] != want:
        print('launch %d: %s' % (k, rs)); sys.exit(1)
    k += 1
assert k == 3000, k
assert maps == 3000, maps
print('churn: 3000 launches exact, a map each')
PY
"$STPROF" record --accesses=exact --sample-launches 4 -q -o s.stp -- "$PROG" many 2000 >s.out || fail "record sampled"
grep -q 'blocks=500$' s.out || fail "sampled: $(tail -1 s.out)"
"$STPROF" dump s.stp >s.txt
expect_eq "kernel events" "$(grep -c ' api kind=kernel' s.txt)" 2000
expect_eq "kernel events with ranges" "$(grep ' api kind=kernel' s.txt | grep -c ' read=')" 500
echo ok
