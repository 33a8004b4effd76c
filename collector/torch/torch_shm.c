/*
 * torch_shm.c - PyTorch's CPU storages that are mappings, not allocations:
 * the batches a DataLoader's workers send through shared memory (a
 * worker's collate makes the batch with shm_open and mmap; the loop's
 * process maps it again when it receives it), torch.from_file(shared=True).
 * at::MapAllocator maps them itself and c10's CPU allocator (torch_cpu.c)
 * never sees them, so the loop's input batches were missing from its
 * tensor space, and a worker's batch from the worker's.
 *
 * mmap, mmap64 and munmap are interposed: a mapping that libtorch_cpu
 * makes of a file or of shared memory (MAP_SHARED, a descriptor, not
 * executable) is an ALLOC of the tensor space (host, pool
 * STP_POOL_TENSORS, stream STP_STREAM_MAPPED: plans leave it out, as no
 * allocator serves it) with a tensor's call path (the Python line that
 * received the batch: the loop's `for x, y in loader`), and its munmap the
 * FREE.  Every other call goes straight to the kernel through the system
 * call itself: no symbol lookup (core/mem.c makes its own system calls, so
 * the collector's memory never comes through here).  A private mapping of
 * a file (torch.load(mmap=True) maps the whole checkpoint so) is the
 * file's pages, not memory the program allocated: left out.  Mappings are
 * few and long-lived (a batch each): a fixed table of the live ones under
 * a spin lock; a mapping that does not fit in it is not recorded.  A fork
 * child forgets the parent's (its trace never saw them made: their munmaps
 * are not its frees).
 */
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "torch.h"
#include "stprof/trace.h"

#define SHM_MAX 1024

static struct {
	atomic_flag lock;
	unsigned n;
	uintptr_t addr[SHM_MAX];
} maps;

static const char *const torch_lib[1] = {"libtorch_cpu.so"};
static stc_modset torch_mods = {.prefix = torch_lib, .n = 1};

static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&maps.lock, memory_order_acquire))
		;
}

static void unlock(void) { atomic_flag_clear_explicit(&maps.lock, memory_order_release); }

/* Whether the mapping at addr is recorded; removes it when forget. */
static int known(uintptr_t addr, int forget)
{
	int found = 0;
	lock();
	for (unsigned i = 0; i < maps.n; i++)
		if (maps.addr[i] == addr) {
			found = 1;
			if (forget)
				maps.addr[i] = maps.addr[--maps.n];
			break;
		}
	unlock();
	return found;
}

static int remember(uintptr_t addr)
{
	int ok = 0;
	lock();
	if (maps.n < SHM_MAX) {
		maps.addr[maps.n++] = addr;
		ok = 1;
	}
	unlock();
	return ok;
}


/* A storage's mapping: shared, of a descriptor, not code, made by
 * libtorch_cpu (caller: the return address of the interposed call). */
static int storage_map(int prot, int flags, int fd, uintptr_t caller)
{
	if (fd < 0 || (flags & MAP_ANONYMOUS) || !(flags & MAP_SHARED) || (prot & PROT_EXEC) ||
	    atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON || t_busy)
		return 0;
	stc_modset_scan(&torch_mods);
	return stc_modset_has(&torch_mods, 0, caller);
}

static void *map(void *addr, size_t len, int prot, int flags, int fd, off_t off, uintptr_t caller)
{
	void *p = sys_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && storage_map(prot, flags, fd, caller)) {
		t_busy = 1;
		if (remember((uintptr_t)p))
			stc_torch_host_alloc(p, len, STP_STREAM_MAPPED);
		t_busy = 0;
	}
	return p;
}

void stc_torch_shm_atfork_child(void)
{
	atomic_flag_clear(&maps.lock);
	maps.n = 0;
}

STC_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map(addr, len, prot, flags, fd, off, (uintptr_t)__builtin_return_address(0));
}

STC_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return map(addr, len, prot, flags, fd, off, (uintptr_t)__builtin_return_address(0));
}

STC_EXPORT int munmap(void *addr, size_t len)
{
	int rc = (int)syscall(SYS_munmap, addr, len);
	if (rc == 0 && __atomic_load_n(&maps.n, __ATOMIC_RELAXED) && known((uintptr_t)addr, 1) &&
	    atomic_load_explicit(&g_state, memory_order_relaxed) == STC_ON) {
		int busy = t_busy;
		t_busy = 1;
		stc_torch_host_free(addr, STP_STREAM_MAPPED);
		t_busy = busy;
	}
	return rc;
}
