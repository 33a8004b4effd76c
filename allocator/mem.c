/*
 * mem.c - the allocator's own tables come from anonymous mappings, never
 * from malloc: libstalloc.so replaces malloc, and a table that grew through
 * malloc would recurse into it.  Memory is zeroed and rounded up to pages.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static size_t page_round(size_t n)
{
	size_t pg = 4096;
	return (n + pg - 1) & ~(pg - 1);
}

void *st_map(size_t bytes)
{
	if (!bytes)
		bytes = 1;
	void *p = mmap(NULL, page_round(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void st_unmap(void *p, size_t bytes)
{
	if (p)
		munmap(p, page_round(bytes ? bytes : 1));
}
