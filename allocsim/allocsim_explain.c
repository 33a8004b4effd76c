/*
 * allocsim_explain.c - a snapshot of a model's state for the worst-moment
 * explanation: every segment with its blocks in address order, where the
 * free bytes are (by pool, by size bin, by segment), and by call site: who
 * split the blocks that are now free, and whose live allocations pin
 * segments that hold free bytes (a segment can only go back to the device
 * when all of it is free).
 *
 * Works on any model built on the shared block arena (sim_base); models
 * without blocks (raw) give totals only.
 */
#include <string.h>

#include "allocsim_internal.h"
#include "stprof/allocpolicy.h"

typedef struct seg_acc {
	uint32_t seg;
	uint32_t head;
	uint64_t reserved, allocated, free_bytes, largest_free;
	uint32_t nblocks;
} seg_acc;

typedef struct site_acc {
	uint32_t stack;
	uint8_t kind; /* 0 live, 1 split_free, 2 pinning */
	uint64_t bytes;
} site_acc;

static int cmp_seg(const void *a, const void *b)
{
	const seg_acc *x = a, *y = b;
	if (x->free_bytes != y->free_bytes)
		return x->free_bytes > y->free_bytes ? -1 : 1;
	if (x->reserved != y->reserved)
		return x->reserved > y->reserved ? -1 : 1;
	return x->seg < y->seg ? -1 : x->seg > y->seg;
}

static int cmp_site_acc(const void *a, const void *b)
{
	const site_acc *x = a, *y = b;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

int allocsim_site_cmp(const void *a, const void *b)
{
	const allocsim_site *x = a, *y = b;
	if (x->split_free_bytes != y->split_free_bytes)
		return x->split_free_bytes > y->split_free_bytes ? -1 : 1;
	if (x->pinning_bytes != y->pinning_bytes)
		return x->pinning_bytes > y->pinning_bytes ? -1 : 1;
	if (x->splits != y->splits)
		return x->splits > y->splits ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

void allocsim_snapshot_clear(allocsim_snapshot *s)
{
	if (!s)
		return;
	free(s->segments);
	free(s->blocks);
	free(s->sites);
	memset(s, 0, sizeof *s);
}

int sim_snapshot(sim_base *m, allocsim_snapshot *s)
{
	memset(s, 0, sizeof *s);
	s->allocated = m->allocated;
	s->reserved = m->reserved;
	const sim_block *B = m->B;

	/* segments: index by segment id */
	uint32_t *segpos = calloc(m->nS ? m->nS : 1, sizeof *segpos);
	seg_acc *acc = calloc(m->nS ? m->nS : 1, sizeof *acc);
	size_t nacc = 0, nblocks = 0, nsite = 0;
	site_acc *sites = NULL;
	if (!segpos || !acc)
		goto oom;
	for (uint32_t i = 1; i < m->nB; i++) {
		if (!(B[i].flags & SB_LIVE))
			continue;
		uint32_t sg = B[i].seg;
		if (!segpos[sg]) {
			acc[nacc].seg = sg;
			segpos[sg] = (uint32_t)++nacc;
		}
		seg_acc *a = &acc[segpos[sg] - 1];
		if (!B[i].prev)
			a->head = i;
		a->nblocks++;
		nblocks++;
		if (B[i].flags & SB_ALLOCATED) {
			a->allocated += B[i].size;
			a->reserved += B[i].size;
		} else if (B[i].flags & SB_MAPPED) {
			a->free_bytes += B[i].size;
			a->reserved += B[i].size;
			if (B[i].size > a->largest_free)
				a->largest_free = B[i].size;
			s->free_bytes += B[i].size;
			s->free_blocks++;
			if (B[i].size > s->largest_free)
				s->largest_free = B[i].size;
			if (B[i].flags & SB_SMALL)
				s->free_small_pool += B[i].size;
			else
				s->free_large_pool += B[i].size;
			s->free_by_bin[allocpolicy_bfc_bin(B[i].size)] += B[i].size;
		}
	}
	qsort(acc, nacc, sizeof *acc, cmp_seg);
	s->segments = calloc(nacc ? nacc : 1, sizeof *s->segments);
	s->blocks = calloc(nblocks ? nblocks : 1, sizeof *s->blocks);
	/* at most 3 site entries a block */
	sites = malloc((nblocks * 3 + 1) * sizeof *sites);
	if (!s->segments || !s->blocks || !sites)
		goto oom;
	size_t nb = 0;
	for (size_t k = 0; k < nacc; k++) {
		const seg_acc *a = &acc[k];
		const sim_seg *sg = &m->S[a->seg];
		allocsim_segment_info *si = &s->segments[k];
		si->addr = sg->addr;
		si->size = sg->expandable ? a->reserved : sg->size;
		si->allocated = a->allocated;
		si->free_bytes = a->free_bytes;
		si->largest_free = a->largest_free;
		si->stream = sg->stream;
		si->small_pool = sg->small;
		si->expandable = sg->expandable;
		si->stack = sg->stack;
		si->first_block = (uint32_t)nb;
		for (uint32_t i = a->head; i && nb < nblocks; i = B[i].next) {
			allocsim_block_info *bi = &s->blocks[nb++];
			bi->addr = B[i].addr;
			bi->size = B[i].size;
			if (B[i].flags & SB_ALLOCATED) {
				bi->state = ALLOCSIM_BLOCK_ALLOCATED;
				bi->stack = B[i].stack;
				if (B[i].stack) {
					sites[nsite++] = (site_acc){B[i].stack, 0, B[i].size};
					if (a->free_bytes)
						sites[nsite++] = (site_acc){B[i].stack, 2, B[i].size};
				}
			} else if (B[i].flags & SB_MAPPED) {
				bi->state = ALLOCSIM_BLOCK_FREE;
				bi->split_stack = B[i].split_stack;
				if (B[i].prev && (B[B[i].prev].flags & SB_ALLOCATED))
					bi->left_stack = B[B[i].prev].stack;
				if (B[i].next && (B[B[i].next].flags & SB_ALLOCATED))
					bi->right_stack = B[B[i].next].stack;
				if (B[i].split_stack)
					sites[nsite++] = (site_acc){B[i].split_stack, 1, B[i].size};
			} else {
				bi->state = ALLOCSIM_BLOCK_UNMAPPED;
			}
		}
		si->nblocks = (uint32_t)(nb - si->first_block);
	}
	s->nsegments = nacc;
	s->nblocks = nb;

	/* sites: reduce by stack, add the split counts of the replay; sites
	 * that split blocks but hold nothing now come last */
	qsort(sites, nsite, sizeof *sites, cmp_site_acc);
	s->sites = calloc(nsite + 64 + 1, sizeof *s->sites);
	if (!s->sites)
		goto oom;
	size_t ns = 0;
	for (size_t k = 0; k < nsite;) {
		allocsim_site *o = &s->sites[ns++];
		o->stack = sites[k].stack;
		for (; k < nsite && sites[k].stack == o->stack; k++) {
			if (sites[k].kind == 0)
				o->live_bytes += sites[k].bytes;
			else if (sites[k].kind == 1)
				o->split_free_bytes += sites[k].bytes;
			else
				o->pinning_bytes += sites[k].bytes;
		}
		o->splits = sim_site_splits(m, o->stack);
	}
	/* sites that only split blocks earlier (nothing of theirs is in a
	 * segment now): the SPLIT_ONLY_MAX with most splits, picked with a
	 * small min-heap so the cost stays linear in the sites seen */
	size_t with_bytes = ns;
	enum { SPLIT_ONLY_MAX = 64 };
	allocsim_site heap[SPLIT_ONLY_MAX];
	size_t nh = 0;
	for (uint32_t h = 0; m->site_tab && h <= m->site_mask; h++) {
		uint32_t st = m->site_tab[h].key;
		if (!st)
			continue;
		/* binary search among the sites that hold bytes (sorted by stack) */
		size_t lo = 0, hi = with_bytes;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (s->sites[mid].stack < st)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < with_bytes && s->sites[lo].stack == st)
			continue;
		allocsim_site v = {.stack = st, .splits = m->site_tab[h].count};
		if (nh == SPLIT_ONLY_MAX && v.splits <= heap[0].splits)
			continue;
		size_t i;
		if (nh < SPLIT_ONLY_MAX) {
			i = nh++;
			while (i && heap[(i - 1) / 2].splits > v.splits) {
				heap[i] = heap[(i - 1) / 2];
				i = (i - 1) / 2;
			}
		} else {
			i = 0; /* replace the smallest, sift down */
			for (;;) {
				size_t c = 2 * i + 1;
				if (c >= nh)
					break;
				if (c + 1 < nh && heap[c + 1].splits < heap[c].splits)
					c++;
				if (heap[c].splits >= v.splits)
					break;
				heap[i] = heap[c];
				i = c;
			}
		}
		heap[i] = v;
	}
	for (size_t i = 0; i < nh; i++)
		s->sites[ns++] = heap[i];
	s->nsites = ns;
	qsort(s->sites, ns, sizeof *s->sites, allocsim_site_cmp);
	free(sites);
	free(segpos);
	free(acc);
	return 0;
oom:
	free(sites);
	free(segpos);
	free(acc);
	allocsim_snapshot_clear(s);
	return -1;
}
