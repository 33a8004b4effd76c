/*
 * analysis.h - what `stprof report`, `stprof export` and the one-shot mode
 * (`stprof PROGRAM`) share, so the one-shot mode runs the detector once for
 * both the report and the timeline.
 */
#ifndef STPROF_CLI_ANALYSIS_H
#define STPROF_CLI_ANALYSIS_H

#include <stddef.h>

#include "stprof/detector.h"
#include "stprof/perfetto.h"

/* Writes the timeline of traces to out with eo's limits and prints the
 * summary unless quiet; its figures in *stats when not NULL.  The
 * detector's results come from given[i] when given is not NULL (kept; run
 * with keep_objects), else from running it with dopt (NULL: no analysis).
 * 0, or 1 after printing the error. */
int export_run(const char *const *traces, size_t ntraces, const char *out, stp_export_opts *eo,
               const stp_det_options *dopt, stp_det *const *given, int quiet, stp_export_stats *stats);
#endif
