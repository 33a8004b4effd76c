/*
 * torch.h - what the files of the PyTorch backend share (internal to
 * collector/torch/): the Python frames of the calling thread (pyframes.c)
 * and a tensor's call path (torch_common.c).  The CUDA half's own header is
 * torch_cuda.h.  The Python shim that steers this backend from inside the
 * interpreter lives beside it (python/, installed as stprof-python/).
 *
 * Files:
 *   pyframes.c              the interpreter's frames: which way they are
 *                           read, the GIL path
 *   pylayout.c              the frames read in place, without the GIL
 *   pylines.c               the cache of their names
 *   backward.c              where the running backward pass was started
 *   torch_common.c          a tensor's call path; libc10's own symbols
 *   torch_cpu.c             c10::alloc_cpu / free_cpu interposed
 *   torch_cuda_pluggable.c  torch_cuda_caching.c  torch_cuda_api.c
 *                           the CUDA tensors (torch_cuda.h)
 *   torch_backend.c         the backend's hooks (face.h)
 */
#ifndef STPROF_COLLECTOR_TORCH_H
#define STPROF_COLLECTOR_TORCH_H

#include <stdint.h>

#include "../core/face.h"

/* ---------------------------------------------------------------- python (pyframes.c) */
/* The process runs CPython (its C API could be found). */
STC_HIDDEN int stc_py_active(void);
/* ip lies in the object holding the interpreter's eval loop. */
STC_HIDDEN int stc_py_in_interpreter(uint64_t ip);
/* Up to max Python frames of the calling thread, innermost first, as
 * STP_PYFRAME_TAG | string id.  A Python thread that does not hold the GIL
 * takes it for the walk as take_gil says (STC_GIL_*), else gets none; 0
 * for a thread Python did not create. */
enum {
	STC_GIL_NEVER = 0,    /* only if the thread holds it already */
	STC_GIL_IF_ALONE = 1, /* also when it is the interpreter's only thread (nothing can hold it) */
	STC_GIL_WAIT = 2,     /* also by waiting: the caller holds no lock another thread may wait for with the GIL */
};
STC_HIDDEN uint32_t stc_py_frames(uint64_t *ips, uint32_t max, int take_gil);
/* How frames are read: in place (any thread, no GIL), through the GIL (the
 * rules above), not known yet (no probe ran), or not a Python process. */
enum { STC_PYF_NONE = 0, STC_PYF_UNKNOWN = 1, STC_PYF_IN_PLACE = 2, STC_PYF_GIL = 3 };
STC_HIDDEN int stc_py_frames_how(void);

/* ---------------------------------------------------------------- names (pylines.c) */
/* The string id cached for (code, pos, k1, k2), 0 when none. */
STC_HIDDEN uint32_t stc_py_lines_get(const void *code, long pos, uintptr_t k1, uintptr_t k2);
/* Caches id for the key; returns the id cached (an earlier one wins). */
STC_HIDDEN uint32_t stc_py_lines_put(const void *code, long pos, uintptr_t k1, uintptr_t k2, uint32_t id);
/* In a forked child: the cache's lock may have been held by a thread that is gone. */
STC_HIDDEN void stc_py_atfork_child(void);

/* ---------------------------------------------------------------- in place (pylayout.c) */
/* Finds and checks the layout (the GIL held): 1 when usable. */
STC_HIDDEN int stc_py_layout_probe(void);
/* 0 not probed yet, 1 usable, 2 not usable (GIL path). */
STC_HIDDEN int stc_py_layout_state(void);
/* The calling thread's frames, innermost first, as STP_PYFRAME_TAG | id. */
STC_HIDDEN uint32_t stc_py_layout_walk(uint64_t *ips, uint32_t max);

/* ---------------------------------------------------------------- backward (backward.c) */
/* While a backward pass runs: the Python frames it was started from, after
 * a "<backward>" frame, for a tensor whose thread has none; 0 otherwise. */
STC_HIDDEN uint32_t stc_backward_origin(uint64_t *ips, uint32_t max);
STC_HIDDEN void stc_backward_atfork_child(void);

/* ---------------------------------------------------------------- torch (torch_common.c) */
/* The call path of a tensor allocated now (native frames up to the
 * interpreter, then Python frames); take_gil as for stc_py_frames.
 * Returns its stack id, 0 for none. */
STC_HIDDEN uint32_t stc_tensor_stack(int take_gil);
/* libc10.so's own definition of name, NULL when there is none. */
STC_HIDDEN void *stc_c10_sym(const char *name);

#endif
