/*
 * framework_wrapper.c - six allocations, each at its own line of main, all
 * through one function the report counts as framework by its name
 * (cuFakeMalloc: a CUDA entry point's shape), as a CUDA program's
 * cudaMalloc calls all go through the runtime linked into it and, under
 * --accesses=exact, the driver's and the sanitizer's frames.  For
 * test_framework_wrapper.sh.
 */
#include <stdlib.h>

void *cuFakeMalloc(size_t n);
__attribute__((noinline)) void *cuFakeMalloc(size_t n)
{
	char *p = malloc(n);
	if (p)
		p[0] = 1;
	return p;
}

int main(void)
{
	char *p[6];
	p[0] = cuFakeMalloc(1 << 20); /* line 23 */
	p[1] = cuFakeMalloc(2 << 20);
	p[2] = cuFakeMalloc(3 << 20);
	p[3] = cuFakeMalloc(4 << 20);
	p[4] = cuFakeMalloc(5 << 20);
	p[5] = cuFakeMalloc(6 << 20); /* line 28 */
	long s = 0;
	for (int i = 0; i < 6; i++)
		s += p[i] ? p[i][0] : 0;
	for (int i = 0; i < 6; i++)
		free(p[i]);
	return s == 6 ? 0 : 1;
}
