/*
 * sample.h - the host heap's sampling (sample.c) as the heap interposers
 * see it: whether an allocation is recorded (stc_sample_take) and whether a
 * free is (stc_heap_forget), inline because every malloc and free asks.
 * Internal to collector/core/; included by preload.c, marker.c and
 * lifecycle.c (above sample.c).
 */
#ifndef STPROF_COLLECTOR_SAMPLE_H
#define STPROF_COLLECTOR_SAMPLE_H

#include "internal.h"

STC_HIDDEN extern int g_heap_sampling; /* sampling in force now */
STC_HIDDEN extern int g_heap_set;      /* g_cfg.heap_sample set: recorded blocks are remembered */
STC_HIDDEN extern STC_TLS int64_t t_sample_left; /* bytes to the thread's next sample point */
/* The string id of STP_HEAP_SAMPLE_ANNOTATION once interned (by whoever
 * records it first), for fold.c to recognize it; 0 before. */
STC_HIDDEN extern uint32_t g_heap_annotation_id;

STC_HIDDEN int stc_sample_take_slow(size_t n);
/* Whether a heap allocation of n bytes is recorded. */
static inline int stc_sample_take(size_t n)
{
	if (STC_LIKELY(!__atomic_load_n(&g_heap_sampling, __ATOMIC_RELAXED)))
		return 1;
	int64_t left = t_sample_left - (int64_t)n;
	if (STC_LIKELY(left > 0 && n < g_cfg.heap_sample)) {
		t_sample_left = left;
		return 0;
	}
	if (n < g_cfg.heap_sample)
		t_sample_left = left;
	return stc_sample_take_slow(n);
}

/* The set of live recorded heap blocks (used when g_heap_set): a counting
 * filter of 2^STC_HEAP_FILTER_BITS counters in front of exact tables.  A
 * counter stands for a granule of 2^STC_HEAP_GRANULE_SHIFT bytes of address
 * (blocks that start in it; granules 16 MiB apart share one), not for a
 * hash: every free reads its counter, and blocks near one another in memory
 * then read one cache line, where hashed counters missed the cache on most
 * frees (measured: 75% of the interposed free's time, a small GPT's loop on
 * PyTorch 2.11).  A granule is 16 bytes, the heap's alignment, so no two
 * blocks share one: with 64-byte granules the frees of blocks beside
 * recorded ones sent 424 frees a step of that loop to the exact tables for
 * 19 recorded ones; with 16-byte granules 11 (uprobes on
 * stc_heap_forget_slow's returns, steps 100-300).  1 MiB of counters. */
#define STC_HEAP_FILTER_BITS 20
#define STC_HEAP_GRANULE_SHIFT 4
STC_HIDDEN extern _Atomic uint8_t *g_heap_filter;
static inline uint64_t stc_heap_hash(uint64_t a)
{
	uint64_t h = (a >> 4) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 31);
}
static inline size_t stc_heap_filter_index(uint64_t a)
{
	return (size_t)(a >> STC_HEAP_GRANULE_SHIFT) & (((size_t)1 << STC_HEAP_FILTER_BITS) - 1);
}
STC_HIDDEN void stc_heap_remember(void *p);
STC_HIDDEN int stc_heap_forget_slow(void *p, uint64_t h);
/* Whether the free of p is recorded: p was, and is forgotten now. */
static inline int stc_heap_forget(void *p)
{
	if (STC_LIKELY(!g_heap_set))
		return 1;
	uint64_t a = (uint64_t)(uintptr_t)p;
	if (STC_LIKELY(!atomic_load_explicit(&g_heap_filter[stc_heap_filter_index(a)], memory_order_relaxed)))
		return 0;
	return stc_heap_forget_slow(p, stc_heap_hash(a));
}

/* Sampling as the options say (the collector's start, after the config). */
STC_HIDDEN void stc_sample_start(void);
/* An iteration marker of kind: the annotation value to record after it
 * ("stprof.heap_sample_bytes": 0 entering the full iterations, R leaving
 * them), or -1 for none. */
STC_HIDDEN int64_t stc_sample_marker(int kind);
STC_HIDDEN void stc_sample_atfork_child(void);

#endif
