/*
 * cuda_mode.c - the one variable of cuda_mode.h: which part of the
 * collector records a PyTorch program's device memory.
 */
#include "cuda_mode.h"

_Atomic int g_torch_cuda_mode = STC_TORCH_CUDA_NONE;
