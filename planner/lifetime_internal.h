/*
 * lifetime_internal.h - what the lifetime learner (lifetime_learn.c) shares
 * with the lifetime heap simulator (lifetime_sim.c): its calling contexts,
 * its hash map, and hooks called on every host allocation and free of a
 * trace as the learner reads it.
 */
#ifndef STPROF_PLANNER_LIFETIME_INTERNAL_H
#define STPROF_PLANNER_LIFETIME_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "stprof/lifetimes.h"

typedef struct lt_ctx {
	uint64_t pre[STP_LT_DEPTH_MAX]; /* pre[k-1]: hash of the innermost k frames */
	uint32_t n;
	uint64_t hist[STP_LT_CLASSES];
	uint64_t frame_mod[STP_LT_DEPTH_MAX]; /* module (index into names) and ELF address of each frame */
	uint64_t frame_va[STP_LT_DEPTH_MAX];
} lt_ctx;

/* u64 -> u64 open addressing, keys != 0 (callers add 1 where needed) */
typedef struct lt_map {
	uint64_t *k, *v;
	size_t cap, n;
} lt_map;
uint64_t *stp_lt_map_slot(lt_map *m, uint64_t key, int insert); /* NULL: absent, or no memory */
int stp_lt_map_del(lt_map *m, uint64_t key, uint64_t *val);     /* 1 removed */
void stp_lt_map_free(lt_map *m);
unsigned stp_lt_p95(const uint64_t *hist); /* the class of a histogram's 95th percentile */

typedef struct lt_hooks {
	void *data;
	/* ordinal: the allocation's index among the learner's allocations */
	void (*on_alloc)(void *data, uint64_t ordinal, uint64_t t, uint64_t addr, uint64_t size, size_t ctx,
	                 const lt_ctx *c);
	void (*on_free)(void *data, uint64_t t, uint64_t addr); /* only frees of allocations seen */
} lt_hooks;

struct stp_lt_learner {
	uint32_t depth;
	lt_ctx *ctx;
	size_t nctx, cap_ctx;
	lt_map by_key;      /* full context key -> index + 1 */
	uint64_t allocs;
	char **names;       /* module file names */
	char **paths;       /* ... their paths, ELF address ranges (for symbolizing) */
	uint64_t *vlo, *vsize;
	size_t nnames, cap_names;
	const lt_hooks *hooks;
};

#endif
