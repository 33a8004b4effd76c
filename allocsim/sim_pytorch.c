/*
 * sim_pytorch.c - a model of PyTorch's CUDACachingAllocator (one device),
 * including the expandable-segments variant.  The rules and their order
 * follow c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator::malloc,
 * free, get_free_block, should_split, alloc_block,
 * release_available_cached_blocks, release_cached_blocks,
 * garbage_collect_cached_blocks, try_allocate_expandable_block, map_block,
 * unmap_block) and c10/core/AllocatorConfig; docs/allocator-models.md lists
 * them and what is left out (record_stream events, CUDA graph pools, free
 * memory callbacks).
 *
 * State: two pools (small: requests <= 1 MiB, large), each with a set of
 * free mapped blocks ordered by (stream, size, address) and, for expandable
 * segments, a set of unmapped ranges ordered by (stream, address).
 * Allocated blocks are in no set; slot_block[slot] names them.
 *
 * Invariants:
 *   - reserved = sum of live cudaMalloc segment sizes + mapped pages.
 *   - allocated = sum of sizes of allocated blocks.
 *   - two free mapped neighbours never coexist (freeing merges them), and
 *     neither do two unmapped neighbours.
 *   - all block sizes are multiples of 512; blocks of a segment tile it.
 */
#include <string.h>

#include "allocsim_internal.h"
#include "stprof/allocpolicy.h"

#define K_MIN_BLOCK ALLOCPOLICY_PT_MIN_BLOCK
#define K_SMALL_SIZE ALLOCPOLICY_PT_SMALL_SIZE
#define K_SMALL_BUFFER ALLOCPOLICY_PT_SMALL_BUFFER
#define K_MIN_LARGE_ALLOC ALLOCPOLICY_PT_MIN_LARGE_ALLOC
#define K_ROUND_LARGE ALLOCPOLICY_PT_ROUND_LARGE

typedef struct pt_pool {
	sim_tree blocks;   /* free mapped blocks: (stream, size, addr) */
	sim_tree unmapped; /* expandable: unmapped ranges: (stream, addr) */
	int small;
	uint32_t get_free_blocks_call_count;
} pt_pool;

typedef struct pt_model {
	sim_base b;
	pt_pool pools[2]; /* 0 large, 1 small */
	int gc_on;
	uint64_t gc_limit; /* allowed_memory_maximum */
	uint64_t va_size;  /* expandable segment address space */
	uint32_t *scratch;
	size_t nscratch, capscratch;
} pt_model;

/* ---------------------------------------------------------------- sets */

/* (stream, size) packed in one word: sizes are multiples of 512 below 2^53 */
static inline uint64_t fkey(uint16_t stream, uint64_t size)
{
	uint64_t s = size >> 9;
	if (s > (1ull << 44) - 1)
		s = (1ull << 44) - 1;
	return ((uint64_t)stream << 44) | s;
}

static inline void key_free(sim_block *x)
{
	x->k1 = fkey(x->stream, x->size);
	x->k2 = x->addr;
}

static inline void key_unmapped(sim_block *x)
{
	x->k1 = x->stream;
	x->k2 = x->addr;
}

static inline pt_pool *pool_of(pt_model *m, uint32_t i)
{
	return &m->pools[(m->b.B[i].flags & SB_SMALL) ? 1 : 0];
}

static void pool_insert(pt_model *m, uint32_t i)
{
	sim_block *B = m->b.B;
	pt_pool *p = pool_of(m, i);
	key_free(&B[i]);
	B[i].gc_base = p->get_free_blocks_call_count;
	st_insert(B, &p->blocks, i);
}

static void unmapped_insert(pt_model *m, uint32_t i)
{
	key_unmapped(&m->b.B[i]);
	st_insert(m->b.B, &pool_of(m, i)->unmapped, i);
}

static void set_erase(pt_model *m, uint32_t i)
{
	sim_block *B = m->b.B;
	pt_pool *p = pool_of(m, i);
	st_erase(B, (B[i].flags & SB_MAPPED) ? &p->blocks : &p->unmapped, i);
}

static inline int is_split(const sim_block *B, uint32_t i)
{
	return B[i].prev || B[i].next;
}

/* ---------------------------------------------------------------- merge */

/* try_merge_blocks: src must be free and in the same mapped state. */
static uint64_t try_merge(pt_model *m, uint32_t dst, uint32_t src)
{
	sim_block *B = m->b.B;
	if (!src || (B[src].flags & SB_ALLOCATED) || ((B[src].flags ^ B[dst].flags) & SB_MAPPED))
		return 0;
	set_erase(m, src);
	if (B[dst].prev == src) {
		B[dst].addr = B[src].addr;
		B[dst].prev = B[src].prev;
		if (B[dst].prev)
			B[B[dst].prev].next = dst;
	} else {
		B[dst].next = B[src].next;
		if (B[dst].next)
			B[B[dst].next].prev = dst;
	}
	if (!B[dst].split_stack)
		B[dst].split_stack = B[src].split_stack;
	uint64_t sz = B[src].size;
	B[dst].size += sz;
	sim_block_delete(&m->b, src);
	m->b.merges++;
	return sz;
}

static inline int mergeable(const sim_block *B, uint32_t i, uint32_t n)
{
	return n && !(B[n].flags & SB_ALLOCATED) && !((B[n].flags ^ B[i].flags) & SB_MAPPED);
}

/* free_block: merge with free neighbours, back into the pool.  Same result
 * as PyTorch (the block absorbs its free neighbours and is reinserted), but
 * the surviving node is a neighbour already in the set, and when the merged
 * key still sorts before that node's successor its key changes in place:
 * one set update instead of two erases and an insert. */
static void free_block(pt_model *m, uint32_t i)
{
	sim_block *B = m->b.B;
	B[i].flags &= (uint8_t)~SB_ALLOCATED;
	B[i].split_stack = 0;
	uint32_t p = B[i].prev, n = B[i].next;
	int pm = mergeable(B, i, p), nm = mergeable(B, i, n);
	if (!pm && !nm) {
		pool_insert(m, i);
		return;
	}
	pt_pool *pool = pool_of(m, i);
	uint32_t keep = pm ? p : n;
	if (pm && nm)
		st_erase(B, &pool->blocks, n);
	uint64_t addr = pm ? B[p].addr : B[i].addr;
	uint64_t size = B[i].size + (pm ? B[p].size : 0) + (nm ? B[n].size : 0);
	uint32_t nprev = pm ? B[p].prev : B[i].prev;
	uint32_t nnext = nm ? B[n].next : B[i].next;
	uint32_t split_stack = pm && B[p].split_stack ? B[p].split_stack : nm ? B[n].split_stack : 0;
	/* the merged key only grows (same stream, larger size): check the successor */
	uint64_t nk1 = fkey(B[keep].stream, size);
	uint32_t succ = st_next(B, keep);
	int in_place = !succ || B[succ].k1 > nk1 || (B[succ].k1 == nk1 && B[succ].k2 > addr);
	if (!in_place)
		st_erase(B, &pool->blocks, keep);
	sim_block_delete(&m->b, i); /* absorbed into keep */
	if (pm && nm)
		sim_block_delete(&m->b, n);
	B[keep].addr = addr;
	B[keep].size = size;
	B[keep].prev = nprev;
	B[keep].next = nnext;
	B[keep].split_stack = split_stack;
	if (nprev)
		B[nprev].next = keep;
	if (nnext)
		B[nnext].prev = keep;
	m->b.merges += (uint64_t)(pm + nm);
	if (in_place) {
		B[keep].k1 = nk1;
		B[keep].k2 = addr;
		B[keep].gc_base = pool->get_free_blocks_call_count;
	} else {
		pool_insert(m, keep);
	}
}

/* ---------------------------------------------------------------- search */

static inline uint64_t expandable_size(const sim_block *B, uint32_t i)
{
	uint32_t n = B[i].next;
	return B[i].size + (n && !(B[n].flags & SB_MAPPED) ? B[n].size : 0);
}

/* get_free_block: best fit on the same stream, then the two oversize rules
 * (which fail at once rather than trying the next candidate). */
static uint32_t get_free_block(pt_model *m, pt_pool *p, uint16_t stream, uint64_t size)
{
	sim_block *B = m->b.B;
	const allocsim_config *c = &m->b.cfg;
	if (m->gc_on)
		p->get_free_blocks_call_count++;
	uint32_t it = st_lower_bound(B, &p->blocks, fkey(stream, size), 0);
	if (!it || B[it].stream != stream)
		return 0;
	if ((B[it].flags & SB_EXPANDABLE) && c->expandable_segments) {
		/* prefer the block whose size counting its unmapped tail is least */
		uint32_t nx = st_next(B, it);
		while ((B[it].flags & SB_EXPANDABLE) && nx && B[nx].stream == stream &&
		       expandable_size(B, nx) < expandable_size(B, it)) {
			it = nx;
			nx = st_next(B, nx);
		}
	}
	if (size < c->max_split_size && B[it].size >= c->max_split_size)
		return 0;
	if (size >= c->max_split_size && B[it].size >= size + c->max_non_split_rounding)
		return 0;
	return it; /* still in the set: pt_alloc erases it or updates it in place */
}

static int should_split(pt_model *m, uint32_t i, uint64_t size)
{
	const sim_block *x = &m->b.B[i];
	uint64_t remaining = x->size - size;
	if ((x->flags & SB_SMALL) || m->b.cfg.expandable_segments)
		return remaining >= K_MIN_BLOCK;
	return size < m->b.cfg.max_split_size && remaining > K_SMALL_SIZE;
}

/* ---------------------------------------------------------------- release */

static void release_block(pt_model *m, uint32_t i)
{
	sim_block *B = m->b.B;
	st_erase(B, &pool_of(m, i)->blocks, i);
	m->b.reserved -= B[i].size;
	m->b.segment_frees++;
	sim_note_range(&m->b, 0, B[i].addr, B[i].size, B[i].seg);
	sim_seg_delete(&m->b, B[i].seg);
	sim_block_delete(&m->b, i);
}

static void release_expandable_segment(pt_model *m, uint32_t i)
{
	sim_block *B = m->b.B;
	st_erase(B, &pool_of(m, i)->unmapped, i);
	sim_seg_delete(&m->b, B[i].seg);
	sim_block_delete(&m->b, i);
}

/* unmap_block: give back the whole pages inside a free expandable block. */
static void unmap_block(pt_model *m, uint32_t i)
{
	sim_block *B = m->b.B;
	const sim_seg *sg = &m->b.S[B[i].seg];
	uint64_t page = sg->page, base = sg->addr;
	uint64_t begin = (B[i].addr - base + page - 1) / page;
	uint64_t end = (B[i].addr + B[i].size - base) / page;
	if (begin >= end)
		return;
	st_erase(B, &pool_of(m, i)->blocks, i);
	uint64_t ubeg = base + begin * page, ulen = (end - begin) * page;
	uint64_t before = ubeg - B[i].addr;
	uint64_t after = B[i].size - before - ulen;
	if (before) {
		uint32_t f = sim_block_new(&m->b);
		B = m->b.B;
		B[f] = B[i];
		B[f].height = 0;
		B[f].size = before;
		B[f].next = i;
		if (B[f].prev)
			B[B[f].prev].next = f;
		B[i].prev = f;
		pool_insert(m, f);
	}
	if (after) {
		uint32_t f = sim_block_new(&m->b);
		B = m->b.B;
		B[f] = B[i];
		B[f].height = 0;
		B[f].addr = ubeg + ulen;
		B[f].size = after;
		B[f].prev = i;
		if (B[f].next)
			B[B[f].next].prev = f;
		B[i].next = f;
		pool_insert(m, f);
	}
	B[i].addr = ubeg;
	B[i].size = ulen;
	B[i].flags &= (uint8_t)~SB_MAPPED;
	B[i].split_stack = 0;
	try_merge(m, i, B[i].prev);
	try_merge(m, i, B[i].next);
	unmapped_insert(m, i);
	m->b.reserved -= ulen;
	m->b.segment_frees++;
	sim_note_range(&m->b, 0, ubeg, ulen, B[i].seg);
}

static void scratch_push(pt_model *m, uint32_t i)
{
	if (m->nscratch == m->capscratch) {
		size_t cap = m->capscratch ? m->capscratch * 2 : 64;
		uint32_t *s = realloc(m->scratch, cap * sizeof *s);
		if (!s)
			abort();
		m->scratch = s;
		m->capscratch = cap;
	}
	m->scratch[m->nscratch++] = i;
}

/* release_blocks: cudaFree every unsplit cached block; unmap free pages of
 * expandable segments and drop segments left wholly unmapped. */
static void release_blocks(pt_model *m, pt_pool *p)
{
	m->nscratch = 0;
	for (uint32_t it = st_first(m->b.B, &p->blocks); it;) {
		uint32_t nx = st_next(m->b.B, it);
		if (m->b.B[it].flags & SB_EXPANDABLE)
			scratch_push(m, it);
		else if (!is_split(m->b.B, it))
			release_block(m, it);
		it = nx;
	}
	for (size_t k = 0; k < m->nscratch; k++) {
		uint32_t i = m->scratch[k];
		unmap_block(m, i);
		if (!(m->b.B[i].flags & SB_MAPPED) && !is_split(m->b.B, i))
			release_expandable_segment(m, i);
	}
}

static void release_cached_blocks(pt_model *m)
{
	release_blocks(m, &m->pools[0]);
	release_blocks(m, &m->pools[1]);
}

/* release_available_cached_blocks: free oversize (>= max_split_size) cached
 * blocks of this stream, one big enough or several starting from the largest. */
static int release_available_cached_blocks(pt_model *m, pt_pool *p, uint16_t stream, uint64_t size)
{
	const allocsim_config *c = &m->b.cfg;
	if (c->max_split_size == ALLOCSIM_UNLIMITED)
		return 0;
	sim_block *B = m->b.B;
	uint64_t key = size < c->max_split_size ? c->max_split_size : size;
	uint32_t it = st_lower_bound(B, &p->blocks, fkey(stream, key), 0);
	if (!it || B[it].stream != stream || (B[it].flags & SB_EXPANDABLE)) {
		uint32_t cur = it ? st_prev(B, it) : st_last(B, &p->blocks);
		if (!cur)
			return 0;
		uint64_t released = 0;
		while (cur && released < key && m->b.B[cur].size >= c->max_split_size &&
		       m->b.B[cur].stream == stream) {
			uint32_t pv = st_prev(m->b.B, cur);
			if (!(m->b.B[cur].flags & SB_EXPANDABLE) && !is_split(m->b.B, cur)) {
				released += m->b.B[cur].size;
				release_block(m, cur);
			}
			cur = pv;
		}
		return released >= key;
	}
	if (is_split(B, it))
		return 0;
	release_block(m, it);
	return 1;
}

/* garbage_collect_cached_blocks: with a memory limit and
 * garbage_collection_threshold, free unsplit large cached blocks older than
 * the average (in get_free_block calls) until reserved <= threshold * limit. */
static void garbage_collect(pt_model *m)
{
	pt_pool *p = &m->pools[0];
	uint64_t thr = (uint64_t)(m->b.cfg.garbage_collection_threshold * (double)m->gc_limit);
	if (m->b.reserved <= thr)
		return;
	uint64_t target = m->b.reserved - thr, reclaimed = 0, total_age = 0;
	int64_t count = 0;
	for (uint32_t it = st_first(m->b.B, &p->blocks); it; it = st_next(m->b.B, it))
		if (!is_split(m->b.B, it) && !(m->b.B[it].flags & SB_EXPANDABLE)) {
			total_age += (uint32_t)(p->get_free_blocks_call_count - m->b.B[it].gc_base);
			count++;
		}
	int freed = 1;
	while (reclaimed < target && freed && count > 0) {
		double age_thr = (double)total_age / (double)count;
		freed = 0;
		for (uint32_t it = st_first(m->b.B, &p->blocks); it;) {
			uint32_t nx = st_next(m->b.B, it);
			uint32_t age = p->get_free_blocks_call_count - m->b.B[it].gc_base;
			if (!is_split(m->b.B, it) && !(m->b.B[it].flags & SB_EXPANDABLE) && (double)age >= age_thr) {
				freed = 1;
				reclaimed += m->b.B[it].size;
				total_age -= age;
				count--;
				release_block(m, it);
			}
			it = nx;
		}
	}
}

/* ---------------------------------------------------------------- expandable */

static int fits_capacity(pt_model *m, uint64_t bytes, int force)
{
	return force || !m->b.cfg.capacity || m->b.reserved + bytes <= m->b.cfg.capacity;
}

static inline int allocatable(const sim_block *B, uint32_t i)
{
	return i && !(B[i].flags & SB_ALLOCATED);
}

static int has_address_space(const sim_block *B, uint32_t i, uint64_t size)
{
	uint64_t bytes = 0;
	while (bytes < size && allocatable(B, i)) {
		bytes += B[i].size;
		i = B[i].next;
	}
	return bytes >= size;
}

/* find_expandable_block: the lowest unmapped range of this stream (with the
 * free block just before it) that has room, or a new segment. */
static uint32_t find_expandable_block(pt_model *m, pt_pool *p, uint16_t stream, uint64_t size, uint32_t stack)
{
	sim_block *B = m->b.B;
	for (uint32_t it = st_lower_bound(B, &p->unmapped, stream, 0); it && B[it].stream == stream;
	     it = st_next(B, it)) {
		uint32_t c = it;
		if (allocatable(B, B[c].prev))
			c = B[c].prev;
		if (has_address_space(B, c, size))
			return c;
	}
	uint64_t page = p->small ? K_SMALL_BUFFER : m->b.cfg.large_segment_size;
	uint64_t va = (m->va_size + page - 1) / page * page;
	if (va < size) /* a request beyond the device (an OOM served anyway) */
		va = size <= UINT64_MAX - page ? (size + page - 1) / page * page : size;
	uint32_t s = sim_seg_new(&m->b);
	sim_seg *sg = &m->b.S[s];
	sg->addr = sim_va_alloc(&m->b, va, 1ull << 30);
	sg->size = va;
	sg->page = page;
	sg->stream = stream;
	sg->small = (uint8_t)p->small;
	sg->expandable = 1;
	sg->stack = stack;
	uint32_t i = sim_block_new(&m->b);
	B = m->b.B;
	B[i].addr = sg->addr;
	B[i].size = va;
	B[i].stream = stream;
	B[i].seg = s;
	B[i].flags = (uint8_t)(SB_LIVE | SB_EXPANDABLE | (p->small ? SB_SMALL : 0));
	unmapped_insert(m, i);
	return i;
}

/* map_block: back the first `size` bytes (rounded up to pages) of an
 * unmapped range; the rest stays unmapped; merge with free neighbours. */
static int map_block(pt_model *m, uint32_t i, uint64_t size, int force)
{
	sim_block *B = m->b.B;
	uint64_t page = m->b.S[B[i].seg].page;
	uint64_t bytes = (size + page - 1) / page * page;
	if (!fits_capacity(m, bytes, force))
		return 0;
	st_erase(B, &pool_of(m, i)->unmapped, i);
	B[i].flags |= SB_MAPPED;
	if (bytes < B[i].size) {
		uint32_t r = sim_block_new(&m->b);
		B = m->b.B;
		B[r] = B[i];
		B[r].height = 0;
		B[r].flags &= (uint8_t)~SB_MAPPED;
		B[r].addr = B[i].addr + bytes;
		B[r].size = B[i].size - bytes;
		B[r].prev = i;
		if (B[r].next)
			B[B[r].next].prev = r;
		B[i].next = r;
		B[i].size = bytes;
		unmapped_insert(m, r);
	}
	uint64_t at = B[i].addr; /* before merging with free neighbours */
	try_merge(m, i, B[i].prev);
	try_merge(m, i, B[i].next);
	pool_insert(m, i);
	m->b.reserved += bytes;
	m->b.segment_allocs++;
	sim_note_range(&m->b, 1, at, bytes, m->b.B[i].seg);
	if (bytes > m->b.largest_segment)
		m->b.largest_segment = bytes;
	return 1;
}

static uint32_t try_allocate_expandable_block(pt_model *m, pt_pool *p, uint16_t stream, uint64_t size,
                                              uint32_t stack, int force)
{
	uint32_t c = find_expandable_block(m, p, stream, size, stack);
	sim_block *B = m->b.B;
	if (!(B[c].flags & SB_MAPPED)) {
		uint64_t want = B[c].size < size ? B[c].size : size;
		if (!map_block(m, c, want, force))
			return 0;
	}
	B = m->b.B;
	while (B[c].size < size) {
		uint64_t remaining = size - B[c].size;
		uint32_t nc = B[c].next;
		if (!nc) /* larger than the segment's whole address space */
			return 0;
		uint64_t want = remaining < B[nc].size ? remaining : B[nc].size;
		if (!map_block(m, nc, want, force))
			return 0;
		B = m->b.B;
		c = nc;
	}
	st_erase(B, &p->blocks, c);
	return c;
}

/* ---------------------------------------------------------------- malloc */

static uint32_t alloc_block(pt_model *m, pt_pool *p, uint16_t stream, uint64_t size, uint64_t alloc_size,
                            uint32_t stack, int is_retry, int force)
{
	if (is_retry)
		m->b.retries++;
	if (m->b.cfg.expandable_segments)
		return try_allocate_expandable_block(m, p, stream, size, stack, force);
	if (!fits_capacity(m, alloc_size, force))
		return 0;
	uint32_t s = sim_seg_new(&m->b);
	sim_seg *sg = &m->b.S[s];
	sg->addr = sim_va_alloc(&m->b, alloc_size, K_SMALL_BUFFER);
	sg->size = alloc_size;
	sg->stream = stream;
	sg->small = (uint8_t)p->small;
	sg->stack = stack;
	uint32_t i = sim_block_new(&m->b);
	sim_block *B = m->b.B;
	B[i].addr = sg->addr;
	B[i].size = alloc_size;
	B[i].stream = stream;
	B[i].seg = s;
	B[i].flags = (uint8_t)(SB_LIVE | SB_MAPPED | (p->small ? SB_SMALL : 0));
	m->b.reserved += alloc_size;
	m->b.segment_allocs++;
	sim_note_range(&m->b, 1, sg->addr, alloc_size, s);
	if (alloc_size > m->b.largest_segment)
		m->b.largest_segment = alloc_size;
	return i;
}

static int pt_alloc(sim_base *base, uint32_t slot, uint64_t orig, uint16_t stream, uint32_t stack, uint64_t *addr)
{
	pt_model *m = (pt_model *)base;
	uint64_t size = allocpolicy_pt_round_size(&base->cfg, orig);
	pt_pool *p = &m->pools[size <= K_SMALL_SIZE ? 1 : 0];
	uint64_t alloc_size = allocpolicy_pt_allocation_size(&base->cfg, size);
	int oom = 0;
	uint32_t i = get_free_block(m, p, stream, size);
	int in_set = i != 0;
	if (!i) {
		if (m->gc_on)
			garbage_collect(m);
		i = alloc_block(m, p, stream, size, alloc_size, stack, 0, 0);
		if (!i && release_available_cached_blocks(m, p, stream, size))
			i = alloc_block(m, p, stream, size, alloc_size, stack, 0, 0);
		if (!i) {
			release_cached_blocks(m);
			i = alloc_block(m, p, stream, size, alloc_size, stack, 1, 0);
		}
		if (!i) {
			/* the program would get an OutOfMemoryError here; serve it
			 * beyond the capacity so the rest of the trace still replays */
			oom = 1;
			base->ooms++;
			i = alloc_block(m, p, stream, size, alloc_size, stack, 0, 1);
		}
	}
	sim_block *B = base->B;
	if (should_split(m, i, size)) {
		uint32_t r = i; /* the remainder keeps the found block's index */
		uint32_t a = sim_block_new(base);
		B = base->B;
		B[a].addr = B[r].addr;
		B[a].size = size;
		B[a].stream = stream;
		B[a].seg = B[r].seg;
		B[a].flags = (uint8_t)(SB_LIVE | SB_MAPPED | (B[r].flags & (SB_EXPANDABLE | SB_SMALL)));
		B[a].prev = B[r].prev;
		if (B[a].prev)
			B[B[a].prev].next = a;
		B[a].next = r;
		B[r].prev = a;
		B[r].addr += size;
		B[r].size -= size;
		B[r].split_stack = stack;
		/* the remainder's key is smaller than the found block's: when it
		 * still sorts after the predecessor, it keeps its place */
		uint64_t nk1 = fkey(B[r].stream, B[r].size);
		uint32_t pv = in_set ? st_prev(B, r) : 0;
		if (in_set && (!pv || st_less(&B[pv], nk1, B[r].addr))) {
			B[r].k1 = nk1;
			B[r].k2 = B[r].addr;
			B[r].gc_base = p->get_free_blocks_call_count;
		} else {
			if (in_set)
				st_erase(B, &p->blocks, r);
			pool_insert(m, r);
		}
		sim_note_split(base, stack);
		i = a;
	} else if (in_set) {
		st_erase(B, &p->blocks, i);
	}
	sim_block_take(base, i, slot, stack, addr);
	return oom;
}

static void pt_free(sim_base *base, uint32_t slot)
{
	pt_model *m = (pt_model *)base;
	uint32_t i = base->slot_block[slot];
	base->slot_block[slot] = 0;
	base->allocated -= base->B[i].size;
	base->B[i].stack = 0;
	free_block(m, i);
}

static void pt_empty_cache(sim_base *base)
{
	release_cached_blocks((pt_model *)base);
}

static void pt_destroy(sim_base *base)
{
	pt_model *m = (pt_model *)base;
	free(m->scratch);
	sim_base_release(base);
	free(m);
}

static void pt_key(const sim_block *b, uint64_t *k1, uint64_t *k2)
{
	*k1 = fkey(b->stream, b->size);
	*k2 = b->addr;
}

static int pt_check(sim_base *base, char *why, size_t len)
{
	pt_model *m = (pt_model *)base;
	const sim_tree *sets[4] = {&m->pools[0].blocks, &m->pools[0].unmapped, &m->pools[1].blocks,
	                           &m->pools[1].unmapped};
	long free_blocks = 0;
	for (uint32_t i = 1; i < base->nB; i++) {
		const sim_block *b = &base->B[i];
		if (!(b->flags & SB_LIVE) || (b->flags & SB_ALLOCATED))
			continue;
		free_blocks++;
		const pt_pool *p = &m->pools[(b->flags & SB_SMALL) ? 1 : 0];
		/* the block must be reachable in its own pool's set */
		const sim_tree *t = (b->flags & SB_MAPPED) ? &p->blocks : &p->unmapped;
		uint32_t x = t->root;
		while (x && x != i)
			x = base->B[x].c[st_less(&base->B[x], b->k1, b->k2)];
		if (x != i) {
			snprintf(why, len, "free block %u not found in its pool's set", i);
			return -1;
		}
		if (b->size % 512) {
			snprintf(why, len, "block %u size not a multiple of 512", i);
			return -1;
		}
	}
	return sim_check_arena(base, pt_key, sets, 4, free_blocks, why, len);
}

static const sim_ops pt_ops = {pt_alloc, pt_free, pt_empty_cache, pt_destroy, pt_check};

sim_base *sim_pytorch_new(const allocsim_config *c)
{
	pt_model *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	sim_base_init(&m->b, &pt_ops, c);
	m->pools[1].small = 1;
	m->gc_on = c->garbage_collection_threshold > 0 && c->capacity > 0;
	m->gc_limit = c->capacity;
	/* expandable segments reserve 1 1/8 of the device's memory of address
	 * space; with no capacity, 4 TiB */
	uint64_t total = c->capacity ? c->capacity : (4ull << 40);
	m->va_size = total + total / 8;
	return &m->b;
}
