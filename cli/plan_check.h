/*
 * plan_check.h - `stprof plan`'s check of a plan against the run it came
 * from (plan_check.c): the plan replayed through libstalloc's own
 * allocator on every recorded iteration, the expected figures and what to
 * change.
 */
#ifndef STPROF_CLI_PLAN_CHECK_H
#define STPROF_CLI_PLAN_CHECK_H
#include <stdio.h>

#include "stprof/plan.h"
#include "stprof/stalloc.h"

/* The small-request threshold, chosen by planning and replaying the trace
 * with each candidate (what `--min-size` sets by hand). */
#define PLAN_MIN_CANDIDATES 8
typedef struct plan_min_choice {
	int n;                                   /* candidates tried */
	uint64_t size[PLAN_MIN_CANDIDATES];      /* the thresholds */
	uint64_t total[PLAN_MIN_CANDIDATES];     /* the most memory held at run time with each:
	                                          * pool, fallback and the requests below it */
	uint64_t chosen;
} plan_min_choice;
/* Tries the candidates from r->min_size up on r (converted with it) and
 * stream s, planning with po (no search), and sets c->chosen to the one
 * whose replay holds the least memory (the smallest within 0.5% of it);
 * keeps r->min_size on sets of more than 200,000 requests or streams of
 * more than 8 million events.  0, or -1 after printing an error. */
int plan_check_choose_min(const stp_reqs *r, const stp_stream *s, const stp_plan_opts *po, plan_min_choice *c);
void plan_check_print_min(FILE *f, const plan_min_choice *c);

/* Replays plan (r, p) on stream s; 0, or -1 after printing an error. */
int plan_check_replay(const stp_reqs *r, const stp_plan *p, const stp_stream *s, stalloc_replay_result *res);
/* Where shapes vary (r->shapes_vary), grows the pool by the dynamic space
 * the replay needs, a few rounds, until the runtime would follow the plan
 * or more stops helping: *res is the replay of the plan as left.  Returns
 * the bytes added, or (uint64_t)-1 after printing an error. */
uint64_t plan_check_size_dynamic(const stp_reqs *r, stp_plan *p, const stp_stream *s, stalloc_replay_result *res);
/* 1 when the runtime would follow the plan: no request of the plan's sizes
 * served by the fallback in a steady iteration, peak reserved within 2%
 * of the pool. */
int plan_check_followed(const stalloc_replay_result *res);
/* The "at run time" lines of the summary, and what to change when the
 * plan is not followed. */
void plan_check_print(FILE *f, const stp_reqs *r, const stp_plan *p, const stalloc_replay_result *res);
#endif
