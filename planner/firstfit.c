/*
 * firstfit.c - first-fit placement against the requests already placed,
 * fast enough for tens of thousands of requests (the fill step of large.c).
 *
 * Time is cut into sections between the distinct lifetime ends of the
 * static requests; request i covers sections [sa[i], sb[i]).  The occupied
 * address space is kept as sorted lists of disjoint intervals, merged where
 * they touch, so a tightly packed stretch of memory is one interval however
 * many requests fill it:
 *   sec[j]    per section: the requests that cover j but not all of j's block;
 *   full[b]   per block of FF_BLK sections: the requests covering all of it;
 *   part[b]   per block: the union of its sections' lists.
 * A request covering block b whole meets everything live in b, full[b] and
 * part[b]; one covering only some sections of b meets full[b] and those
 * sections' lists.  A placement adds its interval to the lists it meets, so
 * a request long in time costs one insertion per block, not per section.
 *
 * First fit from a floor: the candidate offset o rises past the interval that
 * blocks [o, o + size) in any of the request's lists, pass after pass, until
 * a pass finds none (o only rises, and each rise passes an interval).
 * Nothing is ever removed.  A request of size 0 takes one byte (pl_check
 * and the verifier count a request inside another's range as a conflict).
 * Invariant: every list is sorted, disjoint and has no two touching
 * intervals.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define FF_BLK 64

typedef struct ffl {
	uint64_t *v; /* v[2k] = lo, v[2k + 1] = hi of interval k */
	uint32_t n, cap;
} ffl;

struct pl_ff {
	uint32_t K, nb;
	uint32_t *sa, *sb; /* per request; sa == sb: not indexed */
	ffl *sec, *full, *part;
};

void pl_ff_free(pl_ff *f)
{
	if (!f)
		return;
	for (uint32_t j = 0; j < f->K; j++)
		free(f->sec[j].v);
	for (uint32_t b = 0; b < f->nb; b++) {
		free(f->full[b].v);
		free(f->part[b].v);
	}
	free(f->sec);
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
	f->K = (uint32_t)K; /* sections 0 .. K-1 between the K+1 distinct points */
	f->nb = (K + FF_BLK - 1) / FF_BLK;
	f->sec = calloc((size_t)K + 1, sizeof *f->sec);
	f->full = calloc((size_t)f->nb + 1, sizeof *f->full);
	f->part = calloc((size_t)f->nb + 1, sizeof *f->part);
	if (!f->sec || !f->full || !f->part)
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
		uint32_t nc = l->cap ? l->cap * 2 : 4;
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

/* the lowest x >= o where [x, x + len) is free in l */
static uint64_t ffl_fit(const ffl *l, uint64_t o, uint64_t len)
{
	uint32_t k = ffl_find(l, o, 1);
	while (k < l->n && l->v[2 * k] < o + len) {
		o = l->v[2 * k + 1];
		k++;
	}
	return o;
}

uint64_t pl_ff_fit(const pl_ff *f, uint32_t id, uint64_t size, uint64_t floor)
{
	uint32_t a = f->sa[id], b = f->sb[id];
	uint64_t o = floor, len = size ? size : 1; /* a zero-size request still takes an address */
	for (int moved = 1; moved;) {
		moved = 0;
		for (uint32_t bl = a / FF_BLK; bl * FF_BLK < b; bl++) {
			uint32_t lo = bl * FF_BLK, hi = lo + FF_BLK < f->K ? lo + FF_BLK : f->K;
			uint64_t x = ffl_fit(&f->full[bl], o, len);
			if (a <= lo && hi <= b) {
				x = ffl_fit(&f->part[bl], x, len);
			} else {
				uint32_t j0 = a > lo ? a : lo, j1 = b < hi ? b : hi;
				for (uint32_t j = j0; j < j1; j++)
					x = ffl_fit(&f->sec[j], x, len);
			}
			if (x != o) {
				o = x;
				moved = 1;
			}
		}
	}
	return o;
}

int pl_ff_add(pl_ff *f, uint32_t id, uint64_t off, uint64_t size)
{
	uint32_t a = f->sa[id], b = f->sb[id];
	int rc = 0;
	if (!size)
		size = 1; /* as pl_ff_fit placed it: nothing may cover it */
	for (uint32_t bl = a / FF_BLK; bl * FF_BLK < b; bl++) {
		uint32_t lo = bl * FF_BLK, hi = lo + FF_BLK < f->K ? lo + FF_BLK : f->K;
		if (a <= lo && hi <= b) {
			rc |= ffl_add(&f->full[bl], off, off + size);
			continue;
		}
		rc |= ffl_add(&f->part[bl], off, off + size);
		uint32_t j0 = a > lo ? a : lo, j1 = b < hi ? b : hi;
		for (uint32_t j = j0; j < j1; j++)
			rc |= ffl_add(&f->sec[j], off, off + size);
	}
	return rc ? -1 : 0;
}
