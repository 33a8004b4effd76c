/*
 * known_objects.cu - a CUDA program whose kernels touch known objects, for
 * stprof record --accesses=exact (tests/gpu/check_50_sanitizer.sh):
 *
 *   in      copied in (HtoD), then only READ by k_scale
 *   out     WRITTEN by k_scale, read by the copy back (DtoH)
 *   scratch WRITTEN by k_fill twice and never read: a dead write
 *   unused  allocated and freed, never touched: unused allocation
 *   small[0..1999]  2,000 live objects (past DrGPUM's 1024): k_touch reads
 *           small[1999] and does an atomicAdd (read and write) on small[1500]
 *
 * Prints "obj NAME ADDR SIZE" for each named object, then the checksum.
 * With an argument N > 1 it repeats the kernels N times (for timing) and
 * prints only the checksum and the seconds the loop took.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N (1 << 18)
#define NSMALL 2000
#define SMALL 512

extern "C" __global__ void k_scale(const float *in, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = 2.0f * in[i];
}

extern "C" __global__ void k_fill(float *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = (float)i;
}

extern "C" __global__ void k_touch(const int *r, int *a)
{
	if (threadIdx.x == 0 && blockIdx.x == 0) {
		int v = r[SMALL / sizeof(int) - 1]; /* the last word of small[1999] */
		atomicAdd(&a[3], v + 1);
	}
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 1;
	float *in, *out, *scratch, *unused;
	static void *small[NSMALL];
	float *h = (float *)malloc(N * sizeof(float));
	for (int i = 0; i < N; i++)
		h[i] = (float)(i % 7);
	CK(cudaMalloc(&in, N * sizeof(float)));
	CK(cudaMalloc(&out, N * sizeof(float)));
	CK(cudaMalloc(&scratch, N * sizeof(float)));
	CK(cudaMalloc(&unused, N * sizeof(float)));
	for (int i = 0; i < NSMALL; i++)
		CK(cudaMalloc(&small[i], SMALL));
	CK(cudaMemset(small[1500], 0, SMALL));
	if (iters <= 1) {
		printf("obj in %p %zu\nobj out %p %zu\nobj scratch %p %zu\nobj unused %p %zu\n", (void *)in,
		       N * sizeof(float), (void *)out, N * sizeof(float), (void *)scratch, N * sizeof(float),
		       (void *)unused, N * sizeof(float));
		printf("obj small1500 %p %d\nobj small1999 %p %d\n", small[1500], SMALL, small[1999], SMALL);
	}
	CK(cudaMemcpy(in, h, N * sizeof(float), cudaMemcpyHostToDevice));
	double t0 = now();
	for (int it = 0; it < iters; it++) {
		k_scale<<<N / 256, 256>>>(in, out, N);
		k_fill<<<N / 256, 256>>>(scratch, N);
		k_fill<<<N / 256, 256>>>(scratch, N);
		k_touch<<<1, 32>>>((const int *)small[1999], (int *)small[1500]);
		CK(cudaGetLastError());
		CK(cudaDeviceSynchronize());
	}
	double t1 = now();
	CK(cudaMemcpy(h, out, N * sizeof(float), cudaMemcpyDeviceToHost));
	double sum = 0;
	for (int i = 0; i < N; i++)
		sum += h[i];
	printf("checksum %.0f\n", sum);
	if (iters > 1)
		printf("loop_seconds %.6f\n", t1 - t0);
	for (int i = 0; i < NSMALL; i++)
		CK(cudaFree(small[i]));
	CK(cudaFree(unused));
	CK(cudaFree(scratch));
	CK(cudaFree(out));
	CK(cudaFree(in));
	free(h);
	return 0;
}
