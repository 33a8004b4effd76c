/*
 * cuda_map.c - what one CUPTI runtime or driver callback means for the
 * trace (see cuda_internal.h): the parameter structures of the CUDA 13
 * headers (generated_cuda_runtime_api_meta.h, generated_cuda_meta.h) read
 * into an stc_cuda_rec.  It emits nothing and keeps no state, so the
 * white-box test drives it with real structures.
 *
 * Decisions (docs/record.md, "CUDA"):
 *   - cudaMalloc/cuMemAlloc (+ pitch), the async and pool forms: device
 *     objects; cudaMallocManaged/cuMemAllocManaged: managed; cudaHostAlloc,
 *     cudaMallocHost, cuMemHostAlloc, cuMemAllocHost: pinned host.
 *   - VMM (PyTorch's expandable segments): the physical memory MAPPED into
 *     an address range is what counts.  cuMemMap is a mapping of
 *     [ptr, ptr+size) (a SEGMENT_RESERVE), cuMemUnmap removes the mappings
 *     inside its range (SEGMENT_RELEASE); cuMemCreate and cuMemRelease only
 *     tell which device a handle's memory is on; cuMemAddressReserve/Free
 *     reserve address space, no memory, and are not recorded.
 *   - Frees and unmaps are mapped at ENTER (recorded before the memory can
 *     be handed out again); everything else at EXIT.
 *   - __cudaLaunchKernel (CUDA 13's launch from nvcc's stubs) has no
 *     parameter structure in the headers; its arguments are those of
 *     cudaLaunchKernel with a cudaKernel_t in place of the stub, so it is
 *     read through cudaLaunchKernel_v7000_params.
 */
#include <string.h>

#include "cuda_internal.h" /* cupti.h brings the parameter structures */

#define RT(x) CUPTI_RUNTIME_TRACE_CBID_##x
#define DRV(x) CUPTI_DRIVER_TRACE_CBID_##x

/* __cudaLaunchKernel_v13000 (505) and its _ptsz (506) by number: older
 * CUPTI headers do not name them. */
#define RT_CUDA13_LAUNCH 505
#define RT_CUDA13_LAUNCH_PTSZ 506

const CUpti_CallbackId stc_cuda_runtime_cbids[] = {
	RT(cudaMalloc_v3020), RT(cudaMallocPitch_v3020), RT(cudaFree_v3020), RT(cudaMallocHost_v3020),
	RT(cudaFreeHost_v3020), RT(cudaHostAlloc_v3020), RT(cudaMallocManaged_v6000), RT(cudaMallocAsync_v11020),
	RT(cudaMallocAsync_ptsz_v11020), RT(cudaFreeAsync_v11020), RT(cudaFreeAsync_ptsz_v11020),
	RT(cudaMallocFromPoolAsync_v11020), RT(cudaMallocFromPoolAsync_ptsz_v11020),
	RT(cudaMemcpy_v3020), RT(cudaMemcpy_ptds_v7000), RT(cudaMemcpyAsync_v3020), RT(cudaMemcpyAsync_ptsz_v7000),
	RT(cudaMemset_v3020), RT(cudaMemset_ptds_v7000), RT(cudaMemsetAsync_v3020), RT(cudaMemsetAsync_ptsz_v7000),
	RT(cudaDeviceSynchronize_v3020), RT(cudaThreadSynchronize_v3020), RT(cudaStreamSynchronize_v3020),
	RT(cudaStreamSynchronize_ptsz_v7000), RT(cudaEventSynchronize_v3020),
	RT(cudaLaunchKernel_v7000), RT(cudaLaunchKernel_ptsz_v7000), RT(cudaLaunchCooperativeKernel_v9000),
	RT(cudaLaunchCooperativeKernel_ptsz_v9000), RT(cudaLaunchKernelExC_v11060), RT(cudaLaunchKernelExC_ptsz_v11060),
	RT_CUDA13_LAUNCH, RT_CUDA13_LAUNCH_PTSZ,
	0};

const CUpti_CallbackId stc_cuda_driver_cbids[] = {
	DRV(cuMemAlloc_v2), DRV(cuMemFree_v2), DRV(cuMemAllocHost_v2), DRV(cuMemHostAlloc), DRV(cuMemFreeHost),
	DRV(cuMemAllocManaged), DRV(cuMemAllocAsync), DRV(cuMemAllocAsync_ptsz), DRV(cuMemFreeAsync),
	DRV(cuMemFreeAsync_ptsz), DRV(cuMemAllocFromPoolAsync), DRV(cuMemAllocFromPoolAsync_ptsz),
	DRV(cuMemCreate), DRV(cuMemRelease), DRV(cuMemMap), DRV(cuMemUnmap),
	DRV(cuMemcpy), DRV(cuMemcpy_ptds), DRV(cuMemcpyAsync), DRV(cuMemcpyAsync_ptsz), DRV(cuMemcpyHtoD_v2),
	DRV(cuMemcpyDtoH_v2), DRV(cuMemcpyDtoD_v2), DRV(cuMemcpyHtoDAsync_v2), DRV(cuMemcpyDtoHAsync_v2),
	DRV(cuMemcpyDtoDAsync_v2), DRV(cuMemsetD8_v2), DRV(cuMemsetD32_v2), DRV(cuMemsetD8Async), DRV(cuMemsetD32Async),
	/* the per-thread-default-stream forms (what a runtime built with
	 * --default-stream per-thread calls inside its copies and sets: their
	 * correlation ids are the aliases the activity records may carry) */
	DRV(cuMemcpyHtoD_v2_ptds), DRV(cuMemcpyDtoH_v2_ptds), DRV(cuMemcpyDtoD_v2_ptds), DRV(cuMemcpyHtoDAsync_v2_ptsz),
	DRV(cuMemcpyDtoHAsync_v2_ptsz), DRV(cuMemcpyDtoDAsync_v2_ptsz), DRV(cuMemsetD8_v2_ptds), DRV(cuMemsetD32_v2_ptds),
	DRV(cuMemsetD8Async_ptsz), DRV(cuMemsetD32Async_ptsz), DRV(cuMemsetD16_v2), DRV(cuMemsetD16_v2_ptds),
	DRV(cuMemsetD16Async), DRV(cuMemsetD16Async_ptsz),
	DRV(cuCtxSynchronize), DRV(cuStreamSynchronize), DRV(cuStreamSynchronize_ptsz),
	DRV(cuLaunchKernel), DRV(cuLaunchKernel_ptsz), DRV(cuLaunchKernelEx), DRV(cuLaunchKernelEx_ptsz),
	DRV(cuLaunchCooperativeKernel), DRV(cuLaunchCooperativeKernel_ptsz),
	0};

int stc_cuda_succeeded(CUpti_CallbackDomain dom, const CUpti_CallbackData *cb)
{
	if (!cb->functionReturnValue)
		return 0;
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
		return *(const cudaError_t *)cb->functionReturnValue == cudaSuccess;
	return *(const CUresult *)cb->functionReturnValue == CUDA_SUCCESS;
}

/* A failure for want of memory (a refused allocation). */
static int out_of_memory(CUpti_CallbackDomain dom, const CUpti_CallbackData *cb)
{
	if (!cb->functionReturnValue)
		return 0;
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
		return *(const cudaError_t *)cb->functionReturnValue == cudaErrorMemoryAllocation;
	return *(const CUresult *)cb->functionReturnValue == CUDA_ERROR_OUT_OF_MEMORY;
}

static int alloc(stc_cuda_rec *r, const void *pp, uint64_t size, uint8_t kind, uint64_t stream, uint64_t pool)
{
	uint64_t a = 0;
	if (pp && r->what != STC_CU_REFUSED)
		memcpy(&a, pp, sizeof a); /* void ** and CUdeviceptr * alike: 8 bytes */
	if ((!a && r->what != STC_CU_REFUSED) || !size)
		return r->what = STC_CU_NONE;
	r->addr = a;
	r->size = size;
	r->kind = kind;
	r->stream = stream;
	r->pool = pool;
	return r->what = r->what == STC_CU_REFUSED ? STC_CU_REFUSED : STC_CU_ALLOC;
}

static int freed(stc_cuda_rec *r, uint64_t a, uint64_t stream)
{
	if (!a)
		return r->what = STC_CU_NONE;
	r->addr = a;
	r->stream = stream;
	return r->what = STC_CU_FREE;
}

static void range(stc_cuda_rec *r, uint64_t a, uint64_t n, uint32_t mode)
{
	if (a && n && r->nranges < STC_CU_RANGES_MAX)
		r->ranges[r->nranges++] = (stp_range){.addr = a, .size = n, .mode = mode};
}

static int copy(stc_cuda_rec *r, const CUpti_CallbackData *cb, uint64_t dst, uint64_t src, uint64_t n,
                uint64_t stream)
{
	r->api = STP_API_MEMCPY;
	r->name = cb->functionName;
	r->stream = stream;
	range(r, src, n, STP_ACCESS_READ);
	range(r, dst, n, STP_ACCESS_WRITE);
	return r->what = STC_CU_API;
}

static int set(stc_cuda_rec *r, const CUpti_CallbackData *cb, uint64_t dst, uint64_t n, uint64_t stream)
{
	r->api = STP_API_MEMSET;
	r->name = cb->functionName;
	r->stream = stream;
	range(r, dst, n, STP_ACCESS_WRITE);
	return r->what = STC_CU_API;
}

static int sync(stc_cuda_rec *r, const CUpti_CallbackData *cb, uint64_t stream)
{
	r->api = STP_API_SYNC;
	r->name = cb->functionName;
	r->stream = stream;
	return r->what = STC_CU_API;
}

/* The kernel's name: the callback's symbolName, else the runtime's or the
 * driver's own answer for fn (CUPTI's headers promise symbolName only for
 * the launch calls they name; CUDA 13's __cudaLaunchKernel is not among
 * them), else the API function's name. */
static int launch(stc_cuda_rec *r, const CUpti_CallbackData *cb, uint64_t stream, const void *fn, int drv)
{
	r->api = STP_API_KERNEL;
	r->name = cb->symbolName && *cb->symbolName ? cb->symbolName : NULL;
	if (!r->name)
		r->name = stc_cuda_kernel_name(fn, drv);
	if (!r->name)
		r->name = cb->functionName;
	r->stream = stream;
	return r->what = STC_CU_API;
}

#define U64(x) ((uint64_t)(uintptr_t)(x))

static int map_runtime(CUpti_CallbackId id, const CUpti_CallbackData *cb, int enter, stc_cuda_rec *r)
{
	const void *p = cb->functionParams;
	if (enter) {
		switch (id) {
		case RT(cudaFree_v3020):
			return freed(r, U64(((const cudaFree_v3020_params *)p)->devPtr), 0);
		case RT(cudaFreeHost_v3020):
			return freed(r, U64(((const cudaFreeHost_v3020_params *)p)->ptr), 0);
		case RT(cudaFreeAsync_v11020):
		case RT(cudaFreeAsync_ptsz_v11020): {
			const cudaFreeAsync_v11020_params *q = p;
			return freed(r, U64(q->devPtr), U64(q->hStream));
		}
		}
		return STC_CU_NONE;
	}
	switch (id) {
	case RT(cudaMalloc_v3020): {
		const cudaMalloc_v3020_params *q = p;
		return alloc(r, q->devPtr, q->size, STP_MEM_DEVICE, 0, 0);
	}
	case RT(cudaMallocPitch_v3020): {
		const cudaMallocPitch_v3020_params *q = p;
		if (r->what == STC_CU_REFUSED) /* no pitch was set: the bytes asked for */
			return alloc(r, NULL, q->width * q->height, STP_MEM_DEVICE, 0, 0);
		return alloc(r, q->devPtr, q->pitch ? *q->pitch * q->height : 0, STP_MEM_DEVICE, 0, 0);
	}
	case RT(cudaMallocManaged_v6000): {
		const cudaMallocManaged_v6000_params *q = p;
		return alloc(r, q->devPtr, q->size, STP_MEM_MANAGED, 0, 0);
	}
	case RT(cudaMallocHost_v3020): {
		const cudaMallocHost_v3020_params *q = p;
		return alloc(r, q->ptr, q->size, STP_MEM_PINNED, 0, 0);
	}
	case RT(cudaHostAlloc_v3020): {
		const cudaHostAlloc_v3020_params *q = p;
		return alloc(r, q->pHost, q->size, STP_MEM_PINNED, 0, 0);
	}
	case RT(cudaMallocAsync_v11020):
	case RT(cudaMallocAsync_ptsz_v11020): {
		const cudaMallocAsync_v11020_params *q = p;
		return alloc(r, q->devPtr, q->size, STP_MEM_DEVICE, U64(q->hStream), 0);
	}
	case RT(cudaMallocFromPoolAsync_v11020):
	case RT(cudaMallocFromPoolAsync_ptsz_v11020): {
		const cudaMallocFromPoolAsync_v11020_params *q = p;
		return alloc(r, q->ptr, q->size, STP_MEM_DEVICE, U64(q->stream), U64(q->memPool));
	}
	case RT(cudaMemcpy_v3020):
	case RT(cudaMemcpy_ptds_v7000): {
		const cudaMemcpy_v3020_params *q = p;
		return copy(r, cb, U64(q->dst), U64(q->src), q->count, 0);
	}
	case RT(cudaMemcpyAsync_v3020):
	case RT(cudaMemcpyAsync_ptsz_v7000): {
		const cudaMemcpyAsync_v3020_params *q = p;
		return copy(r, cb, U64(q->dst), U64(q->src), q->count, U64(q->stream));
	}
	case RT(cudaMemset_v3020):
	case RT(cudaMemset_ptds_v7000): {
		const cudaMemset_v3020_params *q = p;
		return set(r, cb, U64(q->devPtr), q->count, 0);
	}
	case RT(cudaMemsetAsync_v3020):
	case RT(cudaMemsetAsync_ptsz_v7000): {
		const cudaMemsetAsync_v3020_params *q = p;
		return set(r, cb, U64(q->devPtr), q->count, U64(q->stream));
	}
	case RT(cudaDeviceSynchronize_v3020):
	case RT(cudaThreadSynchronize_v3020):
	case RT(cudaEventSynchronize_v3020):
		return sync(r, cb, 0);
	case RT(cudaStreamSynchronize_v3020):
	case RT(cudaStreamSynchronize_ptsz_v7000):
		return sync(r, cb, U64(((const cudaStreamSynchronize_v3020_params *)p)->stream));
	case RT(cudaLaunchKernel_v7000):
	case RT(cudaLaunchKernel_ptsz_v7000):
	case RT_CUDA13_LAUNCH:
	case RT_CUDA13_LAUNCH_PTSZ: {
		const cudaLaunchKernel_v7000_params *q = p;
		launch(r, cb, U64(q->stream), q->func, 0);
		stc_cuda_scan_args(q->args, q->func, stc_cuda_rt_param_info, r);
		return r->what;
	}
	case RT(cudaLaunchCooperativeKernel_v9000):
	case RT(cudaLaunchCooperativeKernel_ptsz_v9000): {
		const cudaLaunchCooperativeKernel_v9000_params *q = p;
		launch(r, cb, U64(q->stream), q->func, 0);
		stc_cuda_scan_args(q->args, q->func, stc_cuda_rt_param_info, r);
		return r->what;
	}
	case RT(cudaLaunchKernelExC_v11060):
	case RT(cudaLaunchKernelExC_ptsz_v11060): {
		const cudaLaunchKernelExC_v11060_params *q = p;
		launch(r, cb, q->config ? U64(q->config->stream) : 0, q->func, 0);
		stc_cuda_scan_args(q->args, q->func, stc_cuda_rt_param_info, r);
		return r->what;
	}
	}
	return STC_CU_NONE;
}

/* cuLaunchKernel's `extra`: a packed argument buffer and its size. */
static void scan_extra(void **extra, stc_cuda_rec *r)
{
	const void *buf = NULL;
	size_t len = 0;
	for (int i = 0; extra && extra[i] != CU_LAUNCH_PARAM_END && i < 16; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			buf = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
			len = *(const size_t *)extra[i + 1];
		else if (extra[i] != CU_LAUNCH_PARAM_BUFFER_POINTER)
			break; /* an entry we do not know: its pair may not be one */
	}
	if (buf && len)
		stc_cuda_scan_buffer(buf, len, r);
}

static int map_driver(CUpti_CallbackId id, const CUpti_CallbackData *cb, int enter, stc_cuda_rec *r)
{
	const void *p = cb->functionParams;
	if (enter) {
		switch (id) {
		case DRV(cuMemFree_v2):
			return freed(r, ((const cuMemFree_v2_params *)p)->dptr, 0);
		case DRV(cuMemFreeHost):
			return freed(r, U64(((const cuMemFreeHost_params *)p)->p), 0);
		case DRV(cuMemFreeAsync):
		case DRV(cuMemFreeAsync_ptsz): {
			const cuMemFreeAsync_params *q = p;
			return freed(r, q->dptr, U64(q->hStream));
		}
		case DRV(cuMemUnmap): {
			const cuMemUnmap_params *q = p;
			r->addr = q->ptr;
			r->size = q->size;
			return r->what = q->ptr && q->size ? STC_CU_UNMAP : STC_CU_NONE;
		}
		}
		return STC_CU_NONE;
	}
	switch (id) {
	case DRV(cuMemAlloc_v2): {
		const cuMemAlloc_v2_params *q = p;
		return alloc(r, q->dptr, q->bytesize, STP_MEM_DEVICE, 0, 0);
	}
	case DRV(cuMemAllocManaged): {
		const cuMemAllocManaged_params *q = p;
		return alloc(r, q->dptr, q->bytesize, STP_MEM_MANAGED, 0, 0);
	}
	case DRV(cuMemAllocHost_v2): {
		const cuMemAllocHost_v2_params *q = p;
		return alloc(r, q->pp, q->bytesize, STP_MEM_PINNED, 0, 0);
	}
	case DRV(cuMemHostAlloc): {
		const cuMemHostAlloc_params *q = p;
		return alloc(r, q->pp, q->bytesize, STP_MEM_PINNED, 0, 0);
	}
	case DRV(cuMemAllocAsync):
	case DRV(cuMemAllocAsync_ptsz): {
		const cuMemAllocAsync_params *q = p;
		return alloc(r, q->dptr, q->bytesize, STP_MEM_DEVICE, U64(q->hStream), 0);
	}
	case DRV(cuMemAllocFromPoolAsync):
	case DRV(cuMemAllocFromPoolAsync_ptsz): {
		const cuMemAllocFromPoolAsync_params *q = p;
		return alloc(r, q->dptr, q->bytesize, STP_MEM_DEVICE, U64(q->hStream), U64(q->pool));
	}
	case DRV(cuMemCreate): {
		const cuMemCreate_params *q = p;
		if (!q->handle)
			return STC_CU_NONE;
		int refused = r->what == STC_CU_REFUSED; /* physical memory refused: expandable segments' growth */
		r->handle = refused ? 0 : *q->handle;
		r->size = q->size;
		r->device = q->prop && q->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? q->prop->location.id : -1;
		r->kind = q->prop && q->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? STP_MEM_DEVICE : STP_MEM_PINNED;
		return r->what = refused ? STC_CU_REFUSED : STC_CU_HANDLE_NEW;
	}
	case DRV(cuMemRelease):
		r->handle = ((const cuMemRelease_params *)p)->handle;
		return r->what = STC_CU_HANDLE_DEL;
	case DRV(cuMemMap): {
		const cuMemMap_params *q = p;
		if (!q->ptr || !q->size)
			return STC_CU_NONE;
		r->addr = q->ptr;
		r->size = q->size;
		r->handle = q->handle;
		r->kind = STP_MEM_DEVICE;
		return r->what = STC_CU_MAP;
	}
	case DRV(cuMemcpy):
	case DRV(cuMemcpy_ptds): {
		const cuMemcpy_params *q = p;
		return copy(r, cb, q->dst, q->src, q->ByteCount, 0);
	}
	case DRV(cuMemcpyAsync):
	case DRV(cuMemcpyAsync_ptsz): {
		const cuMemcpyAsync_params *q = p;
		return copy(r, cb, q->dst, q->src, q->ByteCount, U64(q->hStream));
	}
	case DRV(cuMemcpyHtoD_v2):
	case DRV(cuMemcpyHtoD_v2_ptds): {
		const cuMemcpyHtoD_v2_params *q = p;
		return copy(r, cb, q->dstDevice, U64(q->srcHost), q->ByteCount, 0);
	}
	case DRV(cuMemcpyDtoH_v2):
	case DRV(cuMemcpyDtoH_v2_ptds): {
		const cuMemcpyDtoH_v2_params *q = p;
		return copy(r, cb, U64(q->dstHost), q->srcDevice, q->ByteCount, 0);
	}
	case DRV(cuMemcpyDtoD_v2):
	case DRV(cuMemcpyDtoD_v2_ptds): {
		const cuMemcpyDtoD_v2_params *q = p;
		return copy(r, cb, q->dstDevice, q->srcDevice, q->ByteCount, 0);
	}
	case DRV(cuMemcpyHtoDAsync_v2):
	case DRV(cuMemcpyHtoDAsync_v2_ptsz): {
		const cuMemcpyHtoDAsync_v2_params *q = p;
		return copy(r, cb, q->dstDevice, U64(q->srcHost), q->ByteCount, U64(q->hStream));
	}
	case DRV(cuMemcpyDtoHAsync_v2):
	case DRV(cuMemcpyDtoHAsync_v2_ptsz): {
		const cuMemcpyDtoHAsync_v2_params *q = p;
		return copy(r, cb, U64(q->dstHost), q->srcDevice, q->ByteCount, U64(q->hStream));
	}
	case DRV(cuMemcpyDtoDAsync_v2):
	case DRV(cuMemcpyDtoDAsync_v2_ptsz): {
		const cuMemcpyDtoDAsync_v2_params *q = p;
		return copy(r, cb, q->dstDevice, q->srcDevice, q->ByteCount, U64(q->hStream));
	}
	case DRV(cuMemsetD8_v2):
	case DRV(cuMemsetD8_v2_ptds): {
		const cuMemsetD8_v2_params *q = p;
		return set(r, cb, q->dstDevice, q->N, 0);
	}
	case DRV(cuMemsetD32_v2):
	case DRV(cuMemsetD32_v2_ptds): {
		const cuMemsetD32_v2_params *q = p;
		return set(r, cb, q->dstDevice, q->N * 4, 0);
	}
	case DRV(cuMemsetD8Async):
	case DRV(cuMemsetD8Async_ptsz): {
		const cuMemsetD8Async_params *q = p;
		return set(r, cb, q->dstDevice, q->N, U64(q->hStream));
	}
	case DRV(cuMemsetD32Async):
	case DRV(cuMemsetD32Async_ptsz): {
		const cuMemsetD32Async_params *q = p;
		return set(r, cb, q->dstDevice, q->N * 4, U64(q->hStream));
	}
	case DRV(cuMemsetD16_v2):
	case DRV(cuMemsetD16_v2_ptds): {
		const cuMemsetD16_v2_params *q = p;
		return set(r, cb, q->dstDevice, q->N * 2, 0);
	}
	case DRV(cuMemsetD16Async):
	case DRV(cuMemsetD16Async_ptsz): {
		const cuMemsetD16Async_params *q = p;
		return set(r, cb, q->dstDevice, q->N * 2, U64(q->hStream));
	}
	case DRV(cuCtxSynchronize):
		return sync(r, cb, 0);
	case DRV(cuStreamSynchronize):
	case DRV(cuStreamSynchronize_ptsz):
		return sync(r, cb, U64(((const cuStreamSynchronize_params *)p)->hStream));
	case DRV(cuLaunchKernel):
	case DRV(cuLaunchKernel_ptsz):
	case DRV(cuLaunchCooperativeKernel):
	case DRV(cuLaunchCooperativeKernel_ptsz): {
		/* cuLaunchCooperativeKernel's parameters are a prefix of these */
		const cuLaunchKernel_params *q = p;
		launch(r, cb, U64(q->hStream), q->f, 1);
		if (q->kernelParams)
			stc_cuda_scan_args(q->kernelParams, q->f, stc_cuda_drv_param_info, r);
		else if (id == DRV(cuLaunchKernel) || id == DRV(cuLaunchKernel_ptsz))
			scan_extra(q->extra, r);
		return r->what;
	}
	case DRV(cuLaunchKernelEx):
	case DRV(cuLaunchKernelEx_ptsz): {
		const cuLaunchKernelEx_params *q = p;
		launch(r, cb, q->config ? U64(q->config->hStream) : 0, q->f, 1);
		if (q->kernelParams)
			stc_cuda_scan_args(q->kernelParams, q->f, stc_cuda_drv_param_info, r);
		else
			scan_extra(q->extra, r);
		return r->what;
	}
	}
	return STC_CU_NONE;
}

int stc_cuda_map(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const CUpti_CallbackData *cb, stc_cuda_rec *r)
{
	int enter = cb->callbackSite == CUPTI_API_ENTER;
	r->what = STC_CU_NONE;
	r->runtime = dom == CUPTI_CB_DOMAIN_RUNTIME_API;
	r->addr = r->size = r->stream = r->pool = r->handle = 0;
	r->kind = STP_MEM_DEVICE;
	r->device = -1;
	r->api = 0;
	r->name = NULL;
	r->nranges = 0;
	/* calls without arguments may come without a parameter structure */
	int no_args = dom == CUPTI_CB_DOMAIN_RUNTIME_API
		? cbid == RT(cudaDeviceSynchronize_v3020) || cbid == RT(cudaThreadSynchronize_v3020)
		: cbid == DRV(cuCtxSynchronize);
	if (!enter && !stc_cuda_succeeded(dom, cb)) {
		/* an allocation refused for want of memory: mapped as if it had
		 * succeeded, but for its address (alloc()); any other call that
		 * failed is nothing */
		if (!out_of_memory(dom, cb) || !cb->functionParams)
			return STC_CU_NONE;
		r->what = STC_CU_REFUSED;
		int w = dom == CUPTI_CB_DOMAIN_RUNTIME_API ? map_runtime(cbid, cb, 0, r) : map_driver(cbid, cb, 0, r);
		return r->what = w == STC_CU_REFUSED ? STC_CU_REFUSED : STC_CU_NONE;
	}
	if (!cb->functionParams && !no_args) {
		/* a runtime launch whose parameters CUPTI does not give (CUDA
		 * 13's __cudaLaunchKernel has no structure in its headers): the
		 * kernel is recorded all the same, its name, stream and object
		 * references taken from the driver launch inside it
		 * (cuda_record.c) */
		if (!enter && dom == CUPTI_CB_DOMAIN_RUNTIME_API &&
		    (cbid == RT_CUDA13_LAUNCH || cbid == RT_CUDA13_LAUNCH_PTSZ || cbid == RT(cudaLaunchKernel_v7000) ||
		     cbid == RT(cudaLaunchKernel_ptsz_v7000)))
			return launch(r, cb, 0, NULL, 0);
		return STC_CU_NONE;
	}
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
		return map_runtime(cbid, cb, enter, r);
	if (dom == CUPTI_CB_DOMAIN_DRIVER_API)
		return map_driver(cbid, cb, enter, r);
	return STC_CU_NONE;
}
