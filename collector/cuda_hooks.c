/*
 * cuda_hooks.c - what the rest of the collector knows of the CUDA backend:
 * two hooks the flush rounds call (NULL while the backend is off, see
 * internal.h) and its start and end.  Built always; without the CUPTI
 * headers the backend (cuda_inject.c and the other cuda_*.c) is not, and
 * start and end do nothing.
 */
#include "internal.h"

void (*_Atomic g_cuda_flush_hook)(int final);
uint64_t (*_Atomic g_cuda_mark_hook)(uint64_t mark, int try_only);

#ifndef STPROF_HAVE_CUPTI
void stc_cuda_preload_init(void) {}
void stc_cuda_finish(void) {}
#endif
