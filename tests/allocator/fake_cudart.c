/*
 * fake_cudart.c - a stand-in for libcudart's cudaMalloc/cudaFree on a
 * machine without a GPU (a test double: host memory, 256-byte aligned as
 * cudaMalloc's), so that libstalloc's CUDA entry points run here; the real
 * path is checked by tests/gpu/run.sh on a GPU machine.  Counts its calls
 * (fake_cuda_calls) so the test sees what reached the "device".
 */
#include <stdlib.h>

int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
long fake_cuda_calls(void);

static long calls;

int cudaMalloc(void **p, size_t n)
{
	calls++;
	*p = aligned_alloc(256, (n + 255) / 256 * 256);
	return *p ? 0 : 2;
}

int cudaFree(void *p)
{
	calls++;
	free(p);
	return 0;
}

long fake_cuda_calls(void) { return calls; }
