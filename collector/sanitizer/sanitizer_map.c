/*
 * sanitizer_map.c - the Compute Sanitizer backend's host logic that needs
 * no GPU (see sanitizer_map.h): maps from devobj snapshots, decoding of hit
 * bits and chunk masks, copy and set ranges, sampling.  Memory
 * comes from mmap (stc_mem_alloc), never the recorded heap.
 */
#include <pthread.h>
#include <string.h>

#include "../core/face.h"
#include "sanitizer_map.h"

/* Freed maps' memory, kept for the next maps: a caching allocator changes
 * the live-object table before nearly every launch of a training step, and
 * a fresh mmap per map cost its page faults and an munmap each time (the
 * churn shape of tests/collector/test_sanitizer_fake.sh).  The maps retired
 * until a drain are freed together, so the pool holds up to as many as a
 * drain frees (POOL_MAX, and POOL_BYTES in all): what was in use anyway.
 * Builds and frees come under the backend's mutex; the pool has its own. */
#define POOL_MAX 1024
#define POOL_BYTES (64ull << 20)
static struct {
	pthread_mutex_t mu;
	uint32_t n;
	uint64_t bytes;
	struct {
		void *p;
		size_t bytes;
	} e[POOL_MAX];
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

static stc_szmap *alloc_map(size_t cap)
{
	size_t bytes = sizeof(stc_szmap) + (cap ? cap : 1) * 3 * sizeof(uint64_t);
	stc_szmap *m = NULL;
	size_t have = 0;
	pthread_mutex_lock(&pool.mu);
	for (uint32_t i = 0; i < pool.n; i++) {
		/* the first that fits, if it is not wastefully large */
		if (pool.e[i].bytes >= bytes && pool.e[i].bytes / 4 <= bytes) {
			m = pool.e[i].p;
			have = pool.e[i].bytes;
			pool.bytes -= have;
			pool.e[i] = pool.e[--pool.n];
			break;
		}
	}
	pthread_mutex_unlock(&pool.mu);
	if (m) {
		memset(m, 0, sizeof *m);
		bytes = have;
	} else if (!(m = stc_mem_alloc(bytes))) {
		return NULL;
	}
	m->bytes = bytes;
	m->starts = (uint64_t *)(m + 1);
	m->ends = m->starts + cap;
	m->ids = m->ends + cap;
	return m;
}

stc_szmap *stc_szmap_build(int32_t dev)
{
	/* the table may grow between counting and copying: retry with room */
	size_t cap = stc_devobj_count() + 64;
	for (int tries = 0; tries < 8; tries++) {
		stc_szmap *m = alloc_map(cap);
		if (!m)
			return NULL;
		size_t n = stc_devobj_snapshot(dev, m->starts, m->ends, m->ids, cap, &m->gen);
		if (n <= cap) {
			m->n = n;
			m->device = dev;
			return m;
		}
		stc_mem_free(m, m->bytes);
		cap = n + n / 4 + 64;
	}
	return NULL;
}

void stc_szmap_free(stc_szmap *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&pool.mu);
	if (pool.n < POOL_MAX && pool.bytes + m->bytes <= POOL_BYTES) {
		pool.e[pool.n].p = m;
		pool.e[pool.n].bytes = m->bytes;
		pool.bytes += m->bytes;
		pool.n++;
		m = NULL;
	}
	pthread_mutex_unlock(&pool.mu);
	if (m)
		stc_mem_free(m, m->bytes);
}

uint64_t stc_sz_chunk_start(uint64_t len, uint32_t c)
{
	/* the least off with stc_sz_chunk(off) >= c: ceil(c * len / 32) */
	if (c >= STC_SZ_CHUNKS)
		return len;
	if (len < (1ull << 58))
		return ((uint64_t)c * len + STC_SZ_CHUNKS - 1) / STC_SZ_CHUNKS;
	uint64_t lo = 0, hi = len; /* huge objects: search stc_sz_chunk's inverse */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (stc_sz_chunk(0, len, mid) >= c)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

size_t stc_sz_decode(const uint64_t *starts, const uint64_t *ends, const uint64_t *ids, uint64_t n,
                     const uint32_t *words, const uint32_t *chunks, stp_range *out, uint64_t *ids_out, size_t max)
{
	size_t k = 0;
	uint64_t nw = stc_sz_words(n);
	for (uint64_t w = 0; w < nw; w++) {
		uint32_t x = words[w];
		while (x) {
			unsigned bit = (unsigned)__builtin_ctz(x);
			uint64_t i = w * STC_SZ_OBJS_PER_WORD + bit / 2;
			uint32_t mode = (x >> (bit & ~1u)) & 3u;
			x &= ~(3u << (bit & ~1u));
			if (i >= n) /* bits past the map: not written by the patch */
				break;
			uint64_t s = starts[i], len = ends[i] - starts[i];
			uint32_t cb = chunks ? chunks[i] : 0;
			if (!cb || cb == 0xffffffffu) { /* all of it (or parts not known) */
				if (k < max) {
					out[k] = (stp_range){.addr = s, .size = len, .mode = mode};
					if (ids_out)
						ids_out[k] = ids ? ids[i] : 0;
				}
				k++;
				continue;
			}
			for (uint32_t c = 0; c < STC_SZ_CHUNKS;) { /* each run of set chunks */
				if (!(cb >> c & 1u)) {
					c++;
					continue;
				}
				uint32_t d = c;
				while (d + 1 < STC_SZ_CHUNKS && (cb >> (d + 1) & 1u))
					d++;
				uint64_t b = stc_sz_chunk_start(len, c), e = stc_sz_chunk_start(len, d + 1);
				if (e > b) {
					if (k < max) {
						out[k] = (stp_range){.addr = s + b, .size = e - b, .mode = mode};
						if (ids_out)
							ids_out[k] = ids ? ids[i] : 0;
					}
					k++;
				}
				c = d + 1;
			}
		}
	}
	return k;
}

int stc_sz_sampled(uint64_t k, uint32_t every) { return every <= 1 || k % every == 0; }

/* Bytes from the first byte of a (possibly pitched) operation to its end. */
static uint64_t span(uint64_t size, uint64_t width, uint64_t height, uint64_t depth, uint64_t pitch)
{
	uint64_t rows = (height ? height : 1) * (depth ? depth : 1);
	if (rows <= 1 || !pitch)
		return size ? size : width * rows;
	uint64_t s = pitch * (rows - 1) + width;
	return s < width ? UINT64_MAX : s;
}

uint32_t stc_sz_copy_ranges(uint64_t src, uint64_t dst, uint64_t size, uint64_t width, uint64_t height, uint64_t depth,
                            uint64_t src_pitch, uint64_t dst_pitch, stp_range out[2])
{
	uint32_t k = 0;
	uint64_t s = span(size, width, height, depth, src_pitch), d = span(size, width, height, depth, dst_pitch);
	if (src && s)
		out[k++] = (stp_range){.addr = src, .size = s, .mode = STP_ACCESS_READ};
	if (dst && d)
		out[k++] = (stp_range){.addr = dst, .size = d, .mode = STP_ACCESS_WRITE};
	return k;
}

uint32_t stc_sz_set_ranges(uint64_t addr, uint64_t width, uint64_t height, uint64_t pitch, uint32_t elem,
                           stp_range out[1])
{
	uint64_t w = width * (elem ? elem : 1);
	uint64_t s = span(0, w, height, 1, pitch);
	if (!addr || !s)
		return 0;
	out[0] = (stp_range){.addr = addr, .size = s, .mode = STP_ACCESS_WRITE};
	return 1;
}
