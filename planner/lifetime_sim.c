/*
 * lifetime_sim.c - what the lifetime heap would do with a recorded run:
 * the trace's host allocations replayed through page models of 2 MiB huge
 * pages of 8 KiB blocks, for the report of non-iterative programs
 * (servers, pipelines) and `stprof plan --lifetimes` (docs/lifetimes.md).
 *
 * Three models place the same objects with the same size classes and spans
 * as allocator/lifetime_heap.c:
 *   0  size classes only: every object in one class (what a size-class
 *      allocator such as jemalloc or TCMalloc does on huge pages);
 *   1  the lifetime heap with the model's predictions;
 *   2  the lifetime heap with each object's own class (a perfect
 *      predictor, Llama's oracle of Figure 9).
 * A huge page counts while any object on it is live; a block likewise
 * (the footprint with small pages, at 8 KiB).  The models keep the heap's
 * placement (recycling into longer-lived pages, then the class's own
 * pages, then its open page) but neither its deadlines nor its trim.
 *
 * Two passes over the trace through the learner's hooks: the first learns
 * each object's own lifetime class (the oracle), the second replays.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifetime_internal.h"

#define NM 3
#define PAGE_BLOCKS 256
#define PAGE_BYTES (2ull << 20)
#define LARGE_MAX (2u << 20)
#define HUGE_MAX (64ull << 30)

typedef struct sim_page {
	uint64_t live[4];
	uint16_t nlive;
	uint8_t lc, state; /* 0 free, 1 open, 2 active, 3 huge */
} sim_page;

typedef struct sim_span {
	uint64_t freebits[8]; /* freed slots */
	uint32_t page;
	uint16_t block, nblocks, nslots, used, bump;
	uint8_t sc, lc, listed, alive;
} sim_span;

typedef struct u32vec {
	uint32_t *v;
	size_t n, cap;
} u32vec;

typedef struct sim_model {
	sim_page *pg;
	size_t npg, cap_pg;
	u32vec freepg;
	sim_span *sp;
	size_t nsp, cap_sp;
	u32vec freesp;
	uint32_t open[STP_LT_CLASSES];            /* page + 1 */
	uint32_t cur[STP_LT_CLASSES][STP_LT_SIZE_CLASSES]; /* span + 1 */
	u32vec partial[STP_LT_CLASSES][STP_LT_SIZE_CLASSES]; /* lazily cleaned */
	u32vec active[STP_LT_CLASSES];            /* lazily cleaned */
	lt_map obj;                                /* addr + 1 -> span << 10 | slot, or page run */
	uint64_t pages, blocks, max_pages;
	int oom;
} sim_model;

typedef struct sim {
	const stp_lt_model *m;
	sim_model mod[NM];
	uint32_t sc_size[STP_LT_SIZE_CLASSES];
	uint8_t sc_blocks[STP_LT_SIZE_CLASSES];
	unsigned nsc;
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

static int push(u32vec *v, uint32_t x)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		uint32_t *n = realloc(v->v, cap * sizeof *n);
		if (!n)
			return -1;
		v->v = n;
		v->cap = cap;
	}
	v->v[v->n++] = x;
	return 0;
}

static unsigned class_of_size(const sim *s, uint64_t n)
{
	unsigned c = 0;
	while (c < s->nsc && s->sc_size[c] < n)
		c++;
	return c;
}

static int find_run(const sim_page *p, unsigned nb)
{
	if ((unsigned)(PAGE_BLOCKS - p->nlive) < nb)
		return -1;
	unsigned run = 0;
	for (unsigned i = 0; i < PAGE_BLOCKS; i++) {
		if (p->live[i >> 6] >> (i & 63) & 1)
			run = 0;
		else if (++run == nb)
			return (int)(i + 1 - nb);
	}
	return -1;
}

static void mark(sim_model *md, uint32_t pi, unsigned b, unsigned nb)
{
	sim_page *p = &md->pg[pi];
	for (unsigned i = b; i < b + nb; i++)
		p->live[i >> 6] |= 1ull << (i & 63);
	if (!p->nlive)
		md->pages++;
	p->nlive = (uint16_t)(p->nlive + nb);
	md->blocks += nb;
	if (md->pages > md->max_pages)
		md->max_pages = md->pages;
}

static int64_t new_page(sim_model *md, unsigned lc, uint8_t state)
{
	uint32_t pi;
	if (md->freepg.n) {
		pi = md->freepg.v[--md->freepg.n];
	} else {
		if (md->npg == md->cap_pg) {
			size_t cap = md->cap_pg ? md->cap_pg * 2 : 64;
			sim_page *n = realloc(md->pg, cap * sizeof *n);
			if (!n)
				return -1;
			md->pg = n;
			md->cap_pg = cap;
		}
		pi = (uint32_t)md->npg++;
	}
	memset(&md->pg[pi], 0, sizeof md->pg[pi]);
	md->pg[pi].lc = (uint8_t)lc;
	md->pg[pi].state = state;
	return pi;
}

/* The heap's blocks_take: returns page << 8 | block, or -1. */
static int64_t take_blocks(sim_model *md, unsigned nb, unsigned lc, int small)
{
	for (unsigned i = 0; i + lc < STP_LT_CLASSES; i++) {
		unsigned L = i + lc + 1 == STP_LT_CLASSES ? lc : small ? STP_LT_CLASSES - 1 - i : lc + 1 + i;
		u32vec *a = &md->active[L];
		unsigned looked = 0;
		for (size_t k = a->n; k-- > 0 && looked < 64;) {
			sim_page *p = &md->pg[a->v[k]];
			if (p->state != 2 || p->lc != L) {
				a->v[k] = a->v[--a->n]; /* stale */
				continue;
			}
			looked++;
			int b = find_run(p, nb);
			if (b >= 0) {
				mark(md, a->v[k], (unsigned)b, nb);
				return (int64_t)a->v[k] << 8 | b;
			}
		}
	}
	if (md->open[lc]) {
		uint32_t pi = md->open[lc] - 1;
		int b = find_run(&md->pg[pi], nb);
		if (b >= 0) {
			mark(md, pi, (unsigned)b, nb);
			return (int64_t)pi << 8 | b;
		}
		md->pg[pi].state = 2;
		if (push(&md->active[lc], pi) < 0)
			return -1;
		md->open[lc] = 0;
	}
	int64_t pi = new_page(md, lc, 1);
	if (pi < 0)
		return -1;
	md->open[lc] = (uint32_t)pi + 1;
	mark(md, (uint32_t)pi, 0, nb);
	return pi << 8;
}

static void put_blocks(sim_model *md, uint32_t pi, unsigned b, unsigned nb)
{
	sim_page *p = &md->pg[pi];
	for (unsigned i = b; i < b + nb; i++)
		p->live[i >> 6] &= ~(1ull << (i & 63));
	p->nlive = (uint16_t)(p->nlive - nb);
	md->blocks -= nb;
	if (p->nlive)
		return;
	md->pages--;
	if (p->state == 2) {
		p->state = 0;
		push(&md->freepg, pi);
	}
}

static int64_t new_span(sim_model *md)
{
	if (md->freesp.n)
		return md->freesp.v[--md->freesp.n];
	if (md->nsp == md->cap_sp) {
		size_t cap = md->cap_sp ? md->cap_sp * 2 : 256;
		sim_span *n = realloc(md->sp, cap * sizeof *n);
		if (!n)
			return -1;
		md->sp = n;
		md->cap_sp = cap;
	}
	return (int64_t)md->nsp++;
}

static int span_slot(sim_span *s)
{
	for (unsigned w = 0; w < 8; w++)
		if (s->freebits[w]) {
			unsigned b = (unsigned)__builtin_ctzll(s->freebits[w]);
			s->freebits[w] &= s->freebits[w] - 1;
			s->used++;
			return (int)(w * 64 + b);
		}
	if (s->bump < s->nslots) {
		s->used++;
		return s->bump++;
	}
	return -1;
}

static void sim_alloc(sim *S, sim_model *md, uint64_t addr, uint64_t n, unsigned lc)
{
	uint64_t *slot = stp_lt_map_slot(&md->obj, addr + 1, 1);
	if (!slot) {
		md->oom = 1;
		return;
	}
	if (n > LARGE_MAX) {
		/* whole pages, consecutive in the model's array; objects past
		 * 64 GiB (a damaged trace) are not placed */
		if (n > HUGE_MAX) {
			stp_lt_map_del(&md->obj, addr + 1, &n);
			return;
		}
		uint32_t k = (uint32_t)((n + PAGE_BYTES - 1) / PAGE_BYTES);
		while (md->npg + k > md->cap_pg) {
			size_t cap = md->cap_pg ? md->cap_pg * 2 : 64;
			sim_page *np = realloc(md->pg, cap * sizeof *np);
			if (!np) {
				md->oom = 1;
				return;
			}
			md->pg = np;
			md->cap_pg = cap;
		}
		uint32_t first = (uint32_t)md->npg;
		md->npg += k;
		for (uint32_t i = 0; i < k; i++) {
			memset(&md->pg[first + i], 0, sizeof md->pg[first + i]);
			md->pg[first + i].state = 3;
		}
		md->pages += k;
		if (md->pages > md->max_pages)
			md->max_pages = md->pages;
		*slot = 1ull << 63 | (uint64_t)k << 32 | (uint64_t)first;
		return;
	}
	if (n > STP_LT_SMALL_MAX) {
		unsigned nb = (unsigned)((n + STP_LT_BLOCK - 1) / STP_LT_BLOCK);
		int64_t at = take_blocks(md, nb, lc, 0);
		if (at < 0) {
			md->oom = 1;
			return;
		}
		*slot = 1ull << 62 | (uint64_t)nb << 40 | (uint64_t)at;
		return;
	}
	unsigned sc = class_of_size(S, n ? n : 1);
	uint32_t id = md->cur[lc][sc];
	int sl = id ? span_slot(&md->sp[id - 1]) : -1;
	if (sl < 0) {
		id = 0;
		u32vec *pv = &md->partial[lc][sc];
		while (pv->n && !id) {
			uint32_t c = pv->v[--pv->n];
			sim_span *s = &md->sp[c];
			if (s->alive && s->listed && s->used < s->nslots) {
				s->listed = 0;
				id = c + 1;
			}
		}
		if (!id) {
			int64_t c = new_span(md);
			unsigned nb = S->sc_blocks[sc];
			int64_t at = c < 0 ? -1 : take_blocks(md, nb, lc, 1);
			if (at < 0) {
				md->oom = 1;
				return;
			}
			sim_span *s = &md->sp[c];
			memset(s, 0, sizeof *s);
			s->page = (uint32_t)(at >> 8);
			s->block = (uint16_t)(at & 255);
			s->nblocks = (uint16_t)nb;
			s->nslots = (uint16_t)(nb * STP_LT_BLOCK / S->sc_size[sc]);
			s->sc = (uint8_t)sc;
			s->lc = (uint8_t)lc;
			s->alive = 1;
			id = (uint32_t)c + 1;
		}
		md->cur[lc][sc] = id;
		sl = span_slot(&md->sp[id - 1]);
	}
	*slot = (uint64_t)(id - 1) << 10 | (uint64_t)sl;
}

static void sim_free(sim_model *md, uint64_t addr)
{
	uint64_t v;
	if (!stp_lt_map_del(&md->obj, addr + 1, &v))
		return;
	if (v >> 63) {
		uint32_t k = (uint32_t)(v >> 32 & 0x7fffffff), first = (uint32_t)v;
		for (uint32_t i = 0; i < k; i++) {
			md->pg[first + i].state = 0;
			push(&md->freepg, first + i);
		}
		md->pages -= k;
		return;
	}
	if (v >> 62) {
		put_blocks(md, (uint32_t)(v >> 8 & 0xffffffffu), (unsigned)(v & 255), (unsigned)(v >> 40 & 0x3fffff));
		return;
	}
	uint32_t id = (uint32_t)(v >> 10);
	unsigned sl = (unsigned)(v & 1023);
	sim_span *s = &md->sp[id];
	s->freebits[sl >> 6] |= 1ull << (sl & 63);
	s->used--;
	int is_cur = md->cur[s->lc][s->sc] == id + 1;
	if (is_cur)
		return;
	if (!s->used) {
		put_blocks(md, s->page, s->block, s->nblocks);
		s->alive = 0;
		s->listed = 0;
		push(&md->freesp, id);
	} else if (!s->listed) {
		s->listed = 1;
		push(&md->partial[s->lc][s->sc], id);
	}
}

static void sample(sim *S, stp_lt_sim_point *p, uint64_t t)
{
	p->t_ns = t - S->t0;
	p->live = S->live;
	for (int i = 0; i < NM; i++) {
		p->pages[i] = S->mod[i].pages;
		p->blocks[i] = S->mod[i].blocks;
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
	sim_alloc(S, &S->mod[0], addr, size, STP_LT_NEVER);
	sim_alloc(S, &S->mod[1], addr, size, pred);
	sim_alloc(S, &S->mod[2], addr, size, own);
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
		sim_free(&S->mod[i], addr);
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

static void model_free(sim_model *md)
{
	free(md->pg);
	free(md->freepg.v);
	free(md->sp);
	free(md->freesp.v);
	for (unsigned l = 0; l < STP_LT_CLASSES; l++) {
		free(md->active[l].v);
		for (unsigned c = 0; c < STP_LT_SIZE_CLASSES; c++)
			free(md->partial[l][c].v);
	}
	stp_lt_map_free(&md->obj);
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
	S->nsc = stp_lt_size_classes(S->sc_size, S->sc_blocks);
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
	if (rc == 0 && (S->oom || S->mod[0].oom || S->mod[1].oom || S->mod[2].oom)) {
		snprintf(err, errlen, "%s: out of memory simulating the heap", trace);
		rc = -1;
	}
	if (rc == 0) {
		while (S->next_sample < STP_LT_SIM_SAMPLES)
			sample(S, &out->samples[S->next_sample++], S->t1);
		out->duration_ns = S->t1 - S->t0;
		for (int i = 0; i < NM; i++)
			out->max_pages[i] = S->mod[i].max_pages;
		/* the sites' own classes: their p95 over both passes, as learned */
		for (size_t k = 0; k < out->nsites; k++)
			out->site[k].label = (uint8_t)stp_lt_p95(l->ctx[out->site[k].ctx].hist);
	}
	l->hooks = old;
	for (int i = 0; i < NM; i++)
		model_free(&S->mod[i]);
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
