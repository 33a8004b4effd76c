/*
 * alloc_loop.c - a C program nobody tuned for stprof: N allocations (argv[1])
 * in a loop, most freed at once, one in a thousand kept a while.  Used by
 * test_timeline_bound.sh for the one-shot timeline's size bound.
 */
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	void *keep[64] = {0};
	for (long i = 0; i < n; i++) {
		void *p = malloc(64 + (size_t)(i & 255));
		if (i % 1000 == 0) {
			free(keep[i / 1000 % 64]);
			keep[i / 1000 % 64] = p;
		} else {
			free(p);
		}
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	return 0;
}
