/*
 * build.c - stp_plan_build: runs the steps in order and fills the stats.
 *
 *   work view (work.c) -> static plan (stalloc.c or greedy.c)
 *   -> improvement (greedy.c: pl_improve; greedy-by-size kept when smaller)
 *   -> budgeted search (best.c: pl_best)
 *   -> greedy-by-size completed when the improvement step dropped it
 *   -> dynamic space (dynamic.c)
 *
 * Every step after the first keeps its layout only when its pool is smaller
 * than the best so far, so the plan holds the best layout of all steps
 * (stats.step says whose).  When no search layout was kept, the plan is
 * never larger than greedy-by-size's layout unless greedy-by-size was
 * stopped at its CPU limit (stats.greedy_limit) or not asked for
 * (no_greedy_check); the pool it computed (stats.pool_greedy_plain) is the
 * CLI's baseline, and the CLI keeps the smaller of the two otherwise.
 * The plan owns its arrays; stp_plan_free releases them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define GREEDY_MIN_SECONDS 0.02 /* the least CPU limit of greedy-by-size after the search */

void stp_plan_opts_init(stp_plan_opts *o)
{
	memset(o, 0, sizeof *o);
	o->algo = STP_ALGO_STALLOC;
	o->align = 1;
	o->budget = 2.0;
}

void stp_plan_free(stp_plan *p)
{
	free(p->offset);
	free(p->group);
	free(p->groups);
	free(p->intervals);
	free(p->startup_offset);
	memset(p, 0, sizeof *p);
}

/* The last part of the improvement step: greedy-by-size, improved the same
 * way, replaces the layout when its pool is smaller.  It draws on what is
 * left of the improvement step's work budget and is dropped when that runs out. */
static int try_greedy(const pl_work *w, stp_plan_stats *st, uint64_t *off, uint64_t *budget)
{
	uint64_t *alt = malloc((w->n + 1) * sizeof *alt), moved = 0;
	if (!alt)
		return -1;
	double c0 = pl_cpu_now();
	int rc = pl_greedy(w, alt, budget, 0), complete = rc == 0;
	if (rc == 0) {
		st->pool_greedy_plain = pl_pool(w, alt);
		st->greedy_seconds = pl_cpu_now() - c0;
	}
	if (rc == 0)
		rc = pl_improve(w, st->lower_bound, alt, &moved, budget);
	else if (rc == 1)
		rc = 0; /* over budget: keep what we have */
	if (rc == 0 && complete)
		st->pool_greedy = pl_pool(w, alt);
	if (rc == 0 && complete && pl_pool(w, alt) < pl_pool(w, off)) {
		memcpy(off, alt, w->n * sizeof *off);
		st->greedy_layout = 1;
		st->step = STP_STEP_GREEDY;
		st->improved_requests = moved;
	}
	free(alt);
	return rc;
}

/* Greedy-by-size alone when the improvement step dropped it (its work
 * budget ran out) and the search kept no layout (a busy machine, a short
 * budget), while the pool is above the proven bound:
 * kept when smaller, so the plan is never larger than the greedy baseline.
 * Bounded in CPU seconds (limit), so a busy machine does not stretch it. */
static int complete_greedy(const pl_work *w, stp_plan_stats *st, uint64_t *off, double limit)
{
	uint64_t *alt = malloc((w->n + 1) * sizeof *alt);
	if (!alt)
		return -1;
	double c0 = pl_cpu_now();
	if (pl_greedy(w, alt, NULL, c0 + limit) == 0) {
		st->pool_greedy_plain = pl_pool(w, alt);
		st->greedy_seconds = pl_cpu_now() - c0;
		if (st->pool_greedy_plain < pl_pool(w, off)) {
			memcpy(off, alt, w->n * sizeof *off);
			st->greedy_layout = 1;
			st->step = STP_STEP_GREEDY;
			st->improved_requests = 0; /* greedy's own layout, not re-placed */
			st->found_seconds = pl_now();
		}
	} else {
		st->greedy_limit = limit;
	}
	free(alt);
	return 0;
}

int stp_plan_build(const stp_reqs *r, const stp_plan_opts *o, stp_plan *p, char *err, size_t errlen)
{
	double t0 = pl_now(), c0 = pl_cpu_now();
	memset(p, 0, sizeof *p);
	if (stp_reqs_check(r, err, errlen) < 0)
		return -1;
	if (r->n >= UINT32_MAX / 4) {
		snprintf(err, errlen, "too many requests (%zu)", r->n);
		return -1;
	}
	uint64_t align = o->align ? o->align : 1;
	p->align = align;
	p->n = r->n;
	p->offset = malloc((r->n + 1) * sizeof *p->offset);
	p->group = malloc((r->n + 1) * sizeof *p->group);
	pl_work w;
	if (!p->offset || !p->group || pl_work_build(r, align, &w) < 0) {
		stp_plan_free(p);
		snprintf(err, errlen, "out of memory planning %zu requests", r->n);
		return -1;
	}
	stp_plan_stats *st = &p->stats;
	st->lower_bound = pl_lower_bound(r, 0, align);
	st->lower_bound_all = pl_lower_bound(r, 1, align);
	st->pinned_requests = w.pinned_extra;
	int rc;
	if (o->algo == STP_ALGO_GREEDY) {
		rc = pl_greedy(&w, p->offset, NULL, o->greedy_seconds > 0 ? c0 + o->greedy_seconds : 0);
		if (rc == 1) { /* stopped at greedy_seconds */
			pl_work_free(&w);
			stp_plan_free(p);
			snprintf(err, errlen, "greedy by size stopped after %.3f s", pl_cpu_now() - c0);
			return 1;
		}
		st->pool_stalloc = 0;
		st->step = STP_STEP_GREEDY;
	} else {
		rc = pl_stalloc(r, &w, !o->no_fusion, p->offset, st);
		if (!rc)
			st->pool_stalloc = pl_pool(&w, p->offset);
		if (o->verbose && !rc)
			fprintf(stderr,
			        "plan: STAlloc steps: %llu HomoPhase groups (%llu fusions), %llu units in %llu sizes; "
			        "pool %llu, lower bound %llu, %.3f s\n",
			        (unsigned long long)st->phase_groups, (unsigned long long)st->fused_groups,
			        (unsigned long long)st->units, (unsigned long long)st->size_groups,
			        (unsigned long long)st->pool_stalloc, (unsigned long long)st->lower_bound, pl_now() - t0);
		uint64_t budget = o->improve_work ? o->improve_work : pl_improve_budget(r->n);
		if (!rc && o->algo == STP_ALGO_STALLOC)
			rc = pl_improve(&w, st->lower_bound, p->offset, &st->improved_requests, &budget);
		if (!rc && st->improved_requests && pl_pool(&w, p->offset) < st->pool_stalloc)
			st->step = STP_STEP_IMPROVE;
		if (!rc && o->algo == STP_ALGO_STALLOC && budget && pl_pool(&w, p->offset) > st->lower_bound)
			rc = try_greedy(&w, st, p->offset, &budget);
		if (!rc && o->algo == STP_ALGO_STALLOC && o->budget > 0 && pl_pool(&w, p->offset) > st->lower_bound)
			rc = pl_best(&w, p->offset, pl_now() + o->budget, o->verbose, st);
		if (!rc && o->algo == STP_ALGO_STALLOC && !o->no_greedy_check && !st->pool_greedy_plain &&
		    st->step < STP_STEP_SEARCH && /* the search kept nothing */
		    pl_pool(&w, p->offset) > (st->proven_bound > st->lower_bound ? st->proven_bound : st->lower_bound)) {
			double limit = o->greedy_seconds;
			if (limit <= 0) {
				double half = (pl_cpu_now() - c0) / 2;
				limit = o->budget / 2 > half ? o->budget / 2 : half;
				if (limit < GREEDY_MIN_SECONDS)
					limit = GREEDY_MIN_SECONDS;
			}
			rc = complete_greedy(&w, st, p->offset, limit);
			if (o->verbose)
				fprintf(stderr, "plan: greedy by size after the search: %s\n",
				        st->greedy_limit > 0 ? "stopped at its CPU limit" : "done");
		}
	}
	if (st->proven_bound < st->lower_bound)
		st->proven_bound = st->lower_bound;
	if (!rc && pl_pool(&w, p->offset) <= st->proven_bound)
		st->optimal = 1;
	if (!rc) {
		p->pool = pl_pool(&w, p->offset);
		rc = pl_place_startup(r, &w, p);
		if (!rc)
			rc = pl_dynamic(r, &w, p);
		if (!rc)
			rc = pl_dynamic_replay(r, p);
	}
	pl_work_free(&w);
	if (rc) {
		stp_plan_free(p);
		snprintf(err, errlen, "out of memory planning %zu requests", r->n);
		return -1;
	}
	st->seconds = pl_now() - t0;
	/* the search stamped the clock when it kept a layout; else the steps
	 * before it found this one */
	st->found_seconds = st->found_seconds > t0 ? st->found_seconds - t0 : st->seconds - st->search_seconds;
	return 0;
}
