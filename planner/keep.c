/*
 * keep.c - the check every candidate layout goes through and the rule for
 * keeping it: pl_check proves a placement of the working view free of
 * overlaps, pl_keep replaces the best layout with a candidate only when the
 * check passes and the pool is smaller.  The steps that search (best.c,
 * large.c, window.c, repair.c) all keep their layouts through here and
 * nothing here calls them.
 *
 * pl_check: in offset order, each request must start at or above the
 * highest top of those before it that it meets in time; a max-over-time
 * tree over the sections between lifetime ends with "raise to at least v"
 * updates, O(n log n).  A request inside another's range, even of size 0,
 * is a conflict.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* max-over-range with range "raise to at least v" (chmax), over sections */
typedef struct ctree {
	uint64_t *mx, *lz; /* mx: the most over the node's range; lz: raised on all of it */
	uint32_t size;
} ctree;

static uint64_t ct_max(const ctree *t, uint32_t x, uint32_t lo, uint32_t hi, uint32_t a, uint32_t b)
{
	if (b <= lo || hi <= a)
		return 0;
	if (a <= lo && hi <= b)
		return t->mx[x];
	uint32_t mid = lo + (hi - lo) / 2;
	uint64_t l = ct_max(t, 2 * x, lo, mid, a, b), r = ct_max(t, 2 * x + 1, mid, hi, a, b);
	uint64_t m = l > r ? l : r;
	return m > t->lz[x] ? m : t->lz[x];
}

static void ct_raise(ctree *t, uint32_t x, uint32_t lo, uint32_t hi, uint32_t a, uint32_t b, uint64_t v)
{
	if (b <= lo || hi <= a)
		return;
	if (t->mx[x] < v)
		t->mx[x] = v;
	if (a <= lo && hi <= b) {
		if (t->lz[x] < v)
			t->lz[x] = v;
		return;
	}
	uint32_t mid = lo + (hi - lo) / 2;
	ct_raise(t, 2 * x, lo, mid, a, b, v);
	ct_raise(t, 2 * x + 1, mid, hi, a, b, v);
}

/* In offset order, each request must start at or above the highest top of
 * those before it that overlap it in time: a max-over-time tree of tops,
 * O(n log n). */
int pl_check(const pl_work *w, const uint64_t *off)
{
	size_t n = w->n, m = 0;
	pl_kv *kv = malloc((n + 1) * sizeof *kv), *tmp = malloc((n + 1) * sizeof *tmp);
	uint32_t *sa = calloc(n + 1, sizeof *sa), *sb = calloc(n + 1, sizeof *sb);
	ctree t = {0};
	int rc = -1;
	if (!kv || !tmp || !sa || !sb)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] != PL_DYNAMIC && (off[i] == STP_NO_OFFSET || off[i] > UINT64_MAX - w->size[i]))
			goto out;
	long K = pl_rank_ends(w, 1, sa, sb);
	if (K < 0)
		goto out;
	t.size = K ? (uint32_t)K : 1;
	t.mx = calloc(4 * (size_t)t.size, sizeof *t.mx);
	t.lz = calloc(4 * (size_t)t.size, sizeof *t.lz);
	if (!t.mx || !t.lz)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] != PL_DYNAMIC)
			kv[m++] = (pl_kv){off[i], (uint32_t)i};
	pl_sort_kv(kv, tmp, m);
	rc = 0;
	for (size_t j = 0; j < m && !rc; j++) {
		uint32_t i = kv[j].v;
		if (sa[i] >= sb[i])
			continue; /* live at no time */
		if (ct_max(&t, 1, 0, t.size, sa[i], sb[i]) > off[i])
			rc = -1;
		else
			ct_raise(&t, 1, 0, t.size, sa[i], sb[i], off[i] + w->size[i]);
	}
out:
	free(t.mx);
	free(t.lz);
	free(kv);
	free(tmp);
	free(sa);
	free(sb);
	return rc;
}

int pl_keep(const pl_work *w, uint64_t *best, const uint64_t *cand, int step, stp_plan_stats *st)
{
	uint64_t np = pl_pool(w, cand);
	if (np >= pl_pool(w, best) || pl_check(w, cand) < 0)
		return 0;
	memcpy(best, cand, w->n * sizeof *best);
	st->step = step;
	st->found_seconds = pl_now(); /* made relative by stp_plan_build */
	return 1;
}
