/*
 * rank_plans.h - the set of rank plans a `stprof run --plan` argument
 * names (rank_plans.c): STEM.rank<R>.plan, one per rank of a torchrun job,
 * as the one-shot mode writes them.
 */
#ifndef STPROF_CLI_RANK_PLANS_H
#define STPROF_CLI_RANK_PLANS_H
#include <limits.h>
#include <stddef.h>

typedef struct rank_plans {
	char stem[PATH_MAX]; /* absolute: the plans are STEM.rank<R>.plan */
	long *rank;          /* the ranks found, ascending */
	size_t n;
	int sibling;         /* the argument was one of them (else it named no file) */
	long given;          /* ... that one's rank */
} rank_plans;

/* 1 when PLAN names a set of rank plans: PLAN names no file and
 * PLAN-without-.plan.rank<R>.plan exist beside it, or PLAN is one of them
 * (STEM.rank<R>.plan: the set is it and its siblings).  0 when it does not
 * (a plain plan, or nothing: the caller reads PLAN as it is); -1 with err
 * when the directory cannot be read. */
int rank_plans_find(const char *plan, rank_plans *out, char *err, size_t errlen);
/* The path of the i-th plan of the set. */
void rank_plans_path(const rank_plans *rp, size_t i, char *buf, size_t len);
/* The ranks as "0-3, 5" in buf. */
void rank_plans_list(const rank_plans *rp, char *buf, size_t len);
void rank_plans_free(rank_plans *rp);

#endif
