/*
 * lifetime.h - libstalloc's lifetime-aware heap (Llama, shared/seeds/001_*),
 * private to allocator/:
 *
 *   lifetime_heap.c     huge pages, blocks, spans and their lifetime
 *                       classes; placement, recycling, deadlines, release
 *   lifetime_predict.c  the class of an allocation from its calling context
 *                       (a cache keyed by return address, stack height and
 *                       size class; the model on a miss)
 *   lifetime_preload.c  the malloc family in lifetime mode, set up from
 *                       STALLOC_PLAN when it names a lifetime model
 *
 * Calls run one way: preload.c -> lifetime_preload.c -> lifetime_predict.c,
 * lifetime_heap.c -> mem.c.  The heap's own tables come from mmap.
 */
#ifndef STPROF_ALLOCATOR_LIFETIME_H
#define STPROF_ALLOCATOR_LIFETIME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stprof/lifetimes.h"

#define LT_HP_SHIFT 21                 /* 2 MiB huge pages */
#define LT_HP ((size_t)1 << LT_HP_SHIFT)
#define LT_BLOCK_SHIFT 13              /* 8 KiB blocks, 256 a huge page */
#define LT_BLOCK ((size_t)1 << LT_BLOCK_SHIFT)
#define LT_BLOCKS (LT_HP / LT_BLOCK)
#define LT_SMALL_MAX STP_LT_SMALL_MAX  /* larger: whole blocks */
#define LT_LARGE_MAX (1u << 21)        /* larger: whole huge pages */

typedef struct lt_heap_stats {
	uint64_t hp_in_use, hp_peak, hp_released, hp_reused;
	uint64_t spans_opened, spans_recycled, large_recycled, residual_recycled;
	uint64_t promotions, demotions;
	uint64_t live_bytes, live_peak; /* usable bytes handed out */
	uint64_t by_class[STP_LT_CLASSES]; /* requests by predicted class (each follows one lt_predict) */
	uint64_t failed;                /* requests the heap could not place (reservation spent) */
	uint64_t pages[STP_LT_CLASSES], blocks[STP_LT_CLASSES]; /* pages of each class now, their live blocks */
	uint64_t dirty_pages;           /* empty, not yet given back */
	uint64_t blocks_released;       /* free blocks of sparse pages given back */
} lt_heap_stats;

/* ---- lifetime_heap.c */
int lt_heap_init(size_t reserve_bytes, int huge_pages); /* 0, or -1 (no memory) */
void *lt_heap_alloc(size_t n, size_t align, unsigned lc);
void lt_heap_free(void *p);                     /* p is ours (lt_heap_owns) */
size_t lt_heap_usable(const void *p);           /* p is ours */
int lt_heap_owns(const void *p);                /* lock-free range check */
size_t lt_heap_class_size(size_t n);            /* the usable size a request gets */
void lt_heap_lock(void);                        /* fork */
void lt_heap_unlock(void);
void lt_heap_forked_child(void);                /* no trim thread in a child */
void lt_heap_stats_get(lt_heap_stats *s);

/* ---- lifetime_predict.c */
int lt_predict_init(const stp_lt_model *m);     /* takes the model */
/* The class of an allocation of n bytes; `ret` the return address into the
 * caller of malloc, `sp` the stack pointer at the call. */
unsigned lt_predict(uintptr_t ret, uintptr_t sp, size_t n);
typedef struct lt_predict_stats {
	uint64_t misses, known, backoff, fallback, unwound_frames;
	uint64_t busy; /* asked from inside a miss: the fallback class, not cached */
} lt_predict_stats; /* cache hits: the heap's requests less misses and busy */
void lt_predict_stats_get(lt_predict_stats *s);
void lt_predict_lock(void); /* fork */
void lt_predict_unlock(void);

/* ---- lifetime_preload.c, for preload.c */
extern int lt_on;                               /* lifetime mode is active */
int lt_start(const char *model_path);           /* 0 active, -1 said why on stderr */
void lt_write_stats(const char *to);
void *lt_malloc(size_t n, uintptr_t ret, uintptr_t sp);
void *lt_calloc(size_t n, size_t m, uintptr_t ret, uintptr_t sp);
void *lt_realloc(void *p, size_t n, uintptr_t ret, uintptr_t sp);
void *lt_aligned(size_t align, size_t n, uintptr_t ret, uintptr_t sp);
int lt_free(void *p);                           /* 1: ours, freed */
size_t lt_usable(void *p);                      /* 0: not ours */

#endif
