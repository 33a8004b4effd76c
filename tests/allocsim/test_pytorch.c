/*
 * test_pytorch.c - the CUDACachingAllocator model against sequences worked
 * out by hand from c10/cuda/CUDACachingAllocator.cpp: round_size with and
 * without roundup_power2_divisions, pools and segment sizes, should_split in
 * both pools, the max_split_size oversize rules, best fit by (stream, size,
 * address), merging on free, release of cached blocks and retry at a
 * capacity, garbage collection.  Each case says what PyTorch does and why.
 */
#include "sim_helpers.h"
#include "stprof/allocpolicy.h"

static allocsim_config conf(const char *s)
{
	allocsim_config c;
	char err[256];
	allocsim_config_default(&c, ALLOCSIM_PYTORCH);
	if (s && allocsim_config_parse(&c, s, err, sizeof err)) {
		fprintf(stderr, "%s: %s\n", s, err);
		exit(2);
	}
	return c;
}

static void test_round_size(void)
{
	allocsim_config c = conf(NULL);
	/* < 512 -> 512, else a multiple of 512 */
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 0), 512);
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 1), 512);
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 512), 512);
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 513), 1024);
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 1363149), 1363456); /* 1.3 MiB -> next 512 */

	/* 4 divisions: 1.3 MiB lies in [1, 2) MiB, steps of 256 KiB -> 1.5 MiB */
	c = conf("roundup_power2_divisions:4");
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 1363149), 1572864);
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 2 * MiB), 2 * MiB);       /* powers of two stay */
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 2 * MiB + 1), 2560 * KiB); /* [2,4) MiB in 512 KiB steps */
	/* the divisions only apply above 512 * divisions bytes */
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 1200), 1536);
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 3000), 3072);
	/* 8 divisions: 5 MiB + 1 in [4, 8) MiB, steps of 512 KiB -> 5.5 MiB */
	c = conf("roundup_power2_divisions:8");
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 5 * MiB + 1), 5 * MiB + 512 * KiB);

	/* the list form: keys in MB name intervals; the first fills below it,
	 * '>' fills after the last one */
	c = conf("roundup_power2_divisions:[256:1,512:2,>:8]");
	CHECK_EQ_U(allocpolicy_pt_divisions(&c, 100 * MiB), 1);
	CHECK_EQ_U(allocpolicy_pt_divisions(&c, 300 * MiB), 1);
	CHECK_EQ_U(allocpolicy_pt_divisions(&c, 600 * MiB), 2);
	CHECK_EQ_U(allocpolicy_pt_divisions(&c, 1536 * MiB), 8);
	CHECK_EQ_U(allocpolicy_pt_divisions(&c, 64ull * 1024 * MiB), 8);
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 300 * MiB + 1), 300 * MiB + 512);
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 600 * MiB + 1), 768 * MiB);
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, 1536 * MiB + 1), 1664 * MiB);

	/* PyTorch's own AllocatorConfig test values */
	c = conf("roundup_power2_divisions:[64:8,128:2,256:4,512:2,1024:4,>:1]");
	static const uint64_t mb1[] = {32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
	static const uint32_t d1[] = {8, 8, 2, 4, 2, 4, 1, 1, 1};
	for (int i = 0; i < 9; i++)
		CHECK_EQ_U(allocpolicy_pt_divisions(&c, mb1[i] * MiB), d1[i]);
	c = conf("roundup_power2_divisions:[128:8,256:16,512:1,2048:8,>:2]");
	static const uint64_t mb2[] = {64, 128, 256, 512, 1024, 2048, 4096};
	static const uint32_t d2[] = {8, 8, 16, 1, 0, 8, 2};
	for (int i = 0; i < 7; i++)
		CHECK_EQ_U(allocpolicy_pt_divisions(&c, mb2[i] * MiB), d2[i]);

	/* sizes near 2^64 saturate to the largest multiple of the unit
	 * instead of wrapping to 0 (allocpolicy.h) */
	c = conf(NULL);
	CHECK_EQ_U(allocpolicy_pt_round_size(&c, UINT64_MAX - 10), UINT64_MAX & ~511ull);
	CHECK_EQ_U(allocpolicy_pt_allocation_size(&c, UINT64_MAX - 10), UINT64_MAX & ~((2ull << 20) - 1));
	c = conf("roundup_power2_divisions:4");
	CHECK(allocpolicy_pt_round_size(&c, (1ull << 63) + 1) >= (1ull << 63));
	CHECK_EQ_U(allocpolicy_bfc_round(UINT64_MAX), UINT64_MAX & ~255ull);
	CHECK_EQ_U(allocpolicy_bfc_round(257), 512);
}

static void test_pools_and_segments(void)
{
	allocsim_config c = conf(NULL);
	CHECK_EQ_U(allocpolicy_pt_allocation_size(&c, 512), 2 * MiB);
	CHECK_EQ_U(allocpolicy_pt_allocation_size(&c, MiB), 2 * MiB);
	CHECK_EQ_U(allocpolicy_pt_allocation_size(&c, MiB + 512), 20 * MiB);
	CHECK_EQ_U(allocpolicy_pt_allocation_size(&c, 10 * MiB - 512), 20 * MiB);
	CHECK_EQ_U(allocpolicy_pt_allocation_size(&c, 10 * MiB), 10 * MiB);
	CHECK_EQ_U(allocpolicy_pt_allocation_size(&c, 11 * MiB + 512), 12 * MiB);
	c = conf("large_segment_size_mb:64");
	CHECK_EQ_U(allocpolicy_pt_allocation_size(&c, 5 * MiB), 64 * MiB);

	M(NULL);
	uint64_t a = A(1, 1000); /* small pool: a 2 MiB segment, block 1024 */
	CHECK_EQ_U(cur_reserved(), 2 * MiB);
	CHECK_EQ_U(cur_allocated(), 1024);
	uint64_t b = A(2, MiB); /* still small (<= 1 MiB): split from the same segment */
	CHECK_EQ_U(b, a + 1024);
	CHECK_EQ_U(cur_reserved(), 2 * MiB);
	A(3, MiB + 1); /* large pool: 20 MiB segment */
	CHECK_EQ_U(cur_reserved(), 22 * MiB);
	A(4, 10 * MiB - 512); /* fits the 18.99 MiB remainder; 9 MiB left > 1 MiB: split */
	CHECK_EQ_U(cur_reserved(), 22 * MiB);
	A(5, 10 * MiB); /* 9 MiB left is too small: a 10 MiB segment */
	CHECK_EQ_U(cur_reserved(), 32 * MiB);
	/* 11 MiB + 1 rounds to 11 MiB + 512 -> a 12 MiB segment; 1 MiB - 512
	 * left is not > 1 MiB: no split, the block is the whole 12 MiB */
	A(6, 11 * MiB + 1);
	CHECK_EQ_U(cur_reserved(), 44 * MiB);
	CHECK_EQ_U(cur_allocated(), 1024 + MiB + (MiB + 512) + (10 * MiB - 512) + 10 * MiB + 12 * MiB);
	const allocsim_result *r = R();
	CHECK_EQ_U(r->segment_allocs, 4);
	CHECK_EQ_U(r->peak_requested, 1000 + MiB + MiB + 1 + 10 * MiB - 512 + 10 * MiB + 11 * MiB + 1);
	CHECK_EQ_U(r->largest_segment, 20 * MiB);
}

static void test_should_split(void)
{
	/* small pool: split when at least 512 bytes remain */
	M(NULL);
	uint64_t a = A(1, MiB);
	uint64_t b = A(2, MiB - 512); /* leaves exactly 512: split */
	CHECK_EQ_U(b, a + MiB);
	uint64_t c = A(3, 512); /* takes the 512 bytes exactly */
	CHECK_EQ_U(c, a + 2 * MiB - 512);
	CHECK_EQ_U(cur_reserved(), 2 * MiB);
	A(4, 512); /* segment full: a new one */
	CHECK_EQ_U(cur_reserved(), 4 * MiB);
	CHECK_EQ_U(R()->splits, 3); /* a, b, and the new segment for 4 */

	/* large pool: split only when more than 1 MiB remains */
	M(NULL);
	A(1, 2 * MiB); /* 20 MiB segment, 18 MiB remainder */
	A(2, 17 * MiB); /* remainder 1 MiB: not > 1 MiB, takes all 18 MiB */
	CHECK_EQ_U(cur_allocated(), 20 * MiB);
	CHECK_EQ_U(R()->splits, 1);
	M(NULL);
	A(1, 2 * MiB);
	A(2, 17 * MiB - 512); /* remainder 1 MiB + 512: split */
	CHECK_EQ_U(cur_allocated(), 19 * MiB - 512);
	CHECK_EQ_U(R()->splits, 2);

	/* large pool with max_split_size: requests >= it never split */
	M("max_split_size_mb:40");
	A(1, 45 * MiB); /* >= 10 MiB: rounded up to 2 MiB, a 46 MiB segment */
	CHECK_EQ_U(cur_reserved(), 46 * MiB);
	CHECK_EQ_U(cur_allocated(), 46 * MiB); /* 1 MiB left, and size >= max_split */
	A(2, 30 * MiB + 1); /* 32 MiB segment; 2 MiB - 512 left > 1 MiB, 30 < 40: split */
	CHECK_EQ_U(cur_allocated(), 46 * MiB + 30 * MiB + 512);
	F(1);
	A(3, 42 * MiB); /* oversize request: the cached 46 MiB block (< 42+20), unsplit */
	CHECK_EQ_U(cur_allocated(), 46 * MiB + 30 * MiB + 512);
	CHECK_EQ_U(cur_reserved(), 78 * MiB);
}

static void test_oversize_rules(void)
{
	/* a request below max_split_size never takes an oversize block */
	M("max_split_size_mb:40");
	A(1, 50 * MiB);
	F(1); /* cached: one 50 MiB block */
	A(2, 30 * MiB); /* 50 >= 40 and 30 < 40: fail at once, new 30 MiB segment */
	CHECK_EQ_U(cur_reserved(), 80 * MiB);
	M(NULL); /* without the setting, it splits the cached block */
	A(1, 50 * MiB);
	F(1);
	A(2, 30 * MiB);
	CHECK_EQ_U(cur_reserved(), 50 * MiB);

	/* an oversize request takes a cached block only within
	 * max_non_split_rounding (20 MiB) of its size */
	M("max_split_size_mb:40");
	A(1, 100 * MiB);
	F(1);
	A(2, 80 * MiB); /* 100 >= 80 + 20: fail, new 80 MiB segment */
	CHECK_EQ_U(cur_reserved(), 180 * MiB);
	F(2);
	A(3, 81 * MiB); /* smallest block >= 81 MiB is the 100 MiB one;
	                   100 < 81 + 20: taken whole */
	CHECK_EQ_U(cur_allocated(), 100 * MiB);
	CHECK_EQ_U(cur_reserved(), 180 * MiB);
	M("max_split_size_mb:40,max_non_split_rounding_mb:30");
	A(1, 100 * MiB);
	F(1);
	A(2, 80 * MiB); /* 100 < 80 + 30: taken */
	CHECK_EQ_U(cur_reserved(), 100 * MiB);

	/* lower_bound finds the smallest fitting block first, and the rules test
	 * only that one: a 45 MiB cached block makes a 30 MiB request fail even
	 * though it could not have used anything else anyway */
	M("max_split_size_mb:40");
	A(1, 45 * MiB); /* 46 MiB segment */
	A(2, 12 * MiB); /* 12 MiB segment */
	F(1);
	F(2);
	A(3, 30 * MiB); /* smallest >= 30 is the 46 MiB block: oversize -> fail */
	CHECK_EQ_U(cur_reserved(), 46 * MiB + 12 * MiB + 30 * MiB);
	A(4, 10 * MiB); /* the 12 MiB block: 2 MiB left, 10 < 40: split */
	CHECK_EQ_U(cur_reserved(), 88 * MiB);
}

static void test_best_fit(void)
{
	/* per stream: a block cached on stream 1 is not used for stream 2 */
	M(NULL);
	AS(1, 4 * MiB, 1);
	AS(2, 4 * MiB, 2);
	CHECK_EQ_U(cur_reserved(), 40 * MiB);
	uint64_t x = AS(3, 4 * MiB, 1); /* back on stream 1: its 16 MiB remainder */
	CHECK_EQ_U(cur_reserved(), 40 * MiB);
	F(3);
	CHECK_EQ_U(AS(4, 4 * MiB, 1), x);
	/* the same with the free block's stream sorting after the request's:
	 * lower_bound lands on the other stream's block, which must be refused */
	M(NULL);
	AS(1, 1000, 7); /* stream 7 seen first */
	AS(2, 4 * MiB, 9);
	CHECK_EQ_U(cur_reserved(), 22 * MiB);
	AS(3, 4 * MiB, 7);
	CHECK_EQ_U(cur_reserved(), 42 * MiB);

	/* by size: the smallest block that fits, whatever its address */
	M(NULL);
	uint64_t a1 = A(1, 16 * MiB);
	uint64_t a2 = A(2, 12 * MiB);
	CHECK(a1 < a2);
	F(1);
	F(2);
	CHECK_EQ_U(A(3, 11 * MiB), a2); /* 12 MiB block, not the lower 16 MiB one */
	CHECK_EQ_U(cur_allocated(), 12 * MiB); /* 1 MiB left: not split */

	/* by address among equal sizes: the lowest */
	M(NULL);
	uint64_t b1 = A(1, 14 * MiB);
	uint64_t b2 = A(2, 14 * MiB);
	uint64_t b3 = A(3, 14 * MiB);
	F(3);
	F(1);
	F(2);
	CHECK_EQ_U(A(4, 12 * MiB), b1); /* 2 MiB left > 1 MiB: split */
	CHECK_EQ_U(A(5, 12 * MiB), b2);
	CHECK_EQ_U(A(6, 14 * MiB), b3);
	/* the 2 MiB remainders are equal too: lowest address first */
	CHECK_EQ_U(A(7, 1536 * KiB), b1 + 12 * MiB);
}

static void test_merge(void)
{
	/* a 20 MiB segment cut into three 5 MiB blocks and a 5 MiB rest */
	M(NULL);
	uint64_t a = A(1, 5 * MiB);
	uint64_t b = A(2, 5 * MiB);
	uint64_t c = A(3, 5 * MiB);
	CHECK_EQ_U(b, a + 5 * MiB);
	CHECK_EQ_U(c, a + 10 * MiB);
	CHECK_EQ_U(R()->splits, 3);
	F(2); /* [5,10) free, between two live blocks */
	F(1); /* [0,10) */
	CHECK_EQ_U(R()->merges, 1);
	allocsim_model_empty_cache(cur_, ++now_); /* split segment: nothing to free */
	CHECK_EQ_U(cur_reserved(), 20 * MiB);
	/* the merged 10 MiB block serves a 10 MiB request */
	CHECK_EQ_U(A(4, 10 * MiB), a);
	F(4);
	F(3); /* merges with both sides: the whole segment again */
	CHECK_EQ_U(R()->merges, 3);
	allocsim_model_empty_cache(cur_, ++now_);
	CHECK_EQ_U(cur_reserved(), 0);
	CHECK_EQ_U(R()->segment_frees, 1);
	/* the peak: 20 MiB reserved, 15 MiB allocated at most */
	CHECK_EQ_U(R()->peak_reserved, 20 * MiB);
	CHECK_EQ_U(R()->peak_allocated, 15 * MiB);
	CHECK_NEAR(R()->efficiency, 0.75, 1e-9);
}

static void test_release_and_retry(void)
{
	/* release_available_cached_blocks (max_split_size set): an oversize
	 * cached block goes back before any retry */
	M("max_split_size_mb:40,capacity_mb:200");
	A(1, 100 * MiB);
	F(1);
	A(2, 30 * MiB); /* oversize block unusable; 130 MiB reserved */
	CHECK_EQ_U(cur_reserved(), 130 * MiB);
	A(3, 80 * MiB); /* 100 >= 80+20: no block; 210 > 200: cudaMalloc fails;
	                   release the 100 MiB block (>= 80), then it fits */
	CHECK_EQ_U(last_rc_, 0);
	CHECK_EQ_U(cur_reserved(), 110 * MiB);
	const allocsim_result *r = R();
	CHECK_EQ_U(r->segment_frees, 1);
	CHECK_EQ_U(r->alloc_retries, 0);
	CHECK_EQ_U(r->ooms, 0);

	/* release_cached_blocks: every unsplit cached block, then one retry */
	M("capacity_mb:100");
	A(1, 1000); /* small 2 MiB segment */
	F(1);
	A(2, 60 * MiB);
	F(2);
	CHECK_EQ_U(cur_reserved(), 62 * MiB);
	A(3, 90 * MiB); /* 60 MiB block too small; 152 > 100: flush both, retry */
	CHECK_EQ_U(last_rc_, 0);
	CHECK_EQ_U(cur_reserved(), 90 * MiB);
	r = R();
	CHECK_EQ_U(r->alloc_retries, 1);
	CHECK_EQ_U(r->segment_frees, 2);
	A(4, 20 * MiB); /* 110 > 100, nothing to flush: OOM, served beyond capacity */
	CHECK_EQ_U(last_rc_, 1);
	r = R();
	CHECK_EQ_U(r->ooms, 1);
	CHECK_EQ_U(r->alloc_retries, 2);
	CHECK_EQ_U(r->first_oom_size, 20 * MiB);
	CHECK_EQ_U(r->peak_reserved, 110 * MiB);

	/* a split segment cannot be flushed: its free part is stranded */
	M("capacity_mb:40");
	A(1, 4 * MiB); /* 20 MiB segment, 16 MiB free remainder */
	A(2, 15 * MiB); /* 16 MiB block: 1 MiB left, no split */
	F(1); /* 4 MiB free, but the segment is still split */
	A(3, 6 * MiB); /* no 6 MiB block; 20 + 20 = 40 fits */
	CHECK_EQ_U(last_rc_, 0);
	A(4, 6 * MiB); /* 14 MiB rest of the new segment */
	A(5, 10 * MiB); /* 8 MiB rest + 4 MiB free: nothing fits, 50 > 40, flush
	                   frees nothing (all split): OOM */
	CHECK_EQ_U(last_rc_, 1);
	CHECK_EQ_U(R()->ooms, 1);
}

static void test_garbage_collection(void)
{
	/* garbage_collection_threshold with a limit: before a new segment,
	 * unsplit cached large blocks at least as old as the average go back
	 * until reserved <= threshold * limit */
	M("garbage_collection_threshold:0.5,capacity_mb:100");
	A(1, 30 * MiB);
	A(2, 30 * MiB);
	F(1);
	F(2); /* 60 MiB cached in two unsplit blocks, above 50 MiB */
	A(3, 40 * MiB); /* no fit for 40? the 30 MiB blocks are too small: GC
	                   first frees blocks (ages are equal: both) */
	CHECK_EQ_U(cur_reserved(), 40 * MiB);
	CHECK_EQ_U(R()->segment_frees, 2);
	/* without the threshold both stay cached */
	M("capacity_mb:200");
	A(1, 30 * MiB);
	A(2, 30 * MiB);
	F(1);
	F(2);
	A(3, 40 * MiB);
	CHECK_EQ_U(cur_reserved(), 100 * MiB);
}

int main(void)
{
	test_round_size();
	test_pools_and_segments();
	test_should_split();
	test_oversize_rules();
	test_best_fit();
	test_merge();
	test_release_and_retry();
	test_garbage_collection();
	sim_done();
	return check_done();
}
