/*
 * sanitizer_patch.cu - the device code of the Compute Sanitizer backend:
 * the functions the patched instructions call.  Built with
 * `nvcc --fatbin --compile-as-tools-patch` into stprof_sanitizer_patch.fatbin
 * beside libstprof.so; sanitizer_backend.c loads it into every context and
 * patches each module with the ones the driver accepts:
 *
 *   stprof_sz_access      global memory loads, stores, atomics
 *   stprof_sz_cp_async    cp.async (global -> shared): a read
 *   stprof_sz_bulk_g2s    cp.async.bulk global -> shared: a read
 *   stprof_sz_bulk_s2g    cp.async.bulk shared -> global: a write
 *   stprof_sz_bulk_red    cp.reduce.async.bulk to global: a read and a write
 *   stprof_sz_tma_load    TMA tensor loads: a read of the tensor map's object
 *   stprof_sz_tma_store   TMA tensor stores: a write of it
 *   stprof_sz_block_enter / _exit   the launch's first and last block times
 *
 * userdata is the launch's (sanitizer_hits.h), or NULL for a launch that is
 * not sampled: then each call costs a call and a compare.  The search and
 * the bits are sanitizer_hits.h's, the code the host tests run; here a warp
 * does the search once for all its lanes that fall in the same object (the
 * lowest active lane's), and one of them sets the object's mode bits.  (A
 * tools patch may not use redux, so the parts' bits are each lane's own.)
 */
#include <stdint.h>

#define STC_SZ_DEVICE 1
#include "sanitizer_hits.h"

/* SanitizerPatchResult: SANITIZER_PATCH_SUCCESS is 0 (sanitizer_patching.h) */
typedef int stc_sz_patch_result;

static __device__ __forceinline__ uint32_t lane_id(void)
{
	uint32_t l;
	asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
	return l;
}

static __device__ __forceinline__ uint64_t global_ns(void)
{
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

extern "C" __device__ __noinline__ stc_sz_patch_result stprof_sz_access(void *userdata, uint64_t pc, void *ptr,
                                                                          uint32_t size, uint32_t flags,
                                                                          const void *data)
{
	(void)pc;
	(void)data;
	if (!userdata)
		return 0;
	uint64_t ud = (uint64_t)(uintptr_t)userdata, p = (uint64_t)(uintptr_t)ptr;
	uint32_t m = stc_sz_mode(flags);
	if (!m)
		return 0;
	if (!size)
		size = 1;
	const stc_sz_hdr *h = stc_sz_ud_hdr(ud);
	const uint64_t *starts = (const uint64_t *)(uintptr_t)h->starts, *ends = (const uint64_t *)(uintptr_t)h->ends;
	uint64_t n = h->n;
	/* the lowest active lane's object, searched once for the warp */
	uint32_t am = __activemask(), lane = lane_id();
	uint32_t leader = (uint32_t)__ffs(am) - 1u;
	uint64_t li = n, ls = 0, le = 0;
	if (lane == leader) {
		li = stc_sz_find(starts, ends, n, p);
		if (li < n) {
			ls = starts[li];
			le = ends[li];
		}
	}
	li = __shfl_sync(am, li, leader);
	ls = __shfl_sync(am, ls, leader);
	le = __shfl_sync(am, le, leader);
	int in = li < n && p >= ls && p + size <= le;
	uint32_t inmask = __ballot_sync(am, in);
	if (in) {
		/* one lane sets the mode bits for all; each sets its part's bit,
		 * which is most often set already (a load, no atomic) */
		uint32_t *ch = stc_sz_ud_chunks(h, ud);
		if (lane == (uint32_t)__ffs(inmask) - 1u)
			stc_sz_mark(ch, stc_sz_ud_area(h, ud), li, m, 0);
		stc_sz_or(&ch[li], stc_sz_chunk_bits(ls, le, p, size));
	} else {
		stc_sz_range(ud, p, size, m);
	}
	return 0;
}

extern "C" __device__ __noinline__ stc_sz_patch_result stprof_sz_cp_async(void *userdata, uint64_t pc, void *src,
                                                                            uint32_t dst, uint32_t size, uint32_t zfill)
{
	(void)pc;
	(void)dst;
	if (userdata && src && size > zfill)
		stc_sz_range((uint64_t)(uintptr_t)userdata, (uint64_t)(uintptr_t)src, size - zfill, STC_SZ_HIT_READ);
	return 0;
}

/* bulk copies: every active lane has the same arguments; the lowest acts */
static __device__ __forceinline__ int bulk_leader(void)
{
	return lane_id() == (uint32_t)__ffs(__activemask()) - 1u;
}

extern "C" __device__ __noinline__ stc_sz_patch_result stprof_sz_bulk_g2s(void *userdata, uint64_t pc, uint64_t src,
                                                                            uint32_t dst, uint32_t barrier,
                                                                            uint32_t mask_size, uint32_t multicast)
{
	(void)pc;
	(void)dst;
	(void)barrier;
	(void)multicast;
	if (userdata && bulk_leader())
		stc_sz_range((uint64_t)(uintptr_t)userdata, src, (uint64_t)(mask_size & 0xffffu) * 16u, STC_SZ_HIT_READ);
	return 0;
}

extern "C" __device__ __noinline__ stc_sz_patch_result stprof_sz_bulk_s2g(void *userdata, uint64_t pc, uint64_t dst,
                                                                            uint32_t src, uint32_t mask_size,
                                                                            uint32_t has_mask)
{
	(void)pc;
	(void)src;
	(void)has_mask;
	if (userdata && bulk_leader())
		stc_sz_range((uint64_t)(uintptr_t)userdata, dst, (uint64_t)(mask_size & 0xffffu) * 16u, STC_SZ_HIT_WRITE);
	return 0;
}

extern "C" __device__ __noinline__ stc_sz_patch_result stprof_sz_bulk_red(void *userdata, uint64_t pc, uint64_t dst,
                                                                            uint32_t src, uint32_t blocks)
{
	(void)pc;
	(void)src;
	if (userdata && bulk_leader())
		stc_sz_range((uint64_t)(uintptr_t)userdata, dst, (uint64_t)blocks * 16u, STC_SZ_HIT_READ | STC_SZ_HIT_WRITE);
	return 0;
}

extern "C" __device__ __noinline__ stc_sz_patch_result stprof_sz_tma_load(
	void *userdata, uint64_t pc, uint64_t tmap, uint32_t dst, uint32_t barrier, int32_t c0, int32_t c1, int32_t c2,
	int32_t c3, int32_t c4, uint32_t dim, uint32_t multicast, uint32_t mask_args, uint32_t mode)
{
	(void)pc, (void)dst, (void)barrier, (void)c0, (void)c1, (void)c2, (void)c3, (void)c4, (void)dim;
	(void)multicast, (void)mask_args, (void)mode;
	if (userdata && bulk_leader())
		stc_sz_tensor_map((uint64_t)(uintptr_t)userdata, tmap, STC_SZ_HIT_READ);
	return 0;
}

extern "C" __device__ __noinline__ stc_sz_patch_result stprof_sz_tma_store(
	void *userdata, uint64_t pc, uint64_t tmap, uint32_t src, uint32_t barrier, int32_t c0, int32_t c1, int32_t c2,
	int32_t c3, int32_t c4, uint32_t dim, uint32_t multicast, uint32_t mask_args, uint32_t mode)
{
	(void)pc, (void)src, (void)barrier, (void)c0, (void)c1, (void)c2, (void)c3, (void)c4, (void)dim;
	(void)multicast, (void)mask_args, (void)mode;
	if (userdata && bulk_leader())
		stc_sz_tensor_map((uint64_t)(uintptr_t)userdata, tmap, STC_SZ_HIT_WRITE);
	return 0;
}

/* block times: the lowest active lane of each warp */
extern "C" __device__ __noinline__ stc_sz_patch_result stprof_sz_block_enter(void *userdata, uint64_t pc)
{
	(void)pc;
	if (userdata && bulk_leader())
		stc_sz_block_time((uint64_t)(uintptr_t)userdata, global_ns(), 0);
	return 0;
}

extern "C" __device__ __noinline__ stc_sz_patch_result stprof_sz_block_exit(void *userdata, uint64_t pc)
{
	(void)pc;
	if (userdata && bulk_leader())
		stc_sz_block_time((uint64_t)(uintptr_t)userdata, global_ns(), 1);
	return 0;
}
