/*
 * slab.c - the plan's persistent entries as slots of exact sizes.
 *
 * A persistent entry is live over the whole planned period, so its range
 * overlaps no other entry of the plan: it may serve any request of its
 * size, at any time, in any order, without taking a range that another
 * entry was planned to use.  A request takes a free slot of exactly its
 * size (the lowest entry first), or a given slot (the one the start-up
 * sequence says it is: st_slab_take_at), and the slot is free again when
 * the block is freed.
 *
 * Invariants: every slot is either on its size's free list (doubly
 * linked, lowest entry first when nothing was taken out of order) or
 * handed out (then in `taken`, pool unit -> slot); a slot appears once;
 * is_free[i] says which.
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
	s->prev = st_map(n * sizeof *s->prev);
	s->is_free = st_map(n);
	if (!s->e || !s->next || !s->prev || !s->is_free)
		return -1;
	memcpy(s->e, e, n * sizeof *s->e);
	/* free lists by size, lowest entry first */
	for (uint32_t i = n; i-- > 0;)
		if (st_slab_release_slot(s, i) < 0)
			return -1;
	return 0;
}

void st_slab_free(st_slab *s)
{
	st_unmap(s->e, s->n * sizeof *s->e);
	st_unmap(s->next, s->n * sizeof *s->next);
	st_unmap(s->prev, s->n * sizeof *s->prev);
	st_unmap(s->is_free, s->n);
	st_ptrmap_free(&s->free);
	st_ptrmap_free(&s->taken);
	memset(s, 0, sizeof *s);
}

/* pushes slot i on the front of its size's list; -1: no memory */
int st_slab_release_slot(st_slab *s, uint32_t i)
{
	uint64_t *head = st_ptrmap_get(&s->free, s->e[i].size);
	if (!head) {
		if (st_ptrmap_put(&s->free, s->e[i].size, 0) < 0)
			return -1;
		head = st_ptrmap_get(&s->free, s->e[i].size);
	}
	s->next[i] = (uint32_t)*head;
	s->prev[i] = 0;
	if (*head)
		s->prev[*head - 1] = i + 1;
	*head = (uint64_t)i + 1;
	s->is_free[i] = 1;
	s->nfree++;
	return 0;
}

static void unlink_slot(st_slab *s, uint32_t i)
{
	if (s->prev[i])
		s->next[s->prev[i] - 1] = s->next[i];
	else
		*st_ptrmap_get(&s->free, s->e[i].size) = s->next[i];
	if (s->next[i])
		s->prev[s->next[i] - 1] = s->prev[i];
	s->is_free[i] = 0;
	s->nfree--;
}

uint32_t st_slab_peek(const st_slab *s, uint64_t size)
{
	if (!s->nfree)
		return UINT32_MAX;
	const uint64_t *head = st_ptrmap_get(&s->free, size);
	return head && *head ? (uint32_t)*head - 1 : UINT32_MAX;
}

uint32_t st_slab_next_free(const st_slab *s, uint32_t i)
{
	return s->next[i] ? s->next[i] - 1 : UINT32_MAX;
}

int st_slab_take_at(st_slab *s, uint32_t i)
{
	if (i >= s->n || !s->is_free[i] || st_ptrmap_put(&s->taken, s->e[i].off / s->unit, i) < 0)
		return 0;
	unlink_slot(s, i);
	return 1;
}

uint32_t st_slab_take(st_slab *s, uint64_t size)
{
	uint32_t i = st_slab_peek(s, size); /* nfree 0: the steady state, every persistent object live */
	return i != UINT32_MAX && st_slab_take_at(s, i) ? i : UINT32_MAX;
}

void st_slab_untake(st_slab *s, uint32_t i)
{
	uint64_t dummy;
	st_ptrmap_del(&s->taken, s->e[i].off / s->unit, &dummy);
	st_slab_release_slot(s, i); /* the size has a list: the slot came from it */
}

void st_slab_release(st_slab *s, uint64_t unit_off)
{
	uint64_t i;
	if (s->n && st_ptrmap_del(&s->taken, unit_off, &i))
		st_slab_release_slot(s, (uint32_t)i);
}
