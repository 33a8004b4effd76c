/*
 * heap_sample_prog.c - a heap workload whose true figures are known, for
 * the host-heap sampling test (test_heap_sample.sh): ITERS iterations,
 * marked with the marker API (stprof.h), each allocating objects of
 * 8..4096 bytes (a fixed pseudo-random sequence, through malloc, calloc,
 * realloc and posix_memalign) and one large block of 256 KiB, keeping
 * about a fifth of the small ones and one large block in eight until the
 * end, freeing the rest within the iteration; then it frees everything but
 * the last iteration's keepers and exits.
 *
 * Prints on stdout the true figures of its own objects:
 *   allocs=N bytes=B peak=P end=E large=L iter0=A0 iter1=A1 count_se=S
 * (allocation calls, bytes requested, the highest live bytes, live bytes at
 * exit, large blocks, allocation calls in iterations 0 and 1; a realloc
 * counts as a free and an allocation, as the trace records it; and, for a
 * sampling interval R, one standard error of the estimated count of
 * allocations: sqrt of the sum over the sampled allocations of (1-p)/p,
 * p = 1 - exp(-size/R), iterations 0 and 1 being recorded in full).
 *   heap_sample_prog ITERS PER_ITER [R]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/stprof.h"

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

typedef struct obj { void *p; size_t n; } obj;
static uint64_t allocs, bytes, live, peak, large, iter_allocs;
static double interval, count_var;
static int full_now; /* inside iterations 0 and 1 */

static void count(size_t n)
{
	if (interval > 0 && !full_now && (double)n < interval)
		count_var += 1.0 / expm1((double)n / interval);
}

static void *take(size_t n, int how)
{
	void *p = NULL;
	switch (how) {
	case 0: p = malloc(n); break;
	case 1: p = calloc(1, n); break;
	case 2:
		if (posix_memalign(&p, 64, n))
			p = NULL;
		break;
	default: { /* a realloc: a small block grown to n */
		void *q = malloc(8);
		allocs++, iter_allocs++, bytes += 8;
		count(8);
		p = realloc(q, n); /* the trace: FREE(q), ALLOC(p) */
		break;
	}
	}
	if (!p)
		abort();
	memset(p, 0, n);
	allocs++, iter_allocs++, bytes += n, live += n;
	count(n);
	if (live > peak)
		peak = live;
	return p;
}

static void give(obj *o)
{
	free(o->p);
	live -= o->n;
	o->p = NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4)
		return 2;
	interval = argc == 4 ? atof(argv[3]) : 0;
	int iters = atoi(argv[1]), per = atoi(argv[2]);
	/* its own arrays count too (calloc, outside the loop: sampled) */
	size_t nk = ((size_t)iters * (size_t)per + 1) * sizeof(obj), nt = (size_t)per * sizeof(obj),
	       nb = (size_t)iters * sizeof(obj);
	obj kept_o = {take(nk, 1), nk}, tmp_o = {take(nt, 1), nt}, big_o = {take(nb, 1), nb};
	obj *kept = kept_o.p, *tmp = tmp_o.p, *big = big_o.p;
	size_t nkept = 0, last_start = 0;
	uint64_t first[2] = {0, 0};
	for (int it = 0; it < iters; it++) {
		stprof_iteration_begin(it);
		full_now = it < 2;
		iter_allocs = 0;
		last_start = nkept;
		for (int i = 0; i < per; i++) {
			size_t n = 8 + next() % 4089;
			obj o = {take(n, (int)(next() % 4)), n};
			if (next() % 5 == 0)
				kept[nkept++] = o;
			else
				tmp[i] = o;
		}
		big[it] = (obj){take(256 << 10, 0), 256 << 10};
		large++;
		for (int i = 0; i < per; i++)
			if (tmp[i].p)
				give(&tmp[i]);
		if (it % 8)
			give(&big[it]);
		if (it < 2)
			first[it] = iter_allocs;
		stprof_iteration_end(it);
		full_now = 0;
	}
	for (size_t i = 0; i < last_start; i++) /* the last iteration's stay */
		give(&kept[i]);
	for (int it = 0; it < iters; it++)
		if (big[it].p)
			give(&big[it]);
	give(&tmp_o);
	give(&big_o); /* kept stays, with the last iteration's keepers */
	printf("allocs=%llu bytes=%llu peak=%llu end=%llu large=%llu iter0=%llu iter1=%llu count_se=%.0f\n",
	       (unsigned long long)allocs, (unsigned long long)bytes, (unsigned long long)peak,
	       (unsigned long long)live, (unsigned long long)large, (unsigned long long)first[0],
	       (unsigned long long)first[1], sqrt(count_var));
	return 0;
}
