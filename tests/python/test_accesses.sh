#!/bin/bash
# Op-level accesses on real PyTorch (stprof record --accesses): the ranges
# recorded for a few known ops are exactly their inputs (read) and outputs
# (write), an in-place op's target read and written; and planted.py's early
# allocation, late deallocation and unused tensor are reported as those
# DrGPUM patterns at their Python lines.
. "$(dirname "$0")/../collector/lib.sh"
"$PY" -c 'import torch' 2>/dev/null || skip "no torch for $PY"
[ "${STPROF_SANITIZE:-0}" = 1 ] && skip "too slow under sanitizers"
export OMP_NUM_THREADS=1
cd "$T"

# 1. known ops: randn writes x; mm reads x, writes y; add_ reads and writes
#    x and reads y.  Nothing else touches them.
printf 'import torch\nx = torch.randn(100, 100)\ny = x @ x\nx.add_(y)\n' >ops.py
"$STPROF" record --accesses -q -o o.stp -- "$PY" ops.py || fail "record --accesses"
"$STPROF" dump o.stp >o.txt
x=$(grep -m1 ' alloc .*size=40000 .*pool=1' o.txt | sed 's/.*addr=\(0x[0-9a-f]*\).*/\1/')
y=$(grep ' alloc .*size=40000 .*pool=1' o.txt | sed -n '2s/.*addr=\(0x[0-9a-f]*\).*/\1/p')
[ -n "$x" ] && [ -n "$y" ] || fail "no tensor allocations"
ops=$(grep ' api ' o.txt | sed 's/.* name="\([^"]*\)" .*duration=[0-9]* */\1 /')
want="aten.randn.default write=$x+40000
aten.mm.default read=$x+40000 write=$y+40000
aten.add_.Tensor readwrite=$x+40000 read=$y+40000"
expect_eq "accesses of randn, mm, add_" "$ops" "$want"

# 2. planted inefficiencies, each at its line
"$STPROF" record --accesses -q -o p.stp -- "$PY" "$STPROF_SRC/tests/python/planted.py" >/dev/null || fail "record planted"
"$STPROF" report -f json --top 100 -o p.json p.stp || fail "report planted"
python3 - p.json <<'PY' || fail "planted findings"
import json, sys
d = json.load(open(sys.argv[1]))
assert all(d['patterns'][p]['available'] for p in ('early-allocation', 'late-deallocation', 'unused-allocation'))
sites = {s['id']: s for s in d['sites']}  # schema 2: sites by id, not position
# the user's line (its text less the operator the report names beside it)
where = lambda f: sites[f['site']]['frames'][0]['text'].split(' (aten::')[0] if sites[f['site']]['frames'] else '?'
got = {(f['pattern'], where(f)) for f in d['findings']}
for want in [('early-allocation', 'planted.py:16 in main'), ('late-deallocation', 'planted.py:20 in main'),
             ('unused-allocation', 'planted.py:23 in main')]:
    assert want in got, (want, sorted(got))
    print('found %s at %s' % want)
unused = [w for p, w in got if p == 'unused-allocation']
assert unused == ['planted.py:23 in main'], unused  # the heap's objects are no findings
PY
echo ok
