/*
 * mem.c - memory for the collector's own structures, straight from mmap so
 * that none of it shows up in (or depends on) the heap being recorded.
 */
#include <sys/mman.h>

#include "internal.h"

void *stc_mem_alloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void stc_mem_free(void *p, size_t n)
{
	if (p)
		munmap(p, n);
}
