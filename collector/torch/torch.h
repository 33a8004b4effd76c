/*
 * torch.h - what the files of the PyTorch backend share (internal to
 * collector/torch/): the Python frames of the calling thread (pyframes.c)
 * and a tensor's call path (torch_common.c).  The CUDA half's own header is
 * torch_cuda.h.  The Python shim that steers this backend from inside the
 * interpreter lives beside it (python/, installed as stprof-python/).
 *
 * Files:
 *   pyframes.c              the interpreter's frames, read from its C API
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

/* ---------------------------------------------------------------- torch (torch_common.c) */
/* The call path of a tensor allocated now (native frames up to the
 * interpreter, then Python frames); take_gil as for stc_py_frames.
 * Returns its stack id, 0 for none. */
STC_HIDDEN uint32_t stc_tensor_stack(int take_gil);
/* libc10.so's own definition of name, NULL when there is none. */
STC_HIDDEN void *stc_c10_sym(const char *name);

#endif
