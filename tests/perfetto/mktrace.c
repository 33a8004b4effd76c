/* mktrace.c - pftrace_mktrace OUT.stp [PID RANK HOST T0]: writes the sample
 * trace of sample_trace.h, for the script tests and the fuzz seeds. */
#include <stdio.h>
#include <stdlib.h>

#include "sample_trace.h"

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 6) {
		fprintf(stderr, "usage: pftrace_mktrace OUT.stp [PID RANK HOST T0]\n");
		return 2;
	}
	uint32_t pid = argc == 6 ? (uint32_t)strtoul(argv[2], NULL, 10) : 4242;
	int rank = argc == 6 ? atoi(argv[3]) : -1;
	const char *host = argc == 6 ? argv[4] : "node0";
	uint64_t t0 = argc == 6 ? strtoull(argv[5], NULL, 10) : 5000000000ull;
	return sample_trace_write(argv[1], pid, rank, host, t0, NULL) == 0 ? 0 : 1;
}
