/*
 * report_internal.h - pieces the report writers share beyond number
 * formatting (report_fmt.h): the allocator-model sections, the steady
 * iteration's median time.
 */
#ifndef STP_REPORT_INTERNAL_H
#define STP_REPORT_INTERNAL_H

#include <stdio.h>

#include "stprof/detector.h"
#include "stprof/report.h"

/* The most frames a call path shows (--frames N). */
#define REPORT_MAX_FRAMES 64

/* ",\n\"models\":{...}" (or null) of the JSON report.  Every site index
 * it writes is marked in mark[] (nsites bytes) when mark is not NULL, so
 * that the report's bounded "sites" carries it. */
void report_json_models(stp_det *d, FILE *f, uint8_t *mark);
/* The HTML "Allocator models" section: the table, the memory-over-time
 * plot of allocated vs reserved per model, the worst moment, the
 * recommendations. */
void report_html_models(stp_det *d, FILE *f);
/* The text report's top call sites grouped by function or module
 * (o->group; report_group.c), after the section's heading. */
void report_text_grouped(stp_det *d, const stp_det_result *r, const stp_report_options *o, FILE *f);
/* The text report's line per reason that some of the top sites [0, rows)
 * show no line of the program (stp_det_site_no_line). */
void report_text_no_line(stp_det *d, const stp_det_result *r, uint32_t rows, FILE *f, const char *indent);
/* The median time of the iterations with the steady-state iteration's
 * allocation count, folded ones included, those recorded in full detail
 * left out when 3 others remain (report_steady.c): 1 with *n the count and
 * *ns the median when there are at least 3, else 0. */
int report_steady_median(const stp_det_timeline *t, uint32_t *n, uint64_t *ns);
/* The child processes recorded beside the trace (report_children.c): the
 * text and HTML sections, and the JSON report's ",\n\"children\":[...]"; nothing
 * when there are none. */
int report_children_text(const stp_report_children *c, FILE *f);
void report_children_json(const stp_report_children *c, FILE *f);
void report_children_html(const stp_report_children *c, FILE *f);
#endif
