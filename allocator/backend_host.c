/*
 * backend_host.c - host memory for libstalloc: the pool is one anonymous
 * private mapping (MAP_NORESERVE: pages cost memory only once touched),
 * aligned to 2 MiB and advised to use transparent huge pages when it is at
 * least that large (the plan reuses the same ranges every iteration, so
 * the pool's pages stay resident: huge pages cut its TLB misses; the Llama
 * paper's argument; STALLOC_HUGEPAGES=0 leaves the pool on 4 KiB pages);
 * fallback blocks of 2 MiB or more are mappings of their own (on huge
 * pages too), smaller ones come from glibc's own entry points
 * (__libc_memalign, __libc_free), which stay reachable when malloc itself
 * is interposed by libstalloc.so, 64-byte aligned (PyTorch's CPU
 * alignment, a cache line).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);

/* AddressSanitizer intercepts __libc_memalign but not __libc_free: a block
 * of its heap given to glibc's free aborts.  An ASan build (the test suite's;
 * libstalloc.so is never preloaded from one) takes both from its malloc. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(ST_ASAN)
#define ST_ASAN 1
#endif
#ifdef ST_ASAN
#define small_alloc(n) aligned_alloc(64, ((n) + 63) / 64 * 64)
#define small_free(p) free(p)
#else
#define small_alloc(n) __libc_memalign(64, (n))
#define small_free(p) __libc_free(p)
#endif

#define HUGE_PAGE ((uint64_t)2 << 20)

static int huge_pages(void)
{
	const char *h = getenv("STALLOC_HUGEPAGES");
	return !h || strcmp(h, "0");
}

/* size bytes of fresh anonymous memory, 2 MiB-aligned and advised to use
 * transparent huge pages when huge; unmapped with munmap(p, size) */
static void *map_pages(uint64_t size, int huge)
{
	uint64_t len = huge ? size + HUGE_PAGE : size;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (!huge)
		return p;
	/* keep the 2 MiB-aligned part of the mapping, give the rest back */
	char *a = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + len > a + size)
		munmap(a + size, (size_t)(p + len - (a + size)));
#ifdef MADV_HUGEPAGE
	madvise(a, size, MADV_HUGEPAGE); /* advice: a kernel without THP ignores it */
#endif
	return a;
}

static void *host_reserve(void *ctx, uint64_t size)
{
	(void)ctx;
	return map_pages(size, size >= HUGE_PAGE && huge_pages());
}

static void host_unreserve(void *ctx, void *base, uint64_t size)
{
	(void)ctx;
	munmap(base, size);
}

/* Fallback blocks: large ones (the fallback caches them: mapped once per
 * size) are mappings of their own on huge pages, as the pool; the rest
 * glibc's.  raw_free is given the size raw_alloc was. */
static void *host_raw_alloc(void *ctx, uint64_t size)
{
	(void)ctx;
	if (size >= HUGE_PAGE)
		return map_pages(size, huge_pages());
	return small_alloc(size);
}

static void host_raw_free(void *ctx, void *p, uint64_t size)
{
	(void)ctx;
	if (size >= HUGE_PAGE)
		munmap(p, size);
	else
		small_free(p);
}

void stalloc_backend_host(stalloc_backend *b)
{
	*b = (stalloc_backend){host_reserve, host_unreserve, host_raw_alloc, host_raw_free, NULL, "host"};
}
