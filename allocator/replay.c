/*
 * replay.c - the runtime allocator driven by a recorded trace instead of a
 * program: a plan's stalloc (the same matcher, persistent slots, spare
 * ranges, dynamic space and fallback that libstalloc.so runs) is asked for
 * every allocation and free of the trace's planned space, in order, with
 * stalloc_step() at each iteration marker, as `stprof run --plan` would ask
 * it.  What it reports is what the plan will do at run time on that
 * program: peak reserved, fallbacks by reason, per iteration.
 *
 * An iteration the collector folded is in the trace as its marker and the
 * allocations that outlive it (STP_SEV_ALLOC_OUTLIVING): the program asks
 * for those amid a sequence the trace left out, so they are served at the
 * ranges of the planned iteration's entries of their sizes that outlive
 * it (st_alloc_outliving), not matched as a sequence of their own.
 *
 * The backend is simulated: the pool and the fallback's blocks are
 * addresses that are never touched (the allocator core never dereferences
 * them), so a plan of any size replays in a few MB of tables.  Requests
 * below the plan's min size go where the preloads send them: a host or
 * tensor plan's to the program's own allocator (counted here only as live
 * bytes), a device plan's to the allocator too, which gives them to its
 * fallback.
 *
 * Invariant: every object of the stream is allocated before it is freed
 * (stp_reqs_from_trace numbers them so); an object's pointer is NULL while
 * it is not live in the allocator.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "stprof/plan.h"

#define SIM_POOL_BASE ((uintptr_t)1 << 44)
#define SIM_RAW_BASE ((uintptr_t)1 << 45)

typedef struct sim {
	uintptr_t next_raw;
} sim;

static void *sim_reserve(void *ctx, uint64_t size)
{
	(void)ctx;
	(void)size;
	return (void *)SIM_POOL_BASE;
}

static void sim_unreserve(void *ctx, void *base, uint64_t size)
{
	(void)ctx;
	(void)base;
	(void)size;
}

/* fresh addresses, 4 KiB aligned, never reused: the fallback's own maps
 * tell live blocks apart */
static void *sim_raw_alloc(void *ctx, uint64_t size)
{
	sim *s = ctx;
	void *p = (void *)s->next_raw;
	s->next_raw += (size + 4095) & ~(uint64_t)4095;
	return p;
}

static void sim_raw_free(void *ctx, void *p, uint64_t size)
{
	(void)ctx;
	(void)p;
	(void)size;
}

uint64_t stalloc_request_align(const stp_reqs *r)
{
	return r->device ? ST_ALIGN_DEVICE : r->tensors ? ST_ALIGN_TENSORS : ST_ALIGN_HOST;
}

void stalloc_replay_opts(const stp_reqs *r, stalloc_opts *o)
{
	(void)r; /* the preloads' options are the defaults, resolved per plan by stalloc_new */
	stalloc_opts_init(o);
}

/* An iteration ended (a marker or the sequence's wrap): what went to the
 * fallback in it, when it is not the first (start-up and lazily made state
 * are not the steady state).  mark: the statistics when it began. */
static void close_iteration(stalloc_replay_result *res, const stalloc_stats *now, stalloc_stats *mark, int64_t value)
{
	if (mark->iterations >= 1) {
		uint64_t fb = (now->fallbacks - now->small) - (mark->fallbacks - mark->small);
		uint64_t occupied = now->occupied - mark->occupied;
		if (now->unmatched != mark->unmatched) {
			if (res->unmatched_iterations < STALLOC_REPLAY_NAMED)
				res->unmatched_at[res->unmatched_iterations] = value;
			res->unmatched_iterations++;
		} else {
			res->occupied_alone += occupied;
		}
		res->steady_iterations++;
		res->steady_fallbacks += fb;
		res->steady_occupied += occupied;
		res->steady_unmatched += now->unmatched - mark->unmatched;
		res->steady_nofit += now->dynamic_nofit - mark->dynamic_nofit;
		if (fb > res->worst_fallbacks)
			res->worst_fallbacks = fb;
	}
	*mark = *now;
}

int stalloc_replay(const stp_reqs *r, const stp_plan *p, const stp_stream *s, const stalloc_opts *o,
                   stalloc_replay_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	sim sm = {SIM_RAW_BASE};
	stalloc_backend b = {sim_reserve, sim_unreserve, sim_raw_alloc, sim_raw_free, &sm, "replay"};
	stalloc_opts dflt;
	if (!o) {
		stalloc_replay_opts(r, &dflt);
		o = &dflt;
	}
	stalloc *a = stalloc_new(r, p, &b, o, err, errlen);
	if (!a)
		return -1;
	void **ptr = calloc(s->nobj ? s->nobj : 1, sizeof *ptr);
	uint64_t *small = calloc(s->nobj ? s->nobj : 1, sizeof *small);
	if (!ptr || !small) {
		free(ptr);
		free(small);
		stalloc_destroy(a);
		snprintf(err, errlen, "out of memory for the replay");
		return -1;
	}
	uint64_t min = o->min_size == UINT64_MAX ? r->min_size : o->min_size;
	if (r->device)
		min = 0; /* preload_cuda.c asks the allocator for every size */
	uint64_t align = stalloc_request_align(r), small_live = 0;
	stalloc_stats st, mark;
	int64_t open_at = -1; /* the open iteration's marker value */
	memset(&mark, 0, sizeof mark);
	for (size_t i = 0; i < s->n; i++) {
		const stp_sev *e = &s->ev[i];
		if (e->kind == STP_SEV_ITER) {
			if (o->log)
				fprintf(o->log, "iteration %" PRIu64 " begins (marker)\n", e->size);
			stalloc_step(a);
			/* the open iteration ends here, when anything was asked in it
			 * (a folded one: only what outlives it, if that) */
			stalloc_stats_get(a, &st);
			if (st.requests != mark.requests)
				close_iteration(res, &st, &mark, open_at);
			open_at = (int64_t)e->size;
			mark.iterations = st.iterations;
		} else if ((e->kind == STP_SEV_ALLOC || e->kind == STP_SEV_ALLOC_OUTLIVING) && e->obj < s->nobj) {
			if (e->size && e->size >= min) {
				ptr[e->obj] = e->kind == STP_SEV_ALLOC_OUTLIVING ? st_alloc_outliving(a, e->size, align)
				                                                 : stalloc_alloc(a, e->size, align);
			} else {
				small[e->obj] = e->size;
				small_live += e->size;
				res->small_requests++;
				if (small_live > res->small_peak)
					res->small_peak = small_live;
			}
		} else if (e->kind == STP_SEV_FREE && e->obj < s->nobj) {
			if (ptr[e->obj]) {
				stalloc_free(a, ptr[e->obj]);
				ptr[e->obj] = NULL;
			} else {
				small_live -= small[e->obj];
				small[e->obj] = 0;
			}
			continue; /* nothing grows at a free */
		} else {
			continue;
		}
		stalloc_stats_get(a, &st);
		uint64_t total = st.pool + st.fb_reserved + small_live;
		if (total > res->total_peak)
			res->total_peak = total;
		if (st.iterations != mark.iterations) { /* the sequence wrapped, no marker */
			close_iteration(res, &st, &mark, open_at);
			open_at = -1;
		}
	}
	stalloc_stats_get(a, &res->st);
	res->iterations = res->st.iterations;
	res->folded = s->folded;
	free(ptr);
	free(small);
	stalloc_destroy(a);
	return 0;
}
