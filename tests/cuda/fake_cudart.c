/*
 * fake_cudart.c - the test double of libcudart.so.13 (see fake_tool.h):
 * the registration and launch entry points nvcc's host code calls, and the
 * runtime calls of tests/cuda/cuda_prog.cu, each firing the subscriber's
 * runtime callbacks (ENTER and EXIT) with the real parameter structures.
 * A launch also fires the driver's cuLaunchKernel inside it (as the real
 * runtime does) and queues a kernel activity record; copies and sets queue
 * theirs.  The kernels of cuda_prog.cu are run on the host by name, so the
 * program can check its results here too.  Parameter layouts come from the
 * kernels' mangled names (pointers and the scalar types the tests use).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fake_tool.h"

#define RT(x) CUPTI_RUNTIME_TRACE_CBID_##x
#define RTDOM CUPTI_CB_DOMAIN_RUNTIME_API

CUresult cuInit(unsigned int flags);

typedef struct kentry {
	const void *host;
	const char *name;
	unsigned n;
	size_t off[32], size[32];
} kentry;
static kentry kernels[64];
static unsigned nkernels;

/* ---------------------------------------------------------------- mangled names */
static size_t builtin(char c)
{
	switch (c) {
	case 'c': case 'a': case 'h': case 'b': return 1;
	case 's': case 't': return 2;
	case 'i': case 'j': case 'f': return 4;
	case 'l': case 'm': case 'x': case 'y': case 'd': return 8;
	}
	return 0;
}

/* Fills e->off/size from "_Z<len><name><params>". */
static void parse(kentry *e)
{
	const char *s = e->name;
	if (strncmp(s, "_Z", 2))
		return;
	s += 2;
	size_t len = strtoul(s, (char **)&s, 10);
	s += len;
	size_t subs[32], nsubs = 0, off = 0; /* sizes of the substitutable types */
	while (*s && e->n < 32) {
		int ptr = 0;
		size_t size = 0;
		while (*s == 'P' || *s == 'K') {
			ptr |= *s == 'P';
			s++;
		}
		if (*s == 'S') {
			size_t idx = 0;
			s++;
			if (*s != '_')
				idx = strtoul(s, (char **)&s, 10) + 1;
			s++; /* '_' */
			size = ptr ? 8 : idx < nsubs ? subs[idx] : 8;
		} else {
			size = ptr ? 8 : builtin(*s);
			s++;
		}
		/* P<K<T>>: PKf pushes Kf and PKf, Pf pushes Pf */
		if (ptr && nsubs < 31) {
			if (s[-2] == 'K' && s[-1] != '_')
				subs[nsubs++] = builtin(s[-1]);
			subs[nsubs++] = 8;
		}
		off = (off + size - 1) / size * size;
		e->off[e->n] = off;
		e->size[e->n] = size;
		e->n++;
		off += size;
	}
}

static kentry *find_kernel(const void *k)
{
	for (unsigned i = 0; i < nkernels; i++)
		if (kernels[i].host == k || (const void *)&kernels[i] == k)
			return &kernels[i];
	return NULL;
}

const char *fake_kernel_name(const void *k)
{
	kentry *e = find_kernel(k);
	return e ? e->name : NULL;
}

int fake_kernel_param(const void *k, size_t i, size_t *off, size_t *size)
{
	kentry *e = find_kernel(k);
	if (!e || i >= e->n)
		return -1;
	*off = e->off[i];
	*size = e->size[i];
	return 0;
}

/* The tests' kernels, on the host. */
static void run_kernel(const kentry *e, dim3 grid, dim3 block, void **args)
{
	size_t threads = (size_t)grid.x * grid.y * grid.z * block.x * block.y * block.z;
	if (strstr(e->name, "scale")) {
		float *out = *(float **)args[0], *in = *(float **)args[1], k = *(float *)args[2];
		size_t n = *(size_t *)args[3];
		for (size_t i = 0; i < n && i < threads; i++)
			out[i] = k * in[i];
	} else if (strstr(e->name, "add3")) {
		float *out = *(float **)args[0], *a = *(float **)args[1], *b = *(float **)args[2];
		int n = *(int *)args[3];
		for (int i = 0; i < n && (size_t)i < threads; i++)
			out[i] = a[i] + b[i];
	} else if (strstr(e->name, "touch_end")) {
		float *m = *(float **)args[1];
		m[0] = (float)*(int *)args[2];
	}
}

/* ---------------------------------------------------------------- registration */
void **__cudaRegisterFatBinary(void *fatCubin)
{
	static void *handle;
	(void)fatCubin;
	return &handle;
}

void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
void __cudaUnregisterFatBinary(void **h) { (void)h; }
char __cudaInitModule(void **h)
{
	(void)h;
	return 0;
}

void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName, int limit,
                            uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
	(void)h, (void)deviceFun, (void)limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
	if (nkernels < 64) {
		kernels[nkernels] = (kentry){.host = hostFun, .name = deviceName};
		parse(&kernels[nkernels++]);
	}
}

cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *hostFun)
{
	kentry *e = find_kernel(hostFun);
	*k = (cudaKernel_t)(void *)e;
	return e ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

static __thread struct {
	dim3 grid, block;
	size_t shmem;
	void *stream;
} conf;

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, void *stream)
{
	cuInit(0);
	conf.grid = grid;
	conf.block = block;
	conf.shmem = shmem;
	conf.stream = stream;
	return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, void *stream)
{
	*grid = conf.grid;
	*block = conf.block;
	*shmem = conf.shmem;
	*(void **)stream = conf.stream;
	return cudaSuccess;
}

static __thread cudaError_t last_error;

static cudaError_t launch(unsigned cbid, const void *k, dim3 grid, dim3 block, void **args, size_t shmem,
                          cudaStream_t st)
{
	cuInit(0);
	kentry *e = find_kernel(k);
	cudaLaunchKernel_v7000_params p = {k, grid, block, args, shmem, st};
	const char *name = e ? e->name : NULL;
	const char *nosym = getenv("FAKE_NO_SYMBOL"); /* callbacks without symbolName */
	if (nosym && !strcmp(nosym, "1"))
		name = NULL;
	const char *nopar = getenv("FAKE_NO_LAUNCH_PARAMS"); /* runtime launches without functionParams */
	void *params = nopar && !strcmp(nopar, "1") ? NULL : &p;
	FAKE_API(RTDOM, cbid, "__cudaLaunchKernel", params, cudaError_t, r, name, {
		if (!e) {
			r = cudaErrorInvalidDeviceFunction;
		} else {
			/* the driver call inside, as the real runtime makes it */
			cuLaunchKernel_params dp = {(CUfunction)(void *)e, grid.x, grid.y, grid.z, block.x, block.y,
			                            block.z, (unsigned)shmem, (CUstream)st, args, NULL};
			uint32_t dc = fake_corr();
			CUresult dr = CUDA_SUCCESS;
			fake_fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", &dp,
			          &dr, name, dc, CUPTI_API_ENTER);
			run_kernel(e, grid, block, args);
			fake_fire(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", &dp,
			          &dr, name, dc, CUPTI_API_EXIT);
			fake_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, corr_, fake_clock() + 1000, FAKE_KERNEL_NS,
			              name);
		}
		last_error = r;
	});
}

cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t st)
{
	return launch(505, (const void *)k, grid, block, args, shmem, st);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 grid, dim3 block, void **args, size_t shmem,
                                    cudaStream_t st)
{
	return launch(506, (const void *)k, grid, block, args, shmem, st);
}

cudaError_t cudaLaunchKernel(const void *f, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t st)
{
	return launch(RT(cudaLaunchKernel_v7000), f, grid, block, args, shmem, st);
}

/* As the real runtime: a call that fails leaves its error for the
 * program's next cudaGetLastError() (on a GPU, cudaFuncGetParamInfo past
 * the last parameter did, and every PyTorch launch check then failed) */
static cudaError_t failed(cudaError_t e)
{
	if (e != cudaSuccess)
		last_error = e;
	return e;
}

cudaError_t cudaFuncGetName(const char **name, const void *f)
{
	*name = fake_kernel_name(f);
	return failed(*name ? cudaSuccess : cudaErrorInvalidDeviceFunction);
}

cudaError_t cudaFuncGetParamInfo(const void *f, size_t i, size_t *off, size_t *size)
{
	const char *no = getenv("FAKE_NO_RT_PARAMINFO"); /* as a runtime that refuses the kernel handle */
	if (no && !strcmp(no, "1"))
		return failed(cudaErrorInvalidValue);
	return failed(fake_kernel_param(f, i, off, size) ? cudaErrorInvalidValue : cudaSuccess);
}

/* ---------------------------------------------------------------- memory */
static void *dev_map(size_t n)
{
	void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

#define ALLOC_BODY(ptr, size) \
	{ \
		cuInit(0); \
		void *q_ = dev_map(size); \
		*(ptr) = q_; \
		r = q_ ? cudaSuccess : cudaErrorMemoryAllocation; \
	}

cudaError_t cudaMalloc(void **ptr, size_t size)
{
	cudaMalloc_v3020_params p = {ptr, size};
	FAKE_API(RTDOM, RT(cudaMalloc_v3020), "cudaMalloc", &p, cudaError_t, r, NULL, ALLOC_BODY(ptr, size));
}

cudaError_t cudaMallocManaged(void **ptr, size_t size, unsigned flags)
{
	cudaMallocManaged_v6000_params p = {ptr, size, flags};
	FAKE_API(RTDOM, RT(cudaMallocManaged_v6000), "cudaMallocManaged", &p, cudaError_t, r, NULL,
	         ALLOC_BODY(ptr, size));
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	cudaMallocHost_v3020_params p = {ptr, size};
	FAKE_API(RTDOM, RT(cudaMallocHost_v3020), "cudaMallocHost", &p, cudaError_t, r, NULL, ALLOC_BODY(ptr, size));
}

cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned flags)
{
	cudaHostAlloc_v3020_params p = {ptr, size, flags};
	FAKE_API(RTDOM, RT(cudaHostAlloc_v3020), "cudaHostAlloc", &p, cudaError_t, r, NULL, ALLOC_BODY(ptr, size));
}

cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t s)
{
	cudaMallocAsync_v11020_params p = {ptr, size, s};
	FAKE_API(RTDOM, RT(cudaMallocAsync_v11020), "cudaMallocAsync", &p, cudaError_t, r, NULL, ALLOC_BODY(ptr, size));
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t s)
{
	cudaMallocFromPoolAsync_v11020_params p = {ptr, size, pool, s};
	FAKE_API(RTDOM, RT(cudaMallocFromPoolAsync_v11020), "cudaMallocFromPoolAsync", &p, cudaError_t, r, NULL,
	         ALLOC_BODY(ptr, size));
}

/* Frees never give the memory back: an address is never reused, so a
 * stale reference in the collector cannot hide behind a new object. */
#define FREE_API(cbid, fname, ptype, ...) \
	ptype p = {__VA_ARGS__}; \
	FAKE_API(RTDOM, cbid, fname, &p, cudaError_t, r, NULL, { r = cudaSuccess; })

cudaError_t cudaFree(void *ptr) { FREE_API(RT(cudaFree_v3020), "cudaFree", cudaFree_v3020_params, ptr); }
cudaError_t cudaFreeHost(void *ptr)
{
	FREE_API(RT(cudaFreeHost_v3020), "cudaFreeHost", cudaFreeHost_v3020_params, ptr);
}
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t s)
{
	FREE_API(RT(cudaFreeAsync_v11020), "cudaFreeAsync", cudaFreeAsync_v11020_params, ptr, s);
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props)
{
	(void)props;
	cuInit(0);
	*pool = (cudaMemPool_t)dev_map(64);
	return cudaSuccess;
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool)
{
	(void)pool;
	return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
	cudaMemcpy_v3020_params p = {dst, src, n, kind};
	FAKE_API(RTDOM, RT(cudaMemcpy_v3020), "cudaMemcpy", &p, cudaError_t, r, NULL, {
		memcpy(dst, src, n);
		fake_activity(CUPTI_ACTIVITY_KIND_MEMCPY, corr_, fake_clock() + 1000, FAKE_COPY_NS, NULL);
	});
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s)
{
	cudaMemcpyAsync_v3020_params p = {dst, src, n, kind, s};
	FAKE_API(RTDOM, RT(cudaMemcpyAsync_v3020), "cudaMemcpyAsync", &p, cudaError_t, r, NULL, {
		memcpy(dst, src, n);
		fake_activity(CUPTI_ACTIVITY_KIND_MEMCPY, corr_, fake_clock() + 1000, FAKE_COPY_NS, NULL);
	});
}

cudaError_t cudaMemset(void *d, int v, size_t n)
{
	cudaMemset_v3020_params p = {d, v, n};
	FAKE_API(RTDOM, RT(cudaMemset_v3020), "cudaMemset", &p, cudaError_t, r, NULL, {
		memset(d, v, n);
		fake_activity(CUPTI_ACTIVITY_KIND_MEMSET, corr_, fake_clock() + 1000, FAKE_COPY_NS, NULL);
	});
}

cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t s)
{
	cudaMemsetAsync_v3020_params p = {d, v, n, s};
	FAKE_API(RTDOM, RT(cudaMemsetAsync_v3020), "cudaMemsetAsync", &p, cudaError_t, r, NULL, {
		memset(d, v, n);
		fake_activity(CUPTI_ACTIVITY_KIND_MEMSET, corr_, fake_clock() + 1000, FAKE_COPY_NS, NULL);
	});
}

/* ---------------------------------------------------------------- the rest */
cudaError_t cudaSetDevice(int dev)
{
	cuInit(0);
	return dev == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaDeviceSynchronize(void)
{
	FAKE_API(RTDOM, RT(cudaDeviceSynchronize_v3020), "cudaDeviceSynchronize", NULL, cudaError_t, r, NULL, {});
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	cudaStreamSynchronize_v3020_params p = {s};
	FAKE_API(RTDOM, RT(cudaStreamSynchronize_v3020), "cudaStreamSynchronize", &p, cudaError_t, r, NULL, {});
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
	cuInit(0);
	*s = (cudaStream_t)dev_map(64);
	return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	(void)s;
	return cudaSuccess;
}

cudaError_t cudaPeekAtLastError(void) { return last_error; }

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = last_error;
	last_error = cudaSuccess;
	return e;
}

const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "fake error"; }
