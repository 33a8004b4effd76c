#!/usr/bin/env python3
"""Checks a snapshot pickle written by `stprof export --format torch-snapshot`
with PyTorch's own reader (torch.cuda._memory_viz of the installed torch:
Debian's 1.13 here) and, for the 2.x layout, the invariants 2.x's
_memory_viz and pytorch.org/memory_viz rely on.

usage: check_snapshot.py FILE.pickle MIN_FRAMES
Prints one summary line; exits 1 with the reason on the first problem.
"""
import pickle
import sys

import torch.cuda._memory_viz as viz

ACTIONS = {'alloc', 'free_requested', 'free_completed', 'segment_alloc', 'segment_free', 'segment_map',
           'segment_unmap', 'snapshot', 'oom'}
STATES = {'active_allocated', 'active_pending_free', 'inactive'}


def fail(msg):
    print('FAIL: ' + msg)
    sys.exit(1)


def check_frames(fr, where):
    if not isinstance(fr, list):
        fail(f'{where}: frames is not a list')
    for f in fr:
        if not (isinstance(f, dict) and isinstance(f.get('filename'), str) and isinstance(f.get('line'), int)
                and isinstance(f.get('name'), str)):
            fail(f'{where}: bad frame {f!r}')


def check_segments(segs, v2):
    for s in segs:
        addr = s['address']
        for b in s['blocks']:
            if b['state'] not in STATES:
                fail(f'bad state {b["state"]}')
            if v2:
                if b['address'] != addr:
                    fail(f'block at {b["address"]:#x}, expected {addr:#x}')
                check_frames(b['frames'], 'block')
                if b['state'] != 'inactive' and not 0 < b['requested_size'] <= b['size']:
                    fail(f'requested_size {b["requested_size"]} of a {b["size"]} block')
            addr += b['size']
        if addr != s['address'] + s['total_size']:
            fail(f'segment at {s["address"]:#x}: blocks do not add up to total_size')


def main():
    path, min_frames = sys.argv[1], int(sys.argv[2])
    with open(path, 'rb') as f:
        data = pickle.load(f)
    ident = lambda lines: lines
    if isinstance(data, list):  # the 1.13 layout: PyTorch 1.13's reader, whole
        segs, v2 = data, False
    else:
        segs, v2 = data['segments'], True
        if not isinstance(data['device_traces'], list) or not all(isinstance(t, list) for t in data['device_traces']):
            fail('device_traces is not a list of lists')
        for tr in data['device_traces']:
            last = 0
            for e in tr:
                if e['action'] not in ACTIONS:
                    fail(f'unknown action {e["action"]}')
                for k in ('addr', 'size', 'stream', 'time_us'):
                    if not isinstance(e[k], int):
                        fail(f'entry {k} is not an int')
                if e['time_us'] < last:
                    fail('time_us goes back')
                last = e['time_us']
                check_frames(e['frames'], e['action'])
    check_segments(segs, v2)
    st = viz.stats(segs)  # asserts total_size == sum of block sizes itself
    seg_lines = viz.segments(segs, format_flamegraph=ident).splitlines()
    mem_lines = viz.memory(segs, format_flamegraph=ident).splitlines()
    if v2:  # 1.13's reader shows a 2.x block without history by state only
        framed = [b for s in segs for b in s['blocks'] if b['frames']]
    else:
        framed = [l for l in mem_lines if ':' in l.rsplit(' ', 1)[0]]
    if len(framed) < min_frames:
        fail(f'only {len(framed)} flamegraph lines with frames (want {min_frames})')
    total = sum(int(l.rsplit(' ', 1)[1]) for l in mem_lines)
    if total != st['total_size'].value:
        fail(f'memory flamegraph counts {total} bytes, stats {st["total_size"].value}')
    n = sum(len(t) for t in data['device_traces']) if v2 else 0
    print(f'{path}: {"2.x" if v2 else "1.13"} layout, {st["segments"]} segments, {st["total_size"]} total, '
          f'{len(seg_lines)} segment lines, {len(framed)} framed {"blocks" if v2 else "memory lines"}, {n} trace entries; torch {torch_version()}')


def torch_version():
    import torch
    return torch.__version__


if __name__ == '__main__':
    main()
