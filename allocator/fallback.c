/*
 * fallback.c - where requests the plan does not cover go: a caching
 * allocator over the backend's raw blocks, with PyTorch's size rules
 * (allocpolicy.h: 512-byte rounding, roundup_power2_divisions) so that the
 * fallback behaves as the caching allocator a PyTorch user knows (with
 * roundup_power2_divisions:4, so that one cached block serves nearby
 * sizes).
 *   - on a device, tiny requests (rounded to 512 bytes) take a 512-byte
 *     slot of a 2 MiB chunk (PyTorch's small buffer); slots are reused,
 *     chunks kept;
 *   - the rest take a cached block of exactly their rounded size, or a new
 *     raw block of that size; a freed block is cached (up to cache_limit
 *     bytes) or given back.
 * Block bookkeeping is host-side (the blocks may be device memory).
 *
 * Invariants: blocks maps every live block to its requested size << 1 |
 * tiny; reserved = raw bytes held (live + cached blocks + tiny chunks);
 * cached = bytes of cached blocks.
 */
#include <string.h>

#include "internal.h"
#include "stprof/allocpolicy.h"

#define TINY ALLOCPOLICY_PT_MIN_BLOCK
#define TINY_CHUNK ALLOCPOLICY_PT_SMALL_BUFFER
#define TINY_KEY 0 /* cache key of the tiny slots (no rounded size is 0) */

typedef struct st_fnode {
	uint64_t ptr;
	uint32_t next; /* index + 1 */
} st_fnode;

void st_fallback_init(st_fallback *f, const stalloc_backend *b, uint64_t cache_limit, int no_cache, int tiny_slots)
{
	memset(f, 0, sizeof *f);
	f->b = b;
	/* PyTorch's rounding with roundup_power2_divisions:4 (a PyTorch
	 * setting): blocks of at most four sizes per power of two, so cached
	 * blocks are reused by requests of nearby sizes (at most 25% waste);
	 * 20 MiB segments */
	memset(&f->cfg, 0, sizeof f->cfg);
	for (int i = 0; i < ALLOCSIM_POW2_INTERVALS; i++)
		f->cfg.roundup_power2_divisions[i] = 4;
	f->cfg.large_segment_size = ALLOCPOLICY_PT_LARGE_BUFFER;
	f->cache_limit = cache_limit;
	f->no_cache = no_cache;
	f->tiny_slots = tiny_slots && !no_cache;
}

static uint32_t node_new(st_fallback *f)
{
	if (f->free_node) {
		uint32_t i = f->free_node - 1;
		f->free_node = f->nodes[i].next;
		return i;
	}
	if (f->nnodes == f->cap_nodes) {
		uint32_t nc = f->cap_nodes ? f->cap_nodes * 2 : 4096;
		st_fnode *n = st_map(nc * sizeof *n);
		if (!n)
			return UINT32_MAX;
		if (f->nodes)
			memcpy(n, f->nodes, f->nnodes * sizeof *n);
		st_unmap(f->nodes, f->cap_nodes * sizeof *n);
		f->nodes = n;
		f->cap_nodes = nc;
	}
	return f->nnodes++;
}

static int cache_push(st_fallback *f, uint64_t key, uint64_t ptr)
{
	uint32_t i = node_new(f);
	if (i == UINT32_MAX)
		return -1;
	uint64_t *head = st_ptrmap_get(&f->cache, key);
	f->nodes[i].ptr = ptr;
	f->nodes[i].next = head ? (uint32_t)*head : 0;
	if (st_ptrmap_put(&f->cache, key, (uint64_t)i + 1) < 0) {
		f->nodes[i].next = f->free_node;
		f->free_node = i + 1;
		return -1;
	}
	return 0;
}

static uint64_t cache_pop(st_fallback *f, uint64_t key)
{
	uint64_t *head = st_ptrmap_get(&f->cache, key);
	if (!head || !*head)
		return 0;
	uint32_t i = (uint32_t)*head - 1;
	uint64_t ptr = f->nodes[i].ptr;
	*head = f->nodes[i].next;
	f->nodes[i].next = f->free_node;
	f->free_node = i + 1;
	return ptr;
}

static void *tiny_alloc(st_fallback *f)
{
	uint64_t p = cache_pop(f, TINY_KEY);
	if (p)
		return (void *)(uintptr_t)p;
	if (f->tiny_chunks == f->cap_chunks) {
		uint64_t nc = f->cap_chunks ? f->cap_chunks * 2 : 64;
		uint64_t *n = st_map(nc * sizeof *n);
		if (!n)
			return NULL;
		if (f->chunks)
			memcpy(n, f->chunks, f->tiny_chunks * sizeof *n);
		st_unmap(f->chunks, f->cap_chunks * sizeof *n);
		f->chunks = n;
		f->cap_chunks = nc;
	}
	char *chunk = f->b->raw_alloc(f->b->ctx, TINY_CHUNK);
	if (!chunk)
		return NULL;
	f->chunks[f->tiny_chunks] = (uint64_t)(uintptr_t)chunk;
	f->reserved += TINY_CHUNK;
	f->tiny_chunks++;
	/* slots pushed high to low so the first ones handed out are low */
	for (uint64_t off = TINY_CHUNK - TINY; off > 0; off -= TINY)
		if (cache_push(f, TINY_KEY, (uint64_t)(uintptr_t)(chunk + off)) < 0)
			break; /* fewer slots; the chunk stays */
	return chunk;
}

void *st_fallback_alloc(st_fallback *f, uint64_t size, uint64_t align)
{
	if (!f->b->raw_alloc)
		return NULL;
	uint64_t rounded = allocpolicy_pt_round_size(&f->cfg, size);
	if (rounded < size)
		return NULL; /* near 2^64 */
	/* tiny slots on a device only: a host's small requests are its C
	 * library's (a 2 MiB chunk for one 512-byte block would be most of a
	 * small plan's pool) */
	int tiny = rounded == TINY && align <= TINY && f->tiny_slots;
	void *p;
	if (tiny) {
		p = tiny_alloc(f);
	} else {
		uint64_t c = f->no_cache ? 0 : cache_pop(f, rounded);
		if (c) {
			p = (void *)(uintptr_t)c;
			f->cached -= rounded;
		} else {
			p = f->b->raw_alloc(f->b->ctx, rounded);
			if (p)
				f->reserved += rounded;
		}
	}
	if (!p)
		return NULL;
	if (align > 1 && ((uintptr_t)p & (align - 1))) {
		/* the backend's blocks are not aligned enough: give it back */
		uint64_t dummy;
		st_ptrmap_put(&f->blocks, (uint64_t)(uintptr_t)p, size << 1 | (uint64_t)tiny);
		st_fallback_free(f, p, &dummy);
		return NULL;
	}
	if (st_ptrmap_put(&f->blocks, (uint64_t)(uintptr_t)p, size << 1 | (uint64_t)tiny) < 0) {
		if (tiny)
			cache_push(f, TINY_KEY, (uint64_t)(uintptr_t)p);
		else {
			f->b->raw_free(f->b->ctx, p, rounded);
			f->reserved -= rounded;
		}
		return NULL;
	}
	return p;
}

int st_fallback_free(st_fallback *f, void *p, uint64_t *size)
{
	uint64_t v;
	if (!st_ptrmap_del(&f->blocks, (uint64_t)(uintptr_t)p, &v))
		return 0;
	*size = v >> 1;
	if (v & 1) {
		if (cache_push(f, TINY_KEY, (uint64_t)(uintptr_t)p) < 0) {
			/* the slot is lost until exit; the chunk stays reserved */
		}
		return 1;
	}
	uint64_t rounded = allocpolicy_pt_round_size(&f->cfg, v >> 1);
	if (!f->no_cache && (!f->cache_limit || f->cached + rounded <= f->cache_limit) &&
	    cache_push(f, rounded, (uint64_t)(uintptr_t)p) == 0) {
		f->cached += rounded;
		return 1;
	}
	f->b->raw_free(f->b->ctx, p, rounded);
	f->reserved -= rounded;
	return 1;
}

uint64_t st_fallback_size(const st_fallback *f, const void *p)
{
	const uint64_t *v = st_ptrmap_get(&f->blocks, (uint64_t)(uintptr_t)p);
	return v ? *v >> 1 : 0;
}

void st_fallback_destroy(st_fallback *f)
{
	/* cached blocks and tiny chunks back to the backend; live blocks are
	 * the caller's (a destroyed allocator's blocks must not be used) */
	for (uint64_t i = 0; i < f->tiny_chunks; i++)
		f->b->raw_free(f->b->ctx, (void *)(uintptr_t)f->chunks[i], TINY_CHUNK);
	st_unmap(f->chunks, f->cap_chunks * sizeof *f->chunks);
	if (f->cache.cap) {
		for (size_t i = 0; i < f->cache.cap; i++) {
			if (f->cache.k[i] == UINT64_MAX || f->cache.k[i] == TINY_KEY)
				continue;
			for (uint32_t n = (uint32_t)f->cache.v[i]; n; n = f->nodes[n - 1].next)
				f->b->raw_free(f->b->ctx, (void *)(uintptr_t)f->nodes[n - 1].ptr, f->cache.k[i]);
		}
	}
	st_ptrmap_free(&f->blocks);
	st_ptrmap_free(&f->cache);
	st_unmap(f->nodes, f->cap_nodes * sizeof *f->nodes);
	memset(f, 0, sizeof *f);
}
