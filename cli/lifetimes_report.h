/*
 * lifetimes_report.h - the report section for non-iterative programs
 * (lifetimes_report.c): lifetime classes by site over wall time, the
 * huge-page footprint of each allocator model, what the lifetime plan
 * would save.
 */
#ifndef STPROF_CLI_LIFETIMES_REPORT_H
#define STPROF_CLI_LIFETIMES_REPORT_H

#include <stdio.h>

#include "stprof/lifetimes.h"

/* model NULL: classes learned from the trace itself.  0, or -1 with err. */
int lifetimes_section(FILE *f, const char *trace, const stp_lt_model *model, const char *model_name, char *err,
                      size_t errlen);

#endif
