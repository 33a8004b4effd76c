/*
 * cuda_prog.cu - a CUDA program with known allocations, kernels, copies,
 * sets and syncs, for the CUPTI backend's tests: recorded here against the
 * fake driver (tests/cuda/fake_*.c) and on a GPU against the real one
 * (tests/gpu/check_30_cupti.sh); tests/cuda/check_cuda_trace.c checks the
 * trace against what it writes into $CUDA_PROG_ADDRS ("NAME ADDR SIZE"
 * lines).  With CUDA_PROG_VERIFY=1 it checks the kernels' results (only a
 * real GPU computes them) and exits 1 when one is wrong.
 *
 * What must be recorded: 6 device objects (a, b, c, e: cudaMalloc; x:
 * cudaMallocAsync; y: cudaMallocFromPoolAsync, pool 16), d (cuMemAlloc),
 * managed m, pinned hp (cudaMallocHost) and hq (cudaHostAlloc), one VMM
 * mapping va (a segment), and kernel references: scale(c, a) -> {c, a};
 * add3(x, a, b) -> {x, a, b}; touch_end(e + 1000 bytes, m) -> {m} only (one
 * past e's end is not e); scale(va, y) -> {va, y}.
 *
 * With CUDA_PROG_THREADS=N it then runs N threads that each set and copy a
 * buffer of their own 50 times on a stream of their own (the held events of
 * several threads written together; counted by tests/cuda/test_cupti.sh).
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (1 << 16)

__global__ void scale(float *out, const float *in, float k, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = k * in[i];
}

__global__ void add3(float *out, const float *a, const float *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = a[i] + b[i];
}

__global__ void touch_end(float *end, float *m, int n)
{
	if (threadIdx.x == 0 && n < 0)
		end[-1] = 1.0f; /* never: n >= 0; the pointer only has to be passed */
	if (threadIdx.x == 0)
		m[0] = (float)n;
}

static FILE *addrs;

static void name(const char *what, const void *p, size_t size)
{
	if (addrs)
		fprintf(addrs, "%s %llu %zu\n", what, (unsigned long long)(uintptr_t)p, size);
}

#define CK(call) \
	do { \
		cudaError_t e_ = (call); \
		if (e_ != cudaSuccess) { \
			fprintf(stderr, "cuda_prog: %s: %s\n", #call, cudaGetErrorString(e_)); \
			exit(2); \
		} \
	} while (0)
#define DK(call) \
	do { \
		CUresult r_ = (call); \
		if (r_ != CUDA_SUCCESS) { \
			fprintf(stderr, "cuda_prog: %s: error %d\n", #call, (int)r_); \
			exit(2); \
		} \
	} while (0)

static void *worker(void *arg)
{
	(void)arg;
	cudaStream_t s;
	float *buf, *dst;
	CK(cudaStreamCreate(&s));
	CK(cudaMalloc(&buf, 4096));
	CK(cudaMalloc(&dst, 4096));
	for (int i = 0; i < 50; i++) {
		CK(cudaMemsetAsync(buf, i, 4096, s));
		CK(cudaMemcpyAsync(dst, buf, 4096, cudaMemcpyDeviceToDevice, s));
	}
	CK(cudaStreamSynchronize(s));
	CK(cudaFree(buf));
	CK(cudaFree(dst));
	CK(cudaStreamDestroy(s));
	return NULL;
}

int main(void)
{
	const char *path = getenv("CUDA_PROG_ADDRS");
	addrs = path ? fopen(path, "w") : NULL;
	int verify = getenv("CUDA_PROG_VERIFY") && !strcmp(getenv("CUDA_PROG_VERIFY"), "1");
	size_t bytes = N * sizeof(float);

	CK(cudaSetDevice(0));
	float *a, *b, *c, *e, *x, *y, *m, *hp, *hq;
	CK(cudaMalloc(&a, bytes));
	name("a", a, bytes);
	CK(cudaMalloc(&b, bytes));
	name("b", b, bytes);
	CK(cudaMalloc(&c, bytes));
	name("c", c, bytes);
	CK(cudaMalloc(&e, 1000));
	name("e", e, 1000);
	CK(cudaMallocManaged(&m, 8192));
	name("m", m, 8192);
	CK(cudaMallocHost(&hp, bytes));
	name("hp", hp, bytes);
	CK(cudaHostAlloc(&hq, 4096, cudaHostAllocDefault));
	name("hq", hq, 4096);
	float *h = (float *)malloc(bytes);
	name("h", h, bytes);
	for (int i = 0; i < N; i++)
		hp[i] = h[i] = (float)(i % 1000);

	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	cudaMemPool_t pool;
	cudaMemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	CK(cudaMemPoolCreate(&pool, &props));
	CK(cudaMallocAsync(&x, bytes, s));
	name("x", x, bytes);
	CK(cudaMallocFromPoolAsync(&y, bytes, pool, s));
	name("y", y, bytes);

	CK(cudaMemcpy(a, hp, bytes, cudaMemcpyHostToDevice));       /* hp -> a */
	CK(cudaMemcpyAsync(b, h, bytes, cudaMemcpyHostToDevice, s)); /* h -> b */
	CK(cudaMemset(c, 0, bytes));                                 /* c */
	CK(cudaMemsetAsync(y, 0, bytes, s));                         /* y */
	CK(cudaStreamSynchronize(s));
	scale<<<N / 256, 256>>>(c, a, 2.0f, (size_t)N);
	add3<<<N / 256, 256, 0, s>>>(x, a, b, N);
	touch_end<<<1, 32>>>((float *)((char *)e + 1000), m, 7);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(hp, c, bytes, cudaMemcpyDeviceToHost));        /* c -> hp */
	if (verify)
		for (int i = 0; i < N; i++)
			if (hp[i] != 2.0f * (float)(i % 1000)) {
				fprintf(stderr, "cuda_prog: scale: element %d is %g\n", i, hp[i]);
				return 1;
			}

	/* the driver API: an allocation and a VMM mapping (as PyTorch's
	 * expandable segments make them) */
	CUdeviceptr d;
	DK(cuMemAlloc(&d, 4096));
	name("d", (void *)(uintptr_t)d, 4096);
	CUmemAllocationProp vp;
	memset(&vp, 0, sizeof vp);
	vp.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	vp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	vp.location.id = 0;
	size_t g = 0;
	DK(cuMemGetAllocationGranularity(&g, &vp, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CUdeviceptr va;
	DK(cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
	CUmemGenericAllocationHandle hdl;
	DK(cuMemCreate(&hdl, g, &vp, 0));
	DK(cuMemMap(va, g, 0, hdl, 0));
	CUmemAccessDesc acc;
	memset(&acc, 0, sizeof acc);
	acc.location = vp.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	DK(cuMemSetAccess(va, g, &acc, 1));
	name("va", (void *)(uintptr_t)va, g);
	size_t nv = g / sizeof(float) < (size_t)N ? g / sizeof(float) : (size_t)N;
	scale<<<(unsigned)((nv + 255) / 256), 256>>>((float *)(uintptr_t)va, y, 3.0f, nv);
	CK(cudaDeviceSynchronize());
	DK(cuMemUnmap(va, g));
	DK(cuMemRelease(hdl));
	DK(cuMemAddressFree(va, 2 * g));
	DK(cuMemFree(d));

	CK(cudaFreeAsync(x, s));
	CK(cudaFreeAsync(y, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemPoolDestroy(pool));
	CK(cudaStreamDestroy(s));
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(c));
	CK(cudaFree(e));
	CK(cudaFree(m));
	CK(cudaFreeHost(hp));
	CK(cudaFreeHost(hq));
	free(h);
	int nthreads = getenv("CUDA_PROG_THREADS") ? atoi(getenv("CUDA_PROG_THREADS")) : 0;
	pthread_t th[16];
	for (int i = 0; i < nthreads && i < 16; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < nthreads && i < 16; i++)
		pthread_join(th[i], NULL);
	if (addrs)
		fclose(addrs);
	printf("cuda_prog: done\n");
	return 0;
}
