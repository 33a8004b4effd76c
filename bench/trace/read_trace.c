/*
 * read_trace.c - reader throughput: reads every event of a trace and prints
 * events per second (CPU time of this process) and MB/s.
 *   read_trace TRACE [PASSES]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stprof/trace.h"

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: read_trace TRACE [PASSES]\n");
		return 2;
	}
	int passes = argc > 2 ? atoi(argv[2]) : 3;
	double best = 1e30;
	uint64_t n = 0, bytes = 0;
	for (int p = 0; p < passes; p++) {
		char err[512];
		stp_reader *r = stp_reader_open(argv[1], err, sizeof err);
		if (!r) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		double t0 = cpu_s();
		stp_event ev;
		uint64_t sum = 0;
		n = 0;
		while (stp_reader_next(r, &ev) > 0) {
			sum += ev.seq;
			n++;
		}
		double t = cpu_s() - t0;
		bytes = stp_reader_stats(r)->bytes;
		stp_reader_close(r);
		if (t < best)
			best = t;
		if (!sum && n > 1)
			return 1;
	}
	printf("events=%llu cpu=%.3f s  %.2f M events/s  %.0f MB/s\n", (unsigned long long)n, best, (double)n / best / 1e6,
	       (double)bytes / best / 1e6);
	return 0;
}
