/*
 * planted.cu - a CUDA program with one object per DrGPUM pattern, each
 * allocated on a line marked PLANT:<pattern>, for `stprof record
 * --accesses=exact` (tests/gpu/check_52_planted.sh; its host-side twin,
 * collector/sanitizer/tests/sz_fake_program.c "planted", plays the same
 * calls on the fake device):
 *
 *   early     allocated first, first used ten kernels later
 *   late      written and read by the first two kernels, freed at the end
 *   unused    allocated and freed, never touched
 *   dead      written by a kernel, overwritten by a memset before anything
 *             read it (the kernel's write is dead), then read
 *   idle      used by two kernels, then idle for eight, then used again
 *   redundant allocated after red1 (same size) was done with and freed:
 *             it could have been red1
 *   part      only its first eighth is ever touched (overallocation)
 *   slices    each of 8 launches reads and writes its own eighth, none
 *             another's (structured access: one eighth would do)
 *   hot       written whole, its first sixteenth then read and written by
 *             10 launches, the rest by one (non-uniform access frequency,
 *             counted in launches)
 *   leak      never freed
 *
 * and one ordinary object (ok: allocated, written, read, freed in a row)
 * that has nothing to report.  Every object of a pattern is touched whole
 * (but part), and sizes differ by more than 10% (but red1/red2), so that
 * nothing else is a finding.  Prints one value of leak; exits 0.
 */
#include <cuda_runtime.h>
#include <stdio.h>

#define MIB (1u << 20)

extern "C" __global__ void k_init(float *p, unsigned n, float v)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v + (float)(i & 7);
}

extern "C" __global__ void k_touch(float *p, unsigned n)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = p[i] * 0.5f + 1.0f;
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

static unsigned nf(size_t bytes) { return (unsigned)(bytes / sizeof(float)); }
static unsigned grid(unsigned n) { return (n + 255) / 256; }
#define INIT(p, bytes) k_init<<<grid(nf(bytes)), 256>>>((p), nf(bytes), 1.0f)
#define TOUCH(p, bytes) k_touch<<<grid(nf(bytes)), 256>>>((p), nf(bytes))

int main(void)
{
	const size_t S_EARLY = 8 * MIB, S_LATE = 10 * MIB, S_UNUSED = 12 * MIB, S_DEAD = 14 * MIB, S_IDLE = 16 * MIB,
	             S_OK = 1 * MIB, S_RED = 6 * MIB, S_PART = 20 * MIB, S_LEAK = 18 * MIB, S_SLICES = 24 * MIB,
	             S_HOT = 28 * MIB;
	float *early, *late, *unused, *dead, *idle, *ok, *red1, *red2, *part, *leak, *slices, *hot;
	CK(cudaMalloc(&early, S_EARLY)); /* PLANT:early-allocation */
	CK(cudaMalloc(&late, S_LATE)); /* PLANT:late-deallocation */
	INIT(late, S_LATE);
	TOUCH(late, S_LATE);
	CK(cudaMalloc(&unused, S_UNUSED)); /* PLANT:unused-allocation */
	CK(cudaMalloc(&dead, S_DEAD)); /* PLANT:dead-write */
	INIT(dead, S_DEAD);
	CK(cudaMemset(dead, 0, S_DEAD));
	TOUCH(dead, S_DEAD);
	CK(cudaFree(dead));
	CK(cudaMalloc(&idle, S_IDLE)); /* PLANT:temporary-idleness */
	INIT(idle, S_IDLE);
	TOUCH(idle, S_IDLE);
	CK(cudaMalloc(&ok, S_OK));
	INIT(ok, S_OK);
	TOUCH(ok, S_OK);
	CK(cudaFree(ok));
	CK(cudaMalloc(&red1, S_RED));
	INIT(red1, S_RED);
	TOUCH(red1, S_RED);
	CK(cudaFree(red1));
	INIT(early, S_EARLY);
	TOUCH(early, S_EARLY);
	CK(cudaFree(early));
	CK(cudaMalloc(&red2, S_RED)); /* PLANT:redundant-allocation */
	INIT(red2, S_RED);
	TOUCH(red2, S_RED);
	CK(cudaFree(red2));
	TOUCH(idle, S_IDLE);
	CK(cudaFree(idle));
	CK(cudaMalloc(&part, S_PART)); /* PLANT:overallocation */
	INIT(part, S_PART / 8);
	TOUCH(part, S_PART / 8);
	CK(cudaFree(part));
	CK(cudaMalloc(&slices, S_SLICES)); /* PLANT:structured-access */
	for (int k = 0; k < 8; k++)
		TOUCH(slices + k * nf(S_SLICES / 8), S_SLICES / 8);
	CK(cudaFree(slices));
	CK(cudaMalloc(&hot, S_HOT)); /* PLANT:non-uniform-frequency */
	INIT(hot, S_HOT);
	for (int k = 0; k < 10; k++)
		TOUCH(hot, S_HOT / 16);
	TOUCH(hot, S_HOT);
	CK(cudaFree(hot));
	CK(cudaMalloc(&leak, S_LEAK)); /* PLANT:memory-leak */
	INIT(leak, S_LEAK);
	TOUCH(leak, S_LEAK);
	float v = 0;
	CK(cudaMemcpy(&v, leak, sizeof v, cudaMemcpyDeviceToHost));
	CK(cudaFree(unused));
	CK(cudaFree(late));
	printf("leak[0] %.3f\n", v);
	return 0;
}
