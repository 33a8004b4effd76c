/*
 * iterstats.c - the light second pass of stp_det_timeline_run(): what the
 * choice of the steady iteration needs and pass 1 cannot know before the
 * windows are found: each iteration's allocation count and peak live bytes
 * in the primary space, and the times of detected cuts.  The same figures
 * as pass 2 (analyze.c) computes, so the planner and the report agree on
 * the steady iteration, at the cost of one address map of the primary
 * space's live objects and no call sites, classes, patterns or models.
 */
#include <string.h>

#include "det.h"
#include "space.h"

int det_iter_stats(stp_det *d)
{
	char err[512];
	stp_reader *r = stp_reader_open(d->path, err, sizeof err);
	if (!r) {
		if (!d->error)
			d->error = strdup(err);
		return -1;
	}
	det_map live;
	if (det_map_init(&live, 1024) < 0) {
		stp_reader_close(r);
		return -1;
	}
	int32_t primary = d->res.primary;
	const stp_det_space *ps = primary >= 0 ? &d->spaces[primary] : NULL;
	uint64_t bytes = 0, seg = 0, ib = 0, heap_interval = 0, begin_bytes = 0;
	stp_event ev;
	int rc = 0;
	while (ps && (rc = stp_reader_next(r, &ev)) > 0) {
		uint64_t ns = ev.time_ns > d->t0 ? ev.time_ns - d->t0 : 0;
		while (seg < d->ncuts && d->cuts[seg] <= ev.seq) {
			if (d->cut_ns[seg] == UINT64_MAX)
				d->cut_ns[seg] = ns;
			seg++;
		}
		while (ib < d->nibounds && d->ibounds[ib] <= ev.seq)
			ib++;
		if (ev.type == STP_EV_ALLOC) {
			const stp_alloc_info *a = &ev.u.alloc;
			if (!DET_KEEPS(d, a->size) || a->kind != ps->kind ||
			    DET_ALLOC_DEVICE(a) != ps->device)
				continue;
			uint64_t old;
			uint64_t b = det_weighted(a->size, det_alloc_weight(heap_interval, a));
			int put = det_map_put(&live, a->addr, b, &old);
			if (put < 0)
				goto oom;
			if (put == 0)
				bytes -= old;
			bytes += b;
			if ((ib & 1) && ib / 2 < d->niters) {
				stp_det_iteration *it = &d->iters[ib / 2];
				it->allocs++;
				if (bytes > it->peak_bytes)
					it->peak_bytes = bytes;
			}
		} else if (ev.type == STP_EV_FOLD) {
			for (uint32_t k = 0; k < ev.u.fold.nspaces; k++) {
				const stp_fold_space *x = &ev.u.fold.spaces[k];
				if (x->kind != ps->kind || det_space_device(x->kind, x->device, x->pool) != ps->device ||
				    !((ib & 1) && ib / 2 < d->niters))
					continue;
				stp_det_iteration *it = &d->iters[ib / 2];
				it->allocs += x->allocs;
				if (begin_bytes + x->carried_in + x->peak > it->peak_bytes)
					it->peak_bytes = begin_bytes + x->carried_in + x->peak;
			}
		} else if (ev.type == STP_EV_MARKER) {
			if (ev.u.marker.kind == STP_MARK_ITER_BEGIN)
				begin_bytes = bytes;
			det_heap_sample_note(r, &ev, &heap_interval);
		} else if (ev.type == STP_EV_FREE) {
			uint64_t v;
			if (det_map_del(&live, ev.u.free.addr, &v))
				bytes -= v;
		}
	}
	for (; seg < d->ncuts; seg++)
		if (d->cut_ns[seg] == UINT64_MAX)
			d->cut_ns[seg] = d->end_ns;
	det_map_destroy(&live);
	stp_reader_close(r);
	return 0;
oom:
	det_map_destroy(&live);
	stp_reader_close(r);
	return -1;
}
