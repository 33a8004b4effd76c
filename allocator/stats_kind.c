/*
 * stats_kind.c - the kind of libstalloc's statistics file
 * (stprof/outfile.h), on its own so that the stprof command, which checks
 * the path before the program runs, links this object and nothing else of
 * the allocator.
 */
#include "stprof/stalloc.h"

/* a plan's statistics and a lifetime model's both start so */
const stp_outkind stp_outkind_stalloc_stats = {"stalloc statistics file", "stalloc: ", 9, NULL};
