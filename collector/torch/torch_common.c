/*
 * torch_common.c - what the PyTorch interposers (torch_cpu.c, the CUDA
 * ones) share: the call path of a tensor allocated now, and libc10.so's
 * own definition of a function we interpose.
 *
 * A tensor's call path is the native frames up to the interpreter, then the
 * Python frames, innermost first (stc_py_complete, core/face.h: a thread
 * without Python frames inside a backward pass gets the frames the pass was
 * started from; in a lean iteration, core/fold.c, the path the thread's
 * last full iteration had at that place, torch_lean.c).  take_gil (STC_GIL_*) says
 * when a thread without the GIL may take it for them: a caller that may run
 * under one of PyTorch's locks must not wait for the GIL (a thread holding
 * the GIL may be waiting for that lock); the CPU allocator's callers may
 * (STC_GIL_IF_ALONE), the caching allocator's reports do (STC_GIL_NEVER).
 *
 * libc10's definition is found in the loaded libc10.so itself (dlopen
 * RTLD_NOLOAD + dlsym on its handle, which does not see ours); NULL when
 * the process has no libc10 or it lacks the name.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "torch.h"

uint32_t stc_tensor_stack(uint64_t size, int take_gil)
{
	if (!g_cfg.depth)
		return 0;
	if (!__atomic_load_n(&g_iter_gen, __ATOMIC_RELAXED))
		return stc_py_walk(take_gil); /* no loop that may go lean (marker.c) */
	/* lean iterations configured: the path the last full iteration had,
	 * or walked (and noted, in a full one) */
	uint64_t key = stc_py_lean_key(take_gil);
	uint32_t s = __atomic_load_n(&g_lean_now, __ATOMIC_RELAXED) ? stc_lean_predict(size, key) : 0;
	if (s)
		return s;
	s = stc_py_walk(take_gil);
	stc_lean_note(size, key, s);
	return s;
}

static int find_c10(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	const char *n = info->dlpi_name, *slash = n ? strrchr(n, '/') : NULL;
	const char *base = slash ? slash + 1 : n;
	if (base && !strncmp(base, "libc10.so", 9)) {
		char *out = data;
		strncpy(out, n, 4095);
		out[4095] = 0;
		return 1;
	}
	return 0;
}

void *stc_c10_sym(const char *name)
{
	char path[4096] = "";
	int was = t_busy;
	t_busy = 1;
	dl_iterate_phdr(find_c10, path);
	void *h = path[0] ? dlopen(path, RTLD_NOLOAD | RTLD_LAZY) : NULL;
	void *s = h ? dlsym(h, name) : NULL;
	t_busy = was;
	return s;
}
