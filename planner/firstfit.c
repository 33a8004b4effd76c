/*
 * firstfit.c - first-fit placement against the requests already placed,
 * fast enough for tens of thousands of requests (large.c, window.c).
 *
 * Time is cut into sections between the distinct lifetime ends of the
 * static requests; request i covers sections [sa[i], sb[i]).  Over the
 * sections sits a segment tree; a request's range splits into O(log K)
 * canonical nodes, and every ancestor of those lies on the two paths from
 * its first and last section up to the root.  Each node keeps two lists of
 * occupied address intervals, sorted and merged where they touch (a packed
 * stretch is one interval however many requests fill it):
 *   full[x]   the requests with x among their canonical nodes (they cover
 *             all of x's sections);
 *   part[x]   every request with a canonical node under or at x, or with x
 *             on one of its two paths (they cover some section of x).
 * A request q meets, in time, exactly the requests in part(c) of its
 * canonical nodes c and in full(x) of the nodes x on its two paths: a
 * request r sharing a section j with q has a canonical node c_r above j, as
 * q has c_q; if c_r is above c_q it is on q's paths (full), else c_q is at or
 * on the path above c_r (part).  Every list a query reads holds only
 * requests that share a section with it.  So a fit reads O(log K) lists and
 * a placement adds to O(log K), however long the request.
 *
 * First fit from a floor: the lists a request reads are merged in offset
 * order (a heap of cursors, one per list), and the candidate offset o rises
 * to the end of each interval that starts below o + size, until the next
 * one starts at or above it; or until the request no longer fits under a
 * limit: a caller that only wants placements under a capacity need not
 * climb the whole stack above it.
 * Nothing is ever removed.  A request of size 0 takes one byte (pl_check
 * and the verifier count a request inside another's range as a conflict).
 * Invariant: every list is sorted, disjoint and has no two touching
 * intervals.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct ffl {
	uint64_t *v; /* v[2k] = lo, v[2k + 1] = hi of interval k */
	uint32_t n, cap;
} ffl;

struct pl_ff {
	uint32_t K, size;  /* sections; leaves of the tree (a power of two) */
	uint32_t *sa, *sb; /* per request; sa == sb: not indexed */
	ffl *full, *part;  /* per node 1 .. 2 size - 1 */
};

void pl_ff_free(pl_ff *f)
{
	if (!f)
		return;
	for (uint32_t x = 0; f->full && x < 2 * f->size; x++) {
		free(f->full[x].v);
		free(f->part[x].v);
	}
	free(f->full);
	free(f->part);
	free(f->sa);
	free(f->sb);
	free(f);
}

pl_ff *pl_ff_new(const pl_work *w)
{
	size_t n = w->n;
	pl_ff *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->sa = calloc(n + 1, sizeof *f->sa);
	f->sb = calloc(n + 1, sizeof *f->sb);
	long K = f->sa && f->sb ? pl_rank_ends(w, 0, f->sa, f->sb) : -1;
	if (K < 0)
		goto fail;
	f->K = (uint32_t)K;
	for (f->size = 1; f->size < f->K; f->size <<= 1)
		;
	f->full = calloc(2 * (size_t)f->size, sizeof *f->full);
	f->part = calloc(2 * (size_t)f->size, sizeof *f->part);
	if (!f->full || !f->part)
		goto fail;
	return f;
fail:
	pl_ff_free(f);
	return NULL;
}

/* first interval whose hi is >= x (> x when strict) */
static uint32_t ffl_find(const ffl *l, uint64_t x, int strict)
{
	uint32_t lo = 0, hi = l->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t h = l->v[2 * mid + 1];
		if (h < x || (strict && h == x))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* adds [lo, hi), merging with what it overlaps or touches */
static int ffl_add(ffl *l, uint64_t lo, uint64_t hi)
{
	uint32_t k = ffl_find(l, lo, 0), j = k;
	while (j < l->n && l->v[2 * j] <= hi)
		j++;
	if (j > k) { /* intervals k .. j-1 meet [lo, hi): one interval now */
		uint64_t nlo = l->v[2 * k] < lo ? l->v[2 * k] : lo;
		uint64_t nhi = l->v[2 * (j - 1) + 1] > hi ? l->v[2 * (j - 1) + 1] : hi;
		l->v[2 * k] = nlo;
		l->v[2 * k + 1] = nhi;
		if (j > k + 1) {
			memmove(l->v + 2 * (k + 1), l->v + 2 * j, (size_t)(l->n - j) * 2 * sizeof *l->v);
			l->n -= j - k - 1;
		}
		return 0;
	}
	if (l->n == l->cap) {
		uint32_t nc = l->cap ? l->cap * 2 : 1;
		uint64_t *nv = realloc(l->v, (size_t)nc * 2 * sizeof *nv);
		if (!nv)
			return -1;
		l->v = nv;
		l->cap = nc;
	}
	memmove(l->v + 2 * (k + 1), l->v + 2 * k, (size_t)(l->n - k) * 2 * sizeof *l->v);
	l->v[2 * k] = lo;
	l->v[2 * k + 1] = hi;
	l->n++;
	return 0;
}

/* a cursor into one list: interval k, keyed by its lo */
typedef struct ffc {
	uint64_t lo;
	const ffl *l;
	uint32_t k;
} ffc;

static void heap_down(ffc *h, int n, int i)
{
	for (;;) {
		int c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && h[c + 1].lo < h[c].lo)
			c++;
		if (h[i].lo <= h[c].lo)
			return;
		ffc t = h[i];
		h[i] = h[c];
		h[c] = t;
		i = c;
	}
}

/* the list's first interval that ends above o joins the heap */
static void heap_join(ffc *h, int *n, const ffl *l, uint64_t o)
{
	if (!l->n || o >= l->v[2 * (l->n - 1) + 1])
		return; /* everything in it ends at or below o */
	uint32_t k = ffl_find(l, o, 1);
	h[(*n)++] = (ffc){l->v[2 * k], l, k};
}

uint64_t pl_ff_fit(const pl_ff *f, uint32_t id, uint64_t size, uint64_t floor, uint64_t limit)
{
	uint32_t a = f->sa[id], b = f->sb[id];
	uint64_t o = floor, len = size ? size : 1; /* a zero-size request still takes an address */
	if (a >= b)
		return o;
	/* the lists it meets, merged in offset order from o: the first gap of
	 * len between their union's intervals (at most 4 per tree level) */
	ffc h[4 * 34];
	int n = 0;
	for (uint32_t l = a + f->size, r = b + f->size; l < r; l >>= 1, r >>= 1) {
		if (l & 1)
			heap_join(h, &n, &f->part[l++], o);
		if (r & 1)
			heap_join(h, &n, &f->part[--r], o);
	}
	for (uint32_t p = (a + f->size) >> 1; p; p >>= 1)
		heap_join(h, &n, &f->full[p], o);
	for (uint32_t p = (b - 1 + f->size) >> 1; p; p >>= 1)
		heap_join(h, &n, &f->full[p], o);
	for (int i = n / 2; i-- > 0;)
		heap_down(h, n, i);
	while (n && h[0].lo < o + len) {
		uint64_t hi = h[0].l->v[2 * h[0].k + 1];
		if (hi > o)
			o = hi;
		if (o > limit || limit - o < len)
			break; /* it ends above limit from here on */
		if (++h[0].k < h[0].l->n)
			h[0].lo = h[0].l->v[2 * h[0].k];
		else
			h[0] = h[--n];
		heap_down(h, n, 0);
	}
	return o;
}

int pl_ff_add(pl_ff *f, uint32_t id, uint64_t off, uint64_t size)
{
	uint32_t a = f->sa[id], b = f->sb[id];
	int rc = 0;
	if (!size)
		size = 1; /* as pl_ff_fit placed it: nothing may cover it */
	if (a >= b)
		return 0;
	for (uint32_t l = a + f->size, r = b + f->size; l < r; l >>= 1, r >>= 1) {
		if (l & 1) {
			rc |= ffl_add(&f->full[l], off, off + size);
			rc |= ffl_add(&f->part[l++], off, off + size);
		}
		if (r & 1) {
			rc |= ffl_add(&f->full[--r], off, off + size);
			rc |= ffl_add(&f->part[r], off, off + size);
		}
	}
	for (uint32_t p = (a + f->size) >> 1; p; p >>= 1)
		rc |= ffl_add(&f->part[p], off, off + size);
	for (uint32_t p = (b - 1 + f->size) >> 1; p; p >>= 1)
		rc |= ffl_add(&f->part[p], off, off + size);
	return rc ? -1 : 0;
}
