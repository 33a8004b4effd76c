/*
 * test_cuda_map.c - white-box test of the CUPTI backend's mapping
 * (cuda_map.c) and parameter scan (cuda_scan.c): real CUpti_CallbackData
 * structures with the CUDA 13 headers' parameter structures go through the
 * function the callback calls, and the records it gives are checked field
 * by field.  The live objects come from the real devobj table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda_internal.h"

stc_cuda_fns g_cu;
void stc_cuda_resolve_cuda(void) {}

static int failures;
#define CHECK(c) \
	do { \
		if (!(c)) { \
			fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #c); \
			failures++; \
		} \
	} while (0)

/* A kernel (float *p, float *q, int n, struct {void *a, *b;} s) */
static const size_t k_off[] = {0, 8, 16, 24}, k_size[] = {8, 8, 4, 16};
static int k_info_calls;
/* the runtime's per-thread last error, as the real one keeps it */
static cudaError_t last_error;
static cudaError_t peek_error(void) { return last_error; }
static cudaError_t take_error(void)
{
	cudaError_t e = last_error;
	last_error = cudaSuccess;
	return e;
}
static cudaError_t rt_info(const void *fn, size_t i, size_t *off, size_t *size)
{
	k_info_calls++;
	if (fn != (const void *)0x4242 || i >= 4)
		return last_error = cudaErrorInvalidValue;
	*off = k_off[i];
	*size = k_size[i];
	return cudaSuccess;
}

static CUpti_CallbackData cbdata(CUpti_ApiCallbackSite site, const void *params, void *ret, const char *fn,
                                 const char *sym)
{
	CUpti_CallbackData d;
	memset(&d, 0, sizeof d);
	d.callbackSite = site;
	d.functionName = fn;
	d.functionParams = params;
	d.functionReturnValue = ret;
	d.symbolName = sym;
	d.correlationId = 9;
	return d;
}

static int has_range(const stc_cuda_rec *r, uint64_t a, uint64_t n, uint32_t mode)
{
	for (uint32_t i = 0; i < r->nranges; i++)
		if (r->ranges[i].addr == a && r->ranges[i].size == n && r->ranges[i].mode == mode)
			return 1;
	return 0;
}

#define RT CUPTI_CB_DOMAIN_RUNTIME_API
#define DRVD CUPTI_CB_DOMAIN_DRIVER_API

int main(void)
{
	const uint64_t A = 0x7f0000010000ull, B = 0x7f0000020000ull, S = 0x7f0000040000ull;
	stc_devobj_add(A, 4096, 0, STP_MEM_DEVICE, 0, 0);
	stc_devobj_add(B, 1000, 0, STP_MEM_DEVICE, 0, 0);
	stc_devobj_add(S, 0x10000, 0, STP_MEM_DEVICE, 1, 0);
	stc_cuda_rec r;
	cudaError_t ok = cudaSuccess, oom = cudaErrorMemoryAllocation;
	CUresult dok = CUDA_SUCCESS;

	/* ---- allocations: EXIT only, and only when the call succeeded */
	void *p = (void *)(uintptr_t)0x7f0000100000ull;
	cudaMalloc_v3020_params mp = {&p, 12345};
	CUpti_CallbackData d = cbdata(CUPTI_API_EXIT, &mp, &ok, "cudaMalloc", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &d, &r) == STC_CU_ALLOC);
	CHECK(r.addr == (uint64_t)(uintptr_t)p && r.size == 12345 && r.kind == STP_MEM_DEVICE && r.runtime);
	d = cbdata(CUPTI_API_ENTER, &mp, &ok, "cudaMalloc", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &d, &r) == STC_CU_NONE);
	/* refused for want of memory: a REFUSED of the bytes asked for (the
	 * caching allocator frees its cache and asks again); any other failure
	 * is nothing */
	void *none = NULL;
	cudaMalloc_v3020_params mq = {&none, 12345};
	d = cbdata(CUPTI_API_EXIT, &mq, &oom, "cudaMalloc", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &d, &r) == STC_CU_REFUSED);
	CHECK(r.addr == 0 && r.size == 12345 && r.kind == STP_MEM_DEVICE);
	cudaError_t inval = cudaErrorInvalidValue;
	d = cbdata(CUPTI_API_EXIT, &mq, &inval, "cudaMalloc", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &d, &r) == STC_CU_NONE);
	d = cbdata(CUPTI_API_EXIT, &mq, &oom, "cudaMalloc", NULL);
	d.functionParams = NULL;
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &d, &r) == STC_CU_NONE);
	cudaMemcpy_v3020_params cq = {(void *)(uintptr_t)A, (const void *)(uintptr_t)B, 16, cudaMemcpyDeviceToDevice};
	d = cbdata(CUPTI_API_EXIT, &cq, &oom, "cudaMemcpy", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &d, &r) == STC_CU_NONE);

	cudaMallocManaged_v6000_params mm = {&p, 64, 1};
	d = cbdata(CUPTI_API_EXIT, &mm, &ok, "cudaMallocManaged", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000, &d, &r) == STC_CU_ALLOC &&
	      r.kind == STP_MEM_MANAGED);
	cudaHostAlloc_v3020_params ha = {&p, 4096, 0};
	d = cbdata(CUPTI_API_EXIT, &ha, &ok, "cudaHostAlloc", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020, &d, &r) == STC_CU_ALLOC &&
	      r.kind == STP_MEM_PINNED && r.size == 4096);
	cudaMemPool_t pool = (cudaMemPool_t)(uintptr_t)0x5000;
	cudaStream_t st = (cudaStream_t)(uintptr_t)0x6000;
	cudaMallocFromPoolAsync_v11020_params fp = {&p, 256, pool, st};
	d = cbdata(CUPTI_API_EXIT, &fp, &ok, "cudaMallocFromPoolAsync", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020, &d, &r) == STC_CU_ALLOC &&
	      r.pool == 0x5000 && r.stream == 0x6000);
	CUdeviceptr dp = 0x7f0000200000ull;
	cuMemAlloc_v2_params cm = {&dp, 777};
	d = cbdata(CUPTI_API_EXIT, &cm, &dok, "cuMemAlloc_v2", NULL);
	CHECK(stc_cuda_map(DRVD, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &d, &r) == STC_CU_ALLOC && r.addr == dp &&
	      r.size == 777 && !r.runtime);
	/* the driver's refusals: cuMemAlloc, and cuMemCreate (the physical
	 * memory expandable segments grow by) */
	CUresult doom = CUDA_ERROR_OUT_OF_MEMORY;
	CUdeviceptr dnone = 0;
	cuMemAlloc_v2_params cmq = {&dnone, 4096};
	d = cbdata(CUPTI_API_EXIT, &cmq, &doom, "cuMemAlloc_v2", NULL);
	CHECK(stc_cuda_map(DRVD, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &d, &r) == STC_CU_REFUSED && r.size == 4096);
	CUmemGenericAllocationHandle h = 0;
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 1;
	cuMemCreate_params mc = {&h, 2u << 20, &prop, 0};
	d = cbdata(CUPTI_API_EXIT, &mc, &doom, "cuMemCreate", NULL);
	CHECK(stc_cuda_map(DRVD, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &d, &r) == STC_CU_REFUSED && r.size == (2u << 20) &&
	      r.device == 1 && r.kind == STP_MEM_DEVICE && r.handle == 0);
	d = cbdata(CUPTI_API_EXIT, &mc, &dok, "cuMemCreate", NULL);
	CHECK(stc_cuda_map(DRVD, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &d, &r) == STC_CU_HANDLE_NEW);

	/* ---- frees at ENTER, nothing at EXIT; cudaFree(0) is nothing */
	cudaFree_v3020_params fr = {p};
	d = cbdata(CUPTI_API_ENTER, &fr, NULL, "cudaFree", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &d, &r) == STC_CU_FREE &&
	      r.addr == (uint64_t)(uintptr_t)p);
	d = cbdata(CUPTI_API_EXIT, &fr, &ok, "cudaFree", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &d, &r) == STC_CU_NONE);
	cudaFree_v3020_params f0 = {NULL};
	d = cbdata(CUPTI_API_ENTER, &f0, NULL, "cudaFree", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, &d, &r) == STC_CU_NONE);

	/* ---- VMM: a mapping at EXIT, an unmap at ENTER, handles only bookkeeping */
	cuMemMap_params map = {S, 0x10000, 0, 77, 0};
	d = cbdata(CUPTI_API_EXIT, &map, &dok, "cuMemMap", NULL);
	CHECK(stc_cuda_map(DRVD, CUPTI_DRIVER_TRACE_CBID_cuMemMap, &d, &r) == STC_CU_MAP && r.addr == S &&
	      r.size == 0x10000);
	cuMemUnmap_params um = {S, 0x10000};
	d = cbdata(CUPTI_API_ENTER, &um, NULL, "cuMemUnmap", NULL);
	CHECK(stc_cuda_map(DRVD, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &d, &r) == STC_CU_UNMAP && r.addr == S);
	CUdeviceptr va = 0;
	cuMemAddressReserve_params ar = {&va, 1 << 21, 0, 0, 0};
	d = cbdata(CUPTI_API_EXIT, &ar, &dok, "cuMemAddressReserve", NULL);
	CHECK(stc_cuda_map(DRVD, CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, &d, &r) == STC_CU_NONE);

	/* ---- copies and sets: ranges and directions */
	cudaMemcpy_v3020_params cp = {(void *)(uintptr_t)A, (void *)(uintptr_t)B, 1000, cudaMemcpyDeviceToDevice};
	d = cbdata(CUPTI_API_EXIT, &cp, &ok, "cudaMemcpy", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &d, &r) == STC_CU_API &&
	      r.api == STP_API_MEMCPY && r.nranges == 2 && has_range(&r, B, 1000, STP_ACCESS_READ) &&
	      has_range(&r, A, 1000, STP_ACCESS_WRITE) && !strcmp(r.name, "cudaMemcpy"));
	cuMemsetD32_v2_params ms = {A, 0, 16};
	d = cbdata(CUPTI_API_EXIT, &ms, &dok, "cuMemsetD32_v2", NULL);
	CHECK(stc_cuda_map(DRVD, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, &d, &r) == STC_CU_API &&
	      r.api == STP_API_MEMSET && r.nranges == 1 && has_range(&r, A, 64, STP_ACCESS_WRITE));
	/* per-thread-default-stream and 16-bit forms */
	cuMemsetD16Async_ptsz_params ms16 = {A, 0, 10, (CUstream)(uintptr_t)0x77};
	d = cbdata(CUPTI_API_EXIT, &ms16, &dok, "cuMemsetD16Async_ptsz", NULL);
	CHECK(stc_cuda_map(DRVD, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz, &d, &r) == STC_CU_API &&
	      r.api == STP_API_MEMSET && r.stream == 0x77 && has_range(&r, A, 20, STP_ACCESS_WRITE));
	cuMemcpyDtoHAsync_v2_ptsz_params dh = {(void *)(uintptr_t)B, A, 100, (CUstream)(uintptr_t)0x78};
	d = cbdata(CUPTI_API_EXIT, &dh, &dok, "cuMemcpyDtoHAsync_v2_ptsz", NULL);
	CHECK(stc_cuda_map(DRVD, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz, &d, &r) == STC_CU_API &&
	      r.api == STP_API_MEMCPY && r.stream == 0x78 && has_range(&r, A, 100, STP_ACCESS_READ) &&
	      has_range(&r, B, 100, STP_ACCESS_WRITE));
	d = cbdata(CUPTI_API_EXIT, NULL, &ok, "cudaDeviceSynchronize", NULL);
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, &d, &r) == STC_CU_API &&
	      r.api == STP_API_SYNC);

	/* ---- a runtime launch: pointers into A (inside) and S (a segment, in a
	 * struct), one past B's end (not B), an int that looks like nothing */
	g_cu.rt_param_info = rt_info;
	g_cu.rt_peek_error = peek_error;
	g_cu.rt_take_error = take_error;
	float *pa = (float *)(uintptr_t)(A + 16), *pb_end = (float *)(uintptr_t)(B + 1000);
	int n = 0x10000;
	struct {
		uint64_t a, b;
	} sarg = {S + 8, A};
	void *args[] = {&pa, &pb_end, &n, &sarg};
	cudaLaunchKernel_v7000_params lk = {(const void *)0x4242, {1, 1, 1}, {32, 1, 1}, args, 0, st};
	d = cbdata(CUPTI_API_EXIT, &lk, &ok, "__cudaLaunchKernel", "_Z1kPfS_i1s");
	CHECK(stc_cuda_map(RT, 505, &d, &r) == STC_CU_API);
	CHECK(r.api == STP_API_KERNEL && !strcmp(r.name, "_Z1kPfS_i1s") && r.stream == 0x6000);
	CHECK(r.nranges == 2 && has_range(&r, A, 4096, STP_ACCESS_READ | STP_ACCESS_WRITE) &&
	      has_range(&r, S, 0x10000, STP_ACCESS_READ | STP_ACCESS_WRITE));
	/* asking past the last parameter failed, and the program does not see it */
	CHECK(k_info_calls == 5 && last_error == cudaSuccess);
	/* the second launch reads the cached parameter info */
	int calls = k_info_calls;
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &d, &r) == STC_CU_API &&
	      r.nranges == 2 && k_info_calls == calls);
	/* no parameter info: the void** array is not read */
	lk.func = (const void *)0x4343;
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &d, &r) == STC_CU_API &&
	      r.nranges == 0 && last_error == cudaSuccess);
	/* an error of the program's own is pending: the runtime is not asked
	 * (its answer would replace the error), the error stays for the program */
	lk.func = (const void *)0x4444;
	last_error = cudaErrorMemoryAllocation;
	calls = k_info_calls;
	CHECK(stc_cuda_map(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &d, &r) == STC_CU_API &&
	      r.nranges == 0 && k_info_calls == calls && last_error == cudaErrorMemoryAllocation);
	last_error = cudaSuccess;

	/* ---- a driver launch with a packed `extra` buffer */
	uint64_t buf[4] = {B + 999, 42, A + 4095, A + 4096 /* past A: the next page is no object */};
	size_t blen = sizeof buf;
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &blen, CU_LAUNCH_PARAM_END};
	cuLaunchKernel_params dk = {(CUfunction)(uintptr_t)0x99, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra};
	d = cbdata(CUPTI_API_EXIT, &dk, &dok, "cuLaunchKernel", "drvk");
	CHECK(stc_cuda_map(DRVD, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d, &r) == STC_CU_API);
	CHECK(r.nranges == 2 && has_range(&r, B, 1000, STP_ACCESS_READ | STP_ACCESS_WRITE) &&
	      has_range(&r, A, 4096, STP_ACCESS_READ | STP_ACCESS_WRITE));

	/* ---- the enabled callback lists end with 0 and hold the key calls */
	int rt_n = 0, drv_n = 0;
	while (stc_cuda_runtime_cbids[rt_n])
		rt_n++;
	while (stc_cuda_driver_cbids[drv_n])
		drv_n++;
	CHECK(rt_n > 20 && drv_n > 20);

	if (failures) {
		fprintf(stderr, "test_cuda_map: %d failures\n", failures);
		return 1;
	}
	printf("test_cuda_map: ok\n");
	return 0;
}
