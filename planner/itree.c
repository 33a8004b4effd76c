/*
 * itree.c - interval index: a fixed set of intervals sorted by start, with a
 * segment tree holding the largest end among the *active* ones.  A query
 * for [s, e) walks the prefix of entries starting before e and descends only
 * into subtrees whose largest end exceeds s: O((k + 1) log n) for k hits.
 * Memory: 4 words per indexed entry (ids, tree) plus pos[] over all ids.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int pl_itree_init(pl_itree *t, const uint32_t *s, const uint32_t *e, size_t nid, const uint32_t *ids,
                  uint32_t n)
{
	memset(t, 0, sizeof *t);
	t->s = s;
	t->e = e;
	t->n = n;
	t->size = 1;
	while (t->size < n)
		t->size <<= 1;
	t->ids = malloc((n ? n : 1) * sizeof *t->ids);
	t->pos = malloc((nid ? nid : 1) * sizeof *t->pos);
	t->mx = calloc(2 * (size_t)t->size, sizeof *t->mx);
	pl_kv *a = malloc((n ? n : 1) * sizeof *a), *tmp = malloc((n ? n : 1) * sizeof *tmp);
	if (!t->ids || !t->pos || !t->mx || !a || !tmp) {
		free(a);
		free(tmp);
		pl_itree_free(t);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++)
		a[i] = (pl_kv){s[ids[i]], ids[i]};
	pl_sort_kv(a, tmp, n);
	memset(t->pos, 0xff, (nid ? nid : 1) * sizeof *t->pos);
	for (uint32_t i = 0; i < n; i++) {
		t->ids[i] = a[i].v;
		t->pos[a[i].v] = i;
	}
	free(a);
	free(tmp);
	return 0;
}

void pl_itree_free(pl_itree *t)
{
	free(t->ids);
	free(t->pos);
	free(t->mx);
	memset(t, 0, sizeof *t);
}

void pl_itree_set(pl_itree *t, uint32_t id, int active)
{
	uint32_t p = t->pos[id];
	if (p == UINT32_MAX)
		return;
	size_t x = (size_t)p + t->size;
	/* store end + 1 so that 0 means "no active entry" */
	t->mx[x] = active ? t->e[id] + 1 : 0;
	for (x >>= 1; x; x >>= 1) {
		uint32_t a = t->mx[2 * x], b = t->mx[2 * x + 1];
		uint32_t m = a > b ? a : b;
		if (t->mx[x] == m)
			break;
		t->mx[x] = m;
	}
}

/* first position whose start is >= e */
static uint32_t lower_pos(const pl_itree *t, uint32_t e)
{
	uint32_t lo = 0, hi = t->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->s[t->ids[mid]] < e)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void pl_itree_query(const pl_itree *t, uint32_t s, uint32_t e, void (*fn)(uint32_t, void *), void *ctx)
{
	uint32_t lim = lower_pos(t, e); /* positions [0, lim) start before e */
	if (!lim)
		return;
	/* iterative DFS over nodes covering [0, lim); a node is (x, first leaf, width) */
	struct {
		size_t x;
		uint32_t lo, w;
	} stack[70];
	int sp = 0;
	stack[sp].x = 1;
	stack[sp].lo = 0;
	stack[sp++].w = t->size;
	while (sp) {
		sp--;
		size_t x = stack[sp].x;
		uint32_t lo = stack[sp].lo, w = stack[sp].w;
		if (t->mx[x] <= s + 1 || lo >= lim)
			continue; /* every active end (stored +1) is <= s, or all start >= e */
		if (w == 1) {
			fn(t->ids[lo], ctx);
			continue;
		}
		w >>= 1;
		stack[sp].x = 2 * x + 1;
		stack[sp].lo = lo + w;
		stack[sp++].w = w;
		stack[sp].x = 2 * x;
		stack[sp].lo = lo;
		stack[sp++].w = w;
	}
}
