/*
 * fake_cuda.c - the test double of libcuda.so.1 (see fake_tool.h): cuInit
 * loads the injection library named by CUDA_INJECTION64_PATH and calls its
 * InitializeInjection, as the driver does; the driver calls the tests'
 * CUDA program makes (cuMemAlloc, cuMemFree, the VMM calls) fire the
 * subscriber's callbacks with the real parameter structures; and it holds
 * the tool state and the queue of activity records that fake_cudart.c and
 * fake_cupti.c share.  Device memory is host memory.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "fake_tool.h"

fake_tool fake_tool_state;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t next_corr = 1;
static fake_record queue[4096];
static int nqueue;
static int initialized;

uint64_t fake_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + FAKE_CLOCK_SKEW;
}

uint32_t fake_corr(void)
{
	pthread_mutex_lock(&mu);
	uint32_t c = next_corr++;
	pthread_mutex_unlock(&mu);
	return c;
}

void (*fake_early_flush)(void);

uint32_t fake_stream_id(CUstream s) { return s ? 100 + (uint32_t)(((uintptr_t)s >> 4) & 0xff) : 7; }

void fake_fire(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const char *fn, const void *params, void *ret,
               const char *symbol, uint32_t corr, CUpti_ApiCallbackSite site)
{
	int k = dom == CUPTI_CB_DOMAIN_RUNTIME_API;
	if (!fake_tool_state.cb || cbid >= 1024 || !fake_tool_state.enabled[k][cbid])
		return;
	static __thread uint64_t corr_data;
	static int early = -1;
	if (early < 0) {
		const char *e = getenv("FAKE_ACTIVITY_EARLY");
		early = e && !strcmp(e, "1");
	}
	if (early && site == CUPTI_API_EXIT && fake_early_flush)
		fake_early_flush();
	CUpti_CallbackData d;
	memset(&d, 0, sizeof d);
	d.callbackSite = site;
	d.functionName = fn;
	d.functionParams = params;
	d.functionReturnValue = ret;
	d.symbolName = symbol;
	d.context = (CUcontext)(uintptr_t)0x1000;
	d.contextUid = 1;
	d.correlationData = &corr_data;
	d.correlationId = corr;
	fake_tool_state.cb(fake_tool_state.ud, dom, cbid, &d);
}

void fake_activity(CUpti_ActivityKind kind, uint32_t corr, uint64_t start, uint64_t dur, const char *name)
{
	const char *none = getenv("FAKE_NO_ACTIVITY"); /* records that never come */
	if (none && !strcmp(none, "1"))
		return;
	pthread_mutex_lock(&mu);
	if (nqueue < (int)(sizeof queue / sizeof queue[0])) {
		fake_record *r = &queue[nqueue++];
		memset(r, 0, sizeof *r);
		if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
			r->kernel.kind = kind;
			r->kernel.start = start;
			r->kernel.end = start + dur;
			r->kernel.correlationId = corr;
			r->kernel.name = name;
		} else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
			r->memcpy.kind = kind;
			r->memcpy.start = start;
			r->memcpy.end = start + dur;
			r->memcpy.correlationId = corr + 1000000; /* the driver's id ... */
			r->memcpy.runtimeCorrelationId = corr;  /* ... and the runtime's */
		} else {
			r->memset.kind = kind;
			r->memset.start = start;
			r->memset.end = start + dur;
			r->memset.correlationId = corr;
		}
	}
	pthread_mutex_unlock(&mu);
}

int fake_activity_take(fake_record *out, int max)
{
	pthread_mutex_lock(&mu);
	int n = nqueue < max ? nqueue : max;
	memcpy(out, queue, (size_t)n * sizeof *out);
	memmove(queue, queue + n, (size_t)(nqueue - n) * sizeof *queue);
	nqueue -= n;
	pthread_mutex_unlock(&mu);
	return n;
}

/* ---------------------------------------------------------------- driver API */
#define DRV(x) CUPTI_DRIVER_TRACE_CBID_##x

CUresult cuInit(unsigned int flags)
{
	(void)flags;
	pthread_mutex_lock(&mu);
	int first = !initialized;
	initialized = 1;
	pthread_mutex_unlock(&mu);
	if (!first)
		return CUDA_SUCCESS;
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	if (inj && *inj) {
		void *h = dlopen(inj, RTLD_NOW);
		int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
		if (init)
			init();
	}
	return CUDA_SUCCESS;
}

static void *dev_map(size_t n)
{
	void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	cuMemAlloc_v2_params p = {dptr, bytesize};
	FAKE_API(CUPTI_CB_DOMAIN_DRIVER_API, DRV(cuMemAlloc_v2), "cuMemAlloc_v2", &p, CUresult, r, NULL, {
		void *q = dev_map(bytesize);
		*dptr = (CUdeviceptr)(uintptr_t)q;
		r = q ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	});
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	cuMemFree_v2_params p = {dptr};
	FAKE_API(CUPTI_CB_DOMAIN_DRIVER_API, DRV(cuMemFree_v2), "cuMemFree_v2", &p, CUresult, r, NULL,
	         { r = CUDA_SUCCESS; }); /* the fake never reuses an address */
}

CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags o)
{
	(void)prop;
	(void)o;
	*g = 2u << 20;
	return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
	cuMemAddressReserve_params p = {ptr, size, alignment, addr, flags};
	FAKE_API(CUPTI_CB_DOMAIN_DRIVER_API, DRV(cuMemAddressReserve), "cuMemAddressReserve", &p, CUresult, r, NULL, {
		void *q = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		*ptr = q == MAP_FAILED ? 0 : (CUdeviceptr)(uintptr_t)q;
		r = q == MAP_FAILED ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
	});
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	munmap((void *)(uintptr_t)ptr, size);
	return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
	cuMemCreate_params p = {handle, size, prop, flags};
	FAKE_API(CUPTI_CB_DOMAIN_DRIVER_API, DRV(cuMemCreate), "cuMemCreate", &p, CUresult, r, NULL, {
		*handle = (CUmemGenericAllocationHandle)size;
		r = CUDA_SUCCESS;
	});
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	cuMemRelease_params p = {handle};
	FAKE_API(CUPTI_CB_DOMAIN_DRIVER_API, DRV(cuMemRelease), "cuMemRelease", &p, CUresult, r, NULL,
	         { r = CUDA_SUCCESS; });
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
	cuMemMap_params p = {ptr, size, offset, handle, flags};
	FAKE_API(CUPTI_CB_DOMAIN_DRIVER_API, DRV(cuMemMap), "cuMemMap", &p, CUresult, r, NULL, {
		void *q = mmap((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		r = q == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	});
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	(void)ptr;
	(void)size;
	(void)desc;
	(void)count;
	return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	cuMemUnmap_params p = {ptr, size};
	FAKE_API(CUPTI_CB_DOMAIN_DRIVER_API, DRV(cuMemUnmap), "cuMemUnmap", &p, CUresult, r, NULL, {
		void *q = mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		r = q == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	});
}

/* Parameter info of a driver function: the fake CUfunction is the runtime's
 * kernel entry, which knows its parameters (fake_cudart.c). */
CUresult cuFuncGetName(const char **name, CUfunction f)
{
	extern const char *fake_kernel_name(const void *k) __attribute__((weak));
	*name = fake_kernel_name ? fake_kernel_name(f) : NULL;
	return *name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
	extern int fake_kernel_param(const void *k, size_t i, size_t *off, size_t *size) __attribute__((weak));
	if (!fake_kernel_param || fake_kernel_param(f, i, off, size))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}
