/*
 * host_spans.c - the models of libstalloc's lifetime heap
 * (allocator/lifetime_heap.c) for the host heap face (host.c): 2 MiB huge
 * pages of 256 blocks of 8 KiB, spans of one size class and one lifetime
 * class (stprof/allocpolicy.h's size rules).  With one lifetime class for
 * every object it is a size-class allocator on huge pages
 * (ALLOCSIM_HOST_SIZE_CLASSES); with the class of each object, the
 * lifetime heap (ALLOCSIM_HOST_LIFETIME), Llama's simulator (§2).
 *
 * It keeps the heap's placement: a request of at most 32 KiB takes a slot
 * of the current span of its (lifetime class, size class), else of a
 * partly free span of that pair, else of a new span; a span's or a larger
 * object's blocks come first from active pages of longer classes (small
 * spans: the longest first; larger objects: the next longer first), then
 * from the class's own active pages, then its open page, then a new page;
 * objects above 2 MiB take whole pages.  It keeps neither the heap's
 * deadlines (promotion, demotion) nor its trim or small pages.
 *
 * Placement word: bit 63: whole pages (count << 32 | first page); bit 62:
 * blocks (count << 40 | page << 8 | block); else span id << 10 | slot.
 * Invariants: a page's nlive is the popcount of its live bits; a page
 * counts in usage.pages iff nlive > 0 (or it is part of a whole-page run);
 * a span is in its partial list at most once (listed).
 */
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"
#include "stprof/allocpolicy.h"

#define NLC 8 /* lifetime classes (stprof/lifetimes.h) */
#define NSC ALLOCPOLICY_LT_SIZE_CLASSES
#define PAGE_BLOCKS ALLOCPOLICY_LT_PAGE_BLOCKS
#define PAGE_BYTES ALLOCPOLICY_LT_PAGE
#define LARGE_MAX (2u << 20)
#define HUGE_MAX (64ull << 30) /* objects past it (a damaged trace) are not placed */

typedef struct sp_page {
	uint64_t live[4];
	uint16_t nlive;
	uint8_t lc, state; /* 0 free, 1 open, 2 active, 3 whole-page run */
} sp_page;

typedef struct sp_span {
	uint64_t freebits[8]; /* freed slots */
	uint32_t page;
	uint16_t block, nblocks, nslots, used, bump;
	uint8_t sc, lc, listed, alive;
} sp_span;

typedef struct u32vec {
	uint32_t *v;
	size_t n, cap;
} u32vec;

typedef struct sp_model {
	sp_page *pg;
	size_t npg, cap_pg;
	u32vec freepg;
	sp_span *sp;
	size_t nsp, cap_sp;
	u32vec freesp;
	uint32_t open[NLC];          /* page + 1 */
	uint32_t cur[NLC][NSC];      /* span + 1 */
	u32vec partial[NLC][NSC];    /* lazily cleaned */
	u32vec active[NLC];          /* lazily cleaned */
	uint32_t sc_size[NSC];
	uint8_t sc_blocks[NSC];
	unsigned nsc;
} sp_model;

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

static unsigned class_of_size(const sp_model *md, uint64_t n)
{
	unsigned c = 0;
	while (c < md->nsc && md->sc_size[c] < n)
		c++;
	return c;
}

static int find_run(const sp_page *p, unsigned nb)
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

static void mark(sp_model *md, allocsim_host_usage *u, uint32_t pi, unsigned b, unsigned nb)
{
	sp_page *p = &md->pg[pi];
	for (unsigned i = b; i < b + nb; i++)
		p->live[i >> 6] |= 1ull << (i & 63);
	if (!p->nlive)
		u->pages++;
	p->nlive = (uint16_t)(p->nlive + nb);
	u->blocks += nb;
	host_note_pages(u);
}

static int grow_pages(sp_model *md, size_t need)
{
	if (need <= md->cap_pg)
		return 0;
	size_t cap = md->cap_pg ? md->cap_pg : 64;
	while (cap < need)
		cap *= 2;
	sp_page *n = realloc(md->pg, cap * sizeof *n);
	if (!n)
		return -1;
	md->pg = n;
	md->cap_pg = cap;
	return 0;
}

static int64_t new_page(sp_model *md, unsigned lc, uint8_t state)
{
	uint32_t pi;
	if (md->freepg.n) {
		pi = md->freepg.v[--md->freepg.n];
	} else {
		if (grow_pages(md, md->npg + 1) < 0)
			return -1;
		pi = (uint32_t)md->npg++;
	}
	memset(&md->pg[pi], 0, sizeof md->pg[pi]);
	md->pg[pi].lc = (uint8_t)lc;
	md->pg[pi].state = state;
	return pi;
}

/* The heap's blocks_take: returns page << 8 | block, or -1. */
static int64_t take_blocks(sp_model *md, allocsim_host_usage *u, unsigned nb, unsigned lc, int small)
{
	for (unsigned i = 0; i + lc < NLC; i++) {
		unsigned L = i + lc + 1 == NLC ? lc : small ? NLC - 1 - i : lc + 1 + i;
		u32vec *a = &md->active[L];
		unsigned looked = 0;
		for (size_t k = a->n; k-- > 0 && looked < 64;) {
			sp_page *p = &md->pg[a->v[k]];
			if (p->state != 2 || p->lc != L) {
				a->v[k] = a->v[--a->n]; /* stale */
				continue;
			}
			looked++;
			int b = find_run(p, nb);
			if (b >= 0) {
				mark(md, u, a->v[k], (unsigned)b, nb);
				return (int64_t)a->v[k] << 8 | b;
			}
		}
	}
	if (md->open[lc]) {
		uint32_t pi = md->open[lc] - 1;
		int b = find_run(&md->pg[pi], nb);
		if (b >= 0) {
			mark(md, u, pi, (unsigned)b, nb);
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
	mark(md, u, (uint32_t)pi, 0, nb);
	return pi << 8;
}

static void put_blocks(sp_model *md, allocsim_host_usage *u, uint32_t pi, unsigned b, unsigned nb)
{
	sp_page *p = &md->pg[pi];
	for (unsigned i = b; i < b + nb; i++)
		p->live[i >> 6] &= ~(1ull << (i & 63));
	p->nlive = (uint16_t)(p->nlive - nb);
	u->blocks -= nb;
	if (p->nlive)
		return;
	u->pages--;
	if (p->state == 2) {
		p->state = 0;
		push(&md->freepg, pi);
	}
}

static int64_t new_span(sp_model *md)
{
	if (md->freesp.n)
		return md->freesp.v[--md->freesp.n];
	if (md->nsp == md->cap_sp) {
		size_t cap = md->cap_sp ? md->cap_sp * 2 : 256;
		sp_span *n = realloc(md->sp, cap * sizeof *n);
		if (!n)
			return -1;
		md->sp = n;
		md->cap_sp = cap;
	}
	return (int64_t)md->nsp++;
}

static int span_slot(sp_span *s)
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

static int sp_alloc(void *model, allocsim_host_usage *u, uint64_t n, unsigned lc, uint64_t *where)
{
	sp_model *md = model;
	if (lc >= NLC)
		lc = NLC - 1;
	if (n > LARGE_MAX) {
		if (n > HUGE_MAX)
			return 0; /* *where stays HOST_NOWHERE */
		uint32_t k = (uint32_t)((n + PAGE_BYTES - 1) / PAGE_BYTES);
		if (grow_pages(md, md->npg + k) < 0)
			return -1;
		uint32_t first = (uint32_t)md->npg;
		md->npg += k;
		for (uint32_t i = 0; i < k; i++) {
			memset(&md->pg[first + i], 0, sizeof md->pg[first + i]);
			md->pg[first + i].state = 3;
		}
		u->pages += k;
		host_note_pages(u);
		*where = 1ull << 63 | (uint64_t)k << 32 | (uint64_t)first;
		return 0;
	}
	if (n > ALLOCPOLICY_LT_SMALL_MAX) {
		unsigned nb = (unsigned)((n + ALLOCPOLICY_LT_BLOCK - 1) / ALLOCPOLICY_LT_BLOCK);
		int64_t at = take_blocks(md, u, nb, lc, 0);
		if (at < 0)
			return -1;
		*where = 1ull << 62 | (uint64_t)nb << 40 | (uint64_t)at;
		return 0;
	}
	unsigned sc = class_of_size(md, n ? n : 1);
	uint32_t id = md->cur[lc][sc];
	int sl = id ? span_slot(&md->sp[id - 1]) : -1;
	if (sl < 0) {
		id = 0;
		u32vec *pv = &md->partial[lc][sc];
		while (pv->n && !id) {
			uint32_t c = pv->v[--pv->n];
			sp_span *s = &md->sp[c];
			if (s->alive && s->listed && s->used < s->nslots) {
				s->listed = 0;
				id = c + 1;
			}
		}
		if (!id) {
			int64_t c = new_span(md);
			unsigned nb = md->sc_blocks[sc];
			int64_t at = c < 0 ? -1 : take_blocks(md, u, nb, lc, 1);
			if (at < 0)
				return -1;
			sp_span *s = &md->sp[c];
			memset(s, 0, sizeof *s);
			s->page = (uint32_t)(at >> 8);
			s->block = (uint16_t)(at & 255);
			s->nblocks = (uint16_t)nb;
			s->nslots = (uint16_t)(nb * ALLOCPOLICY_LT_BLOCK / md->sc_size[sc]);
			s->sc = (uint8_t)sc;
			s->lc = (uint8_t)lc;
			s->alive = 1;
			id = (uint32_t)c + 1;
		}
		md->cur[lc][sc] = id;
		sl = span_slot(&md->sp[id - 1]);
	}
	*where = (uint64_t)(id - 1) << 10 | (uint64_t)sl;
	return 0;
}

static void sp_free(void *model, allocsim_host_usage *u, uint64_t v)
{
	sp_model *md = model;
	if (v >> 63) {
		uint32_t k = (uint32_t)(v >> 32 & 0x7fffffff), first = (uint32_t)v;
		for (uint32_t i = 0; i < k; i++) {
			md->pg[first + i].state = 0;
			push(&md->freepg, first + i);
		}
		u->pages -= k;
		return;
	}
	if (v >> 62) {
		put_blocks(md, u, (uint32_t)(v >> 8 & 0xffffffffu), (unsigned)(v & 255), (unsigned)(v >> 40 & 0x3fffff));
		return;
	}
	uint32_t id = (uint32_t)(v >> 10);
	unsigned sl = (unsigned)(v & 1023);
	sp_span *s = &md->sp[id];
	s->freebits[sl >> 6] |= 1ull << (sl & 63);
	s->used--;
	if (md->cur[s->lc][s->sc] == id + 1)
		return;
	if (!s->used) {
		put_blocks(md, u, s->page, s->block, s->nblocks);
		s->alive = 0;
		s->listed = 0;
		push(&md->freesp, id);
	} else if (!s->listed) {
		s->listed = 1;
		push(&md->partial[s->lc][s->sc], id);
	}
}

static void *sp_create(void)
{
	sp_model *md = calloc(1, sizeof *md);
	if (md)
		md->nsc = allocpolicy_lt_size_classes(md->sc_size, md->sc_blocks);
	return md;
}

static void sp_destroy(void *model)
{
	sp_model *md = model;
	free(md->pg);
	free(md->freepg.v);
	free(md->sp);
	free(md->freesp.v);
	for (unsigned l = 0; l < NLC; l++) {
		free(md->active[l].v);
		for (unsigned c = 0; c < NSC; c++)
			free(md->partial[l][c].v);
	}
	free(md);
}

const host_ops host_spans_ops = {sp_create, sp_destroy, sp_alloc, sp_free};
