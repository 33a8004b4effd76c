/*
 * plan_check.c - what a plan will do at run time, found by running it:
 * stalloc_replay() (allocator/replay.c) drives the allocator libstalloc.so
 * enforces the plan with (the same matcher, slots, spare ranges and
 * fallback) through every allocation, free and iteration marker of the
 * trace the plan was cut from, and `stprof plan` prints the peak reserved
 * and the fallbacks it expects, per steady iteration, and what to change
 * when the runtime would not follow the plan.
 */
#include <inttypes.h>
#include <string.h>

#include "plan_check.h"
#include "util.h"

int plan_check_replay(const stp_reqs *r, const stp_plan *p, const stp_stream *s, stalloc_replay_result *res)
{
	char err[512];
	if (stalloc_replay(r, p, s, NULL, res, err, sizeof err) < 0) {
		stprof_err("plan: replaying the plan: %s", err);
		return -1;
	}
	return 0;
}

/* Where shapes vary, the pool the layout needs is not what every iteration
 * needs: the dynamic space above it takes what the plan does not place.
 * Its size: the most the fallback held when replayed without it, then
 * narrowed by bisection (a few rounds) to the least with which the runtime
 * still follows the plan (peak reserved within 2% of the pool), keeping
 * the smallest peak reserved. */
#define DYNAMIC_HALVINGS 4

uint64_t plan_check_size_dynamic(const stp_reqs *r, stp_plan *p, const stp_stream *s, stalloc_replay_result *res)
{
	uint64_t pool0 = p->pool, a = p->align ? p->align : 1;
	if (plan_check_replay(r, p, s, res) < 0)
		return (uint64_t)-1;
	if (!r->shapes_vary || plan_check_followed(res) || !res->st.fb_reserved_peak)
		return 0;
	uint64_t hi = (res->st.fb_reserved_peak + a - 1) / a * a, lo = 0, best = 0;
	stalloc_replay_result keep = *res, next;
	for (int k = 0; k <= DYNAMIC_HALVINGS && hi > lo + a; k++) {
		uint64_t d = k ? (lo + hi) / 2 / a * a : hi;
		p->pool = pool0 + d;
		if (plan_check_replay(r, p, s, &next) < 0)
			return (uint64_t)-1;
		int ok = plan_check_followed(&next);
		if (ok && (!plan_check_followed(&keep) || next.st.peak_reserved <= keep.st.peak_reserved)) {
			keep = next;
			best = d;
		}
		if (ok)
			hi = d;
		else
			lo = d;
		if (!k && !ok)
			break; /* even all of it does not make the plan followed */
	}
	p->pool = pool0 + best;
	*res = keep;
	return best;
}

int plan_check_followed(const stalloc_replay_result *res)
{
	const stalloc_stats *s = &res->st;
	return res->steady_fallbacks == 0 && (double)s->peak_reserved <= 1.02 * (double)s->pool;
}

/* What to change when the runtime would not follow the plan, from what
 * the replay saw in the steady iterations. */
static void print_advice(FILE *f, const stp_reqs *r, const stalloc_replay_result *res)
{
	int any = 0;
#define ADVISE(...) (fprintf(f, any++ ? "                " : "what to change: "), fprintf(f, __VA_ARGS__))
	if (!res->steady_fallbacks)
		ADVISE("the steady iterations follow the plan; what the fallback held (%" PRIu64
		       " requests) came in the first one\n                (start-up, lazily made state): nothing to change unless "
		       "that peak matters\n",
		       res->st.fallbacks - res->st.small);
	/* requests the plan lacks in some steps only: steps unlike the others */
	int unlike = res->steady_unmatched && !r->shapes_vary && res->unmatched_iterations < res->steady_iterations;
	if (unlike) {
		/* some steps unlike the rest: an evaluation every few steps, a
		 * checkpoint; named by their markers' values (an iteration the
		 * replay closed at the sequence's wrap, the trace having no
		 * markers, has none: -1) */
		char its[96] = "";
		size_t at = 0;
		uint64_t named = 0;
		for (uint64_t k = 0; k < res->unmatched_iterations && k < STALLOC_REPLAY_NAMED && at < sizeof its; k++)
			if (res->unmatched_at[k] >= 0)
				at += (size_t)snprintf(its + at, sizeof its - at, "%s%" PRId64, named++ ? ", " : "",
				                       res->unmatched_at[k]);
		char which[128] = "";
		if (named)
			snprintf(which, sizeof which, " (iteration%s %s%s)", named > 1 ? "s" : "", its,
			         res->unmatched_iterations > named ? ", ..." : "");
		ADVISE("%" PRIu64 " requests the planned iteration lacks came in %" PRIu64 " of the %" PRIu64
		       " steady iterations%s:\n"
		       "                steps unlike the others (an evaluation, a checkpoint or logging every few steps?),\n"
		       "                whose own requests take the fallback: peak reserved %.4f x the pool; nothing to\n"
		       "                change unless that peak matters (-i N plans such a step instead)\n",
		       res->steady_unmatched, res->unmatched_iterations, res->steady_iterations, which,
		       res->st.pool ? (double)res->st.peak_reserved / (double)res->st.pool : 0.0);
	} else if (res->steady_unmatched && !r->shapes_vary) {
		ADVISE("%" PRIu64 " requests in every steady iteration have sizes or places the planned iteration\n"
		       "                lacks: plan another iteration (-i N), or record until the loop has settled (if\n"
		       "                shapes change from step to step, --varying max, the default, plans each at its\n"
		       "                largest: --varying off was given?)\n",
		       res->steady_unmatched);
	}
	if (r->sizes_vary)
		ADVISE("shapes vary from step to step (see input:): the plan is of the largest iteration seen; pad or\n"
		       "                bucket the varying dimension (sequence length, batch) to a few sizes, or record more\n"
		       "                steps so that the largest is among them; --min-size 4k or more keeps the many\n"
		       "                small per-step tensors out of the plan\n");
	else if (r->shapes_vary)
		ADVISE("the number of requests varies from step to step (see input:), their sizes do not: the plan\n"
		       "                is of the iteration with the most bytes live; --min-size 4k or more keeps the many\n"
		       "                small per-step tensors out of the plan\n");
	/* in steps unlike the others (above), ranges found in use are theirs too */
	if (unlike && res->steady_occupied > res->occupied_alone)
		ADVISE("in those steps %" PRIu64 " more requests found their planned range still in use\n",
		       res->steady_occupied - res->occupied_alone);
	if (unlike ? res->occupied_alone : res->steady_occupied)
		ADVISE("%" PRIu64 " requests found their planned range still in use (objects that live longer than in\n"
		       "                the planned iteration: outputs or losses kept across steps, caches); free them\n"
		       "                earlier (`del`), or plan an iteration where they live as long (-i N)\n",
		       unlike ? res->occupied_alone : res->steady_occupied);
	if (res->steady_nofit)
		ADVISE("%" PRIu64 " dynamic requests found no room: --varying max plans each at its largest size\n",
		       res->steady_nofit);
#undef ADVISE
}

void plan_check_print(FILE *f, const stp_reqs *r, const stp_plan *p, const stalloc_replay_result *res)
{
	char b1[32], b2[32];
	uint64_t top = res->st.layout;
	if (r->shapes_vary && p->pool > top)
		fprintf(f, "dynamic space:  %s above the layout's %s, sized by replaying the trace's iterations, whose\n"
		           "                shapes vary; requests the plan does not place take free space there first\n",
		        stprof_fmt_bytes(p->pool - top, b1, sizeof b1), stprof_fmt_bytes(top, b2, sizeof b2));
	const stalloc_stats *s = &res->st;
	uint64_t asked = s->requests - s->small, fb = s->fallbacks - s->small;
	/* the trace's own count where it has one: the allocator counts only the
	 * iterations that asked it for something planned */
	uint64_t full = r->iterations > res->folded ? r->iterations - res->folded : res->iterations;
	fprintf(f, "at run time:    peak reserved %s = %.4f x pool, %.4f x the most bytes live (%s): the plan\n"
	           "                replayed through libstalloc's allocator over the trace's %" PRIu64 " iterations%s\n",
	        stprof_fmt_bytes(s->peak_reserved, b1, sizeof b1), s->pool ? (double)s->peak_reserved / (double)s->pool : 0.0,
	        s->peak_allocated ? (double)s->peak_reserved / (double)s->peak_allocated : 0.0,
	        stprof_fmt_bytes(s->peak_allocated, b2, sizeof b2), full, res->folded ? " written in full" : "");
	if (res->folded)
		fprintf(f, "                and the %" PRIu64 " the collector folded (what outlives each, at the ranges it repeats)\n",
		        res->folded);
	fprintf(f, "                %" PRIu64 " of %" PRIu64 " requests in the pool, %" PRIu64 " to the fallback",
	        asked - fb, asked, fb);
	if (res->steady_iterations) /* none: no iteration asked for anything planned */
		fprintf(f, " (%" PRIu64 " in the %" PRIu64 " steady iterations, at most %" PRIu64 " in one)",
		        res->steady_fallbacks, res->steady_iterations, res->worst_fallbacks);
	fputc('\n', f);
	if (s->occupied + s->unmatched + s->dynamic_nofit)
		fprintf(f, "                not at their planned range: %" PRIu64 " found it in use, %" PRIu64
		           " not in the plan, %" PRIu64 " dynamic without room%s\n",
		        s->occupied, s->unmatched, s->dynamic_nofit, s->free_hits ? " (free pool space took those it could)" : "");
	if (r->min_size)
		fprintf(f, "                below the min size (%" PRIu64 " B): %" PRIu64 " requests, peak %s live; with them %s\n",
		        r->min_size, res->small_requests, stprof_fmt_bytes(res->small_peak, b1, sizeof b1),
		        stprof_fmt_bytes(res->total_peak, b2, sizeof b2));
	if (!plan_check_followed(res))
		print_advice(f, r, res);
	else if (r->sizes_vary)
		fprintf(f, "note:           shapes vary: each varying request is planned at the largest size recorded at its\n"
		           "                place; a run with longer sequences or larger batches than the recording's sends\n"
		           "                those to the fallback: record a run that reaches the largest you will run\n");
	else if (r->shapes_vary)
		fprintf(f, "note:           the number of requests varies from step to step, their sizes do not (steps that\n"
		           "                log, evaluate or save every few steps?): steps without some of the planned\n"
		           "                iteration's requests leave their ranges free; those the plan does not place take\n"
		           "                free pool space first\n");
}

static const uint64_t min_candidates[] = {512, 1024, 2048, 4096, 8192, 16384, 65536};

/* Above these, each candidate's plan and replay take seconds: the floor is
 * kept (--min-size sets another) */
#define MIN_SEARCH_REQUESTS 200000
#define MIN_SEARCH_EVENTS 8000000

int plan_check_choose_min(const stp_reqs *r, const stp_stream *s, const stp_plan_opts *po, plan_min_choice *c)
{
	memset(c, 0, sizeof *c);
	c->chosen = r->min_size;
	if (r->n > MIN_SEARCH_REQUESTS || s->n > MIN_SEARCH_EVENTS)
		return 0;
	stp_plan_opts o = *po;
	o.budget = 0; /* the layout's size is what the search would shave: not what decides here */
	o.verbose = 0;
	size_t nlast = 0;
	for (size_t k = 0; k <= sizeof min_candidates / sizeof *min_candidates && c->n < PLAN_MIN_CANDIDATES; k++) {
		uint64_t m = k ? min_candidates[k - 1] : r->min_size;
		if (k && m <= r->min_size)
			continue;
		stp_reqs rm;
		stp_plan p;
		char err[512];
		if (stp_reqs_raise_min(r, m, &rm) < 0) {
			stprof_err("plan: out of memory choosing the min size");
			return -1;
		}
		size_t n = rm.n;
		if (!n || n == nlast) { /* nothing left to plan, or nothing changed */
			stp_reqs_free(&rm);
			if (!n)
				break;
			continue;
		}
		nlast = n;
		stalloc_replay_result res;
		int rc = stp_plan_build(&rm, &o, &p, err, sizeof err);
		uint64_t added = rc < 0 ? 0 : plan_check_size_dynamic(&rm, &p, s, &res);
		if (rc == 0)
			stp_plan_free(&p);
		stp_reqs_free(&rm);
		if (rc < 0 || added == (uint64_t)-1) {
			if (rc < 0)
				stprof_err("plan: %s", err);
			return -1;
		}
		c->size[c->n] = m;
		c->total[c->n++] = res.total_peak;
	}
	int best = 0;
	for (int k = 1; k < c->n; k++)
		if (c->total[k] < c->total[best])
			best = k;
	for (int k = 0; k < best; k++)
		if ((double)c->total[k] <= 1.005 * (double)c->total[best]) {
			best = k; /* plan more requests when it costs next to nothing */
			break;
		}
	if (c->n)
		c->chosen = c->size[best];
	return 0;
}

void plan_check_print_min(FILE *f, const plan_min_choice *c)
{
	char b1[32], b2[32];
	if (c->n < 2)
		return;
	fprintf(f, "min size:       %s, chosen by planning and replaying the trace with each (--min-size sets it):\n"
	           "               ",
	        stprof_fmt_bytes(c->chosen, b1, sizeof b1));
	for (int k = 0; k < c->n; k++)
		fprintf(f, " %s%s: %s%s", c->size[k] == c->chosen ? "[" : "", stprof_fmt_bytes(c->size[k], b1, sizeof b1),
		        stprof_fmt_bytes(c->total[k], b2, sizeof b2), c->size[k] == c->chosen ? "]" : "");
	fprintf(f, " held at most\n");
}
