/*
 * rects.c - the free space of a plan under construction, as rectangles of
 * (address range x time window), for the HomoSize step.
 *
 * Start: one rectangle of unbounded height at the top of the pool over the
 * whole period.  Placing a block of height h over [s, e) inside a free
 * rectangle (o, H, [a, b)) cuts it the way STAlloc's memory layers do:
 *   - (o, h, [a, s)) and (o, h, [e, b)): the rest of the block's *layer*,
 *     where later blocks of height <= h (same size first) go, as in
 *     Algorithm 1;
 *   - (o + h, H - h, [a, b)): what is left above it, free over the whole
 *     window, where smaller blocks can stack ("free intervals of the larger
 *     groups' plans").
 * A placement picks, among rectangles that contain [s, e) in time and are at
 * least h tall, one of the least tall *height class* (heights that share
 * their 5 leading bits: within 1/16 of each other); within the class, the
 * one whose window starts latest (Algorithm 1's "layer whose last request
 * ends closest before").  With few distinct sizes (training traces) every
 * size is its own class and this is exact best fit by height.
 *
 * Rectangles of one class live in a treap keyed by window start and
 * augmented with the largest window end, so "latest start <= s with end >= e"
 * is one descent (in the request's own class, rectangles shorter than it are
 * skipped on the way).  Classes are kept in a sorted array of buckets (at
 * most about a thousand); a placement searches at most SCAN_MAX classes that
 * could hold it before it opens a new layer, which bounds its cost when
 * sizes are many and scattered.
 * Nodes are 40 bytes and recycled; at most 2 are added per placement.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct rnode {
	uint32_t a, b, maxb;
	uint32_t l, r;
	uint64_t off, h;
} rnode;

/* classes searched per placement before a new layer is opened instead */
#define SCAN_MAX 64

typedef struct rbucket {
	uint32_t cls;
	uint32_t root, count;
} rbucket;

/* height class: monotone in h; heights below 16 are their own class, above
 * that the exponent and the 4 bits after the leading one */
static uint32_t hclass(uint64_t h)
{
	if (h < 16)
		return (uint32_t)h;
	unsigned e = 63 - (unsigned)__builtin_clzll(h);
	return (e - 3) * 16 + (uint32_t)((h >> (e - 4)) & 15);
}

/* treap priority from the node index (no storage) */
static uint32_t prio(uint32_t k)
{
	uint32_t x = k * 0x9E3779B1u;
	x ^= x >> 15;
	x *= 0x85EBCA77u;
	x ^= x >> 13;
	return x;
}

struct pl_rects {
	rnode *nd;           /* node 0 is the null node */
	uint32_t nn, cap, freel;
	rbucket *bk;
	uint32_t nb, bcap;
	uint64_t top;        /* offset of the unbounded rectangle over [0, T) */
	uint32_t T;
};

pl_rects *pl_rects_new(size_t hint, uint64_t top_offset, uint32_t T)
{
	pl_rects *R = calloc(1, sizeof *R);
	if (!R)
		return NULL;
	R->cap = (uint32_t)(hint < 64 ? 64 : hint);
	R->nd = malloc(R->cap * sizeof *R->nd);
	R->bcap = 64;
	R->bk = malloc(R->bcap * sizeof *R->bk);
	if (!R->nd || !R->bk) {
		pl_rects_free(R);
		return NULL;
	}
	memset(&R->nd[0], 0, sizeof R->nd[0]);
	R->nn = 1;
	R->top = top_offset;
	R->T = T;
	return R;
}

void pl_rects_free(pl_rects *R)
{
	if (!R)
		return;
	free(R->nd);
	free(R->bk);
	free(R);
}

uint64_t pl_rects_top(const pl_rects *R) { return R->top; }
size_t pl_rects_buckets(const pl_rects *R) { return R->nb; }

static void pull(rnode *nd, uint32_t x)
{
	uint32_t m = nd[x].b;
	if (nd[x].l && nd[nd[x].l].maxb > m)
		m = nd[nd[x].l].maxb;
	if (nd[x].r && nd[nd[x].r].maxb > m)
		m = nd[nd[x].r].maxb;
	nd[x].maxb = m;
}

/* key order: (a, node id) */
static int before(const rnode *nd, uint32_t x, uint32_t y)
{
	return nd[x].a < nd[y].a || (nd[x].a == nd[y].a && x < y);
}

/* splits t into (< key node k) and (>= k) */
static void split(rnode *nd, uint32_t t, uint32_t k, uint32_t *L, uint32_t *Rr)
{
	if (!t) {
		*L = *Rr = 0;
		return;
	}
	if (before(nd, t, k)) {
		split(nd, nd[t].r, k, &nd[t].r, Rr);
		*L = t;
	} else {
		split(nd, nd[t].l, k, L, &nd[t].l);
		*Rr = t;
	}
	pull(nd, t);
}

static uint32_t merge(rnode *nd, uint32_t a, uint32_t b)
{
	if (!a || !b)
		return a ? a : b;
	if (prio(a) > prio(b)) {
		nd[a].r = merge(nd, nd[a].r, b);
		pull(nd, a);
		return a;
	}
	nd[b].l = merge(nd, a, nd[b].l);
	pull(nd, b);
	return b;
}

static uint32_t insert(rnode *nd, uint32_t t, uint32_t k)
{
	if (!t)
		return k;
	if (prio(k) > prio(t)) {
		split(nd, t, k, &nd[k].l, &nd[k].r);
		pull(nd, k);
		return k;
	}
	if (before(nd, k, t))
		nd[t].l = insert(nd, nd[t].l, k);
	else
		nd[t].r = insert(nd, nd[t].r, k);
	pull(nd, t);
	return t;
}

static uint32_t erase(rnode *nd, uint32_t t, uint32_t k)
{
	if (!t)
		return 0;
	if (t == k)
		return merge(nd, nd[t].l, nd[t].r);
	if (before(nd, k, t))
		nd[t].l = erase(nd, nd[t].l, k);
	else
		nd[t].r = erase(nd, nd[t].r, k);
	pull(nd, t);
	return t;
}

/* the node with the largest a <= s whose b >= e and whose height is >= h,
 * or 0 (h = 0: any height) */
static uint32_t find_h(const rnode *nd, uint32_t t, uint32_t s, uint32_t e, uint64_t h)
{
	if (!t || nd[t].maxb < e)
		return 0;
	if (nd[t].a > s)
		return find_h(nd, nd[t].l, s, e, h);
	uint32_t got = find_h(nd, nd[t].r, s, e, h);
	if (got)
		return got;
	if (nd[t].b >= e && nd[t].h >= h)
		return t;
	return find_h(nd, nd[t].l, s, e, h);
}

/* the node with the largest a <= s whose b >= e, or 0 */
static uint32_t find(const rnode *nd, uint32_t t, uint32_t s, uint32_t e)
{
	while (t) {
		if (nd[t].maxb < e)
			return 0;
		if (nd[t].a > s) {
			t = nd[t].l;
			continue;
		}
		uint32_t got = find(nd, nd[t].r, s, e);
		if (got)
			return got;
		if (nd[t].b >= e)
			return t;
		t = nd[t].l;
	}
	return 0;
}

static uint32_t bucket_lower(const pl_rects *R, uint32_t cls)
{
	uint32_t lo = 0, hi = R->nb;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (R->bk[mid].cls < cls)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int add_rect(pl_rects *R, uint64_t off, uint64_t h, uint32_t a, uint32_t b)
{
	if (a >= b || !h)
		return 0;
	uint32_t cls = hclass(h);
	uint32_t bi = bucket_lower(R, cls);
	if (bi == R->nb || R->bk[bi].cls != cls) {
		if (R->nb == R->bcap) {
			rbucket *nb = realloc(R->bk, (size_t)R->bcap * 2 * sizeof *nb);
			if (!nb)
				return -1;
			R->bk = nb;
			R->bcap *= 2;
		}
		memmove(&R->bk[bi + 1], &R->bk[bi], (R->nb - bi) * sizeof *R->bk);
		R->bk[bi] = (rbucket){cls, 0, 0};
		R->nb++;
	}
	uint32_t k;
	if (R->freel) {
		k = R->freel;
		R->freel = R->nd[k].l;
	} else {
		if (R->nn == R->cap) {
			if (R->cap >= UINT32_MAX / 2)
				return -1;
			rnode *nn = realloc(R->nd, (size_t)R->cap * 2 * sizeof *nn);
			if (!nn)
				return -1;
			R->nd = nn;
			R->cap *= 2;
		}
		k = R->nn++;
	}
	R->nd[k] = (rnode){a, b, b, 0, 0, off, h};
	R->bk[bi].root = insert(R->nd, R->bk[bi].root, k);
	R->bk[bi].count++;
	return 0;
}

uint64_t pl_rects_place(pl_rects *R, uint64_t h, uint32_t s, uint32_t e)
{
	uint32_t cls = hclass(h), tried = 0;
	for (uint32_t bi = bucket_lower(R, cls); bi < R->nb && tried < SCAN_MAX; bi++) {
		rbucket *B = &R->bk[bi];
		if (!B->root || R->nd[B->root].maxb < e)
			continue;
		tried++;
		/* in the request's own class some rectangles may be shorter */
		uint32_t k = B->cls == cls ? find_h(R->nd, B->root, s, e, h) : find(R->nd, B->root, s, e);
		if (!k)
			continue;
		rnode x = R->nd[k];
		uint64_t H = x.h;
		B->root = erase(R->nd, B->root, k);
		B->count--;
		R->nd[k].l = R->freel;
		R->freel = k;
		/* B may move when buckets are added: use values saved above */
		if (add_rect(R, x.off, h, x.a, s) || add_rect(R, x.off, h, e, x.b) ||
		    add_rect(R, x.off + h, H - h, x.a, x.b))
			return STP_NO_OFFSET;
		return x.off;
	}
	/* a new memory layer on top */
	uint64_t off = R->top;
	R->top += h;
	if (add_rect(R, off, h, 0, s) || add_rect(R, off, h, e, R->T))
		return STP_NO_OFFSET;
	return off;
}
