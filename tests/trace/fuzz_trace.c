/* fuzz_trace.c - libFuzzer target: any bytes given to the trace reader are
 * read to the end or to an error, never a crash or an overrun. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "stprof/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/fuzz-trace-%d.stp", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	char err[256];
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	if (r) {
		stp_event ev;
		uint64_t ips[64];
		while (stp_reader_next(r, &ev) > 0) {
			if (ev.type == STP_EV_ALLOC)
				stp_reader_stack(r, ev.u.alloc.stack, ips, 64);
			if (ev.type == STP_EV_API)
				for (uint32_t i = 0; i < ev.u.api.nranges; i++)
					(void)ev.u.api.ranges[i].addr;
			(void)stp_reader_string(r, ev.type == STP_EV_MARKER ? ev.u.marker.name : 0);
		}
		stp_reader_close(r);
	}
	unlink(path);
	return 0;
}
