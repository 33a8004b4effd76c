"""viewer_data.py - reads the data an HTML report embeds for its viewer
(docs/report.md, "The interactive viewer": #stpv-meta JSON, #stpv-bin the
base64 of a zlib stream of varint columns) without a browser, so tests can
check what the page was given against the trace itself.

    ranks = load('report.html')
    R = ranks[0]
    R['meta']['label'], R['cols']['os'] (sizes), R['of'] (free events),
    R['tot'] (bytes after each event), state_at(R, 'real', e)
"""
import base64
import json
import re
import zlib


def _varints(buf, off, n, codec):
    out, p, acc = [], off, 0
    for _ in range(n):
        v, shift = 0, 0
        while True:
            b = buf[p]
            p += 1
            v |= (b & 127) << shift
            shift += 7
            if not b & 128:
                break
        if codec != 'u':
            v = (v >> 1) ^ -(v & 1)
        if codec == 'd':
            acc += v
            v = acc
        out.append(v)
    return out


def load(path):
    text = open(path, encoding='utf-8', errors='replace').read()
    meta = json.loads(re.search(r'<script type=application/json id=stpv-meta>(.*?)</script>', text, re.S).group(1))
    b64 = re.search(r'<script type=text/plain id=stpv-bin>(.*?)</script>', text, re.S).group(1)
    buf = base64.b64decode(''.join(b64.split()))
    if meta.get('enc') == 'deflate':
        buf = zlib.decompress(buf)
    ranks = []
    for m in meta['ranks']:
        cols = {k: _varints(buf, v[0], v[1], v[2]) for k, v in m['cols'].items()}
        n, ne = m['nobj'], m['nev']
        of = [cols['oa'][i] + cols['ol'][i] if cols['ol'][i] else ne for i in range(n)]
        evo = [None] * ne
        for i in range(n):
            evo[cols['oa'][i]] = i
            if of[i] < ne:
                evo[of[i]] = ~i
        tot, live = [], 0
        for e in range(ne):
            o = evo[e]
            live += cols['os'][o] if o >= 0 else -cols['os'][~o]
            tot.append(live + cols['res'][e])
        ranks.append({'meta': m, 'cols': cols, 'of': of, 'evo': evo, 'tot': tot, 'top': meta})
    return ranks


def state_at(R, key, e):
    """The segments ([addr, end]) and the blocks ({object: (addr, size)}) of
    allocator state `key` after event e, as the viewer computes them."""
    c, ranges = R['cols'], []
    for k in range(len(c.get(key + 'e', []))):
        if c[key + 'e'][k] > e:
            break
        a, z = c[key + 'g'][k], c[key + 'z'][k]
        if z > 0:
            ranges.append([a, a + z, c[key + 'i'][k] if key + 'i' in c else -1 - k])
            continue
        nxt = []
        for r in ranges:
            if r[1] <= a or r[0] >= a - z:
                nxt.append(r)
                continue
            if r[0] < a:
                nxt.append([r[0], a, r[2]])
            if r[1] > a - z:
                nxt.append([a - z, r[1], r[2]])
        ranges = nxt
    ranges.sort()
    segs = []
    for r in ranges:
        if segs and segs[-1][2] == r[2] and r[2] >= 0 and segs[-1][1] == r[0]:
            segs[-1][1] = r[1]
        else:
            segs.append(list(r))
    addr = c['oad'] if key == 'real' else c[key + 'a']
    extra = c.get(key + 'b')
    blocks, outside = {}, 0
    for i in range(R['meta']['nobj']):
        if c['oa'][i] > e or R['of'][i] <= e:
            continue
        a = addr[i]
        if a < 0:
            continue
        size = c['os'][i] + (extra[i] if extra else 0)
        if any(s[0] <= a < s[1] for s in segs):
            blocks[i] = (a, size)
        else:
            outside += 1
    return [(s[0], s[1]) for s in segs], blocks, outside
