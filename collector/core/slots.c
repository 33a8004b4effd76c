/*
 * slots.c - append-only registries of per-thread records (a thread's event
 * buffer, tbuf.c; its pending call paths, pending.c).  A thread claims a
 * record that no live thread owns, or links a new one at the head; an
 * exiting thread gives its record back (owned = 0) and leaves it linked, so
 * walkers (flush rounds, drains) never meet a record that goes away, and a
 * program that creates threads without end keeps as many records as it had
 * threads alive at once.  Memory from mmap, never the recorded heap.
 */
#include "internal.h"

stc_slot *stc_slot_claim(stc_slot *_Atomic *head, size_t size)
{
	stc_slot *s;
	for (s = atomic_load(head); s; s = s->next) {
		int expect = 0;
		if (!atomic_load_explicit(&s->owned, memory_order_relaxed) &&
		    atomic_compare_exchange_strong(&s->owned, &expect, 1))
			return s;
	}
	s = stc_mem_alloc(size);
	if (!s)
		return NULL;
	atomic_store(&s->owned, 1);
	stc_slot *first = atomic_load(head);
	do
		s->next = first;
	while (!atomic_compare_exchange_weak(head, &first, s));
	return s;
}
