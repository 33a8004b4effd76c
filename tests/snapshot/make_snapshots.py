#!/usr/bin/env python3
"""Writes PyTorch memory snapshots in the layouts PyTorch produces, for the
snapshot tests.  No GPU here: these are CONSTRUCTED in Python with the exact
dict/list layouts of torch.cuda.memory._snapshot() (2.x) and of 1.13's
memory_snapshot() (pytorch-allocator.md, torch/csrc/cuda/Module.cpp), pickled
with the protocols PyTorch's writers use (2 from C++, 4 and 5 from Python).
Frames are shared objects, so the pickler memoizes them as PyTorch's do.

usage: make_snapshots.py OUTDIR   writes v2_p4.pickle, v2_p2.pickle,
    v2_p5.pickle, v2_notime.pickle, v2_expandable.pickle, v113.pickle and
    v2_outside.pickle (inconsistent: allocations outside its segments)
"""
import os
import pickle
import sys

MiB = 1 << 20


def frames(*fs):
    return [{'filename': f, 'line': l, 'name': n} for (f, l, n) in fs]


# shared frame objects, as PyTorch's gathered contexts are
F_TRAIN = frames(('/src/model.py', 42, 'forward'), ('/src/train.py', 7, 'step'), ('/src/train.py', 99, '<module>'))
F_OPT = frames(('/usr/lib/python3/dist-packages/torch/optim/adam.py', 155, '_single_tensor_adam'),
               ('/src/train.py', 12, 'step'))
F_CXX = frames(('??', 0, 'c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc'),
               ('/src/model.py', 50, 'forward'))


def v2_snapshot(with_time=True):
    """A 2 MiB small segment and a 20 MiB large one on device 0.  The trace
    ring buffer starts after one allocation (0x7f0000000000, 512 B) was made:
    the importer must rebuild it (and the large segment) from `segments`."""
    seg_small = 0x7f0000000000
    seg_large = 0x7f0000200000
    t = [0]

    def e(action, addr, size, fr, stream=0, **kw):
        t[0] += 10
        d = {'action': action, 'addr': addr, 'size': size, 'stream': stream, 'frames': fr}
        if with_time:
            d['time_us'] = 1000 + t[0]
        d.update(kw)
        return d

    # the small segment and its first block (512 B at seg_small) existed
    # before the ring's first entry
    trace = [
        e('alloc', seg_small + 512, 1000, F_TRAIN),            # 1024 B block
        e('alloc', seg_large, 12 * MiB, F_OPT),
        e('alloc', seg_small + 1536, 300, F_CXX),              # 512 B block
        e('free_requested', seg_small + 1536, 300, F_CXX),
        e('free_completed', seg_small + 1536, 300, F_CXX),
        e('snapshot', 0, 0, []),
        e('free_requested', seg_large, 12 * MiB, F_OPT),
        e('free_completed', seg_large, 12 * MiB, F_OPT),
        e('segment_free', seg_large, 20 * MiB, F_OPT),
        e('segment_alloc', seg_large, 20 * MiB, F_OPT),
        e('alloc', seg_large, 4 * MiB, F_OPT),
        e('oom', 0, 64 * MiB, F_TRAIN, device_free=3 * MiB),  # the refused request's line
    ]
    segments = [
        {'device': 0, 'address': seg_small, 'total_size': 2 * MiB, 'allocated_size': 1536,
         'active_size': 1536, 'requested_size': 1512, 'stream': 0, 'segment_type': 'small',
         'segment_pool_id': (0, 0), 'is_expandable': False, 'frames': F_TRAIN,
         'blocks': [
             {'address': seg_small, 'size': 512, 'requested_size': 512, 'state': 'active_allocated',
              'frames': F_CXX},
             {'address': seg_small + 512, 'size': 1024, 'requested_size': 1000, 'state': 'active_allocated',
              'frames': F_TRAIN},
             {'address': seg_small + 1536, 'size': 2 * MiB - 1536, 'requested_size': 0, 'state': 'inactive',
              'frames': []},
         ]},
        {'device': 0, 'address': seg_large, 'total_size': 20 * MiB, 'allocated_size': 4 * MiB,
         'active_size': 4 * MiB, 'requested_size': 4 * MiB, 'stream': 0, 'segment_type': 'large',
         'segment_pool_id': (0, 0), 'is_expandable': False, 'frames': F_OPT,
         'blocks': [
             {'address': seg_large, 'size': 4 * MiB, 'requested_size': 4 * MiB, 'state': 'active_allocated',
              'frames': F_OPT},
             {'address': seg_large + 4 * MiB, 'size': 16 * MiB, 'requested_size': 0, 'state': 'inactive',
              'frames': []},
         ]},
    ]
    return {'segments': segments, 'device_traces': [trace],
            'allocator_settings': {'PYTORCH_CUDA_ALLOC_CONF': None, 'max_split_size': -1,
                                   'garbage_collection_threshold': 0.0, 'expandable_segments': False,
                                   'pinned_num_register_threads': 1, 'release_lock_on_malloc': False,
                                   'pinned_use_host_register': False, 'roundup_power2_divisions': {}},
            'external_annotations': [
                {'device': 0, 'stage': 'START', 'name': 'optimizer.step', 'time_us': 1055},
                {'device': 0, 'stage': 'END', 'name': 'optimizer.step', 'time_us': 1085}]}


def v2_expandable():
    """Expandable segments: one reservation mapped in 20 MiB pages."""
    base = 0x7e0000000000
    tr = [{'action': 'segment_map', 'addr': base, 'size': 20 * MiB, 'stream': 0, 'time_us': 10, 'frames': F_TRAIN},
          {'action': 'alloc', 'addr': base, 'size': 15 * MiB, 'stream': 0, 'time_us': 11, 'frames': F_TRAIN},
          {'action': 'segment_map', 'addr': base + 20 * MiB, 'size': 20 * MiB, 'stream': 0, 'time_us': 12,
           'frames': F_OPT},
          {'action': 'alloc', 'addr': base + 15 * MiB, 'size': 20 * MiB, 'stream': 0, 'time_us': 13, 'frames': F_OPT},
          {'action': 'free_requested', 'addr': base + 15 * MiB, 'size': 20 * MiB, 'stream': 0, 'time_us': 14,
           'frames': F_OPT},
          {'action': 'free_completed', 'addr': base + 15 * MiB, 'size': 20 * MiB, 'stream': 0, 'time_us': 14,
           'frames': F_OPT},
          {'action': 'segment_unmap', 'addr': base + 20 * MiB, 'size': 20 * MiB, 'stream': 0, 'time_us': 15,
           'frames': F_OPT}]
    seg = {'device': 0, 'address': base, 'total_size': 20 * MiB, 'allocated_size': 15 * MiB,
           'active_size': 15 * MiB, 'requested_size': 15 * MiB, 'stream': 0, 'segment_type': 'large',
           'segment_pool_id': (0, 0), 'is_expandable': True, 'frames': F_TRAIN,
           'blocks': [{'address': base, 'size': 15 * MiB, 'requested_size': 15 * MiB,
                       'state': 'active_allocated', 'frames': F_TRAIN},
                      {'address': base + 15 * MiB, 'size': 5 * MiB, 'requested_size': 0, 'state': 'inactive',
                       'frames': []}]}
    return {'segments': [seg], 'device_traces': [tr]}


def v2_outside():
    """The inconsistent case of a real third-party 2.x snapshot: its trace's
    allocations lie outside its `segments` (the segments are not the
    allocator's whole state), and blocks are live when it was taken.  Six
    iterations each make five 8 MiB activations at addresses no segment
    holds, free them, and keep one 2 MiB block of a 20 MiB segment: peak
    allocated 52 MiB against 20 MiB reserved."""
    seg, out = 0x7f2000000000, 0x7f6000000000
    t = [1000]

    def e(action, addr, size, fr):
        t[0] += 10
        return {'action': action, 'addr': addr, 'size': size, 'stream': 0, 'time_us': t[0], 'frames': fr}

    trace, live = [], []
    for it in range(6):
        acts = [out + (it * 8 + k) * 8 * MiB for k in range(5)]
        trace += [e('alloc', a, 8 * MiB, F_TRAIN) for a in acts]
        trace.append(e('alloc', seg + it * 2 * MiB, 2 * MiB, F_OPT))
        live.append(seg + it * 2 * MiB)
        for a in acts:
            trace += [e('free_requested', a, 8 * MiB, F_TRAIN), e('free_completed', a, 8 * MiB, F_TRAIN)]
    blocks = [{'address': a, 'size': 2 * MiB, 'requested_size': 2 * MiB, 'state': 'active_allocated',
               'frames': F_OPT} for a in live]
    blocks.append({'address': seg + 12 * MiB, 'size': 8 * MiB, 'requested_size': 0, 'state': 'inactive',
                   'frames': []})
    segs = [{'device': 0, 'address': seg, 'total_size': 20 * MiB, 'allocated_size': 12 * MiB,
             'active_size': 12 * MiB, 'requested_size': 12 * MiB, 'stream': 0, 'segment_type': 'large',
             'segment_pool_id': (0, 0), 'is_expandable': False, 'frames': F_OPT, 'blocks': blocks}]
    return {'segments': segs, 'device_traces': [trace]}


def v113_snapshot():
    """PyTorch 1.13: a list of segments; blocks have no address, only size,
    state and a history of {addr, real_size, frames}."""
    seg = 0x7f1000000000
    return [
        {'device': 0, 'address': seg, 'total_size': 2 * MiB, 'allocated_size': 1536, 'active_size': 1536,
         'stream': 0, 'segment_type': 'small',
         'blocks': [
             {'size': 1024, 'state': 'active_allocated',
              'history': [{'addr': seg, 'real_size': 700, 'frames': F_CXX},
                          {'addr': seg, 'real_size': 1000, 'frames': F_TRAIN}]},
             {'size': 512, 'state': 'active_pending_free',
              'history': [{'addr': seg + 1024, 'real_size': 512, 'frames': F_OPT}]},
             {'size': 2 * MiB - 1536, 'state': 'inactive', 'history': []},
         ]},
        {'device': 0, 'address': seg + 2 * MiB, 'total_size': 20 * MiB, 'allocated_size': 0, 'active_size': 0,
         'stream': 0, 'segment_type': 'large',
         'blocks': [{'size': 20 * MiB, 'state': 'inactive', 'history': []}]},
    ]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, obj, proto in [('v2_p4', v2_snapshot(), 4), ('v2_p2', v2_snapshot(), 2), ('v2_p5', v2_snapshot(), 5),
                             ('v2_notime', v2_snapshot(with_time=False), 4),
                             ('v2_expandable', v2_expandable(), 4), ('v113', v113_snapshot(), 2),
                             ('v2_outside', v2_outside(), 4)]:
        with open(os.path.join(out, name + '.pickle'), 'wb') as f:
            pickle.dump(obj, f, protocol=proto)


if __name__ == '__main__':
    main()
