/*
 * realfn.c - the real allocator and libc functions behind our interposers,
 * found with dlsym(RTLD_NEXT) (so another interposed allocator below us, like
 * jemalloc, is still used).  dlsym itself may call calloc/malloc before the
 * pointers exist: those requests are served from a static bootstrap arena,
 * and free() ignores pointers into it.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

stc_real g_real;
atomic_int g_real_state; /* 0 unresolved, 1 resolving, 2 resolved */

_Alignas(64) uint8_t g_boot_arena[STC_BOOT_SIZE];
static atomic_size_t boot_used;

void *stc_boot_alloc(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	size_t cur = atomic_load(&boot_used), start;
	do {
		start = (cur + align - 1) & ~(align - 1);
		if (start + n > STC_BOOT_SIZE || start + n < start)
			return NULL;
	} while (!atomic_compare_exchange_weak(&boot_used, &cur, start + n));
	return g_boot_arena + start; /* zeroed: static storage, never reused */
}

#define RESOLVE(field, name) do { \
		void *s_ = dlsym(RTLD_NEXT, name); \
		memcpy(&g_real.field, &s_, sizeof s_); \
	} while (0)

void stc_real_resolve(void)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&g_real_state, &expect, 1)) {
		/* another thread is resolving (or done): wait for it */
		while (atomic_load_explicit(&g_real_state, memory_order_acquire) != 2)
			;
		return;
	}
	RESOLVE(malloc, "malloc");
	RESOLVE(free, "free");
	RESOLVE(calloc, "calloc");
	RESOLVE(realloc, "realloc");
	RESOLVE(reallocarray, "reallocarray");
	RESOLVE(posix_memalign, "posix_memalign");
	RESOLVE(aligned_alloc, "aligned_alloc");
	RESOLVE(memalign, "memalign");
	RESOLVE(valloc, "valloc");
	RESOLVE(pvalloc, "pvalloc");
	RESOLVE(malloc_usable_size, "malloc_usable_size");
	RESOLVE(sigaction, "sigaction");
	RESOLVE(sigaltstack, "sigaltstack");
	RESOLVE(_exit, "_exit");
	RESOLVE(_Exit, "_Exit");
	RESOLVE(execve, "execve");
	RESOLVE(execveat, "execveat");
	RESOLVE(fexecve, "fexecve");
	RESOLVE(execvpe, "execvpe");
	RESOLVE(pipe2, "pipe2");
	RESOLVE(pthread_create, "pthread_create");
	RESOLVE(unshare, "unshare");
	RESOLVE(setns, "setns");
	RESOLVE(dlclose, "dlclose");
	atomic_store_explicit(&g_real_state, 2, memory_order_release);
}
