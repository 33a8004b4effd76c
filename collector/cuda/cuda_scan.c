/*
 * cuda_scan.c - conservative object references of a kernel launch: every
 * 8-byte value among the launch's arguments that falls inside a live object
 * of the devobj table (end-checked: one past an object is not in it) names
 * that object, read and written (a kernel's parameters do not say which).
 * Each object is named once per launch, as its whole range.
 *
 * Argument layout comes from the function's parameter info
 * (cudaFuncGetParamInfo for runtime launches, cuFuncGetParamInfo for driver
 * ones), asked on a function's first launch and cached here (a fixed
 * open-addressed table in mmap memory; a full table asks every time).
 * Within a parameter of 8 bytes or more, every 8-byte-aligned word is
 * looked at (a struct of pointers counts too).  Without parameter info the
 * void** array is not read at all: its length is unknown, reading past it
 * could fault.  The packed `extra` buffer has its size and is read whole.
 */
#include <pthread.h>
#include <string.h>

#include "cuda_internal.h"

#define PARAMS_MAX 128     /* parameters per function kept in the cache */
#define CACHE_SLOTS 4096   /* functions */

typedef struct pinfo {
	const void *fn;      /* NULL: empty slot */
	int drv;             /* 1: driver CUfunction, 0: runtime stub/kernel */
	uint32_t n;          /* parameters; 0 with ok = 0: no info */
	int ok;
	uint32_t off[PARAMS_MAX], size[PARAMS_MAX];
} pinfo;

static pinfo *cache;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

void stc_cuda_scan_value(uint64_t v, stc_cuda_rec *r)
{
	if (v < 4096)
		return;
	stc_devobj o;
	if (!stc_devobj_find(v, &o))
		return;
	for (uint32_t i = 0; i < r->nranges; i++)
		if (r->ranges[i].addr == o.addr)
			return;
	if (r->nranges < STC_CU_RANGES_MAX)
		r->ranges[r->nranges++] =
			(stp_range){.addr = o.addr, .size = o.size, .mode = STP_ACCESS_READ | STP_ACCESS_WRITE};
}

void stc_cuda_scan_buffer(const void *buf, size_t len, stc_cuda_rec *r)
{
	const uint8_t *b = buf;
	for (size_t o = 0; o + 8 <= len; o += 8) {
		uint64_t v;
		memcpy(&v, b + o, 8);
		stc_cuda_scan_value(v, r);
	}
}

/* 1 when runtime calls may be made now (the thread's last error is
 * cudaSuccess, and can be put back); then rt_quiet_end() after them. */
static int rt_quiet_begin(void)
{
	return g_cu.rt_peek_error && g_cu.rt_take_error && g_cu.rt_peek_error() == cudaSuccess;
}

static void rt_quiet_end(void) { g_cu.rt_take_error(); }

/* The cached info of fn, filled on first use.  Returns NULL when the
 * function has no info (or the table is full: then info is asked into
 * *tmp each time). */
static const pinfo *lookup(const void *fn, int drv, stc_cuda_param_info_fn info, pinfo *tmp)
{
	uint64_t h = (uint64_t)(uintptr_t)fn * 0x9e3779b97f4a7c15ull;
	size_t slot = (size_t)(h >> 52) % CACHE_SLOTS;
	pthread_mutex_lock(&cache_mu);
	if (!cache)
		cache = stc_mem_alloc(CACHE_SLOTS * sizeof *cache);
	pinfo *e = NULL;
	for (size_t k = 0; cache && k < 16; k++) {
		pinfo *c = &cache[(slot + k) % CACHE_SLOTS];
		if (c->fn == fn && c->drv == drv) {
			pthread_mutex_unlock(&cache_mu);
			return c->ok ? c : NULL;
		}
		if (!c->fn) {
			e = c;
			break;
		}
	}
	pthread_mutex_unlock(&cache_mu);
	/* ask outside the lock (the call may come back into our callback,
	 * which ignores it: the thread is busy) */
	pinfo p = {.fn = fn, .drv = drv};
	size_t off, size;
	if (!drv) {
		stc_cuda_resolve_cuda();
		if (!rt_quiet_begin())
			return NULL; /* not cached: asked again at the next launch */
	}
	while (p.n < PARAMS_MAX && info(fn, p.n, &off, &size) == 0) {
		p.off[p.n] = (uint32_t)off;
		p.size[p.n] = (uint32_t)size;
		p.n++;
	}
	if (!drv)
		rt_quiet_end();
	p.ok = p.n > 0; /* no parameters and no info alike: nothing to scan */
	if (e) {
		pthread_mutex_lock(&cache_mu);
		if (!e->fn)
			*e = p;
		pthread_mutex_unlock(&cache_mu);
	}
	*tmp = p;
	return tmp->ok ? tmp : NULL;
}

void stc_cuda_scan_args(void *const *args, const void *fn, stc_cuda_param_info_fn info, stc_cuda_rec *r)
{
	if (!args || !fn || !info)
		return;
	pinfo tmp;
	const pinfo *p = lookup(fn, info == stc_cuda_drv_param_info, info, &tmp);
	if (!p)
		return;
	for (uint32_t i = 0; i < p->n; i++) {
		const uint8_t *a = args[i];
		if (!a || p->size[i] < 8)
			continue;
		for (uint32_t o = 0; o + 8 <= p->size[i]; o += 8) {
			uint64_t v;
			memcpy(&v, a + o, 8);
			stc_cuda_scan_value(v, r);
		}
	}
}

int stc_cuda_rt_param_info(const void *fn, size_t i, size_t *off, size_t *size)
{
	stc_cuda_resolve_cuda();
	if (!g_cu.rt_param_info)
		return -1;
	return g_cu.rt_param_info(fn, i, off, size) == cudaSuccess ? 0 : -1;
}

const char *stc_cuda_kernel_name(const void *fn, int drv)
{
	const char *name = NULL;
	if (!fn)
		return NULL;
	stc_cuda_resolve_cuda();
	if (!drv && g_cu.rt_func_name && rt_quiet_begin()) {
		if (g_cu.rt_func_name(&name, fn) != cudaSuccess)
			name = NULL;
		rt_quiet_end();
	}
	if (drv && g_cu.drv_func_name && g_cu.drv_func_name(&name, (CUfunction)(uintptr_t)fn) != CUDA_SUCCESS)
		name = NULL;
	return name && *name ? name : NULL;
}

int stc_cuda_drv_param_info(const void *fn, size_t i, size_t *off, size_t *size)
{
	stc_cuda_resolve_cuda();
	if (!g_cu.drv_param_info)
		return -1;
	if (g_cu.drv_param_info((CUfunction)(uintptr_t)fn, i, off, size) == CUDA_SUCCESS)
		return 0;
	/* cuLaunchKernel's f may be a CUkernel (cuLibraryGetKernel's), which
	 * cuFuncGetParamInfo does not take */
	return g_cu.kernel_param_info && g_cu.kernel_param_info((CUkernel)(uintptr_t)fn, i, off, size) == CUDA_SUCCESS
		? 0 : -1;
}
