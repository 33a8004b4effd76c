/*
 * stats_kind.c - the kind of libstalloc's statistics file
 * (stprof/outfile.h), on its own so that the stprof command, which checks
 * the path before the program runs, links this object and nothing else of
 * the allocator.
 */
#include "stprof/stalloc.h"

const stp_outkind stp_outkind_stalloc_stats = {"stalloc statistics file", STALLOC_STATS_HEAD,
                                               sizeof STALLOC_STATS_HEAD - 1, NULL};
