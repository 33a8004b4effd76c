/*
 * best.c - the budgeted improvement after the STAlloc and greedy steps:
 * looks for a layout with a smaller pool until the deadline or until the
 * bound is met, and keeps only verified layouts better than the best so far
 * (pl_keep, keep.c).
 *
 *   up to PL_EXACT_MAX static requests: the exact search (search.c) as a
 *     decision procedure over capacities: first the working view's bound
 *     (most bytes live at once, an eighth of the time), then downwards from
 *     the best pool found by a step that halves when a try runs out of time;
 *     after every new layout, a short try at the least capacity not proven
 *     impossible, guided by that layout's order.  A try ends after its
 *     share of a horizon of PL_HORIZON CPU seconds that doubles when
 *     reached (a long budget starts as the default one does), at most half
 *     the CPU seconds the wall time left buys at the rate measured (a busy
 *     machine still gets through the tries), or at the deadline (wall
 *     time, as users expect).  A capacity the search exhausts is proven
 *     impossible; with the pool one above it (or at the bound) the layout
 *     is optimal.  A capacity it runs out of time on is
 *     skipped without proof.
 *   larger sets: the peak's requests searched and the rest first fit
 *     (large.c), first fit by time windows (window.c), then re-placement
 *     around the peak (repair.c), each with a share of the time, in rounds
 *     over the same doubling horizon.
 *
 * Invariants: `best` only ever takes a layout that pl_check accepted and
 * whose pool is smaller; st->proven_bound only rises on a bound or an
 * exhausted search (of the whole set, or of a part of it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PL_EXACT_MAX 5000
#define PL_HORIZON 2.0 /* seconds: the default budget */
/* first fit by windows above this many static requests: its index costs
 * about 400 bytes a request and one pass over 300,000 takes longer than its
 * share of the default budget */
#define PL_WINDOWS_MAX 200000

const char *stp_plan_step_name(int step)
{
	switch (step) {
	case STP_STEP_STALLOC: return "STAlloc steps";
	case STP_STEP_IMPROVE: return "STAlloc + re-placement";
	case STP_STEP_GREEDY: return "greedy by size + re-placement";
	case STP_STEP_SEARCH: return "exact search";
	case STP_STEP_PEAK: return "exact search at the peak + first fit";
	case STP_STEP_WINDOWS: return "first fit by windows";
	case STP_STEP_REPAIR: return "re-placement around the peak";
	default: return "?";
	}
}

uint64_t pl_work_bound(const pl_work *w)
{
	size_t n = w->n, m = 0;
	pl_kv *ev = malloc((2 * n + 1) * sizeof *ev), *tmp = malloc((2 * n + 1) * sizeof *tmp);
	uint64_t live = 0, best = 0;
	if (!ev || !tmp) {
		free(ev);
		free(tmp);
		return w->pinned_bytes; /* a weaker bound, still a bound */
	}
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] == PL_STATIC) {
			ev[m++] = (pl_kv){(uint64_t)w->s[i] << 1 | 1, (uint32_t)i};
			ev[m++] = (pl_kv){(uint64_t)w->e[i] << 1, (uint32_t)i};
		}
	pl_sort_kv(ev, tmp, m);
	for (size_t j = 0; j < m; j++) {
		if (ev[j].k & 1) {
			live += w->size[ev[j].v];
			if (live > best)
				best = live;
		} else
			live -= w->size[ev[j].v];
	}
	free(ev);
	free(tmp);
	return w->pinned_bytes + best;
}

static int exact(const pl_work *w, uint64_t *best, uint64_t lo, double deadline, int verbose,
                 stp_plan_stats *st)
{
	uint64_t *cand = malloc((w->n + 1) * sizeof *cand);
	if (!cand)
		return -1;
	uint64_t hi = pl_pool(w, best); /* best found; lo: smallest not proven impossible */
	double t0 = pl_now(), c0 = pl_cpu_now(), horizon = c0 + PL_HORIZON;
	int first = 1, rc = 0, retry = 0;
	uint64_t step = 0;
	for (;;) {
		if (pl_now() >= deadline || lo >= hi)
			break;
		/* each try gets a share of CPU seconds: of a horizon that doubles
		 * when it is reached (so a long budget spends its first seconds as
		 * the default one does, then goes on), but on a busy machine, where
		 * the wall time left buys fewer CPU seconds (cpu_left, at the rate
		 * measured since the search began), no more than half of those
		 * (so the tries still follow one another).  Only the deadline is
		 * wall time.  Shares of
		 * the wall time left instead lost G (0.09 CPU s at the bound) at
		 * load 5-7: its first try got an eighth of what a third of a core
		 * buys */
		double now = pl_cpu_now(), wnow = pl_now();
		while (now >= horizon)
			horizon = c0 + 2 * (horizon - c0);
		double end = horizon, rate = wnow - t0 > 0.02 ? (now - c0) / (wnow - t0) : 1;
		if (rate > 1)
			rate = 1;
		if (rate < 0.01)
			rate = 0.01;
		double cpu_left = rate * (deadline - wnow);
		/* the bound first (with an eighth of the time: on the MiniMalloc
		 * instances and their perturbed family the bound is met sooner
		 * through the retries below than by a longer first try), then
		 * downwards from the
		 * best found by a step that starts at an eighth of the gap, is kept
		 * after a success and halves after a try that runs out of time
		 * (capacities just below a layout found are the easy ones); each
		 * try gets a third of what is left.  A new layout is followed by a
		 * retry at lo with a sixth of what is left, its order first: on
		 * the MiniMalloc instances that order often meets the bound where
		 * the first try at it ran out of time (E, F) */
		if (!first && !step)
			step = (hi - lo) / 8 ? (hi - lo) / 8 : 1;
		uint64_t cap = first || retry ? lo : (hi - lo > step ? hi - step : lo);
		double div = first ? 8 : retry ? 30 : 3;
		double share = (end - now) / div;
		if (share > cpu_left / 2)
			share = cpu_left / 2;
		double until = now + share;
		if (end - now < 0.05)
			until = end;
		memcpy(cand, best, w->n * sizeof *cand);
		int r = pl_search(w, NULL, cap, deadline, until, 0, retry, cand, &st->search_nodes);
		int was_retry = retry;
		retry = 0;
		if (verbose)
			fprintf(stderr, "plan: search at %llu: %s (%.3f s, %llu nodes so far)\n", (unsigned long long)cap,
			        r == 1 ? "found" : r == 0 ? "impossible" : r == -1 ? "out of time" : "out of memory",
			        pl_now() - wnow, (unsigned long long)st->search_nodes);
		if (r == -2) {
			rc = -1;
			break;
		}
		if (r == 1) {
			if (!pl_keep(w, best, cand, STP_STEP_SEARCH, st)) {
				if (verbose)
					fprintf(stderr, "plan: search layout at %llu rejected\n", (unsigned long long)cap);
				break; /* cannot happen; never keep an unchecked layout */
			}
			hi = pl_pool(w, best);
			/* a new layout guides a short try at the least capacity not
			 * proven impossible (the order it gives is often the one that
			 * meets the bound) */
			retry = cap > lo;
		} else if (r == 0) {
			lo = cap + 1; /* proven: nothing below cap + 1 fits */
			if (lo > st->proven_bound)
				st->proven_bound = lo;
			step = 0;
		} else if (!first && !was_retry) {
			step = step > 1 ? step / 2 : 1;
		}
		first = 0;
	}
	if (st->proven_bound >= hi)
		st->optimal = 1;
	else
		st->search_stopped = 1;
	st->search_seconds += pl_now() - t0;
	free(cand);
	return rc;
}

int pl_best(const pl_work *w, uint64_t *best, double deadline, int verbose, stp_plan_stats *st)
{
	uint64_t wlb = pl_work_bound(w);
	if (wlb > st->proven_bound)
		st->proven_bound = wlb;
	if (pl_pool(w, best) <= st->proven_bound) {
		st->optimal = 1;
		return 0;
	}
	size_t nq = 0;
	for (size_t i = 0; i < w->n; i++)
		nq += w->kind[i] == PL_STATIC;
	if (nq <= PL_EXACT_MAX)
		return exact(w, best, st->proven_bound, deadline, verbose, st);
	/* large sets: the peak's requests searched, the rest first fit (two
	 * thirds of the time at most); first fit by windows (a quarter of the
	 * rest); then re-placement around the peak.  In rounds over a horizon
	 * that doubles (2 s, 4 s, ...) up to the budget: a long budget first
	 * does what the default one does, then goes on from the best so far */
	int rc = 0;
	double t0 = pl_now();
	for (double h = PL_HORIZON; !rc && pl_pool(w, best) > st->proven_bound && pl_now() < deadline; h *= 2) {
		double end = t0 + h < deadline ? t0 + h : deadline, now = pl_now();
		if (now >= end)
			continue;
		rc = pl_large(w, best, now + (end - now) * 2 / 3, verbose, st);
		double t1 = pl_now();
		if (!rc && pl_pool(w, best) > st->proven_bound && t1 < end && nq <= PL_WINDOWS_MAX)
			rc = pl_windows(w, best, t1 + (end - t1) / 4, verbose, st);
		if (!rc && pl_pool(w, best) > st->proven_bound && pl_now() < end)
			rc = pl_repair(w, best, end, verbose, st);
	}
	if (!rc && pl_pool(w, best) <= st->proven_bound)
		st->optimal = 1;
	else if (!rc)
		st->search_stopped = 1;
	return rc;
}
