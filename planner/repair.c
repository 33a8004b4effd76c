/*
 * repair.c - local re-placement around the peak, for large sets: the
 * requests at the top of the layout near its highest point are taken out
 * and put back by the exact search under a capacity below the pool, with
 * every other request standing where it is (the search's obstacles).
 *
 * At capacity C the requests reaching above C are *hot*.  For the hot one
 * that reaches highest, a neighbourhood R is taken: the requests live in a
 * time window around it whose tops are above a band's bottom C - H.  The
 * search (search.c) places R under C against the requests that stay; when
 * it succeeds, R's new offsets are taken (every request of R is then below
 * C, so there are fewer hot ones) and the next hot one is tried; when it
 * fails within its share of nodes, the window and the band grow, up to
 * PL_REPAIR_MAX requests, then that request is given up for this C.  C
 * starts halfway between the bound and the pool, higher while more than
 * PL_REPAIR_HOT requests reach above it.  With
 * no hot request left the pool is at most C: pl_keep takes the layout, and
 * C goes halfway down to the bound; when hot requests are given up
 * (PL_REPAIR_FAILS in a row, or all that are left), C goes halfway back up
 * to the pool.
 *
 * Invariant: the working layout is valid at every step (a neighbourhood is
 * replaced only by the search's layout, which avoids every request that
 * stays and the pinned ones below); the best is only ever replaced through
 * pl_keep.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PL_REPAIR_MAX 240
#define PL_REPAIR_FAILS 16 /* requests given up in a row before C rises */
#define PL_REPAIR_HOT 1000 /* requests above C at most, else C rises */

typedef struct rp {
	const pl_work *w;
	pl_itree t;          /* every static request, active */
	uint64_t *cand;      /* the working layout */
	uint8_t *kind;       /* the neighbourhood's sub-problem */
	uint8_t *in;         /* 1: in the neighbourhood */
	uint8_t *stuck;      /* given up at this capacity */
	uint32_t *buf;       /* query results */
	size_t nbuf, cap;
	uint32_t *R;
	size_t nR;
	uint32_t *os, *oe;   /* obstacles */
	uint64_t *olo, *ohi;
	int oom;
} rp;

static void rp_free(rp *x)
{
	pl_itree_free(&x->t);
	free(x->cand);
	free(x->kind);
	free(x->in);
	free(x->stuck);
	free(x->buf);
	free(x->R);
	free(x->os);
	free(x->oe);
	free(x->olo);
	free(x->ohi);
}

static void collect(uint32_t id, void *ctx)
{
	rp *x = ctx;
	if (x->nbuf == x->cap) {
		size_t nc = x->cap ? 2 * x->cap : 1024;
		uint32_t *nb = realloc(x->buf, nc * sizeof *nb);
		if (!nb) {
			x->oom = 1;
			return;
		}
		x->buf = nb;
		x->cap = nc;
	}
	x->buf[x->nbuf++] = id;
}

static int rp_init(rp *x, const pl_work *w, const uint64_t *best)
{
	size_t n = w->n, m = 0;
	memset(x, 0, sizeof *x);
	x->w = w;
	x->cand = malloc((n + 1) * sizeof *x->cand);
	x->kind = malloc(n + 1);
	x->in = calloc(n + 1, 1);
	x->stuck = calloc(n + 1, 1);
	x->R = malloc((n + 1) * sizeof *x->R);
	x->os = malloc((n + 1) * sizeof *x->os);
	x->oe = malloc((n + 1) * sizeof *x->oe);
	x->olo = malloc((n + 1) * sizeof *x->olo);
	x->ohi = malloc((n + 1) * sizeof *x->ohi);
	uint32_t *ids = calloc(n + 1, sizeof *ids);
	if (!x->cand || !x->kind || !x->in || !x->stuck || !x->R || !x->os || !x->oe || !x->olo || !x->ohi || !ids) {
		free(ids);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] == PL_STATIC)
			ids[m++] = (uint32_t)i;
	int rc = pl_itree_init(&x->t, w->s, w->e, n, ids, (uint32_t)m);
	for (size_t j = 0; j < m && !rc; j++)
		pl_itree_set(&x->t, ids[j], 1);
	free(ids);
	memcpy(x->cand, best, n * sizeof *x->cand);
	memcpy(x->kind, w->kind, n);
	for (size_t i = 0; i < n; i++)
		if (x->kind[i] == PL_STATIC)
			x->kind[i] = PL_DYNAMIC; /* only the neighbourhood is searched */
	return rc;
}

/* how many requests reach above cap */
static size_t hot(const rp *x, uint64_t cap)
{
	const pl_work *w = x->w;
	size_t n = 0;
	for (size_t i = 0; i < w->n; i++)
		n += w->kind[i] == PL_STATIC && x->cand[i] + w->size[i] > cap;
	return n;
}

/* cap, raised halfway to the pool until at most PL_REPAIR_HOT requests
 * reach above it (a pool decided at thousands of places is not repaired
 * one neighbourhood at a time) */
static uint64_t reachable(const rp *x, uint64_t cap, uint64_t pool)
{
	while (cap + 1 < pool && hot(x, cap) > PL_REPAIR_HOT)
		cap += (pool - cap + 1) / 2;
	return cap;
}

/* the hot request reaching highest above cap that is not stuck, or
 * UINT32_MAX */
static uint32_t highest(const rp *x, uint64_t cap)
{
	const pl_work *w = x->w;
	uint32_t v = UINT32_MAX;
	uint64_t top = cap;
	for (size_t i = 0; i < w->n; i++)
		if (w->kind[i] == PL_STATIC && !x->stuck[i] && x->cand[i] + w->size[i] > top) {
			top = x->cand[i] + w->size[i];
			v = (uint32_t)i;
		}
	return v;
}

/* Takes the neighbourhood of v (window [a, b), band above floor) out and
 * searches it under cap.  1 replaced, 0 not (too big, impossible, out of
 * nodes), -1 out of memory. */
static int try_one(rp *x, uint32_t v, uint32_t a, uint32_t b, uint64_t floor, uint64_t cap, double until,
                   stp_plan_stats *st)
{
	const pl_work *w = x->w;
	x->nbuf = 0;
	pl_itree_query(&x->t, a, b, collect, x);
	if (x->oom)
		return -1;
	x->nR = 0;
	uint32_t lo = w->s[v], hi = w->e[v];
	for (size_t j = 0; j < x->nbuf; j++) {
		uint32_t i = x->buf[j];
		if (x->cand[i] + w->size[i] > floor || i == v) {
			if (x->nR == PL_REPAIR_MAX)
				return 0;
			x->R[x->nR++] = i;
			lo = w->s[i] < lo ? w->s[i] : lo;
			hi = w->e[i] > hi ? w->e[i] : hi;
		}
	}
	/* obstacles: every other static request that meets the neighbourhood's
	 * time span */
	for (size_t j = 0; j < x->nR; j++)
		x->in[x->R[j]] = 1;
	x->nbuf = 0;
	pl_itree_query(&x->t, lo, hi, collect, x);
	size_t no = 0;
	for (size_t j = 0; j < x->nbuf && !x->oom; j++) {
		uint32_t i = x->buf[j];
		if (x->in[i])
			continue;
		x->os[no] = w->s[i];
		x->oe[no] = w->e[i];
		x->olo[no] = x->cand[i];
		x->ohi[no++] = x->cand[i] + w->size[i];
	}
	for (size_t j = 0; j < x->nR; j++)
		x->kind[x->R[j]] = PL_STATIC;
	pl_work sub = *w;
	sub.kind = x->kind;
	pl_obst ob = {no, x->os, x->oe, x->olo, x->ohi};
	int r = x->oom ? -2 : pl_search(&sub, &ob, cap, until, HUGE_VAL, 64 * (uint64_t)x->nR + 4096, 1, x->cand, &st->search_nodes);
	for (size_t j = 0; j < x->nR; j++) {
		x->kind[x->R[j]] = PL_DYNAMIC;
		x->in[x->R[j]] = 0;
	}
	return r == -2 ? -1 : r == 1;
}

int pl_repair(const pl_work *w, uint64_t *best, double deadline, int verbose, stp_plan_stats *st)
{
	rp x;
	if (rp_init(&x, w, best) < 0) {
		rp_free(&x);
		return -1;
	}
	double t0 = pl_now();
	uint64_t pool = pl_pool(w, best), bound = st->proven_bound;
	uint64_t cap = reachable(&x, bound + (pool - bound) / 2, pool), span = pool - w->pinned_bytes;
	long fixed = 0, given_up = 0;
	int rc = 0, failed = 0;
	while (rc == 0 && pool > bound && cap < pool && pl_now() < deadline) {
		uint32_t v = highest(&x, cap);
		if (v == UINT32_MAX) {
			/* nothing above cap but what was given up */
			uint64_t p = pl_pool(w, x.cand);
			if (p < pool && pl_keep(w, best, x.cand, STP_STEP_REPAIR, st)) {
				pool = p;
				if (verbose)
					fprintf(stderr, "plan: re-placement at %llu: pool %llu (%ld neighbourhoods), %.3f s\n",
					        (unsigned long long)cap, (unsigned long long)pool, fixed, pl_now() - t0);
			}
			/* met: aim halfway down to the bound; not: halfway up */
			cap = reachable(&x, p <= cap ? bound + (pool - bound) / 2 : cap + (pool - cap + 1) / 2, pool);
			memset(x.stuck, 0, w->n);
			continue;
		}
		int done = 0;
		uint32_t len = w->e[v] - w->s[v];
		for (int k = 0; k < 6 && !done && rc == 0; k++) {
			/* the window grows by the request's lifetime, the band doubles */
			uint32_t d = (uint32_t)(((uint64_t)len * (uint64_t)k) / 2);
			uint32_t a = w->s[v] > d ? w->s[v] - d : 0, b = w->e[v] + d < w->T ? w->e[v] + d : w->T;
			uint64_t h = span / 64 << (k < 5 ? k : 5), floor = cap > h ? cap - h : 0;
			double now = pl_now();
			int r = try_one(&x, v, a, b, floor, cap, now + (deadline - now) / 8, st);
			if (r < 0)
				rc = -1;
			done = r == 1;
		}
		if (done) {
			fixed++;
			failed = 0;
		} else {
			x.stuck[v] = 1;
			given_up++;
			if (++failed == PL_REPAIR_FAILS) {
				/* this C looks out of reach from here: halfway up */
				cap = cap + (pool - cap + 1) / 2;
				memset(x.stuck, 0, w->n);
				failed = 0;
			}
		}
	}
	if (verbose)
		fprintf(stderr, "plan: re-placement: %ld neighbourhoods re-placed, %ld requests given up, pool %llu, %.3f s\n",
		        fixed, given_up, (unsigned long long)pl_pool(w, best), pl_now() - t0);
	st->search_seconds += pl_now() - t0;
	rp_free(&x);
	return rc;
}
