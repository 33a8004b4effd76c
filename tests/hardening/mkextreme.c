/*
 * mkextreme.c - writes small, well-formed traces with extreme but legal
 * values, for the hardening tests: mkextreme FILE SIZE [SIZE...] writes one
 * host allocation of each SIZE (decimal or 0x hex), then frees them all.
 * Every trace it writes is valid; a reader must handle it without a crash.
 */
#include <stdio.h>
#include <stdlib.h>

#include "stprof/trace.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: mkextreme FILE SIZE [SIZE...]\n");
		return 2;
	}
	char err[256];
	stp_writer *w = stp_writer_open(argv[1], err, sizeof err);
	if (!w) {
		fprintf(stderr, "mkextreme: %s\n", err);
		return 1;
	}
	stp_event ev = {.type = STP_EV_PROCESS, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = 1000};
	ev.u.process = (stp_process_info){.pid = 1, .ppid = 0, .rank = -1, .local_rank = -1, .world_size = -1};
	stp_writer_event(w, &ev);
	uint64_t addr = 0x10000;
	for (int i = 2; i < argc; i++) {
		uint64_t size = strtoull(argv[i], NULL, 0);
		ev = (stp_event){.type = STP_EV_ALLOC, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = 2000 + (uint64_t)i};
		ev.u.alloc = (stp_alloc_info){.addr = addr, .size = size, .requested = size, .device = -1};
		stp_writer_event(w, &ev);
		addr += 0x1000;
	}
	addr = 0x10000;
	for (int i = 2; i < argc; i++) {
		ev = (stp_event){.type = STP_EV_FREE, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = 9000 + (uint64_t)i};
		ev.u.free = (stp_free_info){.addr = addr, .device = -1};
		stp_writer_event(w, &ev);
		addr += 0x1000;
	}
	return stp_writer_close(w, STP_END_EXIT, 0) ? 1 : 0;
}
