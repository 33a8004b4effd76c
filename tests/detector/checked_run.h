/*
 * checked_run.h - stp_det_run() for the detector's C tests, with the
 * report's own arithmetic checked on every result (stp_det_check,
 * docs/report.md "Self-check"): every crafted trace the tests analyse
 * passes through it, as every trace the script tests analyse passes
 * through the CLI's STPROF_SELF_CHECK.  Include after check.h.
 */
#ifndef STPROF_TEST_CHECKED_RUN_H
#define STPROF_TEST_CHECKED_RUN_H
#include "stprof/detector.h"

static inline stp_det *checked_det_run(const char *path, const stp_det_options *o, char *err, size_t errlen)
{
	stp_det *d = stp_det_run(path, o, err, errlen);
	if (d) {
		char buf[2048];
		uint32_t n = stp_det_check(d, buf, sizeof buf);
		if (n)
			fprintf(stderr, "%s: %u figures do not add up:\n%s", path, n, buf);
		CHECK(n == 0);
	}
	return d;
}

/* The timeline of a checked run of PATH with the default options; the
 * detector goes to *out (stp_det_free it).  NULL, with a failed check,
 * when the run fails. */
static inline const stp_det_timeline *checked_timeline(const char *path, stp_det **out)
{
	char err[512];
	*out = checked_det_run(path, NULL, err, sizeof err);
	CHECK(*out != NULL);
	return *out ? &stp_det_result_of(*out)->timeline : NULL;
}
#endif
