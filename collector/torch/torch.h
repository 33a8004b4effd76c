/*
 * torch.h - what the files of the PyTorch backend share (internal to
 * collector/torch/): a tensor's call path (torch_common.c: its Python
 * frames come from the core, face.h).  The CUDA half's own header is
 * torch_cuda.h.  The Python shim that steers this backend from inside the
 * interpreter lives beside it (python/, installed as stprof-python/).
 *
 * Files:
 *   torch_common.c          a tensor's call path; libc10's own symbols
 *   torch_lean.c            a lean iteration's tensor paths, from the last full one's
 *   torch_cpu.c             c10::alloc_cpu / free_cpu interposed
 *   torch_shm.c             storages PyTorch maps (shared memory): mmap / munmap interposed
 *   torch_cuda_pluggable.c  torch_cuda_caching.c  torch_cuda_api.c
 *                           the CUDA tensors (torch_cuda.h)
 *   torch_backend.c         the backend's hooks (face.h)
 */
#ifndef STPROF_COLLECTOR_TORCH_H
#define STPROF_COLLECTOR_TORCH_H

#include <stddef.h>
#include <stdint.h>

#include "../core/face.h"
#include "stprof/trace.h"

/* ---------------------------------------------------------------- torch (torch_common.c) */
/* The call path of a tensor of size bytes allocated now (native frames up
 * to the interpreter, then Python frames; in a lean iteration the one the
 * last full iteration had, torch_lean.c); take_gil as for stc_py_frames.
 * Returns its stack id, 0 for none. */
STC_HIDDEN uint32_t stc_tensor_stack(uint64_t size, int take_gil);
/* ---------------------------------------------------------------- lean iterations (torch_lean.c) */
/* In a lean iteration: the stack id of the reference's allocation of this
 * size and key at the thread's cursor (or a little after it); 0: none, walk
 * it. */
STC_HIDDEN uint32_t stc_lean_predict(uint64_t size, uint64_t key);
/* In an iteration recorded in full: the thread's allocation, for the
 * reference of the next lean ones. */
STC_HIDDEN void stc_lean_note(uint64_t size, uint64_t key, uint32_t stack);
/* libc10.so's own definition of name, NULL when there is none. */
STC_HIDDEN void *stc_c10_sym(const char *name);
/* ---------------------------------------------------------------- host storages (torch_cpu.c) */
/* The ALLOC of a host storage of n bytes at p, with its call path
 * (c10::alloc_cpu's, stream 0; a mapped one's, STP_STREAM_MAPPED). */
STC_HIDDEN void stc_torch_host_alloc(void *p, size_t n, uint64_t stream);
/* Its FREE. */
static inline void stc_torch_host_free(void *p, uint64_t stream)
{
	stp_event ev = {.type = STP_EV_FREE};
	ev.u.free.addr = (uint64_t)(uintptr_t)p;
	ev.u.free.kind = STP_MEM_HOST;
	ev.u.free.device = -1;
	ev.u.free.pool = STP_POOL_TENSORS;
	ev.u.free.stream = stream;
	stc_emit(&ev);
}
/* ---------------------------------------------------------------- mapped storages (torch_shm.c) */
/* In a fork child: the parent's mappings are not the child's; the table's
 * lock is free. */
STC_HIDDEN void stc_torch_shm_atfork_child(void);

#endif
