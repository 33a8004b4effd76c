/*
 * fake_cudart.c - a stand-in for libcudart.so.12 (no GPU here), built as
 * fakecuda/libcudart.so.12 for test_torch_cuda.sh: cudaMalloc hands out
 * 256-byte aligned addresses from a reserved range (never touched) and,
 * like the real runtime, allocates host memory of its own (a malloc of
 * 123457 bytes per call, which the collector must not record: it calls
 * cudaMalloc with the thread busy); cudaFree frees that host block again.
 * Only what the pluggable allocator calls.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HOST_NOISE 123457

int cudaMalloc(void **p, size_t size);
int cudaFree(void *p);

static uintptr_t base, next;
static void *noise[4096];
static size_t nnoise;

int cudaMalloc(void **p, size_t size)
{
	if (!base) {
		void *m = mmap(NULL, 1ull << 32, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			return 2;
		base = next = ((uintptr_t)m + 255) & ~(uintptr_t)255;
	}
	if (nnoise < 4096)
		noise[nnoise++] = malloc(HOST_NOISE);
	*p = (void *)next;
	next += (size + 255) & ~(size_t)255;
	if (!size)
		next += 256;
	return 0;
}

int cudaFree(void *p)
{
	(void)p;
	if (nnoise)
		free(noise[--nnoise]);
	return 0;
}
