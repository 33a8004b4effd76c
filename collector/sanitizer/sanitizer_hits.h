/*
 * sanitizer_hits.h - what the Compute Sanitizer patch does on the GPU for
 * each access, written once for both compilers: nvcc builds it into the
 * patch (sanitizer_patch.cu, with STC_SZ_DEVICE, atomics and the warp's
 * shuffles around it), the host C compiler into the white-box tests and the
 * fake device, which run the very same search and bit setting on buffers
 * laid out as the GPU's.  Internal to collector/sanitizer/.
 *
 * Device memory the host prepares (two rings per context, sanitizer_backend.c):
 *
 *   header   stc_sz_hdr { starts, ends, n, chunks, areas, area_bytes }: a
 *            map of the device's live objects (starts[n], ends[n]: sorted,
 *            ends exclusive, never overlapping: the live-object table's
 *            snapshot, core/face.h) and where the launches given this
 *            header keep their hits.  Immutable once uploaded.
 *   chunks   uint32_t chunks[n] per launch area (chunks_step bytes apart),
 *            zeroed: bit c of object i's mask is set when the launch touched
 *            the c-th 32nd of object i (its bytes [c*len/32, (c+1)*len/32)):
 *            the parts of the object that launch used.  A header over many
 *            objects has one mask per object for all its launches
 *            (chunks_step 0): then a launch's parts are those any launch of
 *            the header touched.
 *   areas    up to STC_SZ_SLOTS launch areas of area_bytes each, zeroed:
 *            stc_sz_area { t_begin, t_end, flags } then two hit bits per
 *            object, object i at word i / 16, bits 2*(i % 16) (read) and
 *            2*(i % 16) + 1 (write).
 *
 * A launch's userdata names its header and its area: the header's address
 * in the low 56 bits, the area's index in the top 8 (stc_sz_ud).  So a
 * launch needs no upload of its own: the host uploads a header (and a map)
 * only when the live objects changed or the header's areas are used up.
 *
 * Invariants:
 *   - An address p is object i's exactly when starts[i] <= p < ends[i]: the
 *     search finds the last start at or below p and then checks the END
 *     (an access one past an object is no hit).
 *   - n has no limit but memory.
 *   - Read and write are separate bits; every atomic sets both, including
 *     one flagged ATOMIC_WRITE_ONLY: that flag says the thread gets no old
 *     value back (a RED from atomicAdd with its result unused), not that the
 *     memory's old value does not matter, and an earlier write before a
 *     reduction is not dead.  A prefetch sets none.  An access whose flags
 *     say neither read nor write (not expected) sets both, so it can never
 *     hide a write.
 *   - Bits are only ever set, never cleared, on the device: one atomic OR,
 *     skipped when the bits are set already (most accesses after the first).
 *   - An access spanning objects (a bulk copy) marks each object it covers.
 *   - t_begin holds UINT64_MAX minus the earliest block entry's time, so that
 *     zeroed memory means "none" for both times and both grow by atomic max.
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

#define STC_SZ_CHUNKS 32u  /* parts of an object told apart */
#define STC_SZ_SLOTS 256u  /* launch areas per header (the ud's top 8 bits) */
#define STC_SZ_SPAN_MAX 64u /* objects one bulk access marks at most */

typedef struct stc_sz_hdr {
	uint64_t starts;     /* device address of starts[n] */
	uint64_t ends;       /* device address of ends[n] */
	uint64_t n;
	uint64_t chunks;     /* device address of chunks[n] */
	uint64_t areas;      /* device address of the first launch area */
	uint64_t area_bytes; /* bytes per launch area (a multiple of 8) */
	uint64_t id;         /* the host's number for the header */
	uint64_t chunks_step; /* bytes between two launch areas' chunk masks; 0: one for all */
} stc_sz_hdr;

#define STC_SZ_AREA_UNPLACED 1u /* an access the patch could not place */

typedef struct stc_sz_area {
	uint64_t t_begin; /* UINT64_MAX - the earliest block entry (ns), 0: none */
	uint64_t t_end;   /* the latest block exit (ns), 0: none */
	uint32_t flags;   /* STC_SZ_AREA_* */
	uint32_t pad[3];
	/* uint32_t words[stc_sz_words(n)] follow */
} stc_sz_area;

#define STC_SZ_OBJS_PER_WORD 16u

STC_SZ_FN uint64_t stc_sz_words(uint64_t n) { return (n + STC_SZ_OBJS_PER_WORD - 1) / STC_SZ_OBJS_PER_WORD; }

/* Bytes of a launch area for n objects (a multiple of 8). */
STC_SZ_FN uint64_t stc_sz_area_bytes(uint64_t n)
{
	return (uint64_t)sizeof(stc_sz_area) + ((stc_sz_words(n) * 4u + 7u) & ~(uint64_t)7u);
}

/* The userdata of the launch given area `slot` of the header at hdr. */
STC_SZ_FN uint64_t stc_sz_ud(uint64_t hdr, uint32_t slot) { return hdr | ((uint64_t)slot << 56); }
STC_SZ_FN const stc_sz_hdr *stc_sz_ud_hdr(uint64_t ud)
{
	return (const stc_sz_hdr *)(uintptr_t)(ud & ((1ull << 56) - 1));
}
STC_SZ_FN stc_sz_area *stc_sz_ud_area(const stc_sz_hdr *h, uint64_t ud)
{
	return (stc_sz_area *)(uintptr_t)(h->areas + (ud >> 56) * h->area_bytes);
}

/* The chunk masks of the launch of userdata ud (its own, or its header's). */
STC_SZ_FN uint32_t *stc_sz_ud_chunks(const stc_sz_hdr *h, uint64_t ud)
{
	return (uint32_t *)(uintptr_t)(h->chunks + (ud >> 56) * h->chunks_step);
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

/* The index of the first object starting above p (n when none does). */
STC_SZ_FN uint64_t stc_sz_above(const uint64_t *starts, uint64_t n, uint64_t p)
{
	uint64_t lo = 0, hi = n;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (starts[mid] <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The object holding p: its index, or n when none does. */
STC_SZ_FN uint64_t stc_sz_find(const uint64_t *starts, const uint64_t *ends, uint64_t n, uint64_t p)
{
	uint64_t lo = stc_sz_above(starts, n, p);
	if (lo == 0 || p >= ends[lo - 1])
		return n;
	return lo - 1;
}

/* The chunk (32nd) of an object [s, e) that byte p falls in. */
STC_SZ_FN uint32_t stc_sz_chunk(uint64_t s, uint64_t e, uint64_t p)
{
	uint64_t len = e - s, off = p - s;
	/* off * 32 overflows only for objects past 2^59 bytes */
	return (uint32_t)(off < (1ull << 58) ? off * STC_SZ_CHUNKS / len : (off / len) * STC_SZ_CHUNKS);
}

/* The chunk bits of bytes [p, p + size) clipped to the object [s, e). */
STC_SZ_FN uint32_t stc_sz_chunk_bits(uint64_t s, uint64_t e, uint64_t p, uint64_t size)
{
	uint64_t lo = p > s ? p : s;
	uint64_t hi = size && p + size > p && p + size < e ? p + size : e; /* exclusive */
	if (hi <= lo)
		return 0;
	uint32_t c0 = stc_sz_chunk(s, e, lo), c1 = stc_sz_chunk(s, e, hi - 1);
	if (c1 >= STC_SZ_CHUNKS)
		c1 = STC_SZ_CHUNKS - 1;
	uint32_t upto = c1 >= 31 ? 0xffffffffu : (2u << c1) - 1u; /* bits 0..c1 */
	return upto & ~((1u << c0) - 1u);
}

STC_SZ_FN void stc_sz_or(uint32_t *w, uint32_t bits)
{
	if ((*(volatile uint32_t *)w & bits) == bits)
		return;
#ifdef STC_SZ_DEVICE
	atomicOr(w, bits);
#else
	__atomic_fetch_or(w, bits, __ATOMIC_RELAXED);
#endif
}

/* Object i was accessed with mode m over chunk bits cb by the launch of
 * area a (chunk masks ch). */
STC_SZ_FN void stc_sz_mark(uint32_t *ch, stc_sz_area *a, uint64_t i, uint32_t m, uint32_t cb)
{
	uint32_t *words = (uint32_t *)(a + 1);
	stc_sz_or(&words[i / STC_SZ_OBJS_PER_WORD], m << (2u * (uint32_t)(i % STC_SZ_OBJS_PER_WORD)));
	if (cb)
		stc_sz_or(&ch[i], cb);
}

/* Records bytes [p, p + size) accessed with hit bits m (each object they
 * cover, up to STC_SZ_SPAN_MAX) for the launch of userdata ud. */
STC_SZ_FN void stc_sz_range(uint64_t ud, uint64_t p, uint64_t size, uint32_t m)
{
	if (!ud || !m)
		return;
	const stc_sz_hdr *h = stc_sz_ud_hdr(ud);
	stc_sz_area *a = stc_sz_ud_area(h, ud);
	const uint64_t *starts = (const uint64_t *)(uintptr_t)h->starts, *ends = (const uint64_t *)(uintptr_t)h->ends;
	uint64_t n = h->n, end = size && p + size > p ? p + size : p + 1;
	uint64_t i = stc_sz_find(starts, ends, n, p);
	if (i == n) /* p in a gap: the first object starting inside the range */
		i = stc_sz_above(starts, n, p);
	uint32_t *ch = stc_sz_ud_chunks(h, ud);
	for (uint32_t k = 0; k < STC_SZ_SPAN_MAX && i < n && starts[i] < end; k++, i++)
		stc_sz_mark(ch, a, i, m, stc_sz_chunk_bits(starts[i], ends[i], p, end - p));
}

/* One global memory access of flags f (the patch's per-thread path). */
STC_SZ_FN void stc_sz_access(uint64_t ud, uint64_t p, uint32_t size, uint32_t f)
{
	stc_sz_range(ud, p, size ? size : 1, stc_sz_mode(f));
}

/* A TMA operation on the tensor map at tmap (128 bytes in global memory,
 * its layout opaque): the map holds the tensor's global address in one of
 * its 16 words, so each word that falls in a live object names it.  A map
 * whose words name no object flags the launch (its access is not placed). */
STC_SZ_FN void stc_sz_tensor_map(uint64_t ud, uint64_t tmap, uint32_t m)
{
	if (!ud || !tmap)
		return;
	const stc_sz_hdr *h = stc_sz_ud_hdr(ud);
	stc_sz_area *a = stc_sz_ud_area(h, ud);
	const uint64_t *starts = (const uint64_t *)(uintptr_t)h->starts, *ends = (const uint64_t *)(uintptr_t)h->ends;
	const uint64_t *w = (const uint64_t *)(uintptr_t)tmap;
	int placed = 0;
	for (int k = 0; k < 16; k++) {
		uint64_t i = stc_sz_find(starts, ends, h->n, w[k]);
		if (i < h->n) {
			stc_sz_mark(stc_sz_ud_chunks(h, ud), a, i, m, 0xffffffffu); /* the tile is not known: all of it */
			placed = 1;
		}
	}
	if (!placed)
		stc_sz_or(&a->flags, STC_SZ_AREA_UNPLACED);
}

/* Block entry and exit at time t (ns): the launch's first and last. */
STC_SZ_FN void stc_sz_max64(uint64_t *w, uint64_t v)
{
	if (*(volatile uint64_t *)w >= v)
		return;
#ifdef STC_SZ_DEVICE
	atomicMax((unsigned long long *)w, (unsigned long long)v);
#else
	uint64_t cur = __atomic_load_n(w, __ATOMIC_RELAXED);
	while (cur < v && !__atomic_compare_exchange_n(w, &cur, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
#endif
}

STC_SZ_FN void stc_sz_block_time(uint64_t ud, uint64_t t, int exit)
{
	if (!ud || !t)
		return;
	stc_sz_area *a = stc_sz_ud_area(stc_sz_ud_hdr(ud), ud);
	if (exit)
		stc_sz_max64(&a->t_end, t);
	else
		stc_sz_max64(&a->t_begin, UINT64_MAX - t);
}

#endif
