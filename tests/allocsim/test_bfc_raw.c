/*
 * test_bfc_raw.c - the BFC model against sequences worked out by hand from
 * xla/tsl/framework/bfc_allocator.cc (256 B rounding, the 21 bins, the split
 * rule with max_internal_fragmentation, coalescing with both neighbours,
 * region growth by doubling, preallocation, free-region collection before
 * OOM), and the raw cudaMalloc model.
 */
#include "sim_helpers.h"
#include "stprof/allocpolicy.h"

#define B(conf) M_(ALLOCSIM_BFC, conf)

static void test_bins(void)
{
	CHECK_EQ_U(allocpolicy_bfc_bin(1), 0);
	CHECK_EQ_U(allocpolicy_bfc_bin(256), 0);
	CHECK_EQ_U(allocpolicy_bfc_bin(511), 0);
	CHECK_EQ_U(allocpolicy_bfc_bin(512), 1);
	CHECK_EQ_U(allocpolicy_bfc_bin(1024), 2);
	CHECK_EQ_U(allocpolicy_bfc_bin(256ull << 19), 19);
	CHECK_EQ_U(allocpolicy_bfc_bin((256ull << 20) - 1), 19);
	CHECK_EQ_U(allocpolicy_bfc_bin(256ull << 20), 20);
	CHECK_EQ_U(allocpolicy_bfc_bin(1ull << 40), 20);
}

static void test_growth(void)
{
	B(NULL); /* allow_growth, no limit */
	uint64_t a = A(1, 1000); /* 1024 B; region 2 MiB; split (2 MiB >= 2048) */
	CHECK_EQ_U(cur_reserved(), 2 * MiB);
	CHECK_EQ_U(cur_allocated(), 1024);
	A(2, 3 * MiB); /* next region 4 MiB (doubled after the first); no split:
	                  4 < 6 MiB and 1 MiB < 128 MiB */
	CHECK_EQ_U(cur_reserved(), 6 * MiB);
	CHECK_EQ_U(cur_allocated(), 1024 + 4 * MiB);
	A(3, 20 * MiB); /* region size 8 -> 16 -> 32 MiB (grown: not doubled again) */
	CHECK_EQ_U(cur_reserved(), 38 * MiB);
	CHECK_EQ_U(cur_allocated(), 1024 + 36 * MiB);
	A(4, 40 * MiB); /* 32 -> 64 MiB */
	CHECK_EQ_U(cur_reserved(), 102 * MiB);
	uint64_t e = A(5, MiB); /* the free 2 MiB - 1 KiB chunk: 2 MiB - 1024 < 2 MiB:
	                           no split */
	CHECK_EQ_U(e, a + 1024);
	CHECK_EQ_U(cur_allocated(), 1024 + 36 * MiB + 64 * MiB + 2 * MiB - 1024);
	const allocsim_result *r = R();
	CHECK_EQ_U(r->segment_allocs, 4);
	CHECK_EQ_U(r->splits, 1);
	CHECK_EQ_U(r->largest_segment, 64 * MiB);
}

static void test_split_coalesce(void)
{
	B(NULL);
	uint64_t a = A(1, 256 * KiB);
	uint64_t b = A(2, 256 * KiB);
	uint64_t c = A(3, 256 * KiB);
	CHECK_EQ_U(b, a + 256 * KiB);
	CHECK_EQ_U(c, a + 512 * KiB);
	F(2);
	F(1); /* merges with the next one (b) */
	CHECK_EQ_U(R()->merges, 1);
	/* best fit: a 512 KiB request takes the merged [0,512) chunk, the
	 * smallest that fits (the tail is 1.25 MiB) */
	CHECK_EQ_U(A(4, 512 * KiB), a);
	F(4);
	F(3); /* merges with the tail, then with [0,512): one free region */
	CHECK_EQ_U(R()->merges, 3);
	CHECK_EQ_U(cur_allocated(), 0);
	allocsim_snapshot s;
	allocsim_model_snapshot(cur_, &s);
	CHECK_EQ_U(s.free_blocks, 1);
	CHECK_EQ_U(s.largest_free, 2 * MiB);
	allocsim_snapshot_clear(&s);

	/* the split rule: chunk >= 2 x request, or the leftover >=
	 * max_internal_fragmentation (128 MiB) */
	B("allow_growth:False,memory_limit_mb:1024");
	A(1, 600 * MiB); /* the whole 1 GiB region at once; 1024 < 1200 but
	                    424 MiB left >= 128 MiB: split */
	CHECK_EQ_U(cur_reserved(), 1024 * MiB);
	CHECK_EQ_U(cur_allocated(), 600 * MiB);
	A(2, 300 * MiB); /* 424 MiB chunk: < 600, 124 MiB < 128: taken whole */
	CHECK_EQ_U(cur_allocated(), 1024 * MiB);
	CHECK_EQ_U(R()->peak_reserved, 1024 * MiB);
	CHECK_NEAR(R()->efficiency, 1.0, 1e-9);
	B("allow_growth:False,memory_limit_mb:1024,max_internal_fragmentation_mb:100");
	A(1, 600 * MiB);
	A(2, 300 * MiB); /* 124 MiB >= 100: split */
	CHECK_EQ_U(cur_allocated(), 900 * MiB);
	B("allow_growth:False,memory_limit_mb:1000,fragmentation_fraction:0.5");
	A(1, 400 * MiB); /* leftover 600 MiB >= 500 MiB: split */
	A(2, 500 * MiB); /* 600 MiB chunk: 100 MiB < 500 and 600 < 1000: whole */
	CHECK_EQ_U(cur_allocated(), 1000 * MiB);
}

static void test_limit_and_gc(void)
{
	B("memory_limit_mb:64");
	A(1, 40 * MiB); /* region 2 -> ... -> 64 MiB = the limit */
	CHECK_EQ_U(cur_reserved(), 64 * MiB);
	A(2, MiB); /* nothing left: OOM, served beyond */
	CHECK_EQ_U(last_rc_, 1);
	CHECK_EQ_U(R()->ooms, 1);

	/* garbage_collection: a wholly free region goes back so a bigger one fits */
	B("memory_limit_mb:64,garbage_collection:True");
	A(1, 10 * MiB); /* 16 MiB region */
	F(1);
	A(2, 60 * MiB); /* 48 MiB left < 60; free the 16 MiB region; 64 fits */
	CHECK_EQ_U(last_rc_, 0);
	CHECK_EQ_U(cur_reserved(), 64 * MiB);
	CHECK_EQ_U(R()->segment_frees, 1);
	B("memory_limit_mb:64");
	A(1, 10 * MiB);
	F(1);
	A(2, 60 * MiB);
	CHECK_EQ_U(last_rc_, 1);

	/* the device capacity below the limit: Extend backs off by 0.9 */
	B("capacity_mb:100,memory_limit_mb:1000,allow_growth:False");
	A(1, 50 * MiB); /* 1000 MiB asked; backs off until <= 100 MiB */
	CHECK(cur_reserved() <= 100 * MiB);
	CHECK(cur_reserved() >= 90 * MiB);
	CHECK_EQ_U(last_rc_, 0);
}

static void test_raw(void)
{
	M_(ALLOCSIM_RAW, NULL);
	A(1, 1000);
	A(2, 1);
	CHECK_EQ_U(cur_allocated(), 1536);
	CHECK_EQ_U(cur_reserved(), 1536);
	F(1);
	CHECK_EQ_U(cur_reserved(), 512);
	const allocsim_result *r = R();
	CHECK_EQ_U(r->peak_reserved, 1536);
	CHECK_NEAR(r->efficiency, 1.0, 1e-12);
	CHECK_EQ_U(r->segment_allocs, 2);
	CHECK_EQ_U(r->segment_frees, 1);
	M_(ALLOCSIM_RAW, "raw_alignment:2097152,capacity_mb:4");
	A(1, 1);
	A(2, 2 * MiB + 1);
	CHECK_EQ_U(cur_reserved(), 6 * MiB);
	CHECK_EQ_U(R()->ooms, 1);
}

int main(void)
{
	test_bins();
	test_growth();
	test_split_coalesce();
	test_limit_and_gc();
	test_raw();
	sim_done();
	return check_done();
}
