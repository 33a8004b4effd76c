/*
 * window.c - first fit window by window in time, the starting layouts of
 * the improvement for large sets (large.c).
 *
 * The static requests are taken in order of allocation, W at a time; inside
 * a window, in order of a key (size, area, or lifetime, larger first), each
 * goes to the lowest offset where it fits against everything placed before
 * (firstfit.c).  W = 1 is an allocator that knows each request's lifetime;
 * W = all is greedy by size.  In between, a window sees the requests that
 * compete for the same space and places the big or long ones first, while
 * the allocation order keeps the layout in step with time.  On pipeline
 * schedules (one peak per micro-batch) this lands close to the bound where
 * greedy by size does not: 1F1B with MoE and op workspaces, about 40,000
 * requests, 1.0018 x the bound with W = 100 by lifetime against greedy's
 * 1.0244 (bench_planner large).  Several (W, key) are tried, cheapest
 * first, until the deadline; pl_keep keeps the best.
 *
 * Invariant: every request is placed against all placed before it, so each
 * layout is valid by construction (pl_keep checks it again).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { KEY_SIZE, KEY_AREA, KEY_LEN };

/* (window, key) in the order tried */
static const struct {
	uint32_t win;
	int key;
} tries[] = {
	{100, KEY_LEN}, {25, KEY_AREA}, {200, KEY_LEN}, {50, KEY_AREA}, {1, KEY_SIZE},
	{50, KEY_LEN}, {100, KEY_AREA}, {400, KEY_SIZE}, {25, KEY_LEN}, {200, KEY_AREA},
};

static uint64_t key_of(const pl_work *w, uint32_t i, int key)
{
	uint64_t len = w->e[i] - w->s[i];
	if (key == KEY_SIZE)
		return w->size[i];
	if (key == KEY_LEN)
		return len;
	return w->size[i] > UINT64_MAX / (len ? len : 1) ? UINT64_MAX : w->size[i] * len;
}

/* One layout into cand.  0 done, 1 out of time, -1 out of memory. */
static int one(const pl_work *w, const pl_kv *by_start, size_t nq, uint32_t win, int key, uint64_t *cand,
               double deadline)
{
	pl_ff *ff = pl_ff_new(w);
	pl_kv *b = malloc((win + 1) * sizeof *b), *tmp = malloc((win + 1) * sizeof *tmp);
	int rc = !ff || !b || !tmp ? -1 : 0;
	for (size_t j0 = 0; j0 < nq && !rc; j0 += win) {
		size_t j1 = j0 + win < nq ? j0 + win : nq, m = 0;
		for (size_t j = j0; j < j1; j++)
			b[m++] = (pl_kv){UINT64_MAX - key_of(w, by_start[j].v, key), by_start[j].v};
		pl_sort_kv_small(b, tmp, m);
		for (size_t j = 0; j < m && !rc; j++) {
			uint32_t i = b[j].v;
			cand[i] = pl_ff_fit(ff, i, w->size[i], w->pinned_bytes, UINT64_MAX);
			rc = pl_ff_add(ff, i, cand[i], w->size[i]);
		}
		if (!rc && pl_now() > deadline)
			rc = 1;
	}
	uint64_t base = 0;
	for (size_t i = 0; i < w->n; i++)
		if (w->kind[i] == PL_PINNED) {
			cand[i] = base;
			base += w->size[i];
		}
	pl_ff_free(ff);
	free(b);
	free(tmp);
	return rc;
}

int pl_windows(const pl_work *w, uint64_t *best, double deadline, int verbose, stp_plan_stats *st)
{
	size_t n = w->n, nq = 0;
	pl_kv *a = malloc((n + 1) * sizeof *a), *tmp = malloc((n + 1) * sizeof *tmp);
	uint64_t *cand = malloc((n + 1) * sizeof *cand);
	int rc = !a || !tmp || !cand ? -1 : 0;
	for (size_t i = 0; i < n && !rc; i++)
		if (w->kind[i] == PL_STATIC)
			a[nq++] = (pl_kv){w->s[i], (uint32_t)i};
	if (!rc)
		pl_sort_kv(a, tmp, nq);
	for (size_t t = 0; t < sizeof tries / sizeof *tries && !rc; t++) {
		double now = pl_now();
		if (now >= deadline || pl_pool(w, best) <= st->proven_bound)
			break;
		memcpy(cand, best, n * sizeof *cand);
		int r = one(w, a, nq, tries[t].win, tries[t].key, cand, deadline);
		if (r < 0)
			rc = -1;
		if (verbose)
			fprintf(stderr, "plan: first fit by windows of %u, %s first: %s, %.3f s\n", tries[t].win,
			        tries[t].key == KEY_SIZE ? "larger" : tries[t].key == KEY_AREA ? "larger area" : "longer",
			        r ? "out of time" : "done", pl_now() - now);
		if (verbose && !r)
			fprintf(stderr, "plan:   pool %llu\n", (unsigned long long)pl_pool(w, cand));
		if (!r)
			pl_keep(w, best, cand, STP_STEP_WINDOWS, st);
	}
	free(a);
	free(tmp);
	free(cand);
	return rc;
}
