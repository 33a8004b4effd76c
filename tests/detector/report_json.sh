#!/bin/sh
# report_json.sh - the JSON report parses and carries the documented fields
# with the crafted scenarios' exact answers (docs/report-json.md).
set -eu
B=${STPROF_BUILD:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/det_mktrace" train "$T/train.stp"
"$B/det_mktrace" patterns "$T/patterns.stp"
"$B/stprof" report --format json -o "$T/train.json" "$T/train.stp"
"$B/stprof" report --format json "$T/patterns.stp" >"$T/patterns.json"
python3 - "$T/train.json" "$T/patterns.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[2]))
assert t['schema'] == 'stprof-report' and t['version'] == 2
assert t['trace']['whole'] is True and t['trace']['error'] is None
assert t['trace']['events_by_type']['alloc'] == 56
s = t['spaces'][0]
assert (s['kind'], s['allocs'], s['frees'], s['live_objects_end'], s['peak_bytes']) == ('host', 56, 51, 5, 1220320), s
assert t['peak']['iteration'] == 4 and t['timeline']['phases'][t['peak']['phase']]['name'] == 'forward'
tl = t['timeline']
assert tl['iteration_source'] == 'markers' and len(tl['iterations']) == 5 and tl['steady'] == 1
c = t['classes']
assert (c['persistent']['objects'], c['scoped']['objects'], c['transient']['objects'], c['leaked']['objects']) == (1, 25, 25, 5), c
assert t['sites'][0]['peak_bytes'] == 1000000 and t['sites'][0]['class'] == 'persistent'
assert t['sites'][0]['frames'][0]['text'] == 'prog+0x400100', t['sites'][0]['frames']
pats = {f['pattern'] for f in t['findings']}
assert pats == {'memory-leak', 'late-free'}, pats
assert t['patterns']['early-allocation']['available'] is False
assert len(t['series']) == 1000 and max(x[1] for x in t['series']) == 1220320
assert len(t['lifetime_buckets']['time']) == len(t['sites'][0]['lifetime_time'])
names = sorted(f['pattern'] for f in p['findings'])
assert names == ['dead-write', 'early-allocation', 'late-deallocation', 'memory-leak', 'redundant-allocation',
                 'redundant-allocation', 'temporary-idleness', 'unused-allocation'], names
assert p['logical_unit'] == 'kernels'  # 10 of its 12 API events are kernels
for f in p['findings']:
    assert f['suggestion'] and f['worst']['size'] > 0 and f['expected'] is None
u = [f for f in p['findings'] if f['pattern'] == 'unused-allocation'][0]
assert (u['max_distance'], u['distance_unit'], u['worst']['levels']) == (11, 'kernels', 18), u
assert p['expected'] == [] and p['expected_total'] == 0
assert p['accesses']['apis'] == 12 and p['accesses']['sanitizer'] == 0, p['accesses']
# allocator models: train is host-only (what-if), patterns has device memory
m = t['models']
assert m['fed']['source'] == 'host' and m['fed']['min_size'] == 512, m['fed']
d = m['devices'][0]
assert d['host_fallback'] is True and d['device'] == -1
assert [r['model'] for r in d['results']] == ['pytorch', 'pytorch', 'bfc', 'raw'], d['results']
for r in d['results']:
    assert 0 < r['peak_allocated'] <= r['peak_reserved'] or r['model'] == 'raw', r
    assert abs(r['efficiency'] + r['fragmentation'] - 1) < 1e-6 and r['series']
assert d['worst'] is None or d['worst']['reserved'] == d['results'][0]['peak_reserved']
for s in (d['worst'] or {}).get('sites', []):
    assert s['site'] is None or s['site'] in {x['id'] for x in t['sites']}
pm = p['models']
assert pm['fed']['source'] == 'device' and pm['devices'][0]['host_fallback'] is False, pm['fed']
print('report_json: ok')
PY
"$B/stprof" report --format json --models none "$T/train.stp" | python3 -c '
import json, sys; j = json.load(sys.stdin); assert j["models"] is None and j["models_error"] is None'
"$B/stprof" report --format json --models pytorch,bfc --no-recommend --capacity 1M "$T/train.stp" | python3 -c '
import json, sys; d = json.load(sys.stdin)["models"]["devices"][0]
assert [r["label"] for r in d["results"]][1:] == ["bfc allow_growth", "bfc preallocate"], d["results"]
assert d["recommend_tried"] is False and d["results"][0]["capacity"] == 1048576'
"$B/stprof" report --models gpu "$T/train.stp" 2>/dev/null && { echo "bad --models accepted"; exit 1; }
"$B/stprof" report --alloc-conf max_split_size_mb:1 "$T/train.stp" 2>"$T/err" && { echo "bad --alloc-conf accepted"; exit 1; }
grep -q "alloc-conf" "$T/err" || { echo "bad --alloc-conf: no message"; exit 1; }
