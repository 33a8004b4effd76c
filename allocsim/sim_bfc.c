/*
 * sim_bfc.c - a model of the BFC ("best-fit with coalescing") allocator of
 * XLA/TSL and TensorFlow (xla/tsl/framework/bfc_allocator.cc), what JAX and
 * TensorFlow use on GPUs.
 *
 * Requests are rounded up to 256 B.  Free chunks sit in 21 bins by size
 * (bin b: [256*2^b, 256*2^(b+1)), the last unbounded), each ordered by
 * (size, address); the search walks the bins upwards from the request's and
 * takes the first chunk that fits.  Because the bins partition the sizes in
 * order, that is the smallest fitting chunk, lowest address among equals,
 * which is what one set ordered by (size, address) gives: we keep one set
 * and compute bins only for reports.  A chunk is split when it is at least
 * twice the request or the leftover reaches max_internal_fragmentation
 * (128 MiB, or fragmentation_fraction * limit); the request takes the low
 * part.  A freed chunk merges with its next, then its previous neighbour.
 * When nothing fits, Extend adds a region: the region size doubles until it
 * covers the request (and doubles once more after a growth that did not need
 * it), capped by what the memory limit leaves; the first region is 2 MiB
 * with allow_growth, the whole limit otherwise.  Regions do not coalesce
 * (GPU sub-allocators do not support it).  With garbage_collection, wholly
 * free regions are returned before giving up.
 *
 * Invariants: reserved = pool_bytes = sum of region sizes; allocated =
 * bytes_in_use = sum of in-use chunk sizes; no two free chunks are adjacent.
 */
#include <string.h>

#include "allocsim_internal.h"
#include "stprof/allocpolicy.h"

#define BFC_MIN ALLOCPOLICY_BFC_MIN

typedef struct bfc_model {
	sim_base b;
	sim_tree free;         /* free chunks: (size, address) */
	uint64_t limit;        /* memory_limit_ */
	uint64_t curr_region;  /* curr_region_allocation_bytes_ */
	uint64_t max_internal_frag;
	uint32_t *scratch;
	size_t capscratch;
} bfc_model;

static void free_insert(bfc_model *m, uint32_t i)
{
	sim_block *B = m->b.B;
	B[i].k1 = B[i].size;
	B[i].k2 = B[i].addr;
	st_insert(B, &m->free, i);
}

/* Extend: add a region big enough for `rounded`, within the limit and the
 * device capacity.  force: ignore both (the request would OOM). */
static int extend(bfc_model *m, uint64_t rounded, uint32_t stack, int force)
{
	uint64_t available = m->limit > m->b.reserved ? m->limit - m->b.reserved : 0;
	available = available / BFC_MIN * BFC_MIN;
	if (force)
		available = UINT64_MAX / 4;
	if (rounded > available)
		return 0;
	int increased = 0;
	while (rounded > m->curr_region) {
		m->curr_region *= 2;
		increased = 1;
	}
	uint64_t bytes = m->curr_region < available ? m->curr_region : available;
	/* the device gives less than asked: back off by 0.9 like Extend does
	 * when the sub-allocator fails */
	uint64_t cap = m->b.cfg.capacity;
	if (cap && !force) {
		uint64_t dev = cap > m->b.reserved ? cap - m->b.reserved : 0;
		while (bytes > dev) {
			uint64_t back = allocpolicy_bfc_round((uint64_t)((double)bytes * 0.9));
			if (back >= bytes)
				back = bytes - BFC_MIN;
			bytes = back;
			if (bytes < rounded)
				return 0;
		}
	}
	if (!increased)
		m->curr_region *= 2;
	uint32_t s = sim_seg_new(&m->b);
	sim_seg *sg = &m->b.S[s];
	sg->addr = sim_va_alloc(&m->b, bytes, 2ull << 20);
	sg->size = bytes;
	sg->stack = stack;
	uint32_t i = sim_block_new(&m->b);
	sim_block *B = m->b.B;
	B[i].addr = sg->addr;
	B[i].size = bytes;
	B[i].seg = s;
	B[i].flags = SB_LIVE | SB_MAPPED;
	free_insert(m, i);
	m->b.reserved += bytes;
	m->b.segment_allocs++;
	sim_note_range(&m->b, 1, sg->addr, bytes, s);
	if (bytes > m->b.largest_segment)
		m->b.largest_segment = bytes;
	return 1;
}

/* DeallocateFreeRegions: return every wholly free region if that could
 * make room for the request. */
static int deallocate_free_regions(bfc_model *m, uint64_t rounded)
{
	if (!m->b.cfg.bfc_garbage_collection)
		return 0;
	size_t n = 0;
	uint64_t total = 0;
	for (uint32_t it = st_first(m->b.B, &m->free); it; it = st_next(m->b.B, it))
		if (!m->b.B[it].prev && !m->b.B[it].next) {
			if (n == m->capscratch) {
				size_t cap = m->capscratch ? m->capscratch * 2 : 64;
				uint32_t *sc = realloc(m->scratch, cap * sizeof *sc);
				if (!sc)
					abort();
				m->scratch = sc;
				m->capscratch = cap;
			}
			m->scratch[n++] = it;
			total += m->b.B[it].size;
		}
	if (!total)
		return 0;
	uint64_t available = (m->limit > m->b.reserved ? m->limit - m->b.reserved : 0) + total;
	if (rounded > available)
		return 0;
	for (size_t k = 0; k < n; k++) {
		uint32_t i = m->scratch[k];
		st_erase(m->b.B, &m->free, i);
		m->b.reserved -= m->b.B[i].size;
		m->b.segment_frees++;
		sim_note_range(&m->b, 0, m->b.B[i].addr, m->b.B[i].size, m->b.B[i].seg);
		sim_seg_delete(&m->b, m->b.B[i].seg);
		sim_block_delete(&m->b, i);
	}
	return 1;
}

/* The smallest free chunk that fits (still in the set), or 0. */
static uint32_t find_chunk(bfc_model *m, uint64_t rounded)
{
	return st_lower_bound(m->b.B, &m->free, rounded, 0);
}

static int bfc_alloc(sim_base *base, uint32_t slot, uint64_t size, uint16_t stream, uint32_t stack, uint64_t *addr)
{
	bfc_model *m = (bfc_model *)base;
	(void)stream; /* BFC is stream-agnostic */
	uint64_t rounded = allocpolicy_bfc_round(size ? size : 1);
	int oom = 0;
	uint32_t i = find_chunk(m, rounded);
	if (!i && extend(m, rounded, stack, 0))
		i = find_chunk(m, rounded);
	if (!i && deallocate_free_regions(m, rounded) && extend(m, rounded, stack, 0))
		i = find_chunk(m, rounded);
	if (!i) {
		oom = 1;
		base->ooms++;
		extend(m, rounded, stack, 1);
		i = find_chunk(m, rounded);
	}
	sim_block *B = base->B;
	if (B[i].size >= rounded * 2 || B[i].size - rounded >= m->max_internal_frag) {
		/* SplitChunk: the request takes the low part.  Here the remainder
		 * keeps the found chunk's node, and its place in the set when its
		 * smaller key still sorts after the predecessor */
		uint32_t r = i;
		uint32_t a = sim_block_new(base);
		B = base->B;
		B[a].addr = B[r].addr;
		B[a].size = rounded;
		B[a].seg = B[r].seg;
		B[a].flags = SB_LIVE | SB_MAPPED;
		B[a].prev = B[r].prev;
		if (B[a].prev)
			B[B[a].prev].next = a;
		B[a].next = r;
		B[r].prev = a;
		B[r].addr += rounded;
		B[r].size -= rounded;
		B[r].split_stack = stack;
		uint32_t pv = st_prev(B, r);
		if (!pv || st_less(&B[pv], B[r].size, B[r].addr)) {
			B[r].k1 = B[r].size;
			B[r].k2 = B[r].addr;
		} else {
			st_erase(B, &m->free, r);
			free_insert(m, r);
		}
		sim_note_split(base, stack);
		i = a;
	} else {
		st_erase(B, &m->free, i);
	}
	sim_block_take(base, i, slot, stack, addr);
	return oom;
}

/* DeallocateRaw + TryToCoalesce: the chunk merges with a free next one and
 * a free previous one.  The surviving node is a free neighbour already in
 * the set (the previous one if free, as in BFC), updated in place when its
 * larger key still sorts before its successor. */
static void bfc_free(sim_base *base, uint32_t slot)
{
	bfc_model *m = (bfc_model *)base;
	uint32_t i = base->slot_block[slot];
	base->slot_block[slot] = 0;
	sim_block *B = base->B;
	base->allocated -= B[i].size;
	B[i].flags &= (uint8_t)~SB_ALLOCATED;
	B[i].stack = 0;
	B[i].split_stack = 0;
	uint32_t p = B[i].prev, n = B[i].next;
	int pm = p && !(B[p].flags & SB_ALLOCATED), nm = n && !(B[n].flags & SB_ALLOCATED);
	if (!pm && !nm) {
		free_insert(m, i);
		return;
	}
	uint32_t keep = pm ? p : n;
	if (pm && nm)
		st_erase(B, &m->free, n);
	uint64_t addr = pm ? B[p].addr : B[i].addr;
	uint64_t size = B[i].size + (pm ? B[p].size : 0) + (nm ? B[n].size : 0);
	uint32_t nprev = pm ? B[p].prev : B[i].prev;
	uint32_t nnext = nm ? B[n].next : B[i].next;
	uint32_t split_stack = pm && B[p].split_stack ? B[p].split_stack : nm ? B[n].split_stack : 0;
	uint32_t succ = st_next(B, keep);
	int in_place = !succ || B[succ].k1 > size || (B[succ].k1 == size && B[succ].k2 > addr);
	if (!in_place)
		st_erase(B, &m->free, keep);
	sim_block_delete(base, i);
	if (pm && nm)
		sim_block_delete(base, n);
	B[keep].addr = addr;
	B[keep].size = size;
	B[keep].prev = nprev;
	B[keep].next = nnext;
	B[keep].split_stack = split_stack;
	if (nprev)
		B[nprev].next = keep;
	if (nnext)
		B[nnext].prev = keep;
	base->merges += (uint64_t)(pm + nm);
	if (in_place) {
		B[keep].k1 = size;
		B[keep].k2 = addr;
	} else {
		free_insert(m, keep);
	}
}

static void bfc_empty_cache(sim_base *base)
{
	/* BFC has no empty_cache; with garbage collection it returns wholly
	 * free regions, which is the closest thing */
	bfc_model *m = (bfc_model *)base;
	int gc = base->cfg.bfc_garbage_collection;
	base->cfg.bfc_garbage_collection = 1;
	deallocate_free_regions(m, 0);
	base->cfg.bfc_garbage_collection = gc;
}

static void bfc_destroy(sim_base *base)
{
	bfc_model *m = (bfc_model *)base;
	free(m->scratch);
	sim_base_release(base);
	free(m);
}

static void bfc_key(const sim_block *b, uint64_t *k1, uint64_t *k2)
{
	*k1 = b->size;
	*k2 = b->addr;
}

static int bfc_check(sim_base *base, char *why, size_t len)
{
	bfc_model *m = (bfc_model *)base;
	const sim_tree *sets[1] = {&m->free};
	long free_blocks = 0;
	for (uint32_t i = 1; i < base->nB; i++) {
		const sim_block *b = &base->B[i];
		if ((b->flags & SB_LIVE) && !(b->flags & SB_ALLOCATED))
			free_blocks++;
		if ((b->flags & SB_LIVE) && (b->size % BFC_MIN)) {
			snprintf(why, len, "chunk %u size not a multiple of 256", i);
			return -1;
		}
	}
	return sim_check_arena(base, bfc_key, sets, 1, free_blocks, why, len);
}

static const sim_ops bfc_ops = {bfc_alloc, bfc_free, bfc_empty_cache, bfc_destroy, bfc_check};

sim_base *sim_bfc_new(const allocsim_config *c)
{
	bfc_model *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	sim_base_init(&m->b, &bfc_ops, c);
	uint64_t limit = c->bfc_memory_limit ? c->bfc_memory_limit : c->capacity;
	if (!limit)
		limit = 1ull << 50; /* growing without a limit */
	m->limit = limit;
	uint64_t first = c->bfc_allow_growth ? (limit < (2ull << 20) ? limit : (2ull << 20)) : limit;
	m->curr_region = allocpolicy_bfc_round(first);
	m->max_internal_frag = c->bfc_fragmentation_fraction > 0
	                           ? (uint64_t)(c->bfc_fragmentation_fraction * (double)limit)
	                           : c->bfc_max_internal_fragmentation;
	return &m->b;
}
