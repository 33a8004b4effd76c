/*
 * bits.c - the pool's occupancy bitmap: bit i set while pool unit i (one
 * alignment unit of the plan) belongs to a live block.  The allocator sets
 * a block's bits when it hands the block out and clears them when it is
 * freed; a planned range is handed out only when all its bits are clear,
 * which is what keeps live blocks from overlapping.  Range operations work
 * a 64-bit word at a time.
 *
 * Invariant: bits at or past nbits are never set.
 */
#include "internal.h"

int st_bits_init(st_bits *b, uint64_t nbits)
{
	b->nbits = nbits;
	b->w = st_map((size_t)((nbits + 63) / 64 + 1) * sizeof *b->w);
	return b->w ? 0 : -1;
}

void st_bits_free(st_bits *b)
{
	st_unmap(b->w, (size_t)((b->nbits + 63) / 64 + 1) * sizeof *b->w);
	b->w = NULL;
}

/* mask of bits [a, e) within one word, 0 <= a < e <= 64 */
static inline uint64_t span(unsigned a, unsigned e)
{
	uint64_t hi = e == 64 ? ~0ull : ((1ull << e) - 1);
	return hi & ~((1ull << a) - 1);
}

int st_bits_clear_range(const st_bits *b, uint64_t lo, uint64_t n)
{
	if (lo > b->nbits || n > b->nbits - lo)
		return 0;
	uint64_t e = lo + n;
	while (lo < e) {
		uint64_t w = lo / 64;
		unsigned a = (unsigned)(lo % 64);
		unsigned z = e - w * 64 >= 64 ? 64 : (unsigned)(e - w * 64);
		if (b->w[w] & span(a, z))
			return 0;
		lo = w * 64 + z;
	}
	return 1;
}

static void apply(st_bits *b, uint64_t lo, uint64_t n, int set)
{
	uint64_t e = lo + n;
	while (lo < e) {
		uint64_t w = lo / 64;
		unsigned a = (unsigned)(lo % 64);
		unsigned z = e - w * 64 >= 64 ? 64 : (unsigned)(e - w * 64);
		if (set)
			b->w[w] |= span(a, z);
		else
			b->w[w] &= ~span(a, z);
		lo = w * 64 + z;
	}
}

void st_bits_set(st_bits *b, uint64_t lo, uint64_t n) { apply(b, lo, n, 1); }
void st_bits_reset(st_bits *b, uint64_t lo, uint64_t n) { apply(b, lo, n, 0); }

/* first bit >= i with value v, or lim */
static uint64_t next_with(const st_bits *b, uint64_t i, uint64_t lim, int v)
{
	while (i < lim) {
		uint64_t w = i / 64;
		uint64_t x = v ? b->w[w] : ~b->w[w];
		x &= ~0ull << (i % 64);
		if (x) {
			uint64_t r = w * 64 + (uint64_t)__builtin_ctzll(x);
			return r < lim ? r : lim;
		}
		i = (w + 1) * 64;
	}
	return lim;
}

uint64_t st_bits_best_fit(const st_bits *b, uint64_t lo, uint64_t hi, uint64_t n, uint64_t *run_len)
{
	if (hi > b->nbits)
		hi = b->nbits;
	uint64_t best = UINT64_MAX, best_len = UINT64_MAX;
	while (lo < hi) {
		uint64_t z = next_with(b, lo, hi, 0);
		if (z >= hi)
			break;
		uint64_t o = next_with(b, z, hi, 1);
		uint64_t len = o - z;
		if (len >= n && len < best_len) {
			best = z;
			best_len = len;
			if (len == n)
				break; /* exact: nothing fits better */
		}
		lo = o;
	}
	if (run_len)
		*run_len = best_len;
	return best;
}
