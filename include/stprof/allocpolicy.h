/*
 * stprof/allocpolicy.h - the size rules of the allocators stprof models,
 * in one place for the simulators (allocsim/) and the runtime allocator
 * (allocator/, libstalloc), so that a model and an allocator that follow
 * the same policy cannot drift apart.
 *
 * PyTorch (c10/cuda/CUDACachingAllocator.cpp): requests are rounded to
 * 512 B blocks (or to roundup_power2_divisions steps); requests up to 1 MiB
 * come from the small pool, whose segments are 2 MiB; larger ones from the
 * large pool, whose segments are large_segment_size (20 MiB) below 10 MiB
 * and the request rounded to 2 MiB above.
 *
 * BFC (xla/tsl/framework/bfc_allocator.cc): requests are rounded to 256 B;
 * free chunks sit in 21 bins, bin b holding [256*2^b, 256*2^(b+1)), the
 * last unbounded.
 *
 * libstalloc's lifetime heap (allocator/lifetime_heap.c) and its models
 * (allocsim/host_spans.c): 2 MiB huge pages of 256 blocks of 8 KiB; a
 * request up to 32 KiB takes a slot of a span (1 to 8 blocks cut into
 * slots of one size class: multiples of 16 up to 128, then four a
 * doubling), up to 2 MiB whole blocks, beyond whole huge pages.
 *
 * Pure functions of their arguments: no state, thread-safe, no allocation.
 * Sizes near 2^64 saturate instead of wrapping.
 */
#ifndef STPROF_ALLOCPOLICY_H
#define STPROF_ALLOCPOLICY_H

#include <stdint.h>

#include "stprof/allocsim.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ALLOCPOLICY_PT_MIN_BLOCK 512ull                 /* kMinBlockSize */
#define ALLOCPOLICY_PT_SMALL_SIZE (1ull << 20)          /* kSmallSize */
#define ALLOCPOLICY_PT_SMALL_BUFFER (2ull << 20)        /* kSmallBuffer */
#define ALLOCPOLICY_PT_LARGE_BUFFER (20ull << 20)       /* kLargeBuffer */
#define ALLOCPOLICY_PT_MIN_LARGE_ALLOC (10ull << 20)    /* kMinLargeAlloc */
#define ALLOCPOLICY_PT_ROUND_LARGE (2ull << 20)         /* kRoundLarge */

#define ALLOCPOLICY_BFC_MIN 256ull                      /* kMinAllocationSize */
#define ALLOCPOLICY_BFC_BINS 21                         /* kNumBins */

/* roundup_power2_divisions in force for a request of this size. */
uint32_t allocpolicy_pt_divisions(const allocsim_config *c, uint64_t size);
/* PyTorch's round_size: the block size a request gets. */
uint64_t allocpolicy_pt_round_size(const allocsim_config *c, uint64_t size);
/* PyTorch's get_allocation_size: the segment size a (rounded) request
 * makes when no cached block fits. */
uint64_t allocpolicy_pt_allocation_size(const allocsim_config *c, uint64_t size);
/* 1 when a (rounded) request goes to PyTorch's small pool. */
static inline int allocpolicy_pt_is_small(uint64_t size) { return size <= ALLOCPOLICY_PT_SMALL_SIZE; }

#define ALLOCPOLICY_LT_PAGE (2ull << 20)                 /* a huge page */
#define ALLOCPOLICY_LT_BLOCK 8192u                      /* a block */
#define ALLOCPOLICY_LT_PAGE_BLOCKS 256u                 /* blocks of a page */
#define ALLOCPOLICY_LT_SMALL_MAX 32768u                 /* larger: whole blocks */
#define ALLOCPOLICY_LT_SIZE_CLASSES 48                  /* at most this many */
/* The lifetime heap's size classes: fills size[] and blocks[] (the 8 KiB
 * blocks of a span of that class: the fewest, 1..8, whose tail is at most
 * 1/16) with ALLOCPOLICY_LT_SIZE_CLASSES entries at most; returns the count. */
unsigned allocpolicy_lt_size_classes(uint32_t *size, uint8_t *blocks);

/* BFC's RoundedBytes. */
uint64_t allocpolicy_bfc_round(uint64_t size);
/* BFC's BinNumForSize. */
unsigned allocpolicy_bfc_bin(uint64_t size);

#ifdef __cplusplus
}
#endif
#endif
