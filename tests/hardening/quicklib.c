/* quicklib.c - a library the transparency tests load and unload at once. */
#include <stdlib.h>
#include <string.h>

void *quicklib_alloc(size_t n);
__attribute__((visibility("default"), noinline)) void *quicklib_alloc(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 1, n);
	return p;
}
