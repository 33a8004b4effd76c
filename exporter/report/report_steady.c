/*
 * report_steady.c - the time the reports give beside the steady-state
 * iteration: the median time of the iterations with its allocation count
 * (folded ones included).  The steady iteration's own time is one sample:
 * in a DataLoader loop (2 workers, 256 steps) it measured 59.86 ms in one
 * run and 20.12 ms in another, the medians 13.44 and 13.22 ms.  Shared by
 * the text and HTML reports.  Iterations recorded in full detail (the
 * loop's first ones: stp_det_iteration.detail) are left out when at least 3
 * others remain: on a Hugging Face Trainer's GPT-2 (60 steps, CPU) the
 * first five took 43-65 ms and the others a median 26.6 ms.
 */
#include <stdlib.h>

#include "report_internal.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int report_steady_median(const stp_det_timeline *t, uint32_t *n_out, uint64_t *ns_out)
{
	if (t->steady < 0)
		return 0;
	const stp_det_iteration *it = &t->iterations[t->steady];
	uint64_t *d = malloc((t->niterations ? t->niterations : 1) * sizeof *d);
	uint32_t n = 0;
	if (!d)
		return 0;
	for (int lean = 1; lean >= 0 && n < 3; lean--) {
		n = 0;
		for (uint32_t i = 0; i < t->niterations; i++) {
			const stp_det_iteration *x = &t->iterations[i];
			if (x->allocs == it->allocs && x->end_ns > x->begin_ns && !(lean && x->detail))
				d[n++] = x->end_ns - x->begin_ns;
		}
	}
	int ok = n >= 3;
	if (ok) {
		qsort(d, n, sizeof *d, cmp_u64);
		*n_out = n;
		*ns_out = d[n / 2];
	}
	free(d);
	return ok;
}
