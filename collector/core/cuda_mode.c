/*
 * cuda_mode.c - who records a device's memory and API calls (face.h): the
 * mode the PyTorch backend sets for the CUPTI backend, and the claims of
 * the CUPTI and Compute Sanitizer backends that the other reads.  They live
 * in the core so that no backend calls another.
 */
#include "internal.h"

_Atomic int g_torch_cuda_mode = STC_TORCH_CUDA_NONE;
_Atomic int g_cupti_records_memory;
_Atomic pid_t g_sanitizer_api_pid;
