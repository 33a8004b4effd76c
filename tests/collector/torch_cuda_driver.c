/*
 * torch_cuda_driver.c - drives libstprof.so's PyTorch CUDA entry points the
 * way PyTorch does, for test_torch_cuda.sh (no GPU here).
 *
 *   torch_cuda_driver pluggable   as torch.cuda.memory.CUDAPluggableAllocator
 *                                 calls stprof_torch_cuda_alloc / _free
 *                                 (cudaMalloc from fakecuda/libcudart.so.12,
 *                                 loaded RTLD_LOCAL first, as PyTorch's is)
 *   torch_cuda_driver caching     as c10's CUDA caching allocator calls
 *                                 c10::reportMemoryUsageToProfiler (PyTorch
 *                                 2.x's signature), with the block sizes and
 *                                 the reserved bytes of a real allocator run
 *                                 (below), then torch.cuda.empty_cache() as
 *                                 the shim reports it
 *   torch_cuda_driver oom         as the caching allocator gives up on a
 *                                 request: c10::reportOutOfMemoryToProfiler
 *                                 (2.x's and 1.x's signatures), and a CPU
 *                                 allocator's (under a profiler)
 *
 * Each entry point is found with dlsym(RTLD_DEFAULT), as PyTorch's
 * dlopen/dlsym and the PLT of libc10_cuda find the preloaded ones.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

typedef struct { int8_t type, index; } c10_device;
typedef void (*report_fn)(void *, int64_t, uint64_t, uint64_t, c10_device);
typedef void *(*alloc_fn)(ssize_t, int, void *);
typedef void (*free_fn)(void *, ssize_t, int, void *);

#define MiB (1ull << 20)

static void *sym(const char *name)
{
	void *s = dlsym(RTLD_DEFAULT, name);
	if (!s) {
		fprintf(stderr, "torch_cuda_driver: %s not found (not under stprof?)\n", name);
	}
	return s;
}

static report_fn report;
static uint64_t allocated[2];

/* one report of the caching allocator: +size alloc, -size free */
static void rep(int dev, uint64_t addr, int64_t size, uint64_t reserved)
{
	allocated[dev] += (uint64_t)size;
	report((void *)(uintptr_t)addr, size, allocated[dev], reserved, (c10_device){1, (int8_t)dev});
}

static int caching(void)
{
	int (*set_mode)(int) = (int (*)(int))sym("stprof_torch_cuda_v1");
	void (*reserved)(int, uint64_t) = (void (*)(int, uint64_t))sym("stprof_torch_cuda_reserved_v1");
	report = (report_fn)sym("_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE");
	if (!set_mode || !reserved || !report || set_mode(2))
		return 1;
	/* a CPU allocator's report (under a profiler): passed on, not recorded */
	report((void *)0x1000, 4096, 4096, 0, (c10_device){0, -1});
	const uint64_t S1 = 0x7f0000000000, S2 = 0x7f0010000000, S3 = 0x7f0020000000, S4 = 0x7f0030000000;
	rep(0, S1, 1 * MiB, 2 * MiB);               /* new small segment (2 MiB) */
	rep(0, S1 + MiB, 1 * MiB, 2 * MiB);         /* the rest of it */
	rep(0, S2, 30 * MiB, 32 * MiB);             /* new large segment, 30 MiB */
	rep(0, S2, -30 * (int64_t)MiB, 32 * MiB);   /* freed: cached */
	rep(0, S1, -1 * (int64_t)MiB, 32 * MiB);
	rep(0, S3, 12 * MiB, 14 * MiB);             /* out-of-memory retry: S2 released, S3 made */
	rep(0, S1 + MiB, -1 * (int64_t)MiB, 14 * MiB);
	reserved(0, 12 * MiB);                      /* torch.cuda.empty_cache(): S1 released */
	rep(1, S4, 4 * MiB, 20 * MiB);              /* device 1: a 20 MiB segment */
	rep(1, S4 + 4 * MiB, 20 * MiB, 40 * MiB);   /* expandable: 20 MiB more mapped after it */
	rep(1, S4 + 4 * MiB, -20 * (int64_t)MiB, 40 * MiB);
	rep(1, S4, -4 * (int64_t)MiB, 40 * MiB);
	printf("caching: done\n");
	return 0;
}

typedef void (*oom2_fn)(int64_t, uint64_t, uint64_t, c10_device);
typedef void (*oom1_fn)(int64_t, int64_t, int64_t, c10_device);

static int oom(void)
{
	int (*set_mode)(int) = (int (*)(int))sym("stprof_torch_cuda_v1");
	report = (report_fn)sym("_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE");
	oom2_fn o2 = (oom2_fn)sym("_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE");
	oom1_fn o1 = (oom1_fn)sym("_ZN3c1027reportOutOfMemoryToProfilerElllNS_6DeviceE");
	if (!set_mode || !report || !o2 || !o1 || set_mode(2))
		return 1;
	rep(0, 0x7f0000000000, 8 * MiB, 20 * MiB);
	rep(0, 0x7f0010000000, 30 * MiB, 52 * MiB);            /* a 32 MiB segment, */
	rep(0, 0x7f0010000000, -30 * (int64_t)MiB, 52 * MiB);  /* cached */
	o2(64 * MiB, 8 * MiB, 20 * MiB, (c10_device){1, 0}); /* cuda:0 freed its cache, gave up on 64 MiB */
	o2(1 << 30, 0, 0, (c10_device){0, -1});              /* the CPU allocator's: passed on */
	o1(3 * MiB, 0, 2 * MiB, (c10_device){1, 1});         /* PyTorch 1.x, cuda:1 */
	printf("oom: done\n");
	return 0;
}

static int pluggable(void)
{
	int (*set_mode)(int) = (int (*)(int))sym("stprof_torch_cuda_v1");
	alloc_fn a = (alloc_fn)sym("stprof_torch_cuda_alloc");
	free_fn f = (free_fn)sym("stprof_torch_cuda_free");
	if (!set_mode || !a || !f || set_mode(1) || set_mode(7) != -1)
		return 1;
	/* PyTorch has its libcudart loaded (privately) before any tensor */
	if (!dlopen("libcudart.so.12", RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "torch_cuda_driver: %s\n", dlerror());
		return 1;
	}
	void *s = (void *)0x5151;
	void *x = a(1000, 0, s), *y = a(3 * MiB, 0, s), *z = a(0, 0, s), *w = a(4096, 1, NULL);
	if (!x || !y || !w)
		return 1;
	f(x, 1000, 0, s);
	f(w, 4096, 1, NULL);
	f(z, 0, 0, s);
	printf("pluggable: done\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "caching"))
		return caching();
	if (argc == 2 && !strcmp(argv[1], "pluggable"))
		return pluggable();
	if (argc == 2 && !strcmp(argv[1], "oom"))
		return oom();
	fprintf(stderr, "usage: torch_cuda_driver caching|pluggable|oom\n");
	return 2;
}
