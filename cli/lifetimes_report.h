/*
 * lifetimes_report.h - the figures of the report section for
 * non-iterative programs (lifetimes_report.c): lifetime classes by site
 * over wall time, the huge-page footprint of each host heap model, what
 * the lifetime plan would save; rendered by the exporter.
 */
#ifndef STPROF_CLI_LIFETIMES_REPORT_H
#define STPROF_CLI_LIFETIMES_REPORT_H

#include <stdio.h>

#include "stprof/lifetimes.h"
#include "stprof/report.h"

typedef struct lifetimes_data {
	stp_lt_sim sim;
	char names[STP_LT_SIM_SITES][1024];
	stp_report_lifetimes view; /* what the exporter renders (points into the above) */
} lifetimes_data;

/* model NULL: classes learned from the trace itself (model_name is then
 * not used; else it must outlive out).  0 (sim.allocs 0: no host heap,
 * nothing to say), or -1 with err. */
int lifetimes_compute(const char *trace, const stp_lt_model *model, const char *model_name, lifetimes_data *out,
                      char *err, size_t errlen);

#endif
