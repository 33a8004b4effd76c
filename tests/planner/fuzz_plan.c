/* fuzz_plan.c - libFuzzer target: any bytes given to the plan parser are
 * rejected with a message or accepted; accepted plans are verified and
 * shown.  Never a crash or an overrun. */
#include <stdint.h>
#include <stdio.h>

#include "stprof/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	stp_reqs r;
	stp_plan p;
	char err[512];
	if (stp_plan_parse(data, size, "fuzz", &r, &p, err, sizeof err) == 0) {
		if (r.n < 5000)
			(void)stp_plan_verify(&r, &p, err, sizeof err);
		FILE *f = fopen("/dev/null", "w");
		if (f) {
			stp_plan_show(f, &r, &p, 100);
			fclose(f);
		}
		stp_plan_free(&p);
		stp_reqs_free(&r);
	}
	return 0;
}
