/*
 * sanitizer_hits.h - what the Compute Sanitizer patch does on the GPU for
 * each global memory access, written once for both compilers: nvcc builds
 * it into the patch (sanitizer_patch.cu, with STC_SZ_DEVICE and atomicOr),
 * the host C compiler into the white-box tests, which run the very same
 * search and flag setting on recorded buffers.  Internal to collector/sanitizer/.
 *
 * One launch block (device memory, written by the host before the launch):
 *
 *     stc_sz_block { starts, ends, n, launch }  then  words[stc_sz_words(n)]
 *
 * starts[0..n) and ends[0..n) are the launch's object map: the device's
 * live objects sorted by start, ends exclusive (the live-object table's snapshot, core/face.h), and
 * they never overlap.  words[] holds two bits per object, object i at word
 * i / 16, bits 2*(i % 16) (read) and 2*(i % 16) + 1 (write); all zero
 * before the launch.
 *
 * Invariants:
 *   - An address p is object i's exactly when starts[i] <= p < ends[i]: the
 *     search finds the last start at or below p and then checks the END
 *     (an access one past an object is no hit).
 *   - n has no limit but memory: the block is sized from n.
 *   - Read and write are separate bits; every atomic sets both, including
 *     one flagged ATOMIC_WRITE_ONLY: that flag says the thread gets no old
 *     value back (a RED from atomicAdd with its result unused), not that the
 *     memory's old value does not matter, and an earlier write before a
 *     reduction is not dead.  A prefetch sets none.  An access whose flags
 *     say neither read nor write (not expected) sets both, so it can never
 *     hide a write.
 *   - A bit is only ever set, never cleared, during a launch: the device
 *     sets it with one atomic OR, and skips the atomic when it is set
 *     already (most accesses after the first).
 */
#ifndef STPROF_COLLECTOR_SANITIZER_HITS_H
#define STPROF_COLLECTOR_SANITIZER_HITS_H

#include <stdint.h>

#ifdef STC_SZ_DEVICE
#define STC_SZ_FN static __device__ __forceinline__
#else
#define STC_SZ_FN static inline
#endif

/* The access flags of sanitizer_patching.h's Sanitizer_DeviceMemoryFlags
 * (repeated so that the host logic builds without the headers). */
#define STC_SZ_FLAG_READ 0x1u
#define STC_SZ_FLAG_WRITE 0x2u
#define STC_SZ_FLAG_ATOMSYS 0x4u
#define STC_SZ_FLAG_PREFETCH 0x8u
#define STC_SZ_FLAG_ATOMIC_WRITE_ONLY 0x100u

/* The hit bits of one object (STP_ACCESS_READ / STP_ACCESS_WRITE). */
#define STC_SZ_HIT_READ 1u
#define STC_SZ_HIT_WRITE 2u

typedef struct stc_sz_block {
	uint64_t starts; /* device address of starts[n] */
	uint64_t ends;   /* device address of ends[n] */
	uint64_t n;
	uint64_t launch; /* the host's number for the launch (a check on read-back) */
	/* uint32_t words[stc_sz_words(n)] follow */
} stc_sz_block;

#define STC_SZ_OBJS_PER_WORD 16u

STC_SZ_FN uint64_t stc_sz_words(uint64_t n) { return (n + STC_SZ_OBJS_PER_WORD - 1) / STC_SZ_OBJS_PER_WORD; }

/* Bytes of a launch block for n objects (a multiple of 8). */
STC_SZ_FN uint64_t stc_sz_block_bytes(uint64_t n)
{
	return (uint64_t)sizeof(stc_sz_block) + ((stc_sz_words(n) * 4u + 7u) & ~(uint64_t)7u);
}

/* The hit bits of an access with sanitizer flags f. */
STC_SZ_FN uint32_t stc_sz_mode(uint32_t f)
{
	if (f & STC_SZ_FLAG_PREFETCH)
		return 0;
	if (f & (STC_SZ_FLAG_ATOMIC_WRITE_ONLY | STC_SZ_FLAG_ATOMSYS))
		return STC_SZ_HIT_READ | STC_SZ_HIT_WRITE;
	uint32_t m = (f & STC_SZ_FLAG_READ ? STC_SZ_HIT_READ : 0u) | (f & STC_SZ_FLAG_WRITE ? STC_SZ_HIT_WRITE : 0u);
	return m ? m : STC_SZ_HIT_READ | STC_SZ_HIT_WRITE;
}

/* The object holding p: its index, or n when none does. */
STC_SZ_FN uint64_t stc_sz_find(const uint64_t *starts, const uint64_t *ends, uint64_t n, uint64_t p)
{
	uint64_t lo = 0, hi = n; /* first start > p */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (starts[mid] <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || p >= ends[lo - 1])
		return n;
	return lo - 1;
}

/* The word and the bits that object i's hit with mode m sets. */
STC_SZ_FN uint32_t stc_sz_bits(uint64_t i, uint32_t m) { return m << (2u * (uint32_t)(i % STC_SZ_OBJS_PER_WORD)); }

/* Records one access of flags f at p into words (the block's hit bits). */
STC_SZ_FN void stc_sz_record(const uint64_t *starts, const uint64_t *ends, uint64_t n, uint32_t *words, uint64_t p,
                             uint32_t f)
{
	uint32_t m = stc_sz_mode(f);
	if (!m)
		return;
	uint64_t i = stc_sz_find(starts, ends, n, p);
	if (i == n)
		return;
	uint32_t bits = stc_sz_bits(i, m);
	uint32_t *w = &words[i / STC_SZ_OBJS_PER_WORD];
	if ((*(volatile uint32_t *)w & bits) == bits)
		return;
#ifdef STC_SZ_DEVICE
	atomicOr(w, bits);
#else
	__atomic_fetch_or(w, bits, __ATOMIC_RELAXED);
#endif
}

#endif
