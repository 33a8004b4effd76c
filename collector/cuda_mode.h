/*
 * cuda_mode.h - who records the device memory of a PyTorch program, so that
 * no byte is recorded twice.  Internal to collector/.
 *
 * The CUPTI backend sees every cudaMalloc/cuMemAlloc/cuMemMap of the
 * process; the PyTorch shim knows what PyTorch does with them.  The shim
 * sets the mode (through its exported entry point) before PyTorch touches
 * the GPU; the CUPTI backend reads it on each allocation call:
 *
 *   STC_TORCH_CUDA_NONE       no shim on the device: CUPTI records every
 *                             allocation call as an object (ALLOC/FREE) and
 *                             adds it to the live-object table (devobj.h).
 *   STC_TORCH_CUDA_PLUGGABLE  STAlloc's profiling mode: libstprof.so is
 *                             PyTorch's CUDAPluggableAllocator; it records
 *                             each tensor (ALLOC/FREE, pool STP_POOL_TENSORS,
 *                             devobj) and calls cudaMalloc/cudaFree with
 *                             t_busy set.
 *   STC_TORCH_CUDA_CACHING    PyTorch's caching allocator kept: the
 *                             collector records tensors (ALLOC/FREE, devobj)
 *                             and the allocator's segments (SEGMENT_RESERVE/
 *                             RELEASE) from the allocator's own reports
 *                             (torch_cuda_caching.c); CUPTI skips the
 *                             allocation calls whose call path passes
 *                             through libc10_cuda (PyTorch's segments).
 *
 * In every mode the CUPTI backend ignores calls made while t_busy is set
 * (the collector's own, and the pluggable allocator's), and records a
 * device allocation made by XLA's own code (JAX's CUDA plugin) as a segment
 * of pool STP_POOL_JAX: JAX's buffers inside it come from the JAX shim.
 */
#ifndef STPROF_COLLECTOR_CUDA_MODE_H
#define STPROF_COLLECTOR_CUDA_MODE_H

#include <stdatomic.h>

enum { STC_TORCH_CUDA_NONE = 0, STC_TORCH_CUDA_PLUGGABLE = 1, STC_TORCH_CUDA_CACHING = 2 };

__attribute__((visibility("hidden"))) extern _Atomic int g_torch_cuda_mode;

#endif
