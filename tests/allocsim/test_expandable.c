/*
 * test_expandable.c - the expandable-segments variant against sequences
 * worked out by hand from PyTorch's Note [Expandable Segments] and
 * try_allocate_expandable_block / map_block / unmap_block: one address range
 * per (stream, pool) mapped in 20 MiB pages (2 MiB for the small pool), the
 * rounded request mapped rather than a whole segment, growth at the end by
 * merging with the free tail, gaps left by unmapping filled at the lowest
 * address, only whole free pages unmapped.
 */
#include "sim_helpers.h"

/* PyTorch's Note [Expandable Segments]: a model that ran at batch size N
 * runs at N + 1; its (N+1)*A tensors land in the old N*A*B segments and
 * leave slivers, and new (N+1)*A*B segments are needed.  Four layers, each
 * keeping an N*A and an N*A*B tensor (A = 4 MiB, B = 3), N = 4 then 5. */
static uint64_t batch_then_bigger_batch(const char *conf, uint64_t *peak_alloc)
{
	M(conf);
	uint64_t id = 1;
	for (uint64_t n = 4; n <= 5; n++) {
		uint64_t first = id;
		for (int l = 0; l < 4; l++) {
			A(id++, n * 4 * MiB);
			A(id++, n * 4 * MiB * 3);
		}
		for (uint64_t k = first; k < id; k++)
			F(k);
	}
	*peak_alloc = R()->peak_allocated;
	return R()->peak_reserved;
}

int main(void)
{
	/* plain segments: 256 MiB for N = 4, then each 20 MiB tensor splits a
	 * 48 MiB segment (leaving 28, then an 8 MiB sliver) and each 60 MiB one
	 * needs a new segment: 256 + 4 * 60 = 496 MiB for 320 MiB of tensors */
	uint64_t pa;
	CHECK_EQ_U(batch_then_bigger_batch(NULL, &pa), 496 * MiB);
	CHECK_EQ_U(pa, 320 * MiB);
	/* expandable: the tensors tile one range; 13 pages for N = 4, 16 pages
	 * (exactly the 320 MiB) for N = 5 */
	CHECK_EQ_U(batch_then_bigger_batch("expandable_segments:True", &pa), 320 * MiB);
	CHECK_EQ_U(pa, 320 * MiB);

	/* growth: 5 MiB maps one 20 MiB page; 30 MiB maps one more page and
	 * merges with the free 15 MiB before it */
	M("expandable_segments:True");
	uint64_t a = A(1, 5 * MiB);
	CHECK_EQ_U(cur_reserved(), 20 * MiB);
	CHECK_EQ_U(cur_allocated(), 5 * MiB); /* split: any remainder >= 512 */
	uint64_t b = A(2, 30 * MiB);
	CHECK_EQ_U(b, a + 5 * MiB);
	CHECK_EQ_U(cur_reserved(), 40 * MiB);
	const allocsim_result *r = R();
	CHECK_EQ_U(r->segment_allocs, 2); /* two page mappings */
	/* the same requests with plain segments: 20 + 30 MiB */
	M(NULL);
	A(1, 5 * MiB);
	A(2, 30 * MiB);
	CHECK_EQ_U(cur_reserved(), 50 * MiB);

	/* small pool: 2 MiB pages */
	M("expandable_segments:True");
	A(1, 1000);
	A(2, 1000);
	CHECK_EQ_U(cur_reserved(), 2 * MiB);
	A(3, MiB);
	A(4, MiB); /* 2 MiB - 2048 - 1 MiB left < 1 MiB: a second page */
	CHECK_EQ_U(cur_reserved(), 4 * MiB);

	/* unmapping: only whole free pages go back */
	M("expandable_segments:True");
	a = A(1, 5 * MiB);  /* [0,5) of page 0 */
	b = A(2, 45 * MiB); /* [5,50): maps pages 1 and 2, merged with [5,20) */
	CHECK_EQ_U(b, a + 5 * MiB);
	CHECK_EQ_U(cur_reserved(), 60 * MiB);
	uint64_t c = A(3, 5 * MiB); /* best fit: the free [50,60) */
	CHECK_EQ_U(c, a + 50 * MiB);
	F(2); /* [5,50) free between 1 and 3 */
	allocsim_model_empty_cache(cur_, ++now_);
	/* pages 1 = [20,40) is wholly free: unmapped; [5,20) and [40,50) stay */
	CHECK_EQ_U(cur_reserved(), 40 * MiB);
	r = R();
	CHECK_EQ_U(r->segment_frees, 1);
	/* a 30 MiB request fits nowhere mapped; the lowest range with room is
	 * the free [5,20) + the unmapped [20,40) + the free [40,50): map the gap */
	uint64_t d = A(4, 30 * MiB);
	CHECK_EQ_U(d, a + 5 * MiB);
	CHECK_EQ_U(cur_reserved(), 60 * MiB);
	/* free all: one free mapped range, then empty_cache unmaps it all and
	 * drops the segment */
	F(1);
	F(3);
	F(4);
	CHECK_EQ_U(cur_allocated(), 0);
	allocsim_model_empty_cache(cur_, ++now_);
	CHECK_EQ_U(cur_reserved(), 0);
	allocsim_snapshot s;
	allocsim_model_snapshot(cur_, &s);
	CHECK_EQ_U(s.nsegments, 0);
	allocsim_snapshot_clear(&s);

	/* the expandable best fit moves past a block whose size counting the
	 * unmapped tail behind it is larger than the next candidate's: a free
	 * 14 MiB block at the end of the mapped range loses to a free 16 MiB
	 * block in the middle, although plain best fit would take the 14 MiB */
	M("expandable_segments:True");
	a = A(1, 4 * MiB);  /* page 0: [0,4) + free [4,20) */
	b = A(2, 16 * MiB); /* [4,20) exactly */
	c = A(3, 6 * MiB);  /* page 1: [20,26) + free [26,40) at the tail */
	CHECK_EQ_U(c, a + 20 * MiB);
	F(2);               /* free [4,20): 16 MiB in the middle */
	d = A(4, 12 * MiB);
	CHECK_EQ_U(d, a + 4 * MiB);
	M(NULL); /* plain segments: the same sizes, best fit takes the 14 MiB block */
	a = A(1, 4 * MiB);
	b = A(2, 16 * MiB);
	c = A(3, 6 * MiB);
	F(2);
	d = A(4, 12 * MiB);
	CHECK_EQ_U(d, c + 6 * MiB);
	(void)b;

	/* per stream: each stream gets its own range */
	M("expandable_segments:True");
	AS(1, 5 * MiB, 1);
	AS(2, 5 * MiB, 2);
	CHECK_EQ_U(cur_reserved(), 40 * MiB);

	/* OOM with a capacity: unmapping free pages first, then failing */
	M("expandable_segments:True,capacity_mb:60");
	A(1, 30 * MiB); /* maps 40 MiB */
	A(2, 10 * MiB); /* fits the 10 MiB left */
	CHECK_EQ_U(cur_reserved(), 40 * MiB);
	A(3, 30 * MiB); /* needs 40 more: 80 > 60 -> flush (nothing), OOM */
	CHECK_EQ_U(last_rc_, 1);
	r = R();
	CHECK_EQ_U(r->ooms, 1);
	CHECK_EQ_U(r->alloc_retries, 1);
	sim_done();
	return check_done();
}
