/*
 * internal.h - what the planner's files share and nobody else sees.
 *
 * pl_work is the planner's working view of a request set: every request's
 * aligned size and its lifetime on a *linear* timeline [0, T) obtained by
 * cutting the repeating schedule at the tick where the fewest bytes cross
 * (docs/planner.md, "cyclic cut").  Requests that cross the cut, persistent
 * ones and those live the whole period are PINNED: placed first, stacked at
 * the bottom of the pool, live over all of [0, T).  Dynamic requests are not
 * placed.  Invariant: for STATIC requests s < e <= T; for PINNED s = 0, e = T.
 */
#ifndef STPROF_PLANNER_INTERNAL_H
#define STPROF_PLANNER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "stprof/plan.h"

enum { PL_STATIC = 0, PL_PINNED = 1, PL_DYNAMIC = 2 };

typedef struct pl_work {
	size_t n;
	uint32_t T;          /* working period */
	uint32_t *s, *e;     /* working lifetimes */
	uint64_t *size;      /* aligned sizes */
	uint8_t *kind;       /* PL_* */
	uint64_t cut;        /* the original tick where the timeline was cut */
	int ranked;          /* s and e are ranks of the rotated ticks, not ticks */
	uint64_t pinned_bytes;
	uint64_t pinned_extra; /* non-persistent requests pinned by the cut */
} pl_work;

int pl_work_build(const stp_reqs *r, uint64_t align, pl_work *w);
void pl_work_free(pl_work *w);
/* stp_lower_bound with sizes rounded up to align. */
uint64_t pl_lower_bound(const stp_reqs *r, int with_dynamic, uint64_t align);

/* ---- sorting: (key, value) pairs by key, LSD radix, stable */
typedef struct pl_kv {
	uint64_t k;
	uint32_t v;
} pl_kv;
/* tmp must hold n entries. */
void pl_sort_kv(pl_kv *a, pl_kv *tmp, size_t n);
/* The same for short arrays (insertion sort, else 8-bit digits). */
void pl_sort_kv_small(pl_kv *a, pl_kv *tmp, size_t n);

/* ---- interval index: which active intervals overlap [s, e)?
 * Built once over a fixed set of ids (their s/e never change); ids are
 * activated/deactivated as they are placed. */
typedef struct pl_itree {
	uint32_t n, size;     /* entries, leaves (power of two) */
	uint32_t *ids;        /* entries sorted by s */
	uint32_t *pos;        /* id -> position (UINT32_MAX = not indexed), length nid */
	uint32_t *mx;         /* segment tree of max e over active entries (0 = none) */
	const uint32_t *s, *e;
} pl_itree;
int pl_itree_init(pl_itree *t, const uint32_t *s, const uint32_t *e, size_t nid,
                  const uint32_t *ids, uint32_t n);
void pl_itree_free(pl_itree *t);
void pl_itree_set(pl_itree *t, uint32_t id, int active);
/* Calls fn(id, ctx) for every active id with s_id < e and e_id > s. */
void pl_itree_query(const pl_itree *t, uint32_t s, uint32_t e, void (*fn)(uint32_t, void *), void *ctx);

/* ---- first fit against placed requests, for large sets (firstfit.c).
 * Indexes the STATIC requests' lifetimes; pl_ff_add records a placement (no
 * removal); pl_ff_fit is the lowest offset >= floor where the request fits
 * against everything added so far, or, once it cannot end at or below limit
 * (UINT64_MAX: none), some offset where it does not. */
typedef struct pl_ff pl_ff;
pl_ff *pl_ff_new(const pl_work *w);
void pl_ff_free(pl_ff *f);
uint64_t pl_ff_fit(const pl_ff *f, uint32_t id, uint64_t size, uint64_t floor, uint64_t limit);
int pl_ff_add(pl_ff *f, uint32_t id, uint64_t off, uint64_t size);

/* ---- free rectangles of (address x time), bucketed by height */
typedef struct pl_rects pl_rects;
pl_rects *pl_rects_new(size_t hint, uint64_t top_offset, uint32_t T);
void pl_rects_free(pl_rects *r);
/* Places a block of height h over [s, e): picks the free rectangle of least
 * height that contains it in time (ties: latest start), splits it, returns
 * the block's offset.  Returns STP_NO_OFFSET when out of memory. */
uint64_t pl_rects_place(pl_rects *r, uint64_t h, uint32_t s, uint32_t e);
uint64_t pl_rects_top(const pl_rects *r);
size_t pl_rects_buckets(const pl_rects *r);

/* ---- the steps of stp_plan_build */
/* STAlloc static plan: offsets for PINNED and STATIC requests. */
int pl_stalloc(const stp_reqs *r, const pl_work *w, int fusion, uint64_t *off, stp_plan_stats *st);
/* Greedy by size with best fit (the baseline).  budget: visits of
 * overlapping requests allowed (decremented), NULL = no limit; deadline
 * (pl_cpu_now() seconds, 0 = none); over either, give up and return 1. */
int pl_greedy(const pl_work *w, uint64_t *off, uint64_t *budget, double deadline);
/* Compacts, then re-places the requests above lb, lowest fit; keeps it when
 * the pool shrinks.  Stops when *budget (visits, decremented) runs out. */
int pl_improve(const pl_work *w, uint64_t lb, uint64_t *off, uint64_t *moved, uint64_t *budget);
/* The improvement step's total work budget for n requests. */
static inline uint64_t pl_improve_budget(size_t n) { return 16 * (uint64_t)n + 4000000; }
/* Dynamic reusable space per HomoLayer group. */
int pl_dynamic(const stp_reqs *r, const pl_work *w, stp_plan *p);
/* Replays the trace's dynamic requests against their groups' reusable space
 * (best fit, as the runtime's dynamic allocator would) and fills
 * stats.dynamic_fit and stats.dynamic_fallback_peak. */
int pl_dynamic_replay(const stp_reqs *r, stp_plan *p);
/* startup.c: the pinned requests stacked anew at the bottom in the order
 * their objects arrive (persistent ones by start-up position, last on top),
 * then the start-up temporaries that outlive start-up placed over the slots
 * of persistent requests made after their free (p->startup_offset). */
int pl_place_startup(const stp_reqs *r, const pl_work *w, stp_plan *p);
/* Requests placed already that a search must avoid: obstacle o occupies
 * [lo[o], hi[o]) over ticks [s[o], e[o]) of the working timeline. */
typedef struct pl_obst {
	size_t n;
	const uint32_t *s, *e;
	const uint64_t *lo, *hi;
} pl_obst;
/* The exact step (search.c): places the STATIC requests at or above
 * pinned_bytes so that none reaches above cap nor meets an obstacle (ob,
 * may be NULL); pinned ones are stacked below, in index order.  off holds a
 * layout on entry (the best so far: it guides the search's first order;
 * guided: its first restart follows it).  Returns 1 found (off filled), 0
 * proven impossible, -1 out of time (deadline, pl_now() seconds; or
 * cpu_deadline, pl_cpu_now() seconds, HUGE_VAL: none) or nodes,
 * -2 out of memory.  Found: the offsets of the static and pinned requests
 * are written, the others' left as they were.  *nodes (may be NULL) is
 * increased by the nodes visited. */
int pl_search(const pl_work *w, const pl_obst *ob, uint64_t cap, double deadline, double cpu_deadline,
              uint64_t node_limit, int guided, uint64_t *off, uint64_t *nodes);
/* The most bytes live at once in the working view (pinned + static): no
 * placement of it has a smaller pool. */
uint64_t pl_work_bound(const pl_work *w);
/* Proves a placement of the working view free of overlaps: 0, or -1. */
int pl_check(const pl_work *w, const uint64_t *off);
/* The budgeted improvement (best.c): from the layout in best (pool above the
 * bound), searches for better ones until deadline; best only ever takes a
 * verified layout with a smaller pool.  Fills the search fields of st. */
int pl_best(const pl_work *w, uint64_t *best, double deadline, int verbose, stp_plan_stats *st);

/* Keeps cand in best when pl_check accepts it and its pool is smaller: 1
 * kept (st->step = step, st->found_seconds stamped), else 0. */
int pl_keep(const pl_work *w, uint64_t *best, const uint64_t *cand, int step, stp_plan_stats *st);
/* The budgeted improvement for sets above PL_EXACT_MAX static requests
 * (large.c): the requests near the peak by the exact search, the rest first
 * fit.  Same contract as pl_best. */
int pl_large(const pl_work *w, uint64_t *best, double deadline, int verbose, stp_plan_stats *st);
/* First fit window by window in time, several window sizes and orders
 * (window.c).  Same contract. */
int pl_windows(const pl_work *w, uint64_t *best, double deadline, int verbose, stp_plan_stats *st);
/* Re-placement around the peak by the exact search with obstacles
 * (repair.c).  Same contract. */
int pl_repair(const pl_work *w, uint64_t *best, double deadline, int verbose, stp_plan_stats *st);

/* Sections of the timeline between the distinct lifetime ends of the
 * STATIC requests (and the PINNED ones with pinned_too): request i covers
 * sections [sa[i], sb[i]); the others' entries are left alone.  Returns the
 * number of sections, or -1 out of memory. */
long pl_rank_ends(const pl_work *w, int pinned_too, uint32_t *sa, uint32_t *sb);

/* Pool of a placement: max offset + size over placed requests. */
uint64_t pl_pool(const pl_work *w, const uint64_t *off);

/* ---- misc */
double pl_now(void);
/* CPU seconds of the calling thread (a limit that a busy machine does not
 * shorten) */
double pl_cpu_now(void);
static inline uint64_t pl_align_up(uint64_t x, uint64_t a) { return a <= 1 ? x : (x + a - 1) / a * a; }
/* The bytes a start-up temporary at position i takes when placed (plans 1.4). */
static inline uint64_t pl_startup_bytes(const stp_reqs *r, const stp_plan *p, uint32_t i)
{
	return pl_align_up(STP_STARTUP_SIZE(r->startup[i]), p->align);
}
#endif
