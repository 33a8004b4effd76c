/*
 * torch_cuda_api.c - the exported entry points through which the Python
 * shim (collector/torch/python/stprof/torch_cuda.py) steers the recording of
 * PyTorch's CUDA memory (torch_cuda.h):
 *
 *   int  stprof_torch_cuda_v1(int mode)   sets g_torch_cuda_mode
 *        (core/face.h: 0 none, 1 pluggable, 2 caching) before PyTorch
 *        touches the GPU; returns 0, or -1 for an unknown mode (unchanged).
 *   void stprof_torch_cuda_reserved_v1(int device, uint64_t bytes)
 *        the caching allocator of device reserves bytes now (called right
 *        after torch.cuda.empty_cache(), whose releases no report shows).
 */
#include "torch_cuda.h"

STC_EXPORT int stprof_torch_cuda_v1(int mode);
STC_EXPORT void stprof_torch_cuda_reserved_v1(int device, uint64_t bytes);

int stprof_torch_cuda_v1(int mode)
{
	if (mode != STC_TORCH_CUDA_NONE && mode != STC_TORCH_CUDA_PLUGGABLE && mode != STC_TORCH_CUDA_CACHING)
		return -1;
	if (mode == STC_TORCH_CUDA_CACHING)
		stc_torch_cuda_caching_resolve();
	atomic_store(&g_torch_cuda_mode, mode);
	return 0;
}

void stprof_torch_cuda_reserved_v1(int device, uint64_t bytes)
{
	if (atomic_load(&g_torch_cuda_mode) == STC_TORCH_CUDA_CACHING)
		stc_torch_cuda_reserved(device, bytes);
}
