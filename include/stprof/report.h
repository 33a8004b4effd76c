/*
 * stprof/report.h - reports of a detector result: text (for a terminal,
 * worst findings first), JSON (schema in docs/report-json.md) and one
 * self-contained HTML page with SVG plots (no network access needed).
 * Implemented in exporter/ (report_*.c): data flows trace -> detector ->
 * exporter, and the writers use the detector's public API only.
 */
#ifndef STPROF_REPORT_H
#define STPROF_REPORT_H

#include <stdio.h>

#include "stprof/detector.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct stp_report_options {
	unsigned top;          /* call sites and findings listed (10) */
	unsigned frames;       /* frames shown per call path (4) */
	unsigned width;        /* text: terminal columns (100) */
	int models_detail;     /* text: the models' full section even when they only
	                        * replayed host allocations (a short summary then) */
	unsigned group;        /* text: top sites grouped: 0 by call site, 1 by
	                        * function, 2 by module (enum stp_report_group) */
} stp_report_options;

enum stp_report_group { STP_GROUP_SITE = 0, STP_GROUP_FUNCTION, STP_GROUP_MODULE };

void stp_report_options_default(stp_report_options *o);

/* Each returns 0, or -1 when writing failed (errno set). */
int stp_report_text(stp_det *d, const stp_report_options *o, FILE *f);
int stp_report_json(stp_det *d, const stp_report_options *o, FILE *f);
int stp_report_html(stp_det *d, const stp_report_options *o, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
