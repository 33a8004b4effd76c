/*
 * bench_stalloc.c - libstalloc's cost per planned allocation and free,
 * against glibc, jemalloc and mimalloc on the same request stream, and the
 * pool it reserves against what is live.
 *
 * The stream is a generated training schedule (one pipeline stage, 1F1B,
 * recorded sizes) replayed for many iterations in tick order, as the
 * profiled program made it; every block is touched once (one byte written)
 * so no allocator gets away with untouched memory.  jemalloc and mimalloc
 * are Debian's shared libraries (libjemalloc2, libmimalloc2.0), opened
 * with dlopen when present.  Figures: ns per alloc+free pair (best of 5
 * runs), the hit rate, and the pool's use in the steady state (peak live
 * planned bytes / pool).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

#include "../../tests/allocator/replay.h"

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const stp_reqs *R;
static rp_ev *EV;
static size_t NEV;
static void **PTR;

static double run_plain(malloc_fn m, free_fn f, int iters)
{
	double t = now();
	for (int it = 0; it < iters; it++)
		for (size_t e = 0; e < NEV; e++) {
			uint32_t q = EV[e].req;
			if (EV[e].is_free) {
				if (PTR[q])
					f(PTR[q]);
				PTR[q] = NULL;
			} else {
				PTR[q] = m(R->req[q].size);
				*(volatile char *)PTR[q] = 1;
			}
		}
	t = now() - t;
	for (size_t q = 0; q < R->n; q++)
		if (PTR[q]) {
			f(PTR[q]);
			PTR[q] = NULL;
		}
	return t;
}

static double run_stalloc(stalloc *a, int iters, uint64_t align)
{
	double t = now();
	for (int it = 0; it < iters; it++)
		for (size_t e = 0; e < NEV; e++) {
			uint32_t q = EV[e].req;
			if (EV[e].is_free) {
				if (PTR[q])
					stalloc_free(a, PTR[q]);
				PTR[q] = NULL;
			} else {
				PTR[q] = stalloc_alloc(a, R->req[q].size, align);
				*(volatile char *)PTR[q] = 1;
			}
		}
	t = now() - t;
	for (size_t q = 0; q < R->n; q++)
		if (PTR[q]) {
			stalloc_free(a, PTR[q]);
			PTR[q] = NULL;
		}
	return t;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 2000;
	/* argv[2]: only the C library's malloc, under that name (run.sh
	 * preloads jemalloc so: dlopen cannot load it, static TLS) */
	const char *libc_as = argc > 2 ? argv[2] : NULL;
	stp_reqs r;
	stp_plan p;
	char err[256];
	stp_reqs_init(&r);
	memset(&p, 0, sizeof p);
	stp_gen_opts g;
	stp_gen_opts_init(&g);
	g.hidden = 256;
	g.seq = 128;
	g.layers = 8;
	g.micro_batches = 8;
	if (stp_gen_megatron(&g, &r, err, sizeof err) < 0)
		return fprintf(stderr, "%s\n", err), 1;
	stp_plan_opts po;
	stp_plan_opts_init(&po);
	po.align = 512;
	if (stp_plan_build(&r, &po, &p, err, sizeof err) < 0)
		return fprintf(stderr, "%s\n", err), 1;
	R = &r;
	EV = rp_events(&r, &NEV);
	PTR = calloc(r.n, sizeof *PTR);
	double pairs = (double)NEV / 2 * iters;
	printf("stream: 1F1B stage, %zu requests an iteration, %d iterations, %.0f alloc+free pairs; plan pool %.2f MiB\n",
	       NEV / 2, iters, pairs, (double)p.pool / 1048576.0);

	stalloc_backend b;
	stalloc_backend_host(&b);
	double best = 1e30;
	stalloc_stats s;
	for (int k = 0; k < 5 && !libc_as; k++) {
		stalloc *a = stalloc_new(&r, &p, &b, NULL, err, sizeof err);
		if (!a)
			return fprintf(stderr, "%s\n", err), 1;
		/* persistent requests first, as the program's start-up */
		size_t np;
		uint32_t *pers = rp_persistent(&r, &np);
		void **pp = calloc(np + 1, sizeof *pp);
		for (size_t i = 0; i < np; i++)
			pp[i] = stalloc_alloc(a, r.req[pers[i]].size, 0);
		double t = run_stalloc(a, iters, 0);
		if (t < best)
			best = t;
		stalloc_stats_get(a, &s);
		for (size_t i = 0; i < np; i++)
			stalloc_free(a, pp[i]);
		free(pp);
		free(pers);
		stalloc_destroy(a);
	}
	if (!libc_as)
		printf("%-10s %7.1f ns per alloc+free   hit rate %.2f%%, pool in use at most %.2f%% of it, fallbacks %llu\n",
	       "stalloc", 1e9 * best / pairs, 100 * s.hit_rate, 100.0 * (double)s.pool_peak / (double)s.pool,
	       (unsigned long long)s.fallbacks);

	/* the fallback: the same stream under the plan of another model (hidden
	 * 192), whose sizes none of the stream's match: every request goes
	 * through the matcher to the fallback's cache (the same stream with
	 * glibc and mimalloc below: the fallback against them) */
	stp_reqs r2;
	stp_plan p2;
	stp_reqs_init(&r2);
	memset(&p2, 0, sizeof p2);
	g.hidden = 192;
	if (!libc_as && stp_gen_megatron(&g, &r2, err, sizeof err) == 0 && stp_plan_build(&r2, &po, &p2, err, sizeof err) == 0) {
		best = 1e30;
		for (int k = 0; k < 5; k++) {
			stalloc *a = stalloc_new(&r2, &p2, &b, NULL, err, sizeof err);
			if (!a)
				return fprintf(stderr, "%s\n", err), 1;
			double t = run_stalloc(a, iters, 64); /* c10's alignment (the fallback's blocks have 64) */
			if (t < best)
				best = t;
			stalloc_stats_get(a, &s);
			stalloc_destroy(a);
		}
		printf("%-10s %7.1f ns per alloc+free   (a plan of other sizes: %llu of %llu requests to the fallback)\n",
		       "stalloc-fb", 1e9 * best / pairs, (unsigned long long)s.fallbacks, (unsigned long long)s.requests);
	}
	stp_reqs_free(&r2);
	stp_plan_free(&p2);

	struct { const char *name, *lib, *m, *f; } peers[] = {
		{"glibc", NULL, "malloc", "free"},
		{"jemalloc", NULL, NULL, NULL}, /* preloaded by run.sh */
		{"mimalloc", "libmimalloc.so.2", "mi_malloc", "mi_free"},
	};
	if (libc_as) {
		peers[0].name = libc_as;
		memset(&peers[1], 0, 2 * sizeof peers[1]);
	}
	for (size_t k = 0; k < sizeof peers / sizeof peers[0] && peers[k].name; k++) {
		if (!peers[k].m)
			continue;
		void *h = peers[k].lib ? dlopen(peers[k].lib, RTLD_NOW | RTLD_LOCAL) : RTLD_DEFAULT;
		if (peers[k].lib && !h) {
			printf("%-10s not loaded: %s\n", peers[k].name, dlerror());
			continue;
		}
		malloc_fn m;
		free_fn f;
		*(void **)&m = dlsym(h, peers[k].m);
		*(void **)&f = dlsym(h, peers[k].f);
		if (!m || !f) {
			printf("%-10s has no %s\n", peers[k].name, peers[k].m);
			continue;
		}
		double bt = 1e30;
		for (int i = 0; i < 5; i++) {
			double t = run_plain(m, f, iters);
			if (t < bt)
				bt = t;
		}
		printf("%-10s %7.1f ns per alloc+free\n", peers[k].name, 1e9 * bt / pairs);
	}
	free(PTR);
	free(EV);
	stp_reqs_free(&r);
	stp_plan_free(&p);
	return 0;
}
