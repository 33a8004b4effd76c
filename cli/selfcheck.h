/*
 * selfcheck.h - every detector run of the CLI goes through here, so that
 * the report's own arithmetic (stp_det_check) can be checked on every trace
 * the test suite analyses (STPROF_SELF_CHECK=1) and on demand (`stprof
 * report --check`).
 */
#ifndef STPROF_CLI_SELFCHECK_H
#define STPROF_CLI_SELFCHECK_H
#include <stddef.h>

#include "stprof/detector.h"

/* stp_det_run(); with STPROF_SELF_CHECK=1 in the environment, a result
 * whose figures do not add up prints them and exits 70 (EX_SOFTWARE). */
stp_det *selfcheck_det_run(const char *path, const stp_det_options *o, char *err, size_t errlen);
/* Checks d; prints "stprof: self-check: PATH: ..." lines for violations
 * on stderr.  Returns the number of violations. */
unsigned selfcheck_report(stp_det *d, const char *path);
#endif
