/*
 * replay.h - drives libstalloc with the request stream of a plan, as the
 * program that was profiled would, for the tests and the bench: the
 * persistent requests once, then the iteration K times (allocations and
 * frees in tick order, frees first at a tick, wrapping requests freed in
 * the next iteration), optionally perturbed.
 *
 * Header-only (static functions); the includer defines what to do with
 * each block through the rp_hooks.
 */
#ifndef STPROF_TEST_REPLAY_H
#define STPROF_TEST_REPLAY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/plan.h"
#include "stprof/stalloc.h"

typedef struct rp_ev {
	uint64_t tick;
	uint32_t ordinal; /* ties: in allocation order, as the program made them */
	uint32_t req;
	uint8_t is_free;
} rp_ev;

static inline int rp_cmp(const void *a, const void *b)
{
	const rp_ev *x = a, *y = b;
	if (x->tick != y->tick)
		return x->tick < y->tick ? -1 : 1;
	if (x->is_free != y->is_free)
		return x->is_free ? -1 : 1; /* half-open lives: frees first */
	if (x->ordinal != y->ordinal)
		return x->ordinal < y->ordinal ? -1 : 1;
	return x->req < y->req ? -1 : x->req > y->req;
}

/* The iteration's events of r, sorted; persistent requests are not in it. */
static inline rp_ev *rp_events(const stp_reqs *r, size_t *n)
{
	rp_ev *v = malloc(2 * (r->n + 1) * sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++) {
		const stp_req *q = &r->req[i];
		if (q->flags & STP_REQ_PERSISTENT)
			continue;
		v[k++] = (rp_ev){q->t_start, q->ordinal, (uint32_t)i, 0};
		v[k++] = (rp_ev){q->t_end, q->ordinal, (uint32_t)i, 1};
	}
	qsort(v, k, sizeof *v, rp_cmp);
	*n = k;
	return v;
}

/* Persistent requests in their recorded order. */
static inline uint32_t *rp_persistent(const stp_reqs *r, size_t *n)
{
	uint32_t *v = malloc((r->n + 1) * sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->req[i].flags & STP_REQ_PERSISTENT)
			v[k++] = (uint32_t)i;
	/* insertion by ordinal: persistent sets are small */
	for (size_t i = 1; i < k; i++)
		for (size_t j = i; j > 0 && r->req[v[j - 1]].ordinal > r->req[v[j]].ordinal; j--) {
			uint32_t t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	*n = k;
	return v;
}

/* The start-up as the program made it: the plan's start-up sequence (1.3)
 * with its persistent requests (req) and the temporaries around them (req
 * UINT32_MAX: made and freed at once; late: it outlived start-up when
 * recorded); without one, the persistent requests alone. */
typedef struct rp_boot {
	uint32_t req;
	int late;
	uint64_t size;
} rp_boot;

static inline rp_boot *rp_startup(const stp_reqs *r, size_t *n)
{
	size_t np;
	uint32_t *pers = rp_persistent(r, &np);
	rp_boot *v = malloc((np + r->nstartup + 1) * sizeof *v);
	size_t k = 0, j = 0;
	for (uint32_t i = 0; i < r->nstartup; i++) {
		uint64_t size = STP_STARTUP_SIZE(r->startup[i]);
		if (j < np && r->req[pers[j]].ordinal == i) {
			v[k++] = (rp_boot){pers[j++], 0, size};
		} else if (size) {
			v[k++] = (rp_boot){UINT32_MAX, !!(r->startup[i] & STP_STARTUP_OUTLIVES), size};
		}
	}
	for (; j < np; j++)
		v[k++] = (rp_boot){pers[j], 0, r->req[pers[j]].size};
	free(pers);
	*n = k;
	return v;
}

static inline uint64_t rp_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif
