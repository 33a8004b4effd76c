/*
 * fake_cudart.c - a stand-in for libcudart.so.12 (no GPU here), built as
 * fakecuda/libcudart.so.12 for test_torch_cuda.sh: cudaMalloc hands out
 * 256-byte aligned addresses from a reserved range (never touched) and,
 * like the real runtime, allocates host memory of its own (a malloc of
 * 123457 bytes per call, which the collector must not record: it calls
 * cudaMalloc with the thread busy); cudaFree frees that host block again.
 * Only what the pluggable allocator calls; and, standing in for the thread
 * PyTorch's autograd runs a GPU backward on (a thread with no Python),
 * fake_device_thread_alloc: calls an allocator's alloc from a new pthread
 * and waits for it (test_torch_cuda_lines.sh).
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HOST_NOISE 123457

int cudaMalloc(void **p, size_t size);
int cudaFree(void *p);

typedef void *(*alloc_fn)(ssize_t, int, void *);
void *fake_device_thread_alloc(alloc_fn alloc, ssize_t size, int device, void *stream);

struct call {
	alloc_fn alloc;
	ssize_t size;
	int device;
	void *stream, *result;
};

static void *device_thread(void *arg)
{
	struct call *c = arg;
	c->result = c->alloc(c->size, c->device, c->stream);
	return NULL;
}

void *fake_device_thread_alloc(alloc_fn alloc, ssize_t size, int device, void *stream)
{
	struct call c = {alloc, size, device, stream, NULL};
	pthread_t t;
	if (pthread_create(&t, NULL, device_thread, &c))
		return NULL;
	pthread_join(t, NULL);
	return c.result;
}

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
