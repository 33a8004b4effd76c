/*
 * torch_cuda.h - PyTorch's CUDA tensors, the two ways face.h's g_torch_cuda_mode names
 * (internal to collector/torch/):
 *
 *   torch_cuda_pluggable.c  STC_TORCH_CUDA_PLUGGABLE: libstprof.so is
 *                           PyTorch's CUDAPluggableAllocator (exported
 *                           stprof_torch_cuda_alloc / _free).
 *   torch_cuda_caching.c    STC_TORCH_CUDA_CACHING: PyTorch's caching
 *                           allocator kept; its tensors and segments come
 *                           from the report it makes to the profiler on
 *                           every block it hands out or takes back.
 *   torch_cuda_api.c        the exported entry points the Python shim
 *                           calls (mode setter, reserved bytes after
 *                           torch.cuda.empty_cache()).
 *
 * Both record each tensor as ALLOC/FREE of kind DEVICE, pool
 * STP_POOL_TENSORS, and keep it in the live-object table (face.h) while
 * it lives.
 */
#ifndef STPROF_COLLECTOR_TORCH_CUDA_H
#define STPROF_COLLECTOR_TORCH_CUDA_H

#include <stdint.h>

#include "torch.h"

/* Finds libc10's own report function (the shim calls it when it sets the
 * mode, outside PyTorch's locks). */
STC_HIDDEN void stc_torch_cuda_caching_resolve(void);
/* The caching allocator of device dev reserves `reserved` bytes now: the
 * difference from what the last report said is released (or reserved)
 * segments, recorded now. */
STC_HIDDEN void stc_torch_cuda_reserved(int32_t dev, uint64_t reserved);
/* Counts of the caching path: reports seen, and reserved-byte changes it
 * could not place on a segment (a release with no address, a reserve
 * without an allocation). */
STC_HIDDEN void stc_torch_cuda_stats(uint64_t *reports, uint64_t *unplaced);
/* In a forked child: the state's lock may have been held by a thread that
 * is gone. */
STC_HIDDEN void stc_torch_cuda_atfork_child(void);

#endif
