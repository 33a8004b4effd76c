/*
 * util.c - the planner's small shared tools: a stable LSD radix sort of
 * (key, value) pairs and the clocks (the budget's, a thread's CPU time).
 * (The plan file's CRC-32C is the trace library's stp_crc32c.)
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* Stable LSD radix sort by k with `bits`-bit digits (8 or 11), skipping the
 * digits in which every key agrees. */
static void radix_sort(pl_kv *a, pl_kv *tmp, size_t n, unsigned bits)
{
	uint64_t all_or = 0, all_and = ~(uint64_t)0;
	for (size_t i = 0; i < n; i++) {
		all_or |= a[i].k;
		all_and &= a[i].k;
	}
	uint64_t differ = all_or ^ all_and, mask = ((uint64_t)1 << bits) - 1;
	pl_kv *src = a, *dst = tmp;
	size_t cnt[2048];
	for (unsigned shift = 0; shift < 64; shift += bits) {
		if (!((differ >> shift) & mask))
			continue; /* every key has the same digit here */
		memset(cnt, 0, (mask + 1) * sizeof cnt[0]);
		for (size_t i = 0; i < n; i++)
			cnt[(src[i].k >> shift) & mask]++;
		size_t sum = 0;
		for (size_t d = 0; d <= mask; d++) {
			size_t c = cnt[d];
			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[cnt[(src[i].k >> shift) & mask]++] = src[i];
		pl_kv *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof *a);
}

void pl_sort_kv(pl_kv *a, pl_kv *tmp, size_t n)
{
	if (n >= 2)
		radix_sort(a, tmp, n, 11);
}

/* For the many small sets the greedy search sorts: insertion sort below 48
 * pairs, 8-bit digits above (a 2048-entry count table costs more than the
 * sort there). */
void pl_sort_kv_small(pl_kv *a, pl_kv *tmp, size_t n)
{
	if (n < 2)
		return;
	if (n <= 48) {
		for (size_t i = 1; i < n; i++) {
			pl_kv x = a[i];
			size_t j = i;
			while (j && a[j - 1].k > x.k) {
				a[j] = a[j - 1];
				j--;
			}
			a[j] = x;
		}
		return;
	}
	radix_sort(a, tmp, n, 8);
}

/* The planner's clock for its budget: wall time, or with
 * STPROF_PLAN_CLOCK=cpu the process's CPU time (bench/planner on a shared
 * machine: the budget then buys the same work whatever else runs). */
double pl_now(void)
{
	struct timespec ts;
	const char *c = getenv("STPROF_PLAN_CLOCK");
	clock_gettime(c && !strcmp(c, "cpu") ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double pl_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
