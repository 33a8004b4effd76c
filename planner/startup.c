/*
 * startup.c - where the start-up sequence meets the layout.
 *
 * The pinned requests (persistent ones, spares, whole-period ones) sit at
 * the bottom of the pool, stacked in any order: every layout step stacks
 * them from offset 0 in the request list's order.  pl_place_startup stacks
 * them anew in the order their objects arrive: the ones live from the
 * iteration's start first, then the persistent requests by their position
 * in the start-up sequence.  So the slots of the objects made last (an
 * optimizer's state made at its first step, DDP's gradient buckets rebuilt
 * after the first backward) form one range at the top of the pinned part,
 * idle until those arrive.
 *
 * Then it gives each start-up temporary that outlives start-up
 * (made before the first iteration marker, freed in an iteration before
 * the planned one: DDP's first gradient bucket, freed when it rebuilds its
 * buckets) a range over the slots of the persistent requests that arrive
 * after it is freed, first fit, clear of the other temporaries placed there
 * while they live.  Without it such a temporary goes to the runtime's
 * fallback, which keeps its bytes reserved on top of the pool.
 *
 * Invariant: the pinned part keeps its size (w->pinned_bytes), so the
 * layout above it is untouched; a placement lies inside the pinned part,
 * over slots whose owners come after its temporary is freed (as recorded:
 * the runtime checks the range is free before it takes it).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* at most this many temporaries placed (each is checked against the others) */
#define PLACE_MAX 4096

typedef struct placed {
	uint64_t off, size;
	uint32_t from, until; /* start-up positions: made at from, freed before until */
} placed;

/* The lowest offset in [lo, hi) where size fits clear of the placed ranges
 * whose lifetimes meet [from, until); UINT64_MAX when none. */
static uint64_t first_fit(const placed *pl, size_t n, uint64_t lo, uint64_t hi, uint64_t size, uint32_t from,
                          uint32_t until)
{
	uint64_t at = lo;
	for (int moved = 1; moved && at + size <= hi;) {
		moved = 0;
		for (size_t j = 0; j < n; j++)
			if (pl[j].from < until && from < pl[j].until && pl[j].off < at + size && at < pl[j].off + pl[j].size) {
				at = pl[j].off + pl[j].size;
				moved = 1;
			}
	}
	return at + size <= hi ? at : UINT64_MAX;
}

/* Places the start-up temporaries over the slots v (the pinned requests by
 * arrival, n of them, stacked): fills p->startup_offset and p->nplaced. */
static int place(const stp_reqs *r, const pl_work *w, const pl_kv *v, size_t n, stp_plan *p)
{
	char *persistent = calloc(r->nstartup, 1);
	placed *pl = malloc(PLACE_MAX * sizeof *pl);
	int rc = -1;
	if (!persistent || !pl)
		goto out;
	for (size_t k = 0; k < n; k++)
		if (v[k].k && v[k].k - 1 < r->nstartup)
			persistent[v[k].k - 1] = 1;
	size_t np = 0;
	for (uint32_t i = 0; i < r->nstartup && np < PLACE_MAX; i++) {
		uint32_t until = r->startup_until[i];
		if (until == UINT32_MAX || until <= i || persistent[i] || !(r->startup[i] & STP_STARTUP_OUTLIVES))
			continue;
		/* the slots of the persistent requests made from `until` on: the
		 * top of the pinned part, they being stacked by arrival */
		size_t k = n;
		while (k > 0 && v[k - 1].k >= (uint64_t)until + 1)
			k--;
		if (k == n)
			continue;
		uint64_t size = pl_startup_bytes(r, p, i);
		uint64_t at = first_fit(pl, np, p->offset[v[k].v], w->pinned_bytes, size, i, until);
		if (at == UINT64_MAX)
			continue;
		if (!p->startup_offset) {
			p->startup_offset = malloc((size_t)r->nstartup * sizeof *p->startup_offset);
			if (!p->startup_offset)
				goto out;
			for (uint32_t j = 0; j < r->nstartup; j++)
				p->startup_offset[j] = STP_NO_OFFSET;
		}
		p->startup_offset[i] = at;
		pl[np++] = (placed){at, size, i, until};
	}
	p->nplaced = (uint32_t)np;
	rc = 0;
out:
	free(persistent);
	free(pl);
	return rc;
}

int pl_place_startup(const stp_reqs *r, const pl_work *w, stp_plan *p)
{
	/* the pinned requests in arrival order (key 0: live from the iteration's
	 * start; else 1 + start-up position), stable: ties keep the list's order */
	pl_kv *v = malloc((w->n + 1) * sizeof *v), *tmp = malloc((w->n + 1) * sizeof *tmp);
	int rc = -1;
	if (!v || !tmp)
		goto out;
	size_t n = 0;
	for (size_t i = 0; i < w->n; i++)
		if (w->kind[i] == PL_PINNED)
			v[n++] = (pl_kv){(r->req[i].flags & STP_REQ_PERSISTENT) ? (uint64_t)r->req[i].ordinal + 1 : 0,
			                 (uint32_t)i};
	pl_sort_kv(v, tmp, n);
	uint64_t base = 0;
	for (size_t k = 0; k < n; k++) {
		p->offset[v[k].v] = base;
		base += w->size[v[k].v];
	}
	rc = r->startup_until && r->nstartup ? place(r, w, v, n, p) : 0;
out:
	free(v);
	free(tmp);
	return rc;
}
