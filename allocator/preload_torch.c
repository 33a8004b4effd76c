/*
 * preload_torch.c - libstalloc.so's face to PyTorch on the CPU: with a plan
 * of a PyTorch run's tensor storages (the tensor space, plan flag bit 1),
 * c10's CPU allocator takes every storage from the plan.
 *
 * c10::alloc_cpu(size_t) and c10::free_cpu(void *) are exported by
 * libc10.so and called through the PLT, so the preloaded library
 * interposes them by their mangled names (PyTorch 1.x and 2.x alike); the
 * real ones are looked up in the loaded libc10.so itself (dlopen
 * RTLD_NOLOAD and dlsym on its handle, which does not see ours).  Storages
 * are 64-byte aligned, as c10's gAlignment.  A storage the plan cannot
 * serve comes from the fallback (glibc); one of size 0, or any while no
 * tensor plan is loaded, from the real c10 calls.  The malloc family stays
 * the program's: the interpreter's own objects are not in such a plan.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT void *st_c10_alloc_cpu(size_t n) __asm__("_ZN3c109alloc_cpuEm");
EXPORT void st_c10_free_cpu(void *p) __asm__("_ZN3c108free_cpuEPv");

static void *(*real_alloc)(size_t);
static void (*real_free)(void *);
static char c10_path[4096];

static int find_c10(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	const char *n = info->dlpi_name, *slash = n ? strrchr(n, '/') : NULL;
	const char *base = slash ? slash + 1 : n;
	if (base && !strncmp(base, "libc10.so", 9)) {
		strncpy(c10_path, n, sizeof c10_path - 1);
		return 1;
	}
	return 0;
}

static void resolve(void)
{
	dl_iterate_phdr(find_c10, NULL);
	void *h = c10_path[0] ? dlopen(c10_path, RTLD_NOLOAD | RTLD_LAZY) : NULL;
	void *a = h ? dlsym(h, "_ZN3c109alloc_cpuEm") : NULL, *f = h ? dlsym(h, "_ZN3c108free_cpuEPv") : NULL;
	if (!a || !f || a == (void *)st_c10_alloc_cpu) {
		/* cannot happen: the caller was linked against libc10 */
		static const char msg[] = "stalloc: cannot find c10::alloc_cpu in libc10.so\n";
		if (write(2, msg, sizeof msg - 1) < 0)
			abort();
		abort();
	}
	*(void **)&real_free = f;
	__atomic_store_n((void **)&real_alloc, a, __ATOMIC_RELEASE);
}

void *st_c10_alloc_cpu(size_t n)
{
	if (!__atomic_load_n((void **)&real_alloc, __ATOMIC_ACQUIRE))
		resolve();
	uint64_t min;
	stalloc *a = st_preload_tensors(&min);
	if (a && n && n >= min) {
		void *p = stalloc_alloc(a, n, ST_ALIGN_TENSORS);
		if (p)
			return p;
	} else if (a) {
		st_preload_tensor_small(); /* counted: the statistics say how many were not planned */
	}
	return real_alloc(n);
}

void st_c10_free_cpu(void *p)
{
	if (!__atomic_load_n((void **)&real_alloc, __ATOMIC_ACQUIRE))
		resolve();
	uint64_t min;
	stalloc *a = st_preload_tensors(&min);
	if (a && p && stalloc_free(a, p))
		return;
	real_free(p);
}
