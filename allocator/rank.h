/*
 * rank.h - which rank's plan a process of a data-parallel job enforces
 * (rank.c), private to allocator/; preload.c asks once, in libstalloc's
 * constructor.
 */
#ifndef STPROF_ALLOCATOR_RANK_H
#define STPROF_ALLOCATOR_RANK_H

#include <stddef.h>

/* With a set of rank plans (STALLOC_RANK_PLANS=STEM, set by `stprof run
 * --plan`): 1 when this process image is rank R's process, with R in *rank
 * and STEM.rank<R>.plan in path (and the rank claimed for its descendants);
 * 0 when it enforces nothing (the launcher, a rank's descendant, a name too
 * long); -1 when there is no set of rank plans. */
int st_rank_plan(char *path, size_t len, long *rank);

#endif
