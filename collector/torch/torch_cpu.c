/*
 * torch_cpu.c - PyTorch's CPU tensor storages as events of their own memory
 * space (host memory, pool STP_POOL_TENSORS).
 *
 * c10's CPU allocator gets and returns every storage's memory through two
 * exported functions of libc10.so, c10::alloc_cpu(size_t) and
 * c10::free_cpu(void *), called through the PLT (also inside libc10), so
 * the preloaded collector interposes them by their mangled names.  The real
 * ones are looked up in the loaded libc10.so itself (torch_common.c).  While the real
 * call runs the thread is busy, so the posix_memalign/free under it is not
 * also recorded as a heap event: each byte counts in one space.
 *
 * An allocation's call path is the native path up to the interpreter
 * followed by the Python frames (torch_common.c), innermost first.  The same
 * symbols exist in PyTorch 1.x and 2.x; a process without libc10 never calls
 * them.  A host storage's ALLOC is built here for the mapped ones too
 * (torch_shm.c), its FREE in torch.h.
 *
 * c10::alloc_cpu throws (c10::Error, "DefaultCPUAllocator: can't allocate
 * memory") after posix_memalign refuses the memory, and a program may catch
 * that and go on (a batch-size finder does).  The unwinding passes through
 * this frame, which cannot clear the thread's busy mark then (C has no
 * cleanup on unwinding without -fexceptions, which would bind the collector
 * to an unwinder).  So the mark while the real call runs is
 * STC_BUSY_UNTIL_ALIGNED, which the aligned allocation under it clears
 * (preload.c) whether it succeeds or not, recording a refusal as a REFUSED
 * event of the tensor pool; one left set (c10 threw before
 * allocating) is cleared at the next call.  Before, a caught refusal left
 * the thread busy, and nothing it did after was recorded.
 */
#include <stdlib.h>
#include <unistd.h>

#include "torch.h"
#include "stprof/trace.h"

STC_EXPORT void *stc_c10_alloc_cpu(size_t n) __asm__("_ZN3c109alloc_cpuEm");
STC_EXPORT void stc_c10_free_cpu(void *p) __asm__("_ZN3c108free_cpuEPv");

static void *(*real_alloc)(size_t);
static void (*real_free)(void *);

/* Both or neither; aborts when neither can be found (no way to serve the
 * call), which cannot happen: the caller was linked against libc10. */
static void resolve(void)
{
	void *a = stc_c10_sym("_ZN3c109alloc_cpuEm"), *f = stc_c10_sym("_ZN3c108free_cpuEPv");
	if (!a || !f || a == (void *)stc_c10_alloc_cpu) {
		static const char msg[] = "stprof: cannot find c10::alloc_cpu in libc10.so\n";
		if (write(2, msg, sizeof msg - 1) < 0)
			abort();
		abort();
	}
	*(void **)&real_free = f;
	__atomic_store_n((void **)&real_alloc, a, __ATOMIC_RELEASE);
}

static inline int recording(void)
{
	return atomic_load_explicit(&g_state, memory_order_relaxed) == STC_ON && !t_busy;
}

/* Native frames up to the interpreter, then the Python frames. */
__attribute__((noinline)) void stc_torch_host_alloc(void *p, size_t n, uint64_t stream)
{
	stp_event ev = {.type = STP_EV_ALLOC};
	ev.u.alloc.addr = (uint64_t)(uintptr_t)p;
	ev.u.alloc.size = ev.u.alloc.requested = n;
	ev.u.alloc.kind = STP_MEM_HOST;
	ev.u.alloc.device = -1;
	ev.u.alloc.pool = STP_POOL_TENSORS;
	ev.u.alloc.stream = stream;
	ev.u.alloc.stack = stc_tensor_stack(n, STC_GIL_IF_ALONE);
	stc_emit(&ev);
}

void *stc_c10_alloc_cpu(size_t n)
{
	if (STC_UNLIKELY(!__atomic_load_n((void **)&real_alloc, __ATOMIC_ACQUIRE)))
		resolve();
	if (STC_UNLIKELY(t_busy == STC_BUSY_UNTIL_ALIGNED))
		t_busy = 0; /* c10 threw before allocating: see the top */
	if (!recording())
		return real_alloc(n);
	t_busy = STC_BUSY_UNTIL_ALIGNED;
	void *p = real_alloc(n);
	t_busy = 1;
	if (p)
		stc_torch_host_alloc(p, n, 0);
	t_busy = 0;
	return p;
}

void stc_c10_free_cpu(void *p)
{
	if (STC_UNLIKELY(!__atomic_load_n((void **)&real_alloc, __ATOMIC_ACQUIRE)))
		resolve();
	if (!p || !recording()) {
		real_free(p);
		return;
	}
	t_busy = 1;
	stc_torch_host_free(p, 0);
	real_free(p);
	t_busy = 0;
}
