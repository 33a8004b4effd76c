#!/bin/sh
# report_torch.sh - a real PyTorch CPU training run (examples/
# torch_transformer.py) recorded by the collector gives a sensible class
# split: iterations and phases from its markers; memory that crosses
# iterations (weights, gradients, optimizer state) persistent; activations
# (allocated in a forward phase, freed in a backward one) scoped; the
# peak inside the loop; and without the markers the iterations are
# detected where the markers put them.  Skipped (77) without torch or the collector, and
# under the sanitizers (too slow there).
set -eu
: "${STPROF_BUILD:?}" "${STPROF_SRC:?}"
B=$STPROF_BUILD
PY=${STPROF_PYTHON:-/usr/bin/python3}
[ -f "$B/libstprof.so" ] || { echo "skipped: no collector"; exit 77; }
[ "${STPROF_SANITIZE:-0}" = 1 ] && { echo "skipped under sanitizers"; exit 77; }
"$PY" -c "import torch" 2>/dev/null || { echo "skipped: no torch"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/stprof" record -q -o "$T/t.stp" "$PY" "$STPROF_SRC/examples/torch_transformer.py" --iters 3 >/dev/null
"$B/stprof" report --format json --frames 2 -o "$T/t.json" "$T/t.stp"
python3 - "$T/t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
tl = d['timeline']
assert tl['iteration_source'] == 'markers' and len(tl['iterations']) == 3, tl['iteration_source']
names = {p['name'] for p in tl['phases']}
assert {'forward', 'backward', 'optimizer'} <= names, names
assert d['peak']['iteration'] is not None, 'the peak is inside the loop'
c = d['classes']
mib = lambda k, f='bytes': c[k][f] / 2**20
print('classes (MiB): ' + ', '.join('%s %.1f' % (k, mib(k)) for k in c if c[k]['bytes']))
# the tensors' storage (sites at a Python line, then libtorch): activations
# scoped, state persistent
ts = {k: 0 for k in c}
for s in d['sites']:
    f0 = s['frames'][0] if s['frames'] else {}
    if 'libtorch' in f0.get('module', '') or (f0.get('file') or '').endswith('.py'):
        for k, v in s['classes'].items():
            ts[k] += v['bytes']
assert ts['scoped'] > 1 << 20, ts
assert ts['persistent'] > 1 << 20, ts
assert c['persistent']['bytes_at_peak'] > c['transient']['bytes_at_peak'], c
# in the steady iteration, activations: what forward allocates and backward
# frees (classes count the tensor space: 3 iterations of ~120 activations)
assert c['scoped']['objects'] > 300, c['scoped']
assert c['leaked']['bytes'] < 1 << 20, c['leaked']
print('report_torch: ok')
PY
# Without its markers (--iterations detect) the same run's iterations are
# found from the allocation sequence alone, past the million allocations of
# import torch that never repeat: the period is the markers' steady
# iteration's allocation count, and each detected iteration starts shortly
# after a marked one with the same peak (the shim's markers come at the
# optimizer step's end; detection, on the tensor space, cuts at the next
# iteration's first tensor: in between only host events, the script's print).
"$B/stprof" report --format json --iterations detect -o "$T/d.json" "$T/t.stp"
python3 - "$T/t.json" "$T/d.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))['timeline']
d = json.load(open(sys.argv[2]))['timeline']
assert d['iteration_source'] == 'detected', d['method']
assert d['period_allocs'] == m['iterations'][-1]['allocs'], (d['period_allocs'], m['iterations'][-1]['allocs'])
assert len(d['iterations']) >= 2 and d['confidence'] >= 0.95, d['method']
for it in d['iterations']:
    near = [x for x in m['iterations'] if 0 <= it['begin_seq'] - x['begin_seq'] <= 400]
    assert near, ('no marked iteration starts near', it['begin_seq'])
    assert near[0]['peak_bytes'] == it['peak_bytes'], (near[0], it)
    assert it['allocs'] == d['period_allocs'], it
print('report_torch: detected %d iterations of %d allocations, as marked' % (len(d['iterations']), d['period_allocs']))
PY
