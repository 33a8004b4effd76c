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
# the report's figures add up in either space (docs/report.md, "Self-check")
for sp in auto host tensors; do
  "$B/stprof" report --check --space $sp "$T/t.stp" 2>"$T/chk" || { cat "$T/chk" >&2; echo "FAIL: --check --space $sp" >&2; exit 1; }
done
"$B/stprof" report "$T/t.stp" >"$T/t.txt"
"$B/stprof" report --no-models --space host "$T/t.stp" >"$T/h.txt"
"$B/stprof" report --no-models --group function "$T/t.stp" >"$T/g.txt"
python3 - "$T/t.txt" "$T/h.txt" "$T/t.json" "$T/g.txt" <<'PY'
import json, re, sys
t, h, j = open(sys.argv[1]).read(), open(sys.argv[2]).read(), json.load(open(sys.argv[3]))
g = open(sys.argv[4]).read()
# grouped by function: the functions of the tensors' call sites, not of the heap
m = re.search(r'\((\d+) more functions', g)
shown = len(re.findall(r'^ +\d+ +[\d.]+ (?:[KMGT]iB|B) ', g, re.M))
assert shown and (int(m.group(1)) if m else 0) + shown <= j['sites_total'], (m and m.group(0), shown, j['sites_total'])
# the tensor space is analyzed in depth though the host heap peaks higher:
# the report says which space it analyzes, not that it is the largest
host = [s for s in j['spaces'] if s['kind'] == 'host' and not s['tensors']][0]
ten = [s for s in j['spaces'] if s['tensors']][0]
assert host['peak_bytes'] > ten['peak_bytes'], (host['peak_bytes'], ten['peak_bytes'])
assert 'Memory (cpu tensors), analyzed in depth' in t, re.findall('^Memory.*', t, re.M)
assert 'the largest' not in t and 'the largest' not in h
# "(N more call sites" counts the analyzed space's sites, not the heap's
more = int(re.search(r'\((\d+) more call sites', t).group(1))
assert more + 10 == j['sites_total'] and j['sites_total'] <= ten['allocs'], (more, j['sites_total'], ten['allocs'])
# never-freed objects set aside are the tensors' (none live at the end)
assert 'set aside' not in t or ten['live_objects_end'], re.findall('set aside.*', t)
# the host report's classes are the host heap's: they sum to its bytes
cls = re.search(r'^Classes.*?\n((?:  \S.*\n)+)', h, re.M).group(1)
print(cls)
# the allocator models replayed the tensors: said so, not "host allocations"
assert 'what-if: these CPU tensors on a GPU' in t, re.findall('^Allocator models.*', t, re.M)
assert 'host allocations of' not in t
# every finding of the tensor report is about tensors (no 3-byte
# interpreter object's "Late free (host heuristic)" ranked first)
for f in j['findings']:
    site = [s for s in j['sites'] if s['id'] == f['site']][0]
    where = site['frames'][0] if site['frames'] else {}
    assert (where.get('file') or '').endswith('.py'), (f['pattern'], where.get('text'))
PY
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
