/*
 * allocsim_arena.c - storage every allocator model shares: the block arena
 * (index 0 is the nil block), the segment table, the slot -> block map, a
 * bump allocator for simulated addresses, and the tree checker the tests use.
 *
 * Invariants: freed blocks and segments are recycled through free lists, so
 * the arena's size is bounded by the most blocks alive at once; B[0] stays
 * all zeros.  Out of memory aborts: a model cannot go on without its blocks,
 * and the sizes involved are bounded by the live state.
 */
#include <stdio.h>
#include <string.h>

#include "allocsim_internal.h"

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!q) {
		fprintf(stderr, "stprof: allocsim: out of memory (%zu bytes)\n", n);
		abort();
	}
	return q;
}

uint32_t sim_block_new(sim_base *m)
{
	uint32_t i;
	if (m->freeB) {
		i = m->freeB;
		m->freeB = m->B[i].next;
	} else {
		if (m->nB == m->capB) {
			uint32_t cap = m->capB ? m->capB * 2 : 1024;
			m->B = xrealloc(m->B, (size_t)cap * sizeof *m->B);
			m->capB = cap;
		}
		i = m->nB++;
	}
	memset(&m->B[i], 0, sizeof m->B[i]);
	m->B[i].flags = SB_LIVE;
	return i;
}

void sim_block_delete(sim_base *m, uint32_t i)
{
	memset(&m->B[i], 0, sizeof m->B[i]);
	m->B[i].next = m->freeB;
	m->freeB = i;
}

uint32_t sim_seg_new(sim_base *m)
{
	uint32_t s;
	if (m->freeS) {
		s = m->freeS;
		m->freeS = m->S[s].next_free;
	} else {
		if (m->nS == m->capS) {
			uint32_t cap = m->capS ? m->capS * 2 : 64;
			m->S = xrealloc(m->S, (size_t)cap * sizeof *m->S);
			m->capS = cap;
		}
		s = m->nS++;
	}
	memset(&m->S[s], 0, sizeof m->S[s]);
	m->S[s].live = 1;
	return s;
}

void sim_seg_delete(sim_base *m, uint32_t s)
{
	memset(&m->S[s], 0, sizeof m->S[s]);
	m->S[s].next_free = m->freeS;
	m->freeS = s;
}

int sim_slots_reserve(sim_base *m, uint32_t slot)
{
	if (slot < m->nslot)
		return 0;
	uint32_t n = m->nslot ? m->nslot : 1024;
	while (n <= slot)
		n *= 2;
	m->slot_block = xrealloc(m->slot_block, (size_t)n * sizeof *m->slot_block);
	memset(m->slot_block + m->nslot, 0, (size_t)(n - m->nslot) * sizeof *m->slot_block);
	m->nslot = n;
	return 0;
}

/* Addresses only break ties between equal-size blocks; they grow
 * monotonically (a real cudaMalloc may reuse freed ranges). */
uint64_t sim_va_alloc(sim_base *m, uint64_t size, uint64_t align)
{
	uint64_t a = (m->next_va + align - 1) & ~(align - 1);
	m->next_va = a + size;
	return a;
}

void sim_base_init(sim_base *m, const sim_ops *ops, const allocsim_config *c)
{
	memset(m, 0, sizeof *m);
	m->ops = ops;
	m->cfg = *c;
	m->next_va = 0x7f0000000000ull;
	m->nS = 1; /* segment 0 = none */
	m->capS = 64;
	m->S = xrealloc(NULL, m->capS * sizeof *m->S);
	memset(m->S, 0, sizeof *m->S);
	m->nB = 1; /* block 0 = nil */
	m->capB = 1024;
	m->B = xrealloc(NULL, m->capB * sizeof *m->B);
	memset(m->B, 0, sizeof *m->B);
}

void sim_base_release(sim_base *m)
{
	free(m->B);
	free(m->S);
	free(m->slot_block);
	free(m->site_tab);
}

static int sites_grow(sim_base *m)
{
	uint32_t omask = m->site_mask, nmask = m->site_tab ? omask * 2 + 1 : 255;
	struct sim_site_slot *nt = calloc((size_t)nmask + 1, sizeof *nt);
	if (!nt)
		return -1;
	for (uint32_t i = 0; m->site_tab && i <= omask; i++) {
		if (!m->site_tab[i].key)
			continue;
		uint32_t h = (m->site_tab[i].key * 2654435761u) & nmask;
		while (nt[h].key)
			h = (h + 1) & nmask;
		nt[h] = m->site_tab[i];
	}
	free(m->site_tab);
	m->site_tab = nt;
	m->site_mask = nmask;
	return 0;
}

void sim_note_split(sim_base *m, uint32_t stack)
{
	m->splits++;
	if (!m->count_sites || !stack)
		return;
	if (!m->site_tab || (m->nsites + 1) * 4 > (m->site_mask + 1) * 3)
		if (sites_grow(m))
			return;
	uint32_t h = (stack * 2654435761u) & m->site_mask;
	while (m->site_tab[h].key && m->site_tab[h].key != stack)
		h = (h + 1) & m->site_mask;
	if (!m->site_tab[h].key) {
		m->site_tab[h].key = stack;
		m->nsites++;
	}
	if (m->site_tab[h].count < UINT32_MAX)
		m->site_tab[h].count++;
}

uint64_t sim_site_splits(const sim_base *m, uint32_t stack)
{
	if (!m->site_tab || !stack)
		return 0;
	uint32_t h = (stack * 2654435761u) & m->site_mask;
	while (m->site_tab[h].key) {
		if (m->site_tab[h].key == stack)
			return m->site_tab[h].count;
		h = (h + 1) & m->site_mask;
	}
	return 0;
}

static long verify_rec(const sim_block *B, uint32_t x, uint32_t parent, int *ok, const sim_block **prev)
{
	if (!x)
		return 0;
	if (B[x].parent != parent)
		*ok = 0;
	long hl = verify_rec(B, B[x].c[0], x, ok, prev);
	if (*prev && !st_less(*prev, B[x].k1, B[x].k2))
		*ok = 0;
	*prev = &B[x];
	long hr = verify_rec(B, B[x].c[1], x, ok, prev);
	long h = 1 + (hl > hr ? hl : hr);
	if (h != B[x].height || hl - hr > 1 || hr - hl > 1)
		*ok = 0;
	return h;
}

static long count_rec(const sim_block *B, uint32_t x)
{
	return x ? 1 + count_rec(B, B[x].c[0]) + count_rec(B, B[x].c[1]) : 0;
}

long sim_tree_verify(const sim_block *B, const sim_tree *t)
{
	int ok = 1;
	const sim_block *prev = NULL;
	verify_rec(B, t->root, 0, &ok, &prev);
	long n = count_rec(B, t->root);
	if (!ok || n != (long)t->count || B[0].height || B[0].c[0] || B[0].c[1] || B[0].parent)
		return -1;
	return n;
}

#define BAD(...)                                \
	do {                                    \
		if (why && len)                 \
			snprintf(why, len, __VA_ARGS__); \
		return -1;                      \
	} while (0)

int sim_check_arena(sim_base *m, void (*key_fn)(const sim_block *b, uint64_t *k1, uint64_t *k2),
                    const sim_tree *const *sets, size_t nsets, long expect_in_sets, char *why, size_t len)
{
	const sim_block *B = m->B;
	long in_sets = 0;
	for (size_t k = 0; k < nsets; k++) {
		long n = sim_tree_verify(B, sets[k]);
		if (n < 0)
			BAD("set %zu is not a valid AVL tree", k);
		in_sets += n;
	}
	if (in_sets != expect_in_sets)
		BAD("sets hold %ld blocks, expected %ld", in_sets, expect_in_sets);
	uint64_t allocated = 0, reserved = 0;
	for (uint32_t i = 1; i < m->nB; i++) {
		const sim_block *b = &B[i];
		if (!(b->flags & SB_LIVE))
			continue;
		if (!b->seg || b->seg >= m->nS || !m->S[b->seg].live)
			BAD("block %u in a dead segment", i);
		if (b->next && (B[b->next].prev != i || B[b->next].addr != b->addr + b->size || B[b->next].seg != b->seg))
			BAD("block %u: bad next link", i);
		if (b->prev && (B[b->prev].next != i || B[b->prev].addr + B[b->prev].size != b->addr))
			BAD("block %u: bad prev link", i);
		if (!b->size)
			BAD("block %u: empty", i);
		if (b->flags & SB_ALLOCATED) {
			if (b->height)
				BAD("allocated block %u is in a set", i);
			allocated += b->size;
			reserved += b->size;
			continue;
		}
		if (!b->height)
			BAD("free block %u is in no set", i);
		uint64_t k1, k2;
		if (b->flags & SB_MAPPED) {
			key_fn(b, &k1, &k2);
			reserved += b->size;
		} else {
			k1 = b->stream;
			k2 = b->addr;
		}
		if (b->k1 != k1 || b->k2 != k2)
			BAD("block %u: stale key", i);
		if (b->next && !(B[b->next].flags & SB_ALLOCATED) && !((B[b->next].flags ^ b->flags) & SB_MAPPED))
			BAD("blocks %u and %u: free neighbours not merged", i, b->next);
	}
	if (allocated != m->allocated)
		BAD("allocated %llu, blocks say %llu", (unsigned long long)m->allocated, (unsigned long long)allocated);
	/* whole segments: a head block must start the segment, the blocks
	 * must cover it */
	for (uint32_t s = 1; s < m->nS; s++) {
		const sim_seg *g = &m->S[s];
		if (!g->live || g->expandable)
			continue;
		uint64_t cover = 0;
		int heads = 0;
		for (uint32_t i = 1; i < m->nB; i++)
			if ((B[i].flags & SB_LIVE) && B[i].seg == s) {
				cover += B[i].size;
				if (!B[i].prev) {
					heads++;
					if (B[i].addr != g->addr)
						BAD("segment %u: head block at the wrong address", s);
				}
			}
		if (heads != 1 || cover != g->size)
			BAD("segment %u: blocks cover %llu of %llu (%d heads)", s, (unsigned long long)cover,
			    (unsigned long long)g->size, heads);
	}
	if (reserved != m->reserved)
		BAD("reserved %llu, blocks say %llu", (unsigned long long)m->reserved, (unsigned long long)reserved);
	return 0;
}
