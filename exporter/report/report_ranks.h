/*
 * report_ranks.h - the merged view of several traces of one run (one per
 * rank), shared by its text, JSON and HTML writers (report_ranks_*.c).
 *
 * Built from each trace's detector result only (stprof/detector.h): a row
 * per trace, the ranks compared in the space each analyzed in depth, the
 * peaking rank, and the call sites and phases whose bytes differ most
 * between the peaking rank and the mean of the others.  Call sites are
 * matched across traces by their "where" (the first frame's text, e.g.
 * "train.py:42 in forward" or "f (file.c:10)"): stack ids and addresses are
 * each trace's own.
 */
#ifndef STP_REPORT_RANKS_H
#define STP_REPORT_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "stprof/detector.h"

enum rk_role {
	RK_RANK = 0,    /* compared (a rank, or any process when no trace has a rank) */
	RK_OTHER = 1,   /* no rank while others have one: the launcher, a helper */
	RK_EARLIER = 2  /* a rank's image that called execve: its next image is compared */
};

typedef struct rk_trace {
	stp_det *d;
	const stp_det_result *r;
	int role;
	const stp_det_space *sp;  /* the primary space, NULL when none */
	char space[32];           /* its name: "host", "cpu tensors", "device 0" ... */
	int64_t peak_iteration;   /* the iteration's index, -1 none */
	const char *peak_phase;   /* NULL none */
	uint32_t iterations;
} rk_trace;

typedef struct rk_row {       /* a call site or a phase, across the compared ranks */
	char *name;
	uint64_t *bytes;          /* per compared rank (ncmp) */
	double mean_others;       /* mean over the compared ranks but the peaking one */
	double diff;              /* the peaking rank's bytes - mean_others */
} rk_row;

typedef struct rk_merge {
	rk_trace *t;
	size_t n;
	size_t *cmp, ncmp;        /* the compared traces, indexes into t, by rank */
	int have_ranks;           /* some trace has a rank */
	int mixed_spaces;         /* the compared ranks' primary spaces differ in name */
	size_t peak;              /* index into cmp of the peaking rank; SIZE_MAX when ncmp < 2 */
	size_t lowest;            /* index into cmp of the lowest peak */
	double others_mean;       /* mean peak of the compared ranks but the peaking one */
	rk_row *sites;            /* sorted by |diff|, largest first */
	size_t nsites;
	int sites_cut;            /* some rank has more sites live at its peak than were matched */
	rk_row *phases;           /* peak live bytes during each phase name (from the series) */
	size_t nphases;
	int phases_coarse;        /* some phase was shorter than a sample of its rank's series */
} rk_merge;

/* Call sites per rank matched across ranks: its largest ones at the peak. */
#define RK_SITES_PER_RANK 4096u

/* 0, or -1 when out of memory (errno set). */
int rk_merge_build(rk_merge *m, stp_det *const *d, size_t n);
void rk_merge_free(rk_merge *m);
/* "rank 3", or "pid 1234" without ranks, or "rank 3 (pid 1234)" when
 * two compared traces share a rank. */
const char *rk_label(const rk_merge *m, size_t ti, char *buf, size_t len);
/* The path's last component. */
const char *rk_base(const char *path);
#endif
