/*
 * pyskip.c - code objects whose frames no Python call path shows: the
 * frames of PyTorch's module dispatch (nn.Module._wrapped_call_impl,
 * _call_impl and the `inner` it runs hooks in), and the shim's own that
 * tensors are made under (its module hook that hands over backward sites,
 * its wrappers of autograd.backward, optimizer steps, DataLoader fetches
 * and torch.export), which the Python shim names at install
 * (stprof_py_skip_code_v1, ctypes.PyDLL: the GIL is held).
 *
 * Why: the dispatch's frames depend on whether module hooks are installed
 * (PyTorch 2.x runs forward from `inner` with hooks and from _call_impl
 * without; 1.13 from another line of _call_impl), and the shim takes its
 * module hooks away in lean iterations (torch_markers.py).  Without these
 * frames a tensor's path is the same either way, so a lean iteration's
 * tensors match the full iteration they repeat (torch_lean.c) and fold by
 * its digest (fold.c).  They are PyTorch's, never a line a user changes.
 *
 * Invariants: at most STC_PY_SKIP_MAX codes, added once each, never
 * removed (the shim's code objects live as long as torch is imported; an
 * address reused after that names nothing a path is read from).  Readers
 * (pylayout.c, pyframes.c: any thread, no lock) see a count published with
 * release after its slot.
 */
#include "internal.h"

STC_EXPORT int stprof_py_skip_code_v1(void *code);

_Atomic(uintptr_t) g_py_skip[STC_PY_SKIP_MAX];
atomic_uint g_py_nskip;

/* Returns 1 when the code is skipped from now on, 0 when the table is full. */
int stprof_py_skip_code_v1(void *code)
{
	static atomic_flag lock = ATOMIC_FLAG_INIT;
	int ok = 0;
	if (!code)
		return 0;
	while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
		;
	if (stc_py_skip_code((uintptr_t)code)) {
		ok = 1;
	} else {
		unsigned n = atomic_load_explicit(&g_py_nskip, memory_order_relaxed);
		if (n < STC_PY_SKIP_MAX) {
			atomic_store_explicit(&g_py_skip[n], (uintptr_t)code, memory_order_relaxed);
			atomic_store_explicit(&g_py_nskip, n + 1, memory_order_release);
			ok = 1;
		}
	}
	atomic_flag_clear_explicit(&lock, memory_order_release);
	return ok;
}
