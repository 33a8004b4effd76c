/*
 * greedy.c - placement by gaps: the greedy-by-size baseline (TFLite's arena
 * planner, MemoMalloc's default) and the improvement step beyond STAlloc.
 *
 * Both place one request at a time against the requests already placed that
 * overlap it in time (found with the interval index, itree.c): collect their
 * address ranges, sort by offset, walk the gaps.
 *   greedy:  pinned (persistent) requests are stacked at the bottom first,
 *            as in the STAlloc plan; then the others by decreasing size
 *            (ties: longer lifetime, then earlier start); each goes to the
 *            smallest gap that holds it (best fit), else on top of the ranges
 *            it overlaps.
 *   improve: the requests of a finished plan that reach above the lower
 *            bound are lifted out and put back, largest first, at the lowest
 *            offset where they fit; the result is kept only when the pool
 *            shrinks.  Repeated while it helps (at most 4 rounds).  All the
 *            rounds share one work budget (overlapping requests visited);
 *            a re-placement cut short by it is undone, a compaction cut
 *            short stays (it is valid at every step).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct gbuf {
	pl_kv *a, *tmp;
	size_t n, cap;
	uint64_t visits; /* ids collected, for the improvement's work budget */
	const uint64_t *off;
	int oom;
} gbuf;

static void collect(uint32_t id, void *ctx)
{
	gbuf *b = ctx;
	if (b->n == b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 256;
		pl_kv *na = realloc(b->a, nc * sizeof *na), *nt = na ? realloc(b->tmp, nc * sizeof *nt) : NULL;
		if (!na || !nt) {
			if (na)
				b->a = na;
			b->oom = 1;
			return;
		}
		b->a = na;
		b->tmp = nt;
		b->cap = nc;
	}
	b->a[b->n++] = (pl_kv){b->off[id], id};
	b->visits++;
}

/* best: smallest gap >= size at or above floor; else lowest such gap; else top */
static uint64_t find_gap(const pl_work *w, gbuf *b, uint64_t size, uint64_t floor, int best_fit)
{
	pl_sort_kv_small(b->a, b->tmp, b->n);
	uint64_t cur = floor, best = STP_NO_OFFSET, best_len = UINT64_MAX;
	for (size_t j = 0; j < b->n; j++) {
		uint64_t o = b->a[j].k, end = o + w->size[b->a[j].v];
		if (o > cur) {
			uint64_t len = o - cur;
			if (len >= size) {
				if (!best_fit)
					return cur;
				if (len < best_len) {
					best_len = len;
					best = cur;
				}
			}
		}
		if (end > cur)
			cur = end;
	}
	return best != STP_NO_OFFSET ? best : cur;
}

int pl_greedy(const pl_work *w, uint64_t *off, uint64_t *budget, double deadline)
{
	size_t n = w->n, m = 0;
	int rc = -1;
	pl_kv *kv = malloc((n + 1) * sizeof *kv), *tmp = malloc((n + 1) * sizeof *tmp);
	uint32_t *ids = malloc((n + 1) * sizeof *ids);
	pl_itree t = {0};
	gbuf b = {0};
	b.off = off;
	if (!kv || !tmp || !ids)
		goto out;
	uint64_t base = 0;
	for (size_t i = 0; i < n; i++) {
		off[i] = STP_NO_OFFSET;
		if (w->kind[i] == PL_PINNED) {
			off[i] = base;
			base += w->size[i];
		} else if (w->kind[i] == PL_STATIC) {
			ids[m] = (uint32_t)i;
			kv[m++] = (pl_kv){w->s[i], (uint32_t)i};
		}
	}
	pl_sort_kv(kv, tmp, m);
	for (size_t j = 0; j < m; j++)
		kv[j].k = UINT32_MAX - (w->e[kv[j].v] - w->s[kv[j].v]);
	pl_sort_kv(kv, tmp, m);
	for (size_t j = 0; j < m; j++)
		kv[j].k = UINT64_MAX - w->size[kv[j].v];
	pl_sort_kv(kv, tmp, m);
	if (pl_itree_init(&t, w->s, w->e, n, ids, (uint32_t)m) < 0)
		goto out;
	for (size_t j = 0; j < m; j++) {
		uint32_t i = kv[j].v;
		b.n = 0;
		pl_itree_query(&t, w->s[i], w->e[i], collect, &b);
		if (b.oom)
			goto out;
		off[i] = find_gap(w, &b, w->size[i], base, 1);
		pl_itree_set(&t, i, 1);
		if (budget && b.visits > *budget) {
			*budget = 0;
			rc = 1; /* gave up */
			goto out;
		}
		if (deadline > 0 && (j & 255) == 255 && pl_cpu_now() > deadline) {
			rc = 1;
			goto out;
		}
	}
	if (budget)
		*budget -= b.visits;
	rc = 0;
out:
	pl_itree_free(&t);
	free(b.a);
	free(b.tmp);
	free(kv);
	free(tmp);
	free(ids);
	return rc;
}

int pl_improve(const pl_work *w, uint64_t lb, uint64_t *off, uint64_t *moved, uint64_t *budget)
{
	size_t n = w->n;
	int rc = -1;
	uint64_t floor = w->pinned_bytes;
	uint32_t *ids = malloc((n + 1) * sizeof *ids);
	uint64_t *save = NULL;
	pl_kv *kv = NULL, *tmp = NULL;
	pl_itree t = {0};
	gbuf b = {0};
	b.off = off;
	*moved = 0;
	if (!ids)
		goto out;
	if (pl_pool(w, off) <= lb) {
		rc = 0; /* nothing above the bound */
		goto out;
	}
	uint32_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] == PL_STATIC)
			ids[m++] = (uint32_t)i;
	if (pl_itree_init(&t, w->s, w->e, n, ids, m) < 0)
		goto out;
	for (int round = 0; round < 4; round++) {
		uint64_t pool = pl_pool(w, off);
		if (pool <= lb)
			break;
		/* compaction: every request, lowest first, drops to the lowest
		 * offset free of those already dropped.  Each new offset is at most
		 * the old one, so the layout stays valid even when cut short. */
		free(kv), free(tmp);
		kv = malloc((m + 1) * sizeof *kv);
		tmp = malloc((m + 1) * sizeof *tmp);
		if (!kv || !tmp)
			goto out;
		for (uint32_t j = 0; j < m; j++) {
			kv[j] = (pl_kv){off[ids[j]], ids[j]};
			pl_itree_set(&t, ids[j], 0);
		}
		pl_sort_kv(kv, tmp, m);
		b.visits = 0;
		uint32_t c = 0;
		for (; c < m && b.visits < *budget; c++) {
			uint32_t i = kv[c].v;
			b.n = 0;
			pl_itree_query(&t, w->s[i], w->e[i], collect, &b);
			if (b.oom)
				goto out;
			uint64_t o = find_gap(w, &b, w->size[i], floor, 0);
			if (o < off[i]) {
				off[i] = o;
				(*moved)++;
			}
			pl_itree_set(&t, i, 1);
		}
		*budget -= b.visits < *budget ? b.visits : *budget;
		if (c < m || pl_pool(w, off) <= lb)
			break;
		pool = pl_pool(w, off);
		size_t k = 0;
		for (uint32_t j = 0; j < m; j++) {
			uint32_t i = ids[j];
			int above = off[i] + w->size[i] > lb;
			pl_itree_set(&t, i, !above);
			k += above;
		}
		free(kv), free(tmp), free(save);
		kv = malloc((k + 1) * sizeof *kv);
		tmp = malloc((k + 1) * sizeof *tmp);
		save = malloc((k + 1) * sizeof *save);
		if (!kv || !tmp || !save)
			goto out;
		k = 0;
		for (uint32_t j = 0; j < m; j++) {
			uint32_t i = ids[j];
			if (off[i] + w->size[i] > lb)
				kv[k++] = (pl_kv){w->s[i], i};
		}
		pl_sort_kv(kv, tmp, k);
		for (size_t j = 0; j < k; j++)
			kv[j].k = UINT64_MAX - w->size[kv[j].v];
		pl_sort_kv(kv, tmp, k);
		b.visits = 0;
		size_t done = 0;
		for (size_t j = 0; j < k; j++)
			save[j] = off[kv[j].v];
		for (size_t j = 0; j < k && b.visits < *budget; j++, done++) {
			uint32_t i = kv[j].v;
			b.n = 0;
			pl_itree_query(&t, w->s[i], w->e[i], collect, &b);
			if (b.oom)
				goto out;
			off[i] = find_gap(w, &b, w->size[i], floor, 0);
			pl_itree_set(&t, i, 1);
		}
		*budget -= b.visits < *budget ? b.visits : *budget;
		uint64_t np = done < k ? UINT64_MAX : pl_pool(w, off);
		if (np >= pool) {
			for (size_t j = 0; j < k; j++)
				off[kv[j].v] = save[j];
			break;
		}
		*moved += k;
	}
	rc = 0;
out:
	pl_itree_free(&t);
	free(b.a);
	free(b.tmp);
	free(ids);
	free(kv);
	free(tmp);
	free(save);
	return rc;
}
