/*
 * lifetime_sim.c - what the lifetime heap would do with a recorded run, for
 * the Lifetimes section of the report of non-iterative programs (servers,
 * pipelines) and `stprof plan --lifetimes` (docs/lifetimes.md).
 *
 * The trace's host allocations go through allocsim's host heap models
 * (stprof/allocsim.h, allocsim/host*.c; docs/allocator-models.md):
 *   STP_LT_SIM_SIZE_CLASSES  size classes on huge pages (one lifetime class
 *                            for everything: jemalloc, TCMalloc, mimalloc);
 *   STP_LT_SIM_GLIBC         glibc-like (best fit, coalescing, mmap);
 *   STP_LT_SIM_PREDICTED     the lifetime heap with the model's predictions;
 *   STP_LT_SIM_OWN           the lifetime heap with each object's own class
 *                            (a perfect predictor, Llama's oracle, Figure 9).
 * This file owns the replay: two passes over the trace through the
 * learner's hooks (the first learns each object's own lifetime class, the
 * second replays), the samples over wall time, the heaviest sites.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifetime_internal.h"
#include "stprof/allocsim.h"

#define NM STP_LT_SIM_MODELS

typedef struct sim {
	const stp_lt_model *m;
	allocsim_host *mod[NM];
	/* pass 1 */
	uint8_t *own;        /* ordinal -> own class */
	uint64_t *born;      /* ordinal -> time */
	size_t nown;
	lt_map ord;          /* addr + 1 -> ordinal */
	int pass;
	uint64_t base;       /* the learner's ordinal of pass 2's first allocation */
	uint64_t t0, t1, live, live_peak;
	lt_map size_of;      /* addr + 1 -> bytes (pass 2) */
	stp_lt_sim *out;
	int next_sample;
	int oom;
} sim;

static void sample(sim *S, stp_lt_sim_point *p, uint64_t t)
{
	p->t_ns = t - S->t0;
	p->live = S->live;
	for (int i = 0; i < NM; i++) {
		allocsim_host_usage u = allocsim_host_usage_of(S->mod[i]);
		p->pages[i] = u.pages;
		p->blocks[i] = u.blocks;
	}
}

static void on_alloc(void *data, uint64_t ordinal, uint64_t t, uint64_t addr, uint64_t size, size_t ctx,
                     const lt_ctx *c)
{
	sim *S = data;
	if (S->pass == 1) {
		if (ordinal >= S->nown) {
			size_t cap = S->nown ? S->nown * 2 : 4096;
			while (cap <= ordinal)
				cap *= 2;
			uint8_t *o = realloc(S->own, cap);
			uint64_t *b = o ? realloc(S->born, cap * sizeof *b) : NULL;
			if (o)
				S->own = o;
			if (!b) {
				S->oom = 1;
				return;
			}
			S->born = b;
			memset(S->own + S->nown, STP_LT_NEVER, cap - S->nown);
			S->nown = cap;
		}
		S->born[ordinal] = t;
		uint64_t *o = stp_lt_map_slot(&S->ord, addr + 1, 1);
		if (!o) {
			S->oom = 1;
			return;
		}
		*o = ordinal;
		if (!S->t0 || t < S->t0)
			S->t0 = t;
		if (t > S->t1)
			S->t1 = t;
		return;
	}
	uint64_t i = ordinal - S->base;
	stp_lt_sim *out = S->out;
	uint64_t span = S->t1 > S->t0 ? S->t1 - S->t0 : 1;
	while (S->next_sample < STP_LT_SIM_SAMPLES &&
	       t - S->t0 > span * (uint64_t)(S->next_sample + 1) / STP_LT_SIM_SAMPLES)
		sample(S, &out->samples[S->next_sample++], t);
	unsigned pred = stp_lt_predict(S->m, c->pre, c->n, NULL);
	unsigned own = i < S->nown ? S->own[i] : STP_LT_NEVER;
	const unsigned cls[NM] = {[STP_LT_SIM_SIZE_CLASSES] = STP_LT_NEVER, [STP_LT_SIM_GLIBC] = STP_LT_NEVER,
	                          [STP_LT_SIM_PREDICTED] = pred, [STP_LT_SIM_OWN] = own};
	for (int k = 0; k < NM; k++)
		if (allocsim_host_alloc(S->mod[k], addr, size, cls[k]) < 0)
			S->oom = 1;
	uint64_t *sz = stp_lt_map_slot(&S->size_of, addr + 1, 1);
	if (sz)
		*sz = size;
	S->live += size;
	out->allocs++;
	if (S->live > S->live_peak) {
		S->live_peak = S->live;
		sample(S, &out->peak, t);
	}
	/* the sites: the heaviest contexts, by allocations */
	int tenth = (int)((t - S->t0) * 10 / (span + 1));
	for (size_t k = 0; k < out->nsites; k++)
		if (out->site[k].ctx == ctx) {
			out->site[k].allocs++;
			out->site[k].bytes += size;
			out->site[k].tenth[tenth]++;
			return;
		}
}

static void on_free(void *data, uint64_t t, uint64_t addr)
{
	sim *S = data;
	if (S->pass == 1) {
		uint64_t o;
		if (stp_lt_map_del(&S->ord, addr + 1, &o) && o < S->nown)
			S->own[o] = (uint8_t)stp_lt_class_of(t >= S->born[o] ? t - S->born[o] : 0);
		if (t > S->t1)
			S->t1 = t;
		return;
	}
	for (int i = 0; i < NM; i++)
		allocsim_host_free(S->mod[i], addr);
	uint64_t sz;
	if (stp_lt_map_del(&S->size_of, addr + 1, &sz))
		S->live -= sz;
}

typedef struct heavy { uint64_t n; size_t i; } heavy;
static int cmp_heavy(const void *a, const void *b)
{
	const heavy *x = a, *y = b;
	return x->n > y->n ? -1 : x->n < y->n;
}

int stp_lt_simulate(const stp_lt_model *m, stp_lt_learner *l, const char *trace, stp_lt_sim *out, char *err,
                    size_t errlen)
{
	memset(out, 0, sizeof *out);
	sim *S = calloc(1, sizeof *S);
	if (!S) {
		snprintf(err, errlen, "%s: out of memory", trace);
		return -1;
	}
	S->m = m;
	S->out = out;
	static const allocsim_host_kind kinds[NM] = {
		[STP_LT_SIM_SIZE_CLASSES] = ALLOCSIM_HOST_SIZE_CLASSES, [STP_LT_SIM_GLIBC] = ALLOCSIM_HOST_GLIBC,
		[STP_LT_SIM_PREDICTED] = ALLOCSIM_HOST_LIFETIME, [STP_LT_SIM_OWN] = ALLOCSIM_HOST_LIFETIME};
	for (int i = 0; i < NM; i++)
		if (!(S->mod[i] = allocsim_host_new(kinds[i])))
			S->oom = 1;
	lt_hooks h = {S, on_alloc, on_free};
	const lt_hooks *old = l->hooks;
	l->hooks = &h;
	S->pass = 1;
	int rc = stp_lt_learner_add(l, trace, err, errlen);
	if (rc == 0 && !S->oom) {
		/* the sites to follow: the contexts with most allocations */
		heavy *hv = calloc(l->nctx ? l->nctx : 1, sizeof *hv);
		if (hv) {
			for (size_t i = 0; i < l->nctx; i++) {
				hv[i].i = i;
				for (unsigned c = 0; c < STP_LT_CLASSES; c++)
					hv[i].n += l->ctx[i].hist[c];
			}
			qsort(hv, l->nctx, sizeof *hv, cmp_heavy);
			out->nsites = l->nctx < STP_LT_SIM_SITES ? l->nctx : STP_LT_SIM_SITES;
			for (size_t k = 0; k < out->nsites; k++) {
				const lt_ctx *c = &l->ctx[hv[k].i];
				out->site[k].ctx = hv[k].i;
				out->site[k].predicted = (uint8_t)stp_lt_predict(m, c->pre, c->n, NULL);
			}
			free(hv);
		}
		S->pass = 2;
		S->base = l->allocs;
		stp_lt_map_free(&S->ord);
		rc = stp_lt_learner_add(l, trace, err, errlen);
	}
	if (rc == 0 && S->oom) {
		snprintf(err, errlen, "%s: out of memory simulating the heap", trace);
		rc = -1;
	}
	if (rc == 0) {
		while (S->next_sample < STP_LT_SIM_SAMPLES)
			sample(S, &out->samples[S->next_sample++], S->t1);
		out->duration_ns = S->t1 - S->t0;
		for (int i = 0; i < NM; i++)
			out->max_pages[i] = allocsim_host_usage_of(S->mod[i]).max_pages;
		/* the sites' own classes: their p95 over both passes, as learned */
		for (size_t k = 0; k < out->nsites; k++)
			out->site[k].label = (uint8_t)stp_lt_p95(l->ctx[out->site[k].ctx].hist);
	}
	l->hooks = old;
	for (int i = 0; i < NM; i++)
		allocsim_host_delete(S->mod[i]);
	stp_lt_map_free(&S->ord);
	stp_lt_map_free(&S->size_of);
	free(S->own);
	free(S->born);
	free(S);
	return rc;
}

int stp_lt_learner_frame(const stp_lt_learner *l, size_t ctx, uint32_t i, const char **path, uint64_t *vaddr,
                         uint64_t *vlo, uint64_t *vsize)
{
	if (ctx >= l->nctx || i >= l->ctx[ctx].n)
		return 0;
	uint64_t mi = l->ctx[ctx].frame_mod[i];
	*vaddr = l->ctx[ctx].frame_va[i];
	if (mi >= l->nnames) {
		*path = NULL;
		*vlo = *vsize = 0;
		return 1;
	}
	*path = l->paths[mi];
	*vlo = l->vlo[mi];
	*vsize = l->vsize[mi];
	return 1;
}
