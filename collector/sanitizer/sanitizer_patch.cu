/*
 * sanitizer_patch.cu - the device code of the Compute Sanitizer backend:
 * the function that every patched global memory instruction calls
 * (SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS).  Built with
 * `nvcc --fatbin --compile-as-tools-patch` into stprof_sanitizer_patch.fatbin
 * beside libstprof.so; sanitizer_backend.c loads it into every context.
 *
 * userdata is the launch's block (sanitizer_hits.h), or NULL for a launch
 * that is not sampled: then the access costs a call and a compare.  The
 * search and the hit bits are sanitizer_hits.h's, the same code the host
 * tests run.
 */
#include <stdint.h>

#define STC_SZ_DEVICE 1
#include "sanitizer_hits.h"

/* SanitizerPatchResult: SANITIZER_PATCH_SUCCESS is 0 (sanitizer_patching.h) */
typedef int stc_sz_patch_result;

extern "C" __device__ __noinline__ stc_sz_patch_result stprof_sz_access(void *userdata, uint64_t pc, void *ptr,
                                                                          uint32_t size, uint32_t flags,
                                                                          const void *data)
{
	(void)pc;
	(void)size;
	(void)data;
	if (!userdata)
		return 0;
	const stc_sz_block *b = (const stc_sz_block *)userdata;
	stc_sz_record((const uint64_t *)b->starts, (const uint64_t *)b->ends, b->n, (uint32_t *)(b + 1),
	              (uint64_t)ptr, flags);
	return 0;
}
