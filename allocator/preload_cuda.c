/*
 * preload_cuda.c - libstalloc.so's face to CUDA programs and PyTorch, for a
 * device plan (one GPU: the pool lives on the device current when the
 * first request comes).
 *
 *   - cudaMalloc / cudaFree, interposed when libstalloc.so is preloaded in
 *     front of the dynamic CUDA runtime: CUDA C programs.
 *   - stalloc_torch_alloc / stalloc_torch_free: PyTorch's
 *     CUDAPluggableAllocator signatures (alloc(ssize_t size, int device,
 *     cudaStream_t), free(void *, ssize_t, int, cudaStream_t)):
 *       torch.cuda.memory.change_current_allocator(
 *           torch.cuda.memory.CUDAPluggableAllocator(
 *               "libstalloc.so", "stalloc_torch_alloc", "stalloc_torch_free"))
 *     stalloc_torch_init and stalloc_torch_reset are the optional init and
 *     reset hooks (the plan is loaded by the library constructor);
 *     stalloc_device_plan() says whether there is a device plan to enforce.
 * The real cudaMalloc/cudaFree are looked up at run time (the next
 * definition, else the global one, else a libcudart.so* already loaded or
 * on the search path), so nothing here
 * links against CUDA: the library builds and its host path runs where CUDA
 * is absent, and with no device plan every call is passed through.
 * Pool and fallback blocks come from the real cudaMalloc (256-byte
 * aligned, as cudaMalloc's are).
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"

#define EXPORT __attribute__((visibility("default")))
#define CUDA_SUCCESS_ 0
#define CUDA_ERROR_MEMORY_ALLOCATION_ 2

typedef int (*malloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);

static malloc_fn real_malloc;
static free_fn real_free;

EXPORT int cudaMalloc(void **out, size_t size);
EXPORT int cudaFree(void *p);

/* A definition that is not our own (RTLD_DEFAULT finds ours first when we
 * are preloaded and the runtime was loaded privately). */
static int foreign(void *m, void *f)
{
	return m && f && m != (void *)cudaMalloc && f != (void *)cudaFree;
}

static void resolve(void)
{
	if (__atomic_load_n(&real_free, __ATOMIC_ACQUIRE))
		return;
	void *m = dlsym(RTLD_NEXT, "cudaMalloc"), *f = dlsym(RTLD_NEXT, "cudaFree");
	if (!foreign(m, f)) {
		m = dlsym(RTLD_DEFAULT, "cudaMalloc");
		f = dlsym(RTLD_DEFAULT, "cudaFree");
	}
	/* the runtime already loaded (PyTorch's wheels load libcudart.so.12
	 * privately), else one of those names from the search path */
	static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
	for (int load = 0; load < 2 && !foreign(m, f); load++) {
		for (size_t i = 0; i < sizeof names / sizeof names[0] && !foreign(m, f); i++) {
			void *h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL | (load ? 0 : RTLD_NOLOAD));
			if (h) {
				m = dlsym(h, "cudaMalloc");
				f = dlsym(h, "cudaFree");
			}
		}
	}
	if (!foreign(m, f))
		m = f = NULL; /* no runtime: every device request fails, none recurses */
	malloc_fn mf;
	free_fn ff;
	*(void **)&mf = m;
	*(void **)&ff = f;
	__atomic_store_n(&real_malloc, mf, __ATOMIC_RELAXED);
	__atomic_store_n(&real_free, ff, __ATOMIC_RELEASE);
}

static void *dev_raw_alloc(void *ctx, uint64_t size)
{
	(void)ctx;
	void *p = NULL;
	return real_malloc && real_malloc(&p, (size_t)size) == CUDA_SUCCESS_ ? p : NULL;
}

static void dev_raw_free(void *ctx, void *p, uint64_t size)
{
	(void)ctx;
	(void)size;
	if (real_free)
		real_free(p);
}

static void dev_unreserve(void *ctx, void *base, uint64_t size) { dev_raw_free(ctx, base, size); }

static const stalloc_backend cuda_backend = {dev_raw_alloc, dev_unreserve, dev_raw_alloc, dev_raw_free, NULL,
                                             "cuda"};

static stalloc *dev(void)
{
	resolve();
	return real_malloc ? st_preload_device(&cuda_backend) : NULL;
}

EXPORT int cudaMalloc(void **out, size_t size)
{
	stalloc *a = dev();
	if (a) {
		void *p = stalloc_alloc(a, size, ST_ALIGN_DEVICE);
		if (p) {
			*out = p;
			return CUDA_SUCCESS_;
		}
		return CUDA_ERROR_MEMORY_ALLOCATION_;
	}
	if (!real_malloc)
		return CUDA_ERROR_MEMORY_ALLOCATION_;
	return real_malloc(out, size);
}

EXPORT int cudaFree(void *p)
{
	stalloc *a = dev();
	if (a && p && stalloc_free(a, p))
		return CUDA_SUCCESS_;
	return real_free ? real_free(p) : CUDA_SUCCESS_;
}

EXPORT void *stalloc_torch_alloc(ssize_t size, int device, void *stream)
{
	(void)device;
	(void)stream;
	void *p = NULL;
	if (size < 0 || cudaMalloc(&p, (size_t)size) != CUDA_SUCCESS_)
		return NULL;
	return p;
}

EXPORT void stalloc_torch_free(void *p, ssize_t size, int device, void *stream)
{
	(void)size;
	(void)device;
	(void)stream;
	cudaFree(p);
}

EXPORT void stalloc_torch_init(int device_count) { (void)device_count; }

/* 1 when this process enforces a device plan: stprof's Python shim asks
 * before it makes libstalloc.so PyTorch's CUDA allocator. */
EXPORT int stalloc_device_plan(void);
int stalloc_device_plan(void) { return st_preload_device_planned(); }

EXPORT void stalloc_torch_reset(void)
{
	stalloc *a = dev();
	if (a)
		stalloc_step(a);
}
