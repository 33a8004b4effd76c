/*
 * spin.h - the spinlocks of the per-thread structures (a thread buffer's, a
 * pending list's): taken by their thread on every event, contended only by
 * a flush round, so a few compare-and-swaps and then sched_yield.  Inline:
 * they sit on every event's path.  Internal to collector/core/.
 */
#ifndef STPROF_COLLECTOR_SPIN_H
#define STPROF_COLLECTOR_SPIN_H

#include <sched.h>
#include <stdatomic.h>

static inline void stc_spin_lock(atomic_int *l)
{
	for (unsigned n = 0;; n++) {
		int expect = 0;
		if (atomic_compare_exchange_weak_explicit(l, &expect, 1, memory_order_acquire, memory_order_relaxed))
			return;
		if (n > 64)
			sched_yield();
	}
}

static inline int stc_spin_trylock(atomic_int *l)
{
	int expect = 0;
	return atomic_compare_exchange_strong_explicit(l, &expect, 1, memory_order_acquire, memory_order_relaxed);
}

static inline void stc_spin_unlock(atomic_int *l) { atomic_store_explicit(l, 0, memory_order_release); }

#endif
