/*
 * torch_cuda_pluggable.c - STAlloc's profiling mode (STC_TORCH_CUDA_PLUGGABLE):
 * libstprof.so is PyTorch's CUDAPluggableAllocator, so every tensor is one
 * cudaMalloc and one cudaFree, recorded with the call path that made it.
 *
 *   torch.cuda.memory.change_current_allocator(
 *       torch.cuda.memory.CUDAPluggableAllocator(
 *           "/path/libstprof.so", "stprof_torch_cuda_alloc", "stprof_torch_cuda_free"))
 *
 * (the Python shim does this at `import torch`, before CUDA is initialized).
 * cudaMalloc and cudaFree are found at run time, never linked: in the
 * libcudart the process has loaded (dl_iterate_phdr, then dlsym on its
 * handle), else the global definition, else by dlopen of libcudart.so.N.
 * They run with the thread busy, so the CUPTI backend ignores them and
 * nothing they allocate on the host is recorded.  A tensor is ALLOC/FREE of
 * kind DEVICE, pool STP_POOL_TENSORS, with its device, stream and size
 * (PyTorch's request, unrounded), and is in the live-object table
 * (core/face.h) while it lives.  Its call path is the native frames up to the
 * interpreter, then the Python frames: PyTorch calls the allocator without
 * holding a lock of its own, so the GIL may be taken for the walk
 * (torch_common.c).  Events are recorded even while the thread is busy (a
 * free made by Python's GC during that walk is the program's).
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "stprof/trace.h"
#include "torch_cuda.h"

typedef int (*cuda_malloc_fn)(void **, size_t);
typedef int (*cuda_free_fn)(void *);

STC_EXPORT void *stprof_torch_cuda_alloc(ssize_t size, int device, void *stream);
STC_EXPORT void stprof_torch_cuda_free(void *p, ssize_t size, int device, void *stream);

static cuda_malloc_fn real_malloc;
static cuda_free_fn real_free;
static _Atomic int resolved;

static int find_cudart(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	const char *n = info->dlpi_name, *slash = n ? strrchr(n, '/') : NULL;
	const char *base = slash ? slash + 1 : n;
	if (base && !strncmp(base, "libcudart", 9) && strstr(base, ".so")) {
		char *out = data;
		strncpy(out, n, 4095);
		out[4095] = 0;
		return 1;
	}
	return 0;
}

static void resolve(void)
{
	if (atomic_load_explicit(&resolved, memory_order_acquire))
		return;
	int was = t_busy;
	t_busy = 1;
	char path[4096] = "";
	void *h = NULL, *m = NULL, *f = NULL;
	dl_iterate_phdr(find_cudart, path);
	if (path[0] && (h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY))) {
		m = dlsym(h, "cudaMalloc");
		f = dlsym(h, "cudaFree");
	}
	if (!m || !f) {
		m = dlsym(RTLD_DEFAULT, "cudaMalloc");
		f = dlsym(RTLD_DEFAULT, "cudaFree");
	}
	static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
	for (size_t i = 0; (!m || !f) && i < sizeof names / sizeof *names; i++)
		if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL))) {
			m = dlsym(h, "cudaMalloc");
			f = dlsym(h, "cudaFree");
		}
	if (!m || !f) {
		static const char msg[] = "stprof: --torch-cuda=pluggable: no cudaMalloc in this process\n";
		if (write(2, msg, sizeof msg - 1) < 0)
			m = f = NULL;
		m = f = NULL;
	}
	*(void **)&real_malloc = m;
	*(void **)&real_free = f;
	t_busy = was;
	atomic_store_explicit(&resolved, 1, memory_order_release);
}

static inline int recording(void)
{
	return atomic_load_explicit(&g_state, memory_order_relaxed) == STC_ON &&
	       atomic_load_explicit(&g_torch_cuda_mode, memory_order_relaxed) == STC_TORCH_CUDA_PLUGGABLE;
}

void *stprof_torch_cuda_alloc(ssize_t size, int device, void *stream)
{
	resolve();
	if (!real_malloc || size < 0)
		return NULL;
	int was = t_busy;
	t_busy = 1;
	void *p = NULL;
	if (real_malloc(&p, (size_t)size) != 0)
		p = NULL;
	if (p && size && recording()) {
		uint32_t stack = stc_tensor_stack((uint64_t)size, STC_GIL_WAIT);
		stp_event ev = {.type = STP_EV_ALLOC};
		ev.u.alloc.addr = (uint64_t)(uintptr_t)p;
		ev.u.alloc.size = ev.u.alloc.requested = (uint64_t)size;
		ev.u.alloc.kind = STP_MEM_DEVICE;
		ev.u.alloc.device = device;
		ev.u.alloc.stream = (uint64_t)(uintptr_t)stream;
		ev.u.alloc.pool = STP_POOL_TENSORS;
		ev.u.alloc.stack = stack;
		stc_emit(&ev);
		stc_devobj_add(ev.u.alloc.addr, (uint64_t)size, device, STP_MEM_DEVICE, 0, stack);
	}
	t_busy = was;
	return p;
}

void stprof_torch_cuda_free(void *p, ssize_t size, int device, void *stream)
{
	resolve();
	if (!p)
		return;
	int was = t_busy;
	t_busy = 1;
	if (recording() && stc_devobj_remove((uint64_t)(uintptr_t)p, NULL)) {
		stp_event ev = {.type = STP_EV_FREE};
		ev.u.free.addr = (uint64_t)(uintptr_t)p;
		ev.u.free.size = size > 0 ? (uint64_t)size : 0;
		ev.u.free.kind = STP_MEM_DEVICE;
		ev.u.free.device = device;
		ev.u.free.stream = (uint64_t)(uintptr_t)stream;
		ev.u.free.pool = STP_POOL_TENSORS;
		stc_emit(&ev);
	}
	if (real_free)
		real_free(p);
	t_busy = was;
}
