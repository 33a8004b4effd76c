/*
 * leak_program.c - a real program for the leak rules (leaks_real.sh): it
 * prints first (libc's stdout buffer, never freed), then runs 12 marked
 * iterations that each allocate and free a work buffer and leak 1000 bytes
 * (a real leak), fills a cache once in iteration 5 (never freed: not a
 * leak), and allocates in teardown without freeing (not a leak).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/stprof.h"

static void *cache;
static void *leaked[16];

int main(void)
{
	printf("start\n");
	fflush(stdout);
	for (int it = 0; it < 12; it++) {
		stprof_iteration_begin(it);
		char *work = malloc(100000);
		memset(work, it, 100000);
		leaked[it] = malloc(1000); /* lost track of: a leak */
		if (it == 5)
			cache = malloc(5000); /* a cache filled once */
		free(work);
		stprof_iteration_end(it);
	}
	void *teardown = malloc(777); /* teardown's, live at exit */
	printf("done %p %p %p\n", cache, teardown, leaked[0] ? (void *)1 : NULL);
	return 0;
}
