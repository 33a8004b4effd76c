/*
 * slab.c - the plan's persistent entries as slots of exact sizes.
 *
 * A persistent entry is live over the whole planned period, so its range
 * overlaps no other entry of the plan: it may serve any request of its
 * size, at any time, in any order, without taking a range that another
 * entry was planned to use.  Start-up (imports, model construction, the
 * optimizer's lazy state) is where programs repeat least (hash
 * randomization, environment, threads), so these are matched by size
 * alone: a request takes a free slot of exactly its size, and the slot is
 * free again when the block is freed.
 *
 * Invariants: every slot is either on its size's free list or handed out
 * (then in `taken`, pool unit -> slot); a slot appears once.
 */
#include <string.h>

#include "internal.h"

int st_slab_build(st_slab *s, const st_entry *e, uint32_t n, uint64_t unit)
{
	memset(s, 0, sizeof *s);
	s->n = n;
	s->unit = unit;
	if (!n)
		return 0;
	s->e = st_map(n * sizeof *s->e);
	s->next = st_map(n * sizeof *s->next);
	if (!s->e || !s->next)
		return -1;
	memcpy(s->e, e, n * sizeof *s->e);
	/* free lists by size, lowest entry first */
	for (uint32_t i = n; i-- > 0;) {
		uint64_t *head = st_ptrmap_get(&s->free, s->e[i].size);
		s->next[i] = head ? (uint32_t)*head : 0;
		if (st_ptrmap_put(&s->free, s->e[i].size, (uint64_t)i + 1) < 0)
			return -1;
	}
	s->nfree = n;
	return 0;
}

void st_slab_free(st_slab *s)
{
	st_unmap(s->e, s->n * sizeof *s->e);
	st_unmap(s->next, s->n * sizeof *s->next);
	st_ptrmap_free(&s->free);
	st_ptrmap_free(&s->taken);
	memset(s, 0, sizeof *s);
}

uint32_t st_slab_peek(const st_slab *s, uint64_t size)
{
	if (!s->nfree)
		return UINT32_MAX;
	const uint64_t *head = st_ptrmap_get(&s->free, size);
	return head && *head ? (uint32_t)*head - 1 : UINT32_MAX;
}

uint32_t st_slab_take(st_slab *s, uint64_t size)
{
	if (!s->nfree)
		return UINT32_MAX; /* the steady state: every persistent object is live */
	uint64_t *head = st_ptrmap_get(&s->free, size);
	if (!head || !*head)
		return UINT32_MAX;
	uint32_t i = (uint32_t)*head - 1;
	if (st_ptrmap_put(&s->taken, s->e[i].off / s->unit, i) < 0)
		return UINT32_MAX;
	*head = s->next[i];
	s->nfree--;
	return i;
}

void st_slab_untake(st_slab *s, uint32_t i)
{
	uint64_t dummy;
	st_ptrmap_del(&s->taken, s->e[i].off / s->unit, &dummy);
	uint64_t *head = st_ptrmap_get(&s->free, s->e[i].size);
	s->next[i] = head ? (uint32_t)*head : 0;
	*head = (uint64_t)i + 1; /* the size has a list: the slot came from it */
	s->nfree++;
}

void st_slab_release(st_slab *s, uint64_t unit_off)
{
	uint64_t i;
	if (s->n && st_ptrmap_del(&s->taken, unit_off, &i)) {
		uint64_t *head = st_ptrmap_get(&s->free, s->e[i].size);
		s->next[i] = head ? (uint32_t)*head : 0;
		*head = i + 1;
		s->nfree++;
	}
}
