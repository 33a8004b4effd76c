/*
 * test_plan_placement.c - the planner's placement tools for large sets,
 * white-box (planner/internal.h), against brute force:
 *
 *   the exact search with obstacles (search.c: pl_search with a pl_obst).
 *     Hundreds of small random sets, each with random obstacles (requests
 *     placed already).  The brute force tries every order of first fit (the
 *     lowest offset free of the obstacles and of the requests placed
 *     before): first fit in the order of an optimal layout's offsets puts
 *     each request at or below its place there, so the best over all orders
 *     is the optimum.  The search must find a layout at the optimum, prove
 *     the capacity one below it impossible, and every layout it returns must
 *     avoid every obstacle.
 *   the first-fit index (firstfit.c): on random sets long enough in time to
 *     span many nodes of its tree, every pl_ff_fit equals the lowest offset
 *     found by comparing with every request placed before.
 *   the layout check (best.c: pl_check): valid layouts pass, and one
 *     request moved onto another that it meets in time is caught.
 */
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../internal.h"

#define NMAX 7
#define OMAX 6

typedef struct inst {
	int n, no;
	uint32_t s[NMAX], e[NMAX];
	uint64_t size[NMAX];
	uint32_t os[OMAX], oe[OMAX];
	uint64_t olo[OMAX], ohi[OMAX];
} inst;

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

static int meets(uint32_t s1, uint32_t e1, uint32_t s2, uint32_t e2)
{
	return s1 < e2 && s2 < e1;
}

/* lowest offset >= 0 where request i fits against obstacles and placed[] */
static uint64_t first_fit(const inst *x, int i, const int *placed, int np, const uint64_t *off)
{
	uint64_t o = 0;
	for (int moved = 1; moved;) {
		moved = 0;
		for (int k = 0; k < x->no; k++)
			if (meets(x->s[i], x->e[i], x->os[k], x->oe[k]) && o < x->ohi[k] && x->olo[k] < o + x->size[i]) {
				o = x->ohi[k];
				moved = 1;
			}
		for (int j = 0; j < np; j++) {
			int p = placed[j];
			if (meets(x->s[i], x->e[i], x->s[p], x->e[p]) && o < off[p] + x->size[p] && off[p] < o + x->size[i]) {
				o = off[p] + x->size[p];
				moved = 1;
			}
		}
	}
	return o;
}

static uint64_t best;
static void perm(const inst *x, int *used, int *placed, int np, uint64_t *off, uint64_t pool)
{
	if (pool >= best)
		return;
	if (np == x->n) {
		best = pool;
		return;
	}
	for (int i = 0; i < x->n; i++) {
		if (used[i])
			continue;
		uint64_t o = first_fit(x, i, placed, np, off);
		used[i] = 1;
		off[i] = o;
		placed[np] = i;
		perm(x, used, placed, np + 1, off, pool > o + x->size[i] ? pool : o + x->size[i]);
		used[i] = 0;
	}
}

/* the layout avoids every obstacle and every other request, and stays under cap */
static int valid(const inst *x, const uint64_t *off, uint64_t cap)
{
	for (int i = 0; i < x->n; i++) {
		if (off[i] + x->size[i] > cap)
			return 0;
		for (int k = 0; k < x->no; k++)
			if (meets(x->s[i], x->e[i], x->os[k], x->oe[k]) && off[i] < x->ohi[k] && x->olo[k] < off[i] + x->size[i])
				return 0;
		for (int j = 0; j < i; j++)
			if (meets(x->s[i], x->e[i], x->s[j], x->e[j]) && off[i] < off[j] + x->size[j] &&
			    off[j] < off[i] + x->size[i])
				return 0;
	}
	return 1;
}

static int search(const inst *x, uint64_t cap, uint64_t *off)
{
	uint8_t kind[NMAX];
	uint32_t s[NMAX], e[NMAX];
	uint64_t size[NMAX];
	for (int i = 0; i < x->n; i++) {
		kind[i] = PL_STATIC;
		s[i] = x->s[i];
		e[i] = x->e[i];
		size[i] = x->size[i];
		off[i] = 0;
	}
	pl_work w = {0};
	w.n = (size_t)x->n;
	w.T = 16;
	w.s = s;
	w.e = e;
	w.size = size;
	w.kind = kind;
	pl_obst ob = {(size_t)x->no, x->os, x->oe, x->olo, x->ohi};
	return pl_search(&w, &ob, cap, pl_now() + 5, HUGE_VAL, 0, 0, off, NULL);
}

static void test_random(int sets)
{
	int found = 0, proven = 0;
	for (int t = 0; t < sets; t++) {
		inst x = {0};
		x.n = 3 + (int)rnd(NMAX - 2);
		x.no = (int)rnd(OMAX + 1);
		for (int i = 0; i < x.n; i++) {
			x.s[i] = (uint32_t)rnd(10);
			x.e[i] = x.s[i] + 1 + (uint32_t)rnd(5);
			x.size[i] = 1 + rnd(8);
		}
		for (int k = 0; k < x.no; k++) {
			/* obstacles may start before, end after, and overlap each other */
			x.os[k] = (uint32_t)rnd(14);
			x.oe[k] = x.os[k] + 1 + (uint32_t)rnd(6);
			x.olo[k] = rnd(16);
			x.ohi[k] = x.olo[k] + 1 + rnd(6);
		}
		int used[NMAX] = {0}, placed[NMAX];
		uint64_t off[NMAX];
		best = UINT64_MAX;
		perm(&x, used, placed, 0, off, 0);
		int r = search(&x, best, off);
		if (r != 1 || !valid(&x, off, best)) {
			fprintf(stderr, "set %d: n %d, %d obstacles: search at the optimum %llu gave %d%s\n", t, x.n, x.no,
			        (unsigned long long)best, r, r == 1 ? " (invalid layout)" : "");
			for (int i = 0; i < x.n; i++)
				fprintf(stderr, "  req [%u,%u) size %llu\n", x.s[i], x.e[i], (unsigned long long)x.size[i]);
			for (int k = 0; k < x.no; k++)
				fprintf(stderr, "  obst [%u,%u) at [%llu,%llu)\n", x.os[k], x.oe[k], (unsigned long long)x.olo[k],
				        (unsigned long long)x.ohi[k]);
		}
		CHECK(r == 1 && valid(&x, off, best));
		found += r == 1;
		if (best > 1) {
			r = search(&x, best - 1, off);
			if (r != 0)
				fprintf(stderr, "set %d: one below the optimum %llu: %d\n", t, (unsigned long long)best, r);
			CHECK_EQ_I(r, 0);
			proven += r == 0;
		}
	}
	printf("obstacles: %d sets, optimum found in %d, one below proven impossible in %d\n", sets, found, proven);
}

/* ---- first fit index */

static void test_first_fit(int sets)
{
	enum { N = 400 };
	static uint32_t s[N], e[N];
	static uint64_t size[N], off[N];
	static uint8_t kind[N];
	int checked = 0;
	for (int t = 0; t < sets; t++) {
		int n = 50 + (int)rnd(N - 50);
		uint32_t T = 20 + (uint32_t)rnd(600);
		for (int i = 0; i < n; i++) {
			kind[i] = PL_STATIC;
			s[i] = (uint32_t)rnd(T);
			/* some short, some spanning many blocks of 64 sections */
			e[i] = s[i] + 1 + (uint32_t)(rnd(4) ? rnd(8) : rnd(T));
			size[i] = rnd(16) ? 1 + rnd(100) : 0;
		}
		pl_work w = {0};
		w.n = (size_t)n;
		w.s = s;
		w.e = e;
		w.size = size;
		w.kind = kind;
		uint64_t floor = rnd(3) ? 0 : rnd(50);
		w.pinned_bytes = floor;
		pl_ff *ff = pl_ff_new(&w);
		CHECK(ff != NULL);
		if (!ff)
			return;
		for (int i = 0; i < n; i++) {
			uint64_t o = pl_ff_fit(ff, (uint32_t)i, size[i], floor, UINT64_MAX);
			/* brute force: lowest x >= floor where [x, x + max(size, 1))
			 * meets none placed before that is live at the same time
			 * (each taking at least a byte) */
			uint64_t x = floor, len = size[i] ? size[i] : 1;
			for (int moved = 1; moved;) {
				moved = 0;
				for (int j = 0; j < i; j++) {
					uint64_t lj = size[j] ? size[j] : 1; /* size 0 takes a byte */
					if (meets(s[i], e[i], s[j], e[j]) && x < off[j] + lj && off[j] < x + len) {
						x = off[j] + lj;
						moved = 1;
					}
				}
			}
			if (o != x) {
				fprintf(stderr, "first fit set %d request %d: index %llu, brute force %llu\n", t, i,
				        (unsigned long long)o, (unsigned long long)x);
				CHECK_EQ_U(o, x);
				break;
			}
			off[i] = o;
			CHECK(pl_ff_add(ff, (uint32_t)i, o, size[i]) == 0);
			checked++;
		}
		/* the layout first fit built is valid; one request moved onto a
		 * neighbour in time is not */
		CHECK(pl_check(&w, off) == 0);
		for (int tries = 0; tries < 50; tries++) {
			int i = (int)rnd((uint64_t)n), j = (int)rnd((uint64_t)n);
			if (i == j || !size[i] || !size[j] || !meets(s[i], e[i], s[j], e[j]))
				continue;
			uint64_t keep = off[i];
			off[i] = off[j] + rnd(size[j]);
			CHECK(pl_check(&w, off) == -1);
			off[i] = keep;
			break;
		}
		pl_ff_free(ff);
	}
	printf("first fit: %d placements equal to brute force\n", checked);
}

int main(void)
{
	test_random(600);
	test_first_fit(40);
	return check_done();
}
