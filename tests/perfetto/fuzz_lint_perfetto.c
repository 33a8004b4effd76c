/* fuzz_lint_perfetto.c - libFuzzer target: any bytes given to the Perfetto
 * lint are checked to the end or to a malformed record, never a crash, an
 * overrun or a leak. */
#include <stdint.h>
#include <stdio.h>

#include "stprof/perfetto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t one;
	FILE *f = size ? fmemopen((void *)data, size, "rb") : fmemopen(&one, 1, "rb");
	if (!f)
		return 0;
	if (!size)
		fgetc(f); /* fmemopen wants a non-empty buffer: consume it */
	stp_lint_result r;
	stp_lint_opts o = {.name = "fuzz", .report = NULL};
	stp_lint_perfetto(f, &o, &r);
	fclose(f);
	return 0;
}
