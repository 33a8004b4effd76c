/* fuzz_minimalloc_csv.c - libFuzzer target: the MiniMalloc CSV parser on
 * any bytes; accepted small instances are planned (the search included,
 * with a short budget) and the plan verified (it must verify). */
#include <stdint.h>
#include <stdlib.h>

#include "stprof/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	stp_reqs r;
	uint64_t *off;
	char err[512];
	if (stp_reqs_parse_csv((const char *)data, size, "fuzz.csv", &r, &off, err, sizeof err) == 0) {
		free(off);
		if (r.n < 2000) {
			stp_plan_opts o;
			stp_plan_opts_init(&o);
			o.budget = 0.01; /* the search runs, briefly: inputs stay fast */
			stp_plan p;
			if (stp_plan_build(&r, &o, &p, err, sizeof err) == 0) {
				if (stp_plan_verify(&r, &p, err, sizeof err) != 0)
					abort(); /* the planner made an invalid plan */
				stp_plan_free(&p);
			}
		}
		stp_reqs_free(&r);
	}
	return 0;
}
