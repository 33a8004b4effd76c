/*
 * torch_cuda_caching.c - PyTorch's CUDA caching allocator kept
 * (STC_TORCH_CUDA_CACHING): its tensors and its segments, from the report
 * the allocator makes to the profiler.
 *
 * On every block it hands out (at the end of malloc) and takes back (in
 * free), c10's CUDA caching allocator calls c10::reportMemoryUsageToProfiler
 * (ptr, +/-block size, allocated bytes, reserved bytes, device) - always,
 * whether a profiler listens or not - from libc10_cuda.so into libc10.so,
 * so through the PLT: the preloaded collector interposes it by its mangled
 * name (the totals are int64_t in PyTorch 1.x, size_t in 2.x: two names, one
 * body) and then calls libc10's own definition, so a profiler still gets
 * every report.  Reports of other devices (the CPU allocator's, under a
 * profiler) are only passed on.
 *
 * What a report gives, and what is made of it:
 *   - the block and its size as the allocator counts it (allocated_bytes,
 *     so the live tensor bytes equal torch.cuda.memory_allocated() at every
 *     event, and their peak max_memory_allocated()): ALLOC / FREE, kind
 *     DEVICE, pool STP_POOL_TENSORS, stream 0 (a report has none), with the
 *     native call path (Python frames only when the thread holds the GIL
 *     already: the allocator calls us under its own lock, see
 *     torch_common.c);
 *   - the device's reserved bytes after the call.  Reserved memory grows
 *     only inside malloc, which then reports the block it allocated, so the
 *     peak of the reserved bytes seen is max_memory_reserved() exactly.  A
 *     growth is a SEGMENT_RESERVE: a block outside every known segment
 *     starts a new one (cudaMalloc returns the block's own address), a block
 *     inside one that grew maps more pages after it (expandable segments:
 *     the address is where the mapped run ends).  A shrink is a
 *     SEGMENT_RELEASE of segments holding no live block (all of them when
 *     their sizes add up, as empty_cache and the allocator's retry release
 *     every free segment; else one of the exact size; else the largest
 *     first), recorded at the next report or when the shim says, right
 *     after torch.cuda.empty_cache(); what no segment accounts for is
 *     released with address 0 (counted as unplaced).
 *
 * When it gives up on a request (torch.OutOfMemoryError), the allocator
 * calls c10::reportOutOfMemoryToProfiler(size, allocated, reserved,
 * device) the same way: a REFUSED event of the request (record_oom).
 *
 * Reports of one device are serialized by the allocator's lock; the state
 * here has its own (taken after the call path is walked, never around a
 * callback).  Events are recorded even while the thread is busy: a free
 * that Python's GC makes while the collector walks frames is the
 * program's, and must not be lost.
 */
#include <pthread.h>
#include <string.h>

#include "stprof/trace.h"
#include "torch_cuda.h"

#define NAME_V2 "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE"
#define NAME_V1 "_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE"
#define OOM_V2 "_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE"
#define OOM_V1 "_ZN3c1027reportOutOfMemoryToProfilerElllNS_6DeviceE"
#define MAX_DEV 128
#define C10_CUDA 1 /* c10::DeviceType::CUDA */

/* c10::Device: two int8_t, passed by value in one register. */
typedef struct stc_c10_device {
	int8_t type, index;
} stc_c10_device;

typedef void (*report_fn)(void *, int64_t, uint64_t, uint64_t, stc_c10_device);
typedef void (*oom_fn)(int64_t, uint64_t, uint64_t, stc_c10_device);

STC_EXPORT void stc_c10_report_v2(void *p, int64_t size, uint64_t alloc, uint64_t res, stc_c10_device d)
	__asm__(NAME_V2);
STC_EXPORT void stc_c10_report_v1(void *p, int64_t size, int64_t alloc, int64_t res, stc_c10_device d)
	__asm__(NAME_V1);
STC_EXPORT void stc_c10_oom_v2(int64_t size, uint64_t alloc, uint64_t res, stc_c10_device d) __asm__(OOM_V2);
STC_EXPORT void stc_c10_oom_v1(int64_t size, int64_t alloc, int64_t res, stc_c10_device d) __asm__(OOM_V1);

typedef struct seg {
	uint64_t addr, size;
	uint32_t live; /* blocks starting in it */
} seg;

typedef struct dev_state {
	uint64_t reserved; /* as the last report said */
	seg *v;
	size_t n, cap;
} dev_state;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static dev_state devs[MAX_DEV];
static uint64_t n_reports, n_unplaced;
static report_fn real_v1, real_v2;
static oom_fn real_oom_v1, real_oom_v2;
static _Atomic int resolved;

/* libc10's definition of name, NULL when it is one of ours (mine1, mine2). */
static void *real_sym(const char *name, void *mine1, void *mine2)
{
	void *s = stc_c10_sym(name);
	return s == mine1 || s == mine2 ? NULL : s;
}

void stc_torch_cuda_caching_resolve(void)
{
	if (atomic_load_explicit(&resolved, memory_order_acquire))
		return;
	void *r2 = (void *)stc_c10_report_v2, *r1 = (void *)stc_c10_report_v1;
	void *o2 = (void *)stc_c10_oom_v2, *o1 = (void *)stc_c10_oom_v1;
	*(void **)&real_v2 = real_sym(NAME_V2, r2, r1);
	*(void **)&real_v1 = real_sym(NAME_V1, r2, r1);
	*(void **)&real_oom_v2 = real_sym(OOM_V2, o2, o1);
	*(void **)&real_oom_v1 = real_sym(OOM_V1, o2, o1);
	atomic_store_explicit(&resolved, 1, memory_order_release);
}

/* ---------------------------------------------------------------- segments */

/* Index of the segment holding p, or -1. */
static long seg_find(const dev_state *d, uint64_t p)
{
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->v[mid].addr <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || p - d->v[lo - 1].addr >= d->v[lo - 1].size)
		return -1;
	return (long)(lo - 1);
}

/* Adds a segment (sorted); 0 when the table could not grow. */
static int seg_add(dev_state *d, uint64_t addr, uint64_t size)
{
	if (d->n == d->cap) {
		seg *nv = stc_mem_grow(d->v, &d->cap, d->n, sizeof *d->v, 256);
		if (!nv)
			return 0;
		d->v = nv;
	}
	size_t i = 0;
	while (i < d->n && d->v[i].addr < addr)
		i++;
	memmove(d->v + i + 1, d->v + i, (d->n - i) * sizeof *d->v);
	d->v[i] = (seg){addr, size, 0};
	d->n++;
	return 1;
}

static void emit_segment(int type, int32_t dev, uint64_t addr, uint64_t size, uint32_t stack)
{
	stp_event ev = {.type = (uint8_t)type};
	ev.u.segment.addr = addr;
	ev.u.segment.size = ev.u.segment.requested = size;
	ev.u.segment.kind = STP_MEM_DEVICE;
	ev.u.segment.device = dev;
	ev.u.segment.stack = stack;
	stc_emit(&ev);
}

static void release_at(dev_state *d, int32_t dev, size_t i)
{
	emit_segment(STP_EV_SEGMENT_RELEASE, dev, d->v[i].addr, d->v[i].size, 0);
	memmove(d->v + i, d->v + i + 1, (d->n - i - 1) * sizeof *d->v);
	d->n--;
}

/* amount bytes were released: by segments holding no live block, except
 * the one at index keep (-1: none). */
static void release(dev_state *d, int32_t dev, uint64_t amount, long keep)
{
	uint64_t all = 0;
	for (size_t i = 0; i < d->n; i++)
		if (!d->v[i].live && (long)i != keep)
			all += d->v[i].size;
	if (all == amount) {
		for (size_t i = d->n; i-- > 0;)
			if (!d->v[i].live && (long)i != keep)
				release_at(d, dev, i);
		return;
	}
	for (size_t i = 0; i < d->n; i++)
		if (!d->v[i].live && (long)i != keep && d->v[i].size == amount) {
			release_at(d, dev, i);
			return;
		}
	while (amount) {
		long best = -1;
		for (size_t i = 0; i < d->n; i++)
			if (!d->v[i].live && (long)i != keep && d->v[i].size <= amount &&
			    (best < 0 || d->v[i].size > d->v[best].size))
				best = (long)i;
		if (best < 0)
			break;
		amount -= d->v[best].size;
		if (keep > best)
			keep--;
		release_at(d, dev, (size_t)best);
	}
	if (amount) {
		emit_segment(STP_EV_SEGMENT_RELEASE, dev, 0, amount, 0);
		n_unplaced++;
	}
}

/* What PyTorch's caching allocator cudaMallocs for a block of this size
 * (get_allocation_size): used only when one report both released and
 * reserved memory (the allocator's out-of-memory retry). */
static uint64_t segment_size_for(uint64_t size)
{
	if (size <= (1u << 20))
		return 2u << 20;
	if (size < (10u << 20))
		return 20u << 20;
	return (size + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);
}

/* The end of the run of back-to-back segments that holds index i. */
static uint64_t run_end(const dev_state *d, size_t i)
{
	uint64_t e = d->v[i].addr + d->v[i].size;
	while (++i < d->n && d->v[i].addr == e)
		e += d->v[i].size;
	return e;
}

static void on_alloc(dev_state *d, int32_t dev, uint64_t p, uint64_t size, uint64_t res, uint32_t stack)
{
	int64_t delta = (int64_t)(res - d->reserved);
	long i = seg_find(d, p);
	if (i < 0) {
		uint64_t s = delta > 0 && (uint64_t)delta >= size ? (uint64_t)delta : segment_size_for(size);
		if (s < size)
			s = size;
		if ((int64_t)s > delta)
			release(d, dev, (uint64_t)((int64_t)s - delta), -1);
		if (seg_add(d, p, s))
			emit_segment(STP_EV_SEGMENT_RESERVE, dev, p, s, stack);
	} else if (delta > 0) {
		uint64_t e = run_end(d, (size_t)i);
		if (seg_add(d, e, (uint64_t)delta))
			emit_segment(STP_EV_SEGMENT_RESERVE, dev, e, (uint64_t)delta, stack);
	} else if (delta < 0) {
		release(d, dev, (uint64_t)-delta, i);
	}
	i = seg_find(d, p);
	if (i >= 0)
		d->v[i].live++;
	d->reserved = res;
}

static void on_free(dev_state *d, int32_t dev, uint64_t p, uint64_t res)
{
	int64_t delta = (int64_t)(res - d->reserved);
	if (delta < 0)
		release(d, dev, (uint64_t)-delta, -1);
	else if (delta > 0)
		n_unplaced++; /* reserved without an allocation: cannot happen */
	long i = seg_find(d, p);
	if (i >= 0 && d->v[i].live)
		d->v[i].live--;
	d->reserved = res;
}

/* ---------------------------------------------------------------- the report */

static void record(void *ptr, int64_t size, uint64_t res, stc_c10_device dv)
{
	if (dv.type != C10_CUDA || !ptr || !size || dv.index < 0 ||
	    atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON ||
	    atomic_load_explicit(&g_torch_cuda_mode, memory_order_relaxed) != STC_TORCH_CUDA_CACHING)
		return;
	int was = t_busy;
	t_busy = 1;
	uint64_t p = (uint64_t)(uintptr_t)ptr, n = size > 0 ? (uint64_t)size : (uint64_t)-size;
	int32_t dev = dv.index;
	uint32_t stack = size > 0 ? stc_tensor_stack(n, STC_GIL_NEVER) : 0;
	pthread_mutex_lock(&mu);
	n_reports++;
	dev_state *d = &devs[dev];
	if (size > 0) {
		on_alloc(d, dev, p, n, res, stack);
		stp_event ev = {.type = STP_EV_ALLOC};
		ev.u.alloc.addr = p;
		ev.u.alloc.size = ev.u.alloc.requested = n;
		ev.u.alloc.kind = STP_MEM_DEVICE;
		ev.u.alloc.device = dev;
		ev.u.alloc.pool = STP_POOL_TENSORS;
		ev.u.alloc.stack = stack;
		stc_emit(&ev);
	} else {
		on_free(d, dev, p, res);
		stp_event ev = {.type = STP_EV_FREE};
		ev.u.free.addr = p;
		ev.u.free.size = n;
		ev.u.free.kind = STP_MEM_DEVICE;
		ev.u.free.device = dev;
		ev.u.free.pool = STP_POOL_TENSORS;
		stc_emit(&ev);
	}
	pthread_mutex_unlock(&mu);
	if (size > 0)
		stc_devobj_add(p, n, dev, STP_MEM_DEVICE, 0, stack);
	else
		stc_devobj_remove(p, NULL);
	t_busy = was;
}

void stc_c10_report_v2(void *p, int64_t size, uint64_t alloc, uint64_t res, stc_c10_device d)
{
	record(p, size, res, d);
	stc_torch_cuda_caching_resolve();
	if (real_v2)
		real_v2(p, size, alloc, res, d);
	else if (real_v1)
		real_v1(p, size, alloc, res, d);
}

void stc_c10_report_v1(void *p, int64_t size, int64_t alloc, int64_t res, stc_c10_device d)
{
	record(p, size, (uint64_t)res, d);
	stc_torch_cuda_caching_resolve();
	if (real_v1)
		real_v1(p, size, (uint64_t)alloc, (uint64_t)res, d);
	else if (real_v2)
		real_v2(p, size, (uint64_t)alloc, (uint64_t)res, d);
}

/* The allocator gave up: after its cudaMalloc was refused and freeing its
 * cache did not help, it reports the request (rounded as it serves it) and
 * raises torch.OutOfMemoryError.  A REFUSED event of the device's tensor
 * pool with the bytes requested: the request refused, where CUPTI's
 * refused cudaMalloc calls under it (cuda_record.c) are the allocator's
 * attempts (requested 0).  Recorded in every torch-cuda mode but the
 * pluggable one (whose allocator is ours), as long as recording is on.
 * In the caching mode the segments its cache flush released go first
 * (the report's reserved bytes), so what the trace holds reserved at the
 * refusal is what the allocator held when it gave up: the segments its
 * live blocks pin. */
static void record_oom(int64_t size, uint64_t res, stc_c10_device dv)
{
	if (dv.type != C10_CUDA || size <= 0 || dv.index < 0 ||
	    atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON ||
	    atomic_load_explicit(&g_torch_cuda_mode, memory_order_relaxed) == STC_TORCH_CUDA_PLUGGABLE)
		return;
	int was = t_busy;
	t_busy = 1;
	if (atomic_load_explicit(&g_torch_cuda_mode, memory_order_relaxed) == STC_TORCH_CUDA_CACHING) {
		pthread_mutex_lock(&mu);
		dev_state *d = &devs[dv.index];
		if (res < d->reserved) { /* reserved grows only in a malloc that succeeds */
			release(d, dv.index, d->reserved - res, -1);
			d->reserved = res;
		}
		pthread_mutex_unlock(&mu);
	}
	stp_event ev = {.type = STP_EV_REFUSED};
	ev.u.alloc.size = ev.u.alloc.requested = (uint64_t)size;
	ev.u.alloc.kind = STP_MEM_DEVICE;
	ev.u.alloc.device = dv.index;
	ev.u.alloc.pool = STP_POOL_TENSORS;
	ev.u.alloc.stack = stc_tensor_stack((uint64_t)size, STC_GIL_NEVER);
	stc_emit(&ev);
	t_busy = was;
}

void stc_c10_oom_v2(int64_t size, uint64_t alloc, uint64_t res, stc_c10_device d)
{
	record_oom(size, res, d);
	stc_torch_cuda_caching_resolve();
	if (real_oom_v2)
		real_oom_v2(size, alloc, res, d);
	else if (real_oom_v1)
		real_oom_v1(size, (int64_t)alloc, (int64_t)res, d);
}

void stc_c10_oom_v1(int64_t size, int64_t alloc, int64_t res, stc_c10_device d)
{
	record_oom(size, (uint64_t)res, d);
	stc_torch_cuda_caching_resolve();
	if (real_oom_v1)
		real_oom_v1(size, alloc, res, d);
	else if (real_oom_v2)
		real_oom_v2(size, (uint64_t)alloc, (uint64_t)res, d);
}

/* ---------------------------------------------------------------- from the shim */

void stc_torch_cuda_reserved(int32_t dev, uint64_t reserved)
{
	stc_torch_cuda_caching_resolve();
	if (dev < 0 || dev >= MAX_DEV || atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON)
		return;
	int was = t_busy;
	t_busy = 1;
	pthread_mutex_lock(&mu);
	dev_state *d = &devs[dev];
	if (reserved < d->reserved)
		release(d, dev, d->reserved - reserved, -1);
	else if (reserved > d->reserved)
		n_unplaced++;
	d->reserved = reserved;
	pthread_mutex_unlock(&mu);
	t_busy = was;
}

void stc_torch_cuda_stats(uint64_t *reports, uint64_t *unplaced)
{
	pthread_mutex_lock(&mu);
	*reports = n_reports;
	*unplaced = n_unplaced;
	pthread_mutex_unlock(&mu);
}

void stc_torch_cuda_atfork_child(void) { pthread_mutex_init(&mu, NULL); }
