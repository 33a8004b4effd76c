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

static inline uint64_t rp_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif
