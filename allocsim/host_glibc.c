/*
 * host_glibc.c - a glibc-like host heap (ptmalloc's main arena, in its
 * simplest form) for the host heap face (host.c), so a report can say what
 * the C library's allocator would hold for the same objects.
 *
 * A request of n bytes takes a chunk of max(32, n + 8 rounded up to 16)
 * bytes (the 8-byte size header, 16-byte alignment: MINSIZE and SIZE_SZ of
 * 64-bit glibc).  Chunks tile one arena growing upwards from its top
 * (brk): a request takes the smallest free chunk that fits, the lowest
 * address among equals (glibc's bins are best fit for large chunks and
 * exact for small ones), split when the rest is at least 32 bytes, the
 * rest staying free; else it is cut from the top.  A freed chunk merges
 * with free neighbours, and into the top when it borders it.  Requests of
 * at least the mmap threshold get a mapping of their own (n + 16 rounded
 * up to 4 KiB), in a second area managed the same way with 4 KiB pages
 * (the kernel reuses freed ranges); the threshold starts at 128 KiB and,
 * as glibc's, rises to the size of a freed mapping up to 32 MiB.
 * Not modelled: the tcache and fastbins (freed small chunks kept
 * unmerged for reuse), several arenas for threads, trimming of the top
 * (it does not change which pages hold a live object).
 *
 * A 2 MiB page or 8 KiB block counts while any live chunk overlaps it.
 * Invariants: an area's chunks tile [0, top) in address order through
 * prev/next; no two free chunks are adjacent and the last chunk is live
 * (a free one merges into the top); the tree holds exactly the free
 * chunks, keyed (size, address).
 */
#include <stdlib.h>
#include <string.h>

#include "allocsim_internal.h"
#include "host_internal.h"
#include "stprof/allocpolicy.h"

#define MINSIZE 32u
#define MMAP_MIN (128u << 10)     /* DEFAULT_MMAP_THRESHOLD_MIN */
#define MMAP_MAX (32u << 20)      /* DEFAULT_MMAP_THRESHOLD_MAX (64-bit) */
#define BLOCK_SHIFT 13            /* 8 KiB */
#define PAGE_SHIFT 21             /* 2 MiB */

typedef struct gl_area {
	sim_block *B;      /* B[0]: nil */
	uint32_t nB, capB, freeB;
	sim_tree free;     /* free chunks by (size, address) */
	uint32_t last;     /* the chunk below the top, 0 when none */
	uint64_t top, unit;
	uint32_t *nblk, *npg; /* live chunks overlapping each block, page */
	size_t capblk, cappg;
} gl_area;

typedef struct gl_model {
	gl_area arena, maps;
	uint64_t mmap_threshold;
} gl_model;

static uint32_t chunk_new(gl_area *a)
{
	if (a->freeB) {
		uint32_t i = a->freeB;
		a->freeB = a->B[i].next;
		memset(&a->B[i], 0, sizeof a->B[i]);
		return i;
	}
	if (a->nB == a->capB) {
		uint32_t cap = a->capB ? a->capB * 2 : 1024;
		sim_block *n = realloc(a->B, (size_t)cap * sizeof *n);
		if (!n)
			return 0;
		a->B = n;
		a->capB = cap;
		if (!a->nB) {
			memset(&a->B[0], 0, sizeof a->B[0]);
			a->nB = 1;
		}
	}
	memset(&a->B[a->nB], 0, sizeof a->B[a->nB]);
	return a->nB++;
}

static void chunk_delete(gl_area *a, uint32_t i)
{
	a->B[i].next = a->freeB;
	a->freeB = i;
}

static int grow_counts(uint32_t **v, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 256;
	while (c < need)
		c *= 2;
	uint32_t *n = realloc(*v, c * sizeof *n);
	if (!n)
		return -1;
	memset(n + *cap, 0, (c - *cap) * sizeof *n);
	*v = n;
	*cap = c;
	return 0;
}

/* [addr, addr + size) live (d = 1) or no longer (d = -1). */
static void count(gl_area *a, allocsim_host_usage *u, uint64_t addr, uint64_t size, int d)
{
	for (uint64_t b = addr >> BLOCK_SHIFT; b <= (addr + size - 1) >> BLOCK_SHIFT; b++)
		if (d > 0 ? a->nblk[b]++ == 0 : --a->nblk[b] == 0)
			u->blocks += (uint64_t)d;
	for (uint64_t p = addr >> PAGE_SHIFT; p <= (addr + size - 1) >> PAGE_SHIFT; p++)
		if (d > 0 ? a->npg[p]++ == 0 : --a->npg[p] == 0)
			u->pages += (uint64_t)d;
	host_note_pages(u);
}

static void free_insert(gl_area *a, uint32_t i)
{
	a->B[i].k1 = a->B[i].size;
	a->B[i].k2 = a->B[i].addr;
	st_insert(a->B, &a->free, i);
}

/* A chunk of c bytes (a multiple of the area's unit): its index, 0 when
 * out of memory. */
static uint32_t area_alloc(gl_area *a, allocsim_host_usage *u, uint64_t c)
{
	uint32_t i = st_lower_bound(a->B, &a->free, c, 0);
	if (i) {
		st_erase(a->B, &a->free, i);
		if (a->B[i].size - c >= (a->unit > MINSIZE ? a->unit : MINSIZE)) {
			uint32_t r = chunk_new(a); /* may move B */
			if (!r)
				return 0;
			sim_block *B = a->B;
			B[r].addr = B[i].addr + c;
			B[r].size = B[i].size - c;
			B[r].prev = i;
			B[r].next = B[i].next;
			if (B[i].next)
				B[B[i].next].prev = r;
			B[i].next = r;
			B[i].size = c;
			free_insert(a, r); /* never the last: the last chunk is live */
		}
	} else {
		uint64_t end = a->top + c;
		if (grow_counts(&a->nblk, &a->capblk, (size_t)((end - 1) >> BLOCK_SHIFT) + 1) < 0 ||
		    grow_counts(&a->npg, &a->cappg, (size_t)((end - 1) >> PAGE_SHIFT) + 1) < 0)
			return 0;
		i = chunk_new(a);
		if (!i)
			return 0;
		a->B[i].addr = a->top;
		a->B[i].size = c;
		a->B[i].prev = a->last;
		if (a->last)
			a->B[a->last].next = i;
		a->last = i;
		a->top = end;
	}
	a->B[i].flags = SB_ALLOCATED;
	count(a, u, a->B[i].addr, a->B[i].size, 1);
	return i;
}

static void area_free(gl_area *a, allocsim_host_usage *u, uint32_t i)
{
	sim_block *B = a->B;
	count(a, u, B[i].addr, B[i].size, -1);
	B[i].flags = 0;
	uint32_t p = B[i].prev, n = B[i].next;
	if (p && !(B[p].flags & SB_ALLOCATED)) { /* merge into the free one below */
		st_erase(B, &a->free, p);
		B[p].size += B[i].size;
		B[p].next = n;
		if (n)
			B[n].prev = p;
		else
			a->last = p;
		chunk_delete(a, i);
		i = p;
	}
	n = B[i].next;
	if (n && !(B[n].flags & SB_ALLOCATED)) { /* and the free one above */
		st_erase(B, &a->free, n);
		B[i].size += B[n].size;
		B[i].next = B[n].next;
		if (B[n].next)
			B[B[n].next].prev = i;
		else
			a->last = i;
		chunk_delete(a, n);
	}
	if (!B[i].next) { /* borders the top: into it */
		a->top = B[i].addr;
		a->last = B[i].prev;
		if (a->last)
			B[a->last].next = 0;
		chunk_delete(a, i);
		return;
	}
	free_insert(a, i);
}

static int gl_alloc(void *model, allocsim_host_usage *u, uint64_t n, unsigned lc, uint64_t *where)
{
	(void)lc;
	gl_model *g = model;
	if (n > (64ull << 30))
		return 0; /* past 64 GiB (a damaged trace): not placed, as in host_spans.c */
	if (n >= g->mmap_threshold) {
		uint64_t len = (n + 16 + 4095) & ~4095ull;
		uint32_t i = area_alloc(&g->maps, u, len);
		if (!i)
			return -1;
		*where = 1ull << 63 | i;
		return 0;
	}
	uint64_t c = (n + 8 + 15) & ~15ull;
	uint32_t i = area_alloc(&g->arena, u, c < MINSIZE ? MINSIZE : c);
	if (!i)
		return -1;
	*where = i;
	return 0;
}

static void gl_free(void *model, allocsim_host_usage *u, uint64_t where)
{
	gl_model *g = model;
	if (where >> 63) {
		uint32_t i = (uint32_t)where;
		uint64_t len = g->maps.B[i].size;
		if (len > g->mmap_threshold && len <= MMAP_MAX)
			g->mmap_threshold = len; /* glibc's dynamic threshold */
		area_free(&g->maps, u, i);
		return;
	}
	area_free(&g->arena, u, (uint32_t)where);
}

static void *gl_create(void)
{
	gl_model *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->arena.unit = 16;
	g->maps.unit = 4096;
	/* the mappings' area is apart from the arena: their pages never meet */
	g->mmap_threshold = MMAP_MIN;
	return g;
}

static void area_release(gl_area *a)
{
	free(a->B);
	free(a->nblk);
	free(a->npg);
}

static void gl_destroy(void *model)
{
	gl_model *g = model;
	area_release(&g->arena);
	area_release(&g->maps);
	free(g);
}

const host_ops host_glibc_ops = {gl_create, gl_destroy, gl_alloc, gl_free};
