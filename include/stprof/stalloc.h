/*
 * stprof/stalloc.h - libstalloc: the runtime allocator that enforces an
 * allocation plan (a `stprof plan` file, docs/plan-format.md).
 *
 * One pool holds every planned request at the offset the plan gave it.  A
 * request is matched against the plan's signature sequence (the requests of
 * one iteration in allocation order, then again for the next iteration) by
 * its size:
 *   - the entry at the cursor, or one a few entries ahead (entries the
 *     program skipped this time), or one skipped a moment ago (reordered
 *     requests): a hit, served at its planned offset in O(1);
 *   - after a run of misses, the cursor jumps to the place in the sequence
 *     where the last requests' sizes line up again (a resync), so one extra
 *     or missing request never throws the rest of the run to the fallback,
 *     as index-only matching does;
 *   - a dynamic entry (a request whose size varies, MoE) takes the best
 *     fitting free range of its group's reusable space;
 *   - anything else goes to the fallback: a caching allocator with
 *     PyTorch's size rules (stprof/allocpolicy.h) and a pool of 512-byte
 *     slots for tiny requests, over the backend's raw allocations; or, when
 *     the caller keeps its own allocator (the host preload), NULL.
 * Persistent requests take slots: a plan's start-up sequence (the
 * requests before the planned iteration) is followed with the same
 * matcher, so each takes its own slot and a temporary of its size none.
 * An entry sized for the largest request seen at its place (a size that
 * varies from step to step) serves any request up to it; where a plan's
 * shapes vary, requests it does not place take free pool space before
 * the fallback.
 * Iteration boundaries come from stalloc_step() (the marker API's
 * ITER_BEGIN, the PyTorch shim's optimizer steps) or from the sequence
 * wrapping around by itself.
 *
 * Safety: a planned range is handed out only when no live allocation of the
 * pool overlaps it (an occupancy bitmap at the plan's alignment is checked,
 * then set); otherwise the request goes to the fallback.  So the allocator
 * never returns memory that is still live, whatever the program does.  All
 * calls are thread-safe (one lock).
 *
 * The allocator takes no memory from malloc after stalloc_new(): its tables
 * are mmap'd, so it can sit under a malloc interposer.
 */
#ifndef STPROF_STALLOC_H
#define STPROF_STALLOC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "outfile.h"

#ifdef __cplusplus
extern "C" {
#endif

struct stp_reqs;
struct stp_plan;

/* Where memory comes from: the pool (reserved once) and the fallback's raw
 * blocks.  raw_alloc NULL: no fallback, unmatched requests get NULL. */
typedef struct stalloc_backend {
	void *(*reserve)(void *ctx, uint64_t size);           /* the pool; NULL on failure */
	void (*unreserve)(void *ctx, void *base, uint64_t size);
	void *(*raw_alloc)(void *ctx, uint64_t size);         /* fallback blocks */
	void (*raw_free)(void *ctx, void *p, uint64_t size);
	void *ctx;
	const char *name;                                    /* "host", "cuda", ... */
} stalloc_backend;

typedef struct stalloc_opts {
	uint64_t min_size;       /* requests below it are not matched (default: the plan's) */
	uint32_t lookahead;      /* entries looked at ahead of the cursor (default 32) */
	uint32_t resync_after;   /* misses in a row before a resync is tried (default 2) */
	uint64_t cache_limit;    /* fallback: bytes kept cached at most; 0 unlimited; default
	                          * (UINT64_MAX): unlimited for a device plan (as PyTorch's
	                          * caching allocator), the pool's size and at least 64 MiB
	                          * for a host plan */
	int no_fallback_cache;   /* fallback: every free goes back to the backend */
	int match_by_index;      /* STAlloc's published rule instead: the request's index
	                          * in the iteration, no lookahead, no resync (to compare) */
	FILE *log;               /* each match decision, one line (STALLOC_LOG); NULL: none */
	int no_wait_for_step;    /* match the iteration from the start even when the plan
	                          * was cut from iteration markers (default: from the
	                          * first stalloc_step on) */
} stalloc_opts;

void stalloc_opts_init(stalloc_opts *o);

typedef struct stalloc_stats {
	uint64_t pool;                 /* bytes reserved for the plan */
	uint64_t layout;               /* the part of it the plan's ranges span (above: dynamic space) */
	uint64_t align;
	uint64_t entries, dynamic_entries; /* the plan's signature sequence */
	uint64_t requests;             /* stalloc_alloc calls */
	uint64_t hits;                 /* served at their planned offset (the iteration) */
	uint64_t slot_hits;            /* served by a persistent entry's slot of their size */
	uint64_t startup_hits;         /* start-up temporaries served in the pool before the first
	                                * iteration (where its entries lie, all free then) */
	uint64_t free_hits;            /* shapes vary: requests the plan did not serve, given free
	                                * pool space (counted in unmatched, occupied or
	                                * dynamic_nofit too) */
	uint64_t dynamic_hits;         /* served from their group's reusable space */
	uint64_t dynamic_nofit;        /* dynamic, but no free range of the group fits: fallback */
	uint64_t skipped;              /* plan entries the program did not request in turn */
	uint64_t reordered;            /* hits on an entry skipped a moment before */
	uint64_t resyncs;              /* cursor jumps after a run of misses */
	uint64_t rehomed;              /* planned range in use, another entry's of the size free:
	                                * served there (counted in hits too) */
	uint64_t spare_hits;           /* planned range held by the previous iteration's instance:
	                                * served at a spare range (counted in hits too) */
	uint64_t occupied;             /* planned range still in use, no other: the fallback */
	uint64_t unmatched;            /* no plan entry: sent to the fallback */
	uint64_t small;                /* below min_size: sent to the fallback */
	uint64_t small_passed;         /* below min_size, passed by the preload to the
	                                * program's own allocator before reaching stalloc
	                                * (c10's, under a tensor plan; 0 otherwise) */
	uint64_t min_size;             /* the plan's min size in force */
	int small_uncounted;           /* requests below min_size went to glibc without
	                                * reaching stalloc or a counter (a host plan) */
	uint64_t fallbacks;            /* served by the fallback (occupied + unmatched + small +
	                                * dynamic_nofit) */
	uint64_t iterations;           /* stalloc_step() calls and wraps */
	uint64_t threads;              /* threads that asked stalloc_alloc (counted up to
	                                * ST_THREADS_MAX): more than one, and the order of
	                                * their requests differs from run to run */
	uint64_t frees, foreign_frees; /* stalloc_free calls; pointers that were not ours */
	uint64_t pool_live, pool_peak; /* bytes live in the pool (planned sizes) */
	uint64_t fb_live, fb_peak;     /* bytes live in the fallback (requested sizes) */
	uint64_t fb_reserved, fb_reserved_peak; /* raw bytes the fallback holds */
	uint64_t peak_reserved;        /* max over time of pool + fallback reserved */
	uint64_t peak_allocated;       /* max over time of pool_live + fb_live */
	double efficiency;             /* peak_allocated / peak_reserved */
	double hit_rate;               /* served by the plan (hits, slots, dynamic) / requests of
	                                * at least min_size */
} stalloc_stats;

typedef struct stalloc stalloc;

/* An allocator for plan (r, p): reserves the pool from b.  NULL with a
 * message in err on failure.  r and p may be freed afterwards. */
stalloc *stalloc_new(const struct stp_reqs *r, const struct stp_plan *p, const stalloc_backend *b,
                     const stalloc_opts *o, char *err, size_t errlen);
/* The same from a plan file ("FILE: offset N: ..." errors). */
stalloc *stalloc_open(const char *plan_path, const stalloc_backend *b, const stalloc_opts *o, char *err,
                      size_t errlen);
void stalloc_destroy(stalloc *a);

/* size bytes aligned to align (a power of two; 0 = the plan's).  NULL when
 * neither the plan nor the fallback can serve it. */
void *stalloc_alloc(stalloc *a, uint64_t size, uint64_t align);
/* 1 when p was ours (freed), 0 when not (left alone). */
int stalloc_free(stalloc *a, void *p);
/* 1 when p is a live block of this allocator. */
int stalloc_owns(stalloc *a, const void *p);
/* The requested size of a live block of ours, 0 for others. */
uint64_t stalloc_size(stalloc *a, const void *p);
/* An iteration begins: the cursor goes back to the plan's first entry. */
void stalloc_step(stalloc *a);
/* The pool's address range. */
void stalloc_pool(stalloc *a, void **base, uint64_t *size);

void stalloc_stats_get(stalloc *a, stalloc_stats *s);
/* A few lines: pool, hit rate, fallbacks by reason, peaks, efficiency. */
void stalloc_stats_print(FILE *f, const stalloc_stats *s);
/* What a statistics file (STALLOC_STATS=FILE; a plan's or a lifetime
 * model's) starts with ("stalloc: "): the kind an earlier one is kept as
 * FILE.old by (stprof/outfile.h). */
#define STALLOC_STATS_HEAD "stalloc: pool "
extern const stp_outkind stp_outkind_stalloc_stats;

/* ---- replay: the allocator driven by a recorded trace (allocator/replay.c) */
struct stp_stream;

typedef struct stalloc_replay_result {
	stalloc_stats st;              /* the allocator's statistics at the end of the trace */
	uint64_t small_requests;       /* requests below the min size (left to the program's own
	                                * allocator) */
	uint64_t small_peak;           /* their peak live bytes */
	uint64_t total_peak;           /* max over time of pool + fallback reserved + those */
	uint64_t iterations;           /* iterations seen (markers and wraps) */
	uint64_t folded;               /* iterations folded by the collector (what outlives each replayed
	                                * at the ranges it repeats: stp_stream) */
	uint64_t steady_iterations;    /* the complete iterations after the first */
	uint64_t steady_fallbacks;     /* requests of the plan's sizes served by the fallback in them */
	uint64_t worst_fallbacks;      /* the most in one of them */
	uint64_t steady_occupied, steady_unmatched, steady_nofit; /* in them: requests not served at
	                                * their planned range, by reason (stalloc_stats') */
	uint64_t unmatched_iterations; /* steady iterations with requests the plan lacks */
	uint64_t occupied_alone;       /* of steady_occupied: those in iterations without such requests */
	int64_t unmatched_at[4];       /* the first STALLOC_REPLAY_NAMED of them: their markers' value
	                                * (-1: an iteration the sequence's wrap began) */
} stalloc_replay_result;
#define STALLOC_REPLAY_NAMED 4

/* Replays stream s (stp_window.stream of the trace plan (r, p) was made
 * from, or of another run of the program) through the allocator of plan
 * (r, p) with options o (NULL: stalloc_replay_opts), on a simulated
 * backend.  0, or -1 with a message. */
int stalloc_replay(const struct stp_reqs *r, const struct stp_plan *p, const struct stp_stream *s,
                   const stalloc_opts *o, stalloc_replay_result *res, char *err, size_t errlen);
/* The options libstalloc.so runs plan r with (fallback caching as the
 * preload for its kind sets it). */
void stalloc_replay_opts(const struct stp_reqs *r, stalloc_opts *o);
/* The alignment the preloads ask of the allocator for plan r's requests. */
uint64_t stalloc_request_align(const struct stp_reqs *r);

/* The host backend: the pool is an anonymous mapping, fallback blocks come
 * from the C library's allocator (glibc's own entry points, so it works
 * under a malloc interposer). */
void stalloc_backend_host(stalloc_backend *b);

#ifdef __cplusplus
}
#endif
#endif
