/*
 * stprof/report.h - reports of a detector result: text (for a terminal,
 * worst findings first), JSON (schema in docs/report-json.md) and one
 * self-contained HTML page with SVG plots (no network access needed).
 * Implemented in exporter/report/ (report_*.c): data flows trace -> detector ->
 * exporter, and the writers use the detector's public API only.
 */
#ifndef STPROF_REPORT_H
#define STPROF_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "stprof/detector.h"
#include "stprof/lifetimes.h"
#include "stprof/outfile.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct stp_report_options {
	unsigned top;          /* call sites and findings listed (10) */
	unsigned frames;       /* frames shown per call path (4; at most 64) */
	unsigned width;        /* text: terminal columns (100) */
	int models_detail;     /* text: the models' full section even when they only
	                        * replayed host allocations (a short summary then) */
	unsigned group;        /* text: top sites grouped: 0 by call site, 1 by
	                        * function, 2 by module, 3 by line: of the
	                        * path's first (folded: the user's) frame
	                        * (enum stp_report_group) */
	/* HTML: the interactive viewer draws at most this many objects one by
	 * one (the rest as one band; 1,000,000; 0: no viewer) and lists at
	 * most viewer_accesses accesses per object (32).  It reads the trace
	 * again and needs the detector run with keep_objects >= 2 (and
	 * keep_accesses for the accesses). */
	uint64_t viewer_objects;
	uint32_t viewer_accesses;
	/* text and JSON: the Lifetimes section of a program without iterations
	 * (below), at the end; NULL: none */
	const struct stp_report_lifetimes *lifetimes;
	/* text, JSON and HTML: the child processes recorded beside the trace
	 * (below), after the findings; NULL: none */
	const struct stp_report_children *children;
} stp_report_options;

/* The program's child processes whose traces lie beside its own
 * (DataLoader workers, a launcher's helpers: cli/children.c finds them),
 * each analyzed on its own (stp_det_timeline_run). */
typedef struct stp_report_child {
	const char *trace;        /* its path */
	uint32_t pid;
	const char *what;         /* "DataLoader worker", else its executable's name */
	int analyzed;             /* 0: not read (too large, damaged): no figures */
	const char *not_read;     /* why, when not read (NULL: not said) */
	uint64_t host_peak;       /* the host heap's peak live bytes (estimated when sampled) */
	uint64_t tensor_peak;     /* its tensors' (the largest tensor space's), 0 none */
	uint32_t iterations;
} stp_report_child;
typedef struct stp_report_children {
	const stp_report_child *child;
	size_t n;
	size_t more;              /* found beyond n, not listed */
	uint64_t host_peak;       /* the program's own (its trace's host heap), for the sum line */
} stp_report_children;

/* The Lifetimes section (docs/lifetimes.md): what the host heap models
 * would hold for a run's host allocations (planner/lifetime_sim.c,
 * stp_lt_simulate), with the names of its heaviest sites, symbolized by
 * the caller. */
typedef struct stp_report_lifetimes {
	const stp_lt_sim *sim;
	const char *model;                  /* the model that predicted; NULL: learned from this run */
	const char *site[STP_LT_SIM_SITES]; /* each site's innermost frames, "a < b < c" */
} stp_report_lifetimes;
/* The section alone, as text (what `stprof plan --lifetimes` prints), or
 * as the JSON object of the report's "lifetimes" member. */
int stp_report_lifetimes_text(const stp_report_lifetimes *l, FILE *f);
int stp_report_lifetimes_json(const stp_report_lifetimes *l, FILE *f);

enum stp_report_group { STP_GROUP_SITE = 0, STP_GROUP_FUNCTION, STP_GROUP_MODULE, STP_GROUP_LINE };

void stp_report_options_default(stp_report_options *o);

/* Each returns 0, or -1 when writing failed (errno set). */
/* What a report written to a file may replace (stprof/outfile.h): an
 * earlier report of the same format (one trace's or the ranks'). */
extern const stp_outkind stp_outkind_report_text, stp_outkind_report_json, stp_outkind_report_html;

int stp_report_text(stp_det *d, const stp_report_options *o, FILE *f);
int stp_report_json(stp_det *d, const stp_report_options *o, FILE *f);
int stp_report_html(stp_det *d, const stp_report_options *o, FILE *f);

/* Several traces of one run, e.g. one per rank (docs/report.md, "Several
 * ranks"): a row per trace (peak live and reserved bytes of the space each
 * analyzed in depth, when, in which iteration and phase, iterations) and
 * one merged view of the ranks: which rank peaks, by how much, and the
 * call sites and phases whose bytes differ most between it and the mean of
 * the others (at most o->top of each).  Traces without a rank, when others
 * have one, are listed (the launcher) but not compared; so is a rank's
 * image that called execve when its next image is among them. */
int stp_report_ranks_text(stp_det *const *d, size_t n, const stp_report_options *o, FILE *f);
int stp_report_ranks_json(stp_det *const *d, size_t n, const stp_report_options *o, FILE *f);
int stp_report_ranks_html(stp_det *const *d, size_t n, const stp_report_options *o, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
