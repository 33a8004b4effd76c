/*
 * sample_trace.h - writes small .stp traces with stp_writer that exercise
 * everything the Perfetto exporter draws: a process with threads and
 * modules, allocations with call stacks on two CUDA streams and on the host,
 * API calls whose address ranges touch them (some overlapping on one
 * stream), iteration/phase/module markers, segment reserve/release, and the
 * awkward cases (an unmatched free, an unmatched end marker, an address
 * reused without a free, timestamps slightly out of order across threads,
 * objects never freed).
 */
#ifndef STPROF_TESTS_SAMPLE_TRACE_H
#define STPROF_TESTS_SAMPLE_TRACE_H

#include <stdint.h>

typedef struct sample_facts {
	uint64_t objects;            /* ALLOC events */
	uint64_t api_calls;
	uint64_t peak_device_live;   /* most cuda:0 objects live at once */
	uint64_t peak_host_live;
	int64_t end_requested;       /* cuda:0 requested bytes at the end */
	int64_t end_allocated;
	int64_t end_reserved;
	uint64_t unfreed;            /* objects still live at the end */
	uint64_t iterations;
	uint64_t t_first, t_last;    /* time_ns of the first and last events */
	uint64_t train_ip;           /* an ip inside the "train" module */
} sample_facts;

/* Writes the sample to path: pid, rank, host as given; times start at t0.
 * Returns 0 and fills *facts (may be NULL). */
int sample_trace_write(const char *path, uint32_t pid, int rank, const char *host, uint64_t t0,
                       sample_facts *facts);

#endif
