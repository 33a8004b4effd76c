/*
 * large.c - the budgeted improvement for sets too large for the exact search
 * as a whole: the peak's requests by the exact search, the rest first fit.
 *
 * On training and compiler traces the pool is decided at the few ticks where
 * nearly every byte is live; elsewhere there is room to spare.  The *core* is
 * the set of static requests live at some tick whose live bytes are within
 * delta of the peak and at least theta of the peak in size: a few hundred to
 * a few thousand requests, on which the exact search (search.c, the other
 * requests left out) finds a layout under the capacity quickly.  The other
 * requests are then placed against it, largest first (ties: longer, then
 * earlier), at the lowest offset where each fits (firstfit.c).  With the core
 * packed at the peak and slack elsewhere, the pool often stays at the bound:
 * the requests left out are small (theta) or live where there is slack
 * (delta).  Several (delta, theta) are tried in turn, and capacities between
 * the bound and the best pool, until the deadline or the bound.
 *
 * Invariant: `best` only takes a layout that pl_check accepted and whose pool
 * is smaller (pl_keep); the pools of the candidates are never trusted
 * otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* cores larger than this are not searched (the search visits O(core) per
 * node) */
#define LG_CORE_MAX 3000

typedef struct lg {
	const pl_work *w;
	uint32_t K;          /* sections between the static requests' distinct ends */
	uint32_t *sa, *sb;   /* per request: its sections */
	uint64_t *live;      /* static bytes live per section */
	uint64_t peak;       /* their most */
	uint32_t *hot;       /* prefix counts of the sections near the peak */
	uint32_t *order;     /* the fill order: static requests, largest first */
	size_t nq;
	uint8_t *kind;       /* the sub-problem's kinds: core STATIC, the rest DYNAMIC */
	uint8_t *over;       /* per request: did not fit under the capacity in the fill */
	uint64_t sig;        /* the core's signature (a sum over its members) */
	uint64_t sigs[16];   /* the signatures of the cores tried in this pass */
	uint64_t *cand;
} lg;

static void lg_free(lg *g)
{
	free(g->sa);
	free(g->sb);
	free(g->live);
	free(g->hot);
	free(g->order);
	free(g->kind);
	free(g->over);
	free(g->cand);
}

static int lg_init(lg *g, const pl_work *w)
{
	size_t n = w->n;
	memset(g, 0, sizeof *g);
	g->w = w;
	pl_kv *a = malloc((n + 1) * sizeof *a), *tmp = malloc((n + 1) * sizeof *tmp);
	g->sa = calloc(n + 1, sizeof *g->sa);
	g->sb = calloc(n + 1, sizeof *g->sb);
	g->order = malloc((n + 1) * sizeof *g->order);
	g->kind = malloc(n + 1);
	g->over = calloc(n + 1, 1);
	g->cand = malloc((n + 1) * sizeof *g->cand);
	if (!a || !tmp || !g->sa || !g->sb || !g->order || !g->kind || !g->over || !g->cand)
		goto fail;
	long K = pl_rank_ends(w, 0, g->sa, g->sb);
	if (K < 0)
		goto fail;
	g->K = (uint32_t)K;
	g->live = calloc((size_t)K + 2, sizeof *g->live);
	g->hot = calloc((size_t)K + 2, sizeof *g->hot);
	if (!g->live || !g->hot)
		goto fail;
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] == PL_STATIC) {
			g->live[g->sa[i]] += w->size[i];
			g->live[g->sb[i]] -= w->size[i];
		}
	uint64_t run = 0;
	for (uint32_t k = 0; k <= K; k++) {
		run += g->live[k];
		g->live[k] = run;
		if (run > g->peak)
			g->peak = run;
	}
	/* largest first; ties: longer, then earlier (stable sorts, least
	 * significant key first) */
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] == PL_STATIC)
			a[g->nq++] = (pl_kv){w->s[i], (uint32_t)i};
	pl_sort_kv(a, tmp, g->nq);
	for (size_t j = 0; j < g->nq; j++)
		a[j].k = UINT32_MAX - (w->e[a[j].v] - w->s[a[j].v]);
	pl_sort_kv(a, tmp, g->nq);
	for (size_t j = 0; j < g->nq; j++)
		a[j].k = UINT64_MAX - w->size[a[j].v];
	pl_sort_kv(a, tmp, g->nq);
	for (size_t j = 0; j < g->nq; j++)
		g->order[j] = a[j].v;
	free(a);
	free(tmp);
	return 0;
fail:
	free(a);
	free(tmp);
	lg_free(g);
	return -1;
}

/* Marks the core for (delta, theta) in g->kind and its signature in
 * g->sig; returns its size. */
static size_t lg_core(lg *g, double delta, double theta)
{
	const pl_work *w = g->w;
	uint64_t near = g->peak - (uint64_t)((double)g->peak * delta), small = (uint64_t)((double)g->peak * theta);
	g->hot[0] = 0;
	g->sig = 0;
	for (uint32_t k = 0; k < g->K; k++)
		g->hot[k + 1] = g->hot[k] + (g->live[k] >= near);
	size_t nc = 0;
	for (size_t i = 0; i < w->n; i++) {
		g->kind[i] = w->kind[i];
		if (w->kind[i] != PL_STATIC)
			continue;
		if (w->size[i] >= small && g->hot[g->sb[i]] > g->hot[g->sa[i]]) {
			nc++;
			g->sig += (i + 1) * 0x9E3779B97F4A7C15ull; /* which set it is */
		} else
			g->kind[i] = PL_DYNAMIC; /* left out of the search */
	}
	return nc;
}

/* Places the requests left out of the core (g->kind DYNAMIC, w->kind STATIC)
 * first fit against the core's layout in g->cand, then those that did not fit
 * under cap on top of the rest (first fit without a limit), so g->cand is a
 * whole layout.  Returns how many did not fit under cap (marked in g->over),
 * -1 out of memory, -2 past the deadline (g->cand is then not whole). */
static long lg_fill(lg *g, uint64_t cap, double deadline)
{
	const pl_work *w = g->w;
	pl_ff *ff = pl_ff_new(w);
	if (!ff)
		return -1;
	long nover = 0;
	int rc = 0;
	for (size_t i = 0; i < w->n && !rc; i++)
		if (w->kind[i] == PL_STATIC && g->kind[i] == PL_STATIC)
			rc = pl_ff_add(ff, (uint32_t)i, g->cand[i], w->size[i]);
	for (size_t j = 0; j < g->nq && !rc; j++) {
		uint32_t i = g->order[j];
		g->over[i] = 0;
		if ((j & 255) == 255 && pl_now() > deadline) {
			pl_ff_free(ff);
			return -2;
		}
		if (g->kind[i] == PL_STATIC)
			continue;
		uint64_t o = pl_ff_fit(ff, i, w->size[i], w->pinned_bytes, cap);
		if (o + w->size[i] > cap) {
			g->over[i] = 1;
			nover++;
			continue;
		}
		g->cand[i] = o;
		rc = pl_ff_add(ff, i, o, w->size[i]);
	}
	for (size_t j = 0; j < g->nq && !rc; j++) {
		uint32_t i = g->order[j];
		if (!g->over[i])
			continue;
		/* no place ended at or below cap before; the ones since only take
		 * room: the lowest fit ends above cap */
		uint64_t from = cap + 1 > w->size[i] ? cap + 1 - w->size[i] : 0;
		g->cand[i] = pl_ff_fit(ff, i, w->size[i], from > w->pinned_bytes ? from : w->pinned_bytes, UINT64_MAX);
		rc = pl_ff_add(ff, i, g->cand[i], w->size[i]);
	}
	pl_ff_free(ff);
	return rc ? -1 : nover;
}

/* (delta, theta) in the order tried: the near-peak requests above 1e-4 of
 * the peak first (on the traces measured, a few hundred to a thousand that
 * the search places at the bound in well under a second), then wider and
 * narrower cores */
static const double lg_tries[][2] = {
	{0.03, 1e-4}, {0.01, 1e-4}, {0.06, 1e-4}, {0.03, 1e-3}, {0.1, 1e-3}, {0.03, 1e-5}, {0.15, 1e-3}, {0.01, 1e-5},
};
_Static_assert(sizeof lg_tries / sizeof *lg_tries <= sizeof ((lg *)0)->sigs / sizeof (uint64_t), "lg.sigs too small");

/* One (delta, theta), its core (nc requests) marked in g->kind by lg_core:
 * search the core at cap, fill the rest; while some
 * requests do not fit under cap, they join the core and the search runs
 * again, guided by the last layout.  Keeps what is smaller.  0, or -1 out of
 * memory. */
static int lg_try(lg *g, int t, size_t nc, uint64_t cap, double until, uint64_t *best, int verbose,
                  stp_plan_stats *st)
{
	const pl_work *w = g->w;
	pl_work sub = *w;
	sub.kind = g->kind;
	memcpy(g->cand, best, w->n * sizeof *g->cand);
	if (verbose && nc > LG_CORE_MAX)
		fprintf(stderr, "plan: peak search (delta %.2f, theta %g): %zu requests, more than %d: skipped\n",
		        lg_tries[t][0], lg_tries[t][1], nc, LG_CORE_MAX);
	for (int round = 0; nc && nc <= LG_CORE_MAX && pl_now() < until; round++) {
		double now = pl_now();
		uint64_t nodes0 = st->search_nodes;
		int r = pl_search(&sub, NULL, cap, until, HUGE_VAL, 0, round > 0, g->cand, &st->search_nodes);
		long nover = r == 1 ? lg_fill(g, cap, until) : 0;
		if (verbose)
			fprintf(stderr, "plan: peak search (delta %.2f, theta %g, round %d): %zu requests at %llu: %s (%llu nodes)",
			        lg_tries[t][0], lg_tries[t][1], round, nc, (unsigned long long)cap,
			        r == 1 ? "found" : r == 0 ? "impossible" : r == -1 ? "out of time" : "out of memory",
			        (unsigned long long)(st->search_nodes - nodes0));
		if (verbose && r == 1 && nover >= 0)
			fprintf(stderr, ", fill: %ld above it, pool %llu", nover, (unsigned long long)pl_pool(w, g->cand));
		if (verbose && nover == -2)
			fprintf(stderr, ", fill: out of time");
		if (verbose)
			fprintf(stderr, ", %.3f s\n", pl_now() - now);
		if (r == -2 || nover == -1)
			return -1;
		if (nover == -2)
			return 0;
		if (r == 0 && cap + 1 > st->proven_bound)
			st->proven_bound = cap + 1; /* a part does not fit: the whole does not */
		if (r != 1)
			return 0;
		pl_keep(w, best, g->cand, STP_STEP_PEAK, st);
		if (!nover)
			return 0;
		/* the requests that did not fit join the core */
		for (size_t i = 0; i < w->n; i++)
			if (g->over[i]) {
				g->kind[i] = PL_STATIC;
				nc++;
			}
	}
	return 0;
}

int pl_large(const pl_work *w, uint64_t *best, double deadline, int verbose, stp_plan_stats *st)
{
	lg g;
	if (lg_init(&g, w) < 0)
		return -1;
	double t0 = pl_now();
	int rc = 0, ntries = (int)(sizeof lg_tries / sizeof *lg_tries);
	for (int pass = 0; pass < 2 && !rc; pass++)
		for (int t = 0; t < ntries && !rc; t++) {
			double now = pl_now();
			uint64_t pool = pl_pool(w, best);
			if (now >= deadline || pool <= st->proven_bound)
				goto done;
			size_t nc = lg_core(&g, lg_tries[t][0], lg_tries[t][1]);
			int seen = 0; /* the same core as an earlier (delta, theta) */
			for (int u = 0; u < t; u++)
				seen |= g.sigs[u] == g.sig;
			g.sigs[t] = g.sig;
			if (seen)
				continue;
			/* the first pass aims at the bound; the second halfway to the
			 * best pool (the fill has more room) */
			uint64_t cap = st->proven_bound + (pass ? (pool - st->proven_bound) / 2 : 0);
			/* the first core gets half: it is the one that usually works,
			 * and a second round on it costs more than the first */
			rc = lg_try(&g, t, nc, cap, now + (deadline - now) / (pass || !t ? 2 : 3), best, verbose, st);
		}
done:
	st->search_seconds += pl_now() - t0;
	lg_free(&g);
	return rc;
}
