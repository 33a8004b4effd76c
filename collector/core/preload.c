/*
 * preload.c - the heap interposers: malloc, calloc, realloc, reallocarray,
 * free, posix_memalign, aligned_alloc, memalign, valloc, pvalloc (C++ new
 * and delete reach malloc and free).
 *
 * Ordering rule: an allocation is recorded after the real call returns, a
 * free before the real call; so when another thread receives the same
 * address, its ALLOC always gets a later seq than our FREE.  realloc records
 * FREE(old) before and ALLOC(new) after; if it fails the old block lives on
 * and is recorded again.
 *
 * Which allocations get an event (all of them, or with host-heap sampling a
 * sample and the large ones) and so which frees: sample.c.  A recorded block
 * is remembered (when sampling is set up) before the program can free it.
 *
 * Before the real functions are resolved (dlsym may allocate), requests are
 * served from the bootstrap arena (realfn.c).  Calls made while the collector
 * itself is running on this thread (t_busy) are passed through unrecorded.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "sample.h"


static inline int recording(void)
{
	return atomic_load_explicit(&g_state, memory_order_relaxed) == STC_ON && !t_busy;
}

static void record_alloc_stack(void *p, size_t size, const uint64_t *ips, uint32_t depth)
{
	stp_event ev = {.type = STP_EV_ALLOC};
	ev.u.alloc.addr = (uint64_t)(uintptr_t)p;
	ev.u.alloc.size = ev.u.alloc.requested = size;
	ev.u.alloc.device = -1;
	ev.u.alloc.stack = depth ? stc_intern_stack(ips, depth) : 0;
	if (g_heap_set)
		stc_heap_remember(p);
	stc_emit(&ev);
}

__attribute__((noinline)) void stc_record_alloc(void *p, size_t size)
{
	uint64_t ips[STC_DEPTH_MAX];
	t_busy = 1;
	uint32_t d = g_cfg.host_depth ? stc_unwind(ips, g_cfg.host_depth) : 0;
	record_alloc_stack(p, size, ips, d);
	t_busy = 0;
}

__attribute__((noinline)) void stc_record_free(void *p)
{
	t_busy = 1;
	stp_event ev = {.type = STP_EV_FREE};
	ev.u.free.addr = (uint64_t)(uintptr_t)p;
	ev.u.free.device = -1;
	stc_emit(&ev);
	t_busy = 0;
}

/* c10::alloc_cpu's storage refused (torch_cpu.c marks the thread
 * STC_BUSY_UNTIL_ALIGNED while it runs; c10 throws next): a REFUSED event
 * of the tensor pool, with the thread's path as a tensor's has it. */
static __attribute__((noinline)) void record_c10_refused(size_t n)
{
	t_busy = 1;
	stp_event ev = {.type = STP_EV_REFUSED};
	ev.u.alloc.size = ev.u.alloc.requested = n;
	ev.u.alloc.kind = STP_MEM_HOST;
	ev.u.alloc.device = -1;
	ev.u.alloc.pool = STP_POOL_TENSORS;
	ev.u.alloc.stack = stc_py_walk(STC_GIL_IF_ALONE);
	stc_emit(&ev);
	t_busy = 0;
}

/* The aligned allocation under c10::alloc_cpu returned: the thread records
 * again, and a refusal is an event. */
static inline void c10_aligned_done(int refused, size_t n)
{
	t_busy = 0;
	if (refused && atomic_load_explicit(&g_state, memory_order_relaxed) == STC_ON)
		record_c10_refused(n);
}

/* With a minimum size, a free is recorded when the block could have been
 * recorded: usable size >= requested size >= minimum; with sampling, when
 * it was (and it is forgotten now). */
static inline int free_wanted(void *p)
{
	return (!g_cfg.min_size || g_real.malloc_usable_size(p) >= g_cfg.min_size) && stc_heap_forget(p);
}

/* An allocation of n bytes gets an event. */
static inline int alloc_wanted(size_t n) { return n >= g_cfg.min_size && stc_sample_take(n); }

static inline int resolve_or_boot(void)
{
	if (STC_LIKELY(stc_real_resolved()))
		return 1;
	if (t_busy)
		return 0; /* inside dlsym on this thread: use the bootstrap arena */
	t_busy = 1;
	stc_real_resolve();
	t_busy = 0;
	return 1;
}

STC_EXPORT void *malloc(size_t n)
{
	if (STC_UNLIKELY(!resolve_or_boot()))
		return stc_boot_alloc(n, 16);
	void *p = g_real.malloc(n);
	if (p && recording() && alloc_wanted(n))
		stc_record_alloc(p, n);
	return p;
}

STC_EXPORT void free(void *p)
{
	if (!p || STC_UNLIKELY(stc_boot_owns(p)))
		return;
	if (STC_UNLIKELY(!resolve_or_boot()))
		return; /* cannot happen: p came from a real allocator */
	if (recording() && free_wanted(p))
		stc_record_free(p);
	g_real.free(p);
}

STC_EXPORT void *calloc(size_t n, size_t m)
{
	if (STC_UNLIKELY(!resolve_or_boot())) {
		size_t t;
		if (__builtin_mul_overflow(n, m, &t))
			return NULL;
		return stc_boot_alloc(t, 16);
	}
	void *p = g_real.calloc(n, m);
	if (p && recording() && alloc_wanted(n * m))
		stc_record_alloc(p, n * m);
	return p;
}

static void *realloc_common(void *p, size_t n)
{
	if (STC_UNLIKELY(!p || stc_boot_owns(p))) {
		void *q = malloc(n);
		if (q && p) /* from the bootstrap arena: its size is unknown, copy what fits */
			memcpy(q, p, n);
		return q;
	}
	if (!recording())
		return g_real.realloc(p, n);
	uint64_t ips[STC_DEPTH_MAX];
	t_busy = 1;
	int take = alloc_wanted(n);
	uint32_t d = take && g_cfg.host_depth ? stc_unwind(ips, g_cfg.host_depth) : 0;
	size_t old_size = g_real.malloc_usable_size(p);
	int old_rec = old_size >= g_cfg.min_size && stc_heap_forget(p);
	if (old_rec)
		stc_record_free(p), t_busy = 1;
	void *q = g_real.realloc(p, n);
	if (q && take) {
		record_alloc_stack(q, n, ips, d);
	} else if (!q && n && old_rec) { /* failed: the old block lives on */
		if (!take && g_cfg.host_depth)
			d = stc_unwind(ips, g_cfg.host_depth);
		record_alloc_stack(p, old_size, ips, d);
	}
	t_busy = 0;
	return q;
}

STC_EXPORT void *realloc(void *p, size_t n)
{
	if (STC_UNLIKELY(!resolve_or_boot()))
		return stc_boot_alloc(n, 16);
	return realloc_common(p, n);
}

STC_EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t t;
	if (__builtin_mul_overflow(n, m, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, t);
}

STC_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (STC_UNLIKELY(!resolve_or_boot())) {
		*out = stc_boot_alloc(n, align);
		return *out ? 0 : ENOMEM;
	}
	int rc = g_real.posix_memalign(out, align, n);
	if (STC_UNLIKELY(t_busy == STC_BUSY_UNTIL_ALIGNED)) /* c10's storage: torch_cpu.c */
		c10_aligned_done(rc != 0, n);
	else if (rc == 0 && recording() && alloc_wanted(n))
		stc_record_alloc(*out, n);
	return rc;
}

#define ALIGNED(name, call, size_expr, boot_align) \
	STC_EXPORT void *name \
	{ \
		if (STC_UNLIKELY(!resolve_or_boot())) \
			return stc_boot_alloc(size_expr, boot_align); \
		void *p = call; \
		if (STC_UNLIKELY(t_busy == STC_BUSY_UNTIL_ALIGNED)) \
			c10_aligned_done(!p, size_expr); \
		else if (p && recording() && alloc_wanted(size_expr)) \
			stc_record_alloc(p, size_expr); \
		return p; \
	}

ALIGNED(aligned_alloc(size_t align, size_t n), g_real.aligned_alloc(align, n), n, align)
ALIGNED(memalign(size_t align, size_t n), g_real.memalign(align, n), n, align)
ALIGNED(valloc(size_t n), g_real.valloc(n), n, 4096)
ALIGNED(pvalloc(size_t n), g_real.pvalloc(n), n, 4096)

STC_EXPORT size_t malloc_usable_size(void *p)
{
	if (!p || stc_boot_owns(p))
		return 0;
	if (STC_UNLIKELY(!resolve_or_boot()))
		return 0;
	return g_real.malloc_usable_size(p);
}
