/*
 * backend_host.c - host memory for libstalloc: the pool is one anonymous
 * private mapping (MAP_NORESERVE: pages cost memory only once touched),
 * fallback blocks come from glibc's own entry points (__libc_memalign,
 * __libc_free), which stay reachable when malloc itself is interposed by
 * libstalloc.so, 64-byte aligned (PyTorch's CPU alignment, a cache line).
 */
#include <sys/mman.h>

#include "internal.h"

extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);

static void *host_reserve(void *ctx, uint64_t size)
{
	(void)ctx;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void host_unreserve(void *ctx, void *base, uint64_t size)
{
	(void)ctx;
	munmap(base, size);
}

static void *host_raw_alloc(void *ctx, uint64_t size)
{
	(void)ctx;
	return __libc_memalign(64, size);
}

static void host_raw_free(void *ctx, void *p, uint64_t size)
{
	(void)ctx;
	(void)size;
	__libc_free(p);
}

void stalloc_backend_host(stalloc_backend *b)
{
	*b = (stalloc_backend){host_reserve, host_unreserve, host_raw_alloc, host_raw_free, NULL, "host"};
}
