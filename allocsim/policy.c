/*
 * policy.c - the size rules of PyTorch's caching allocator, of BFC and of
 * libstalloc's lifetime heap (stprof/allocpolicy.h), shared by the models
 * here and by the runtime allocator.  Pure functions; sizes near 2^64 saturate to the largest
 * multiple of the rounding unit instead of wrapping to 0.
 */
#include "stprof/allocpolicy.h"

/* x rounded up to a multiple of the power of two a, saturating. */
static uint64_t round_up(uint64_t x, uint64_t a)
{
	uint64_t r = x + (a - 1);
	if (r < x)
		return UINT64_MAX & ~(a - 1);
	return r & ~(a - 1);
}

uint32_t allocpolicy_pt_divisions(const allocsim_config *c, uint64_t size)
{
	if (!size)
		return c->roundup_power2_divisions[0];
	unsigned log_size = 63u - (unsigned)__builtin_clzll(size);
	unsigned idx = log_size > 20 ? log_size - 20 : 0;
	if (idx > ALLOCSIM_POW2_INTERVALS - 1)
		idx = ALLOCSIM_POW2_INTERVALS - 1;
	return c->roundup_power2_divisions[idx];
}

/* roundup_power2_next_division: the next of `divisions` equal steps
 * between the powers of two around size. */
static uint64_t next_division(uint64_t size, uint64_t divisions)
{
	if (!(size & (size - 1)))
		return size;
	uint64_t floor2 = 1ull << (63 - __builtin_clzll(size));
	uint64_t step = floor2 >> (63 - __builtin_clzll(divisions));
	if (!step)
		return floor2 << 1 ? floor2 << 1 : floor2;
	return round_up(size, step);
}

uint64_t allocpolicy_pt_round_size(const allocsim_config *c, uint64_t size)
{
	if (size < ALLOCPOLICY_PT_MIN_BLOCK)
		return ALLOCPOLICY_PT_MIN_BLOCK;
	uint64_t div = allocpolicy_pt_divisions(c, size);
	if (div > 1 && size > ALLOCPOLICY_PT_MIN_BLOCK * div)
		return next_division(size, div);
	return round_up(size, ALLOCPOLICY_PT_MIN_BLOCK);
}

uint64_t allocpolicy_pt_allocation_size(const allocsim_config *c, uint64_t size)
{
	if (size <= ALLOCPOLICY_PT_SMALL_SIZE)
		return ALLOCPOLICY_PT_SMALL_BUFFER;
	if (size < ALLOCPOLICY_PT_MIN_LARGE_ALLOC)
		return c->large_segment_size;
	return round_up(size, ALLOCPOLICY_PT_ROUND_LARGE);
}

uint64_t allocpolicy_bfc_round(uint64_t size)
{
	return round_up(size, ALLOCPOLICY_BFC_MIN);
}

unsigned allocpolicy_bfc_bin(uint64_t size)
{
	uint64_t v = (size < ALLOCPOLICY_BFC_MIN ? ALLOCPOLICY_BFC_MIN : size) >> 8;
	unsigned b = 63u - (unsigned)__builtin_clzll(v);
	return b < ALLOCPOLICY_BFC_BINS - 1 ? b : ALLOCPOLICY_BFC_BINS - 1;
}

unsigned allocpolicy_lt_size_classes(uint32_t *size, uint8_t *blocks)
{
	unsigned n = 0;
	for (uint32_t s = 16; s <= 128; s += 16)
		size[n++] = s;
	for (uint32_t p = 128; p < ALLOCPOLICY_LT_SMALL_MAX; p *= 2)
		for (uint32_t k = 1; k <= 4; k++)
			size[n++] = p + p / 4 * k;
	/* the fewest 8 KiB blocks (1..8) whose tail is at most 1/16 */
	for (unsigned c = 0; c < n; c++) {
		uint32_t best = 1;
		uint64_t best_waste = UINT64_MAX;
		for (uint32_t b = 1; b <= 8; b++) {
			uint64_t bytes = (uint64_t)b * ALLOCPOLICY_LT_BLOCK;
			if (bytes < size[c])
				continue;
			uint64_t waste = bytes % size[c];
			if (waste * 16 <= bytes) {
				best = b;
				break;
			}
			if (waste * 1000 / bytes < best_waste) {
				best_waste = waste * 1000 / bytes;
				best = b;
			}
		}
		blocks[c] = (uint8_t)best;
	}
	return n;
}
