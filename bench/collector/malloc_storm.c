/*
 * malloc_storm.c - the collector microbenchmark: N malloc/free pairs made at
 * a chosen call depth (recursion through distinct frames), timed inside the
 * process.  Prints "pairs=N ns_per_pair=X".  Run natively and under stprof;
 * the difference per pair / 2 is the cost per recorded event.
 *   malloc_storm [PAIRS] [DEPTH] [LIVE]
 * LIVE objects stay allocated in a ring so addresses vary like a real heap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static size_t pairs = 1000000, live = 64;
static void **ring;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static void work(void)
{
	for (size_t i = 0; i < pairs; i++) {
		size_t k = i % live;
		free(ring[k]);
		ring[k] = malloc(16 + (i * 7919) % 2000);
	}
}

__attribute__((noinline)) static void descend(int depth)
{
	if (depth <= 1) {
		work();
		return;
	}
	descend(depth - 1);
	__asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
}

int main(int argc, char **argv)
{
	int depth = 32;
	if (argc > 1)
		pairs = strtoull(argv[1], NULL, 10);
	if (argc > 2)
		depth = atoi(argv[2]);
	if (argc > 3)
		live = strtoull(argv[3], NULL, 10);
	ring = calloc(live, sizeof *ring);
	/* main, libc frames and descend: reach the requested total depth */
	double t0 = now();
	descend(depth > 4 ? depth - 4 : 1);
	double t1 = now();
	for (size_t k = 0; k < live; k++)
		free(ring[k]);
	free(ring);
	printf("pairs=%zu ns_per_pair=%.1f\n", pairs, (t1 - t0) / (double)pairs);
	return 0;
}
