/*
 * test_invariants.c - every model under long random traces (small, medium
 * and huge sizes, several streams, with and without a capacity): after every
 * event allocated <= reserved; every few events the model's full check
 * (balanced sets, keys, links, segments tiled by their blocks, no unmerged
 * free neighbours, counters adding up) and a snapshot check (live objects
 * sit in allocated blocks at least as large as requested, no two live
 * blocks overlap, segments do not overlap); at the end, freeing everything
 * brings allocated to 0 and empty_cache brings reserved to 0.  The event
 * log replay (allocsim_run) gives the same result as feeding the model
 * event by event.
 */
#include <stdlib.h>

#include "sim_helpers.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t rand_size(void)
{
	uint64_t k = rnd() % 100;
	if (k < 40)
		return 1 + rnd() % (1u << (1 + rnd() % 20));      /* up to 1 MiB, log-ish */
	if (k < 80)
		return MiB + rnd() % (19 * MiB);                  /* 1 - 20 MiB */
	if (k < 95)
		return 20 * MiB + rnd() % (280 * MiB);            /* 20 - 300 MiB */
	return (1 + rnd() % 8) * 4 * MiB;                     /* repeats */
}

typedef struct obj {
	uint64_t id, addr, size;
} obj;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_seg(const void *a, const void *b)
{
	const allocsim_segment_info *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int check_snapshot(const obj *live, size_t nlive, int arena)
{
	allocsim_snapshot s;
	int ok = 1;
	if (allocsim_model_snapshot(cur_, &s))
		return 0;
	if (s.allocated > s.reserved)
		ok = 0;
	if (!arena) {
		allocsim_snapshot_clear(&s);
		return ok;
	}
	uint64_t *starts = malloc((s.nblocks + 1) * sizeof *starts);
	size_t na = 0;
	uint64_t alloc_sum = 0;
	for (size_t i = 0; i < s.nblocks; i++)
		if (s.blocks[i].state == ALLOCSIM_BLOCK_ALLOCATED) {
			starts[na++] = s.blocks[i].addr;
			alloc_sum += s.blocks[i].size;
		}
	if (na != nlive || alloc_sum != s.allocated)
		ok = 0;
	qsort(starts, na, sizeof *starts, cmp_u64);
	/* every live object starts an allocated block of at least its size */
	for (size_t k = 0; k < nlive && ok; k++) {
		uint64_t *hit = bsearch(&live[k].addr, starts, na, sizeof *starts, cmp_u64);
		if (!hit)
			ok = 0;
	}
	for (size_t i = 0; i < s.nblocks && ok; i++)
		if (s.blocks[i].state == ALLOCSIM_BLOCK_ALLOCATED)
			for (size_t k = 0; k < nlive; k++)
				if (live[k].addr == s.blocks[i].addr && live[k].size > s.blocks[i].size)
					ok = 0;
	/* blocks: by segment, contiguous; segments do not overlap */
	uint64_t res = 0;
	for (size_t g = 0; g < s.nsegments && ok; g++) {
		const allocsim_segment_info *sg = &s.segments[g];
		uint64_t at = sg->addr;
		for (uint32_t k = sg->first_block; k < sg->first_block + sg->nblocks; k++) {
			if (s.blocks[k].addr != at)
				ok = 0;
			at += s.blocks[k].size;
		}
		if (!sg->expandable && at != sg->addr + sg->size)
			ok = 0;
		res += sg->size;
	}
	if (res != s.reserved)
		ok = 0;
	qsort(s.segments, s.nsegments, sizeof *s.segments, cmp_seg);
	for (size_t g = 1; g < s.nsegments; g++) {
		/* a segment spans its blocks (for an expandable one, mapped and
		 * unmapped address space together) */
		const allocsim_segment_info *a = &s.segments[g - 1];
		const allocsim_block_info *last = &s.blocks[a->first_block + a->nblocks - 1];
		if (a->nblocks && last->addr + last->size > s.segments[g].addr)
			ok = 0;
	}
	free(starts);
	allocsim_snapshot_clear(&s);
	return ok;
}

static void run(allocsim_model_kind kind, const char *conf, int streams, int nevents)
{
	M_(kind, conf);
	allocsim_events *log = allocsim_events_new();
	obj *live = calloc(4096, sizeof *live);
	size_t nlive = 0;
	uint64_t next_id = 1;
	int bad_check = 0, bad_snap = 0, bad_order = 0;
	char why[256] = "";
	int arena = kind != ALLOCSIM_RAW;
	for (int ev = 0; ev < nevents; ev++) {
		int do_alloc = nlive < 8 || (nlive < 4000 && rnd() % 100 < 52);
		if (do_alloc) {
			uint64_t size = rand_size();
			uint64_t stream = streams ? rnd() % (uint64_t)streams : 0;
			uint64_t id = next_id++ * 4096;
			uint64_t addr = AS(id, size, stream);
			allocsim_events_alloc(log, id, size, stream, now_, (uint32_t)id);
			live[nlive++] = (obj){id, addr, size};
		} else {
			size_t k = rnd() % nlive;
			F(live[k].id);
			allocsim_events_free(log, live[k].id, now_);
			live[k] = live[--nlive];
		}
		if (ev % 53 == 0 || ev < 200) {
			if (allocsim_model_check(cur_, why, sizeof why) && !bad_check++)
				fprintf(stderr, "%s: check failed at event %d: %s\n", conf ? conf : "defaults", ev, why);
			if (!check_snapshot(live, nlive, arena) && !bad_snap++)
				fprintf(stderr, "%s: snapshot check failed at event %d\n", conf ? conf : "defaults", ev);
		}
		uint64_t allocated, reserved;
		allocsim_model_usage(cur_, &allocated, &reserved);
		if (allocated > reserved)
			bad_order++;
	}
	CHECK_EQ_I(bad_check, 0);
	CHECK_EQ_I(bad_snap, 0);
	CHECK_EQ_I(bad_order, 0);
	/* the same log replayed gives the same result */
	allocsim_result direct = *R();
	direct.series = NULL;
	allocsim_result replayed;
	allocsim_config c;
	allocsim_config_default(&c, kind);
	if (conf)
		allocsim_config_parse(&c, conf, NULL, 0);
	CHECK(allocsim_run(log, &c, NULL, &replayed, NULL, 0) == 0);
	CHECK_EQ_U(replayed.peak_reserved, direct.peak_reserved);
	CHECK_EQ_U(replayed.peak_allocated, direct.peak_allocated);
	CHECK_EQ_U(replayed.peak_reserved_event, direct.peak_reserved_event);
	CHECK_EQ_U(replayed.segment_allocs, direct.segment_allocs);
	CHECK_EQ_U(replayed.ooms, direct.ooms);
	CHECK(replayed.nseries > 0 && replayed.nseries <= 1024);
	uint64_t maxr = 0;
	for (size_t i = 0; i < replayed.nseries; i++)
		if (replayed.series[i].reserved > maxr)
			maxr = replayed.series[i].reserved;
	CHECK_EQ_U(maxr, replayed.peak_reserved); /* decimation keeps the peak */
	allocsim_result_clear(&replayed);
	/* the worst moment captured during the run equals a replay to it */
	allocsim_snapshot w1, w2;
	allocsim_result r3;
	CHECK(allocsim_run_explained(log, &c, NULL, &r3, &w1, NULL, 0) == 0);
	CHECK(allocsim_explain(log, &c, r3.peak_reserved_event, &w2, NULL, 0) == 0);
	CHECK_EQ_U(r3.peak_reserved, direct.peak_reserved);
	CHECK_EQ_U(w1.event, r3.peak_reserved_event);
	CHECK_EQ_U(w1.event, w2.event);
	CHECK_EQ_U(w1.reserved, w2.reserved);
	CHECK_EQ_U(w1.reserved, r3.peak_reserved);
	CHECK_EQ_U(w1.allocated, w2.allocated);
	CHECK_EQ_U(w1.free_bytes, w2.free_bytes);
	CHECK_EQ_U(w1.nblocks, w2.nblocks);
	CHECK_EQ_U(w1.nsegments, w2.nsegments);
	CHECK_EQ_U(w1.nsites, w2.nsites);
	CHECK_EQ_U(w1.request_size, w2.request_size);
	for (size_t i = 0; i < w1.nsites && i < w2.nsites; i++) {
		CHECK_EQ_U(w1.sites[i].stack, w2.sites[i].stack);
		CHECK_EQ_U(w1.sites[i].splits, w2.sites[i].splits);
	}
	allocsim_snapshot_clear(&w1);
	allocsim_snapshot_clear(&w2);
	allocsim_result_clear(&r3);
	allocsim_events_destroy(log);

	/* free everything */
	while (nlive)
		F(live[--nlive].id);
	CHECK_EQ_U(cur_allocated(), 0);
	CHECK(allocsim_model_check(cur_, why, sizeof why) == 0);
	allocsim_model_empty_cache(cur_, ++now_);
	if (kind != ALLOCSIM_BFC || (conf && strstr(conf, "garbage_collection:True")))
		CHECK_EQ_U(cur_reserved(), 0);
	CHECK(allocsim_model_check(cur_, why, sizeof why) == 0);
	free(live);
}

int main(void)
{
	run(ALLOCSIM_PYTORCH, NULL, 1, 20000);
	run(ALLOCSIM_PYTORCH, "max_split_size_mb:64", 3, 20000);
	run(ALLOCSIM_PYTORCH, "roundup_power2_divisions:[256:1,512:2,>:8],max_non_split_rounding_mb:40", 1, 10000);
	run(ALLOCSIM_PYTORCH, "expandable_segments:True", 2, 20000);
	run(ALLOCSIM_PYTORCH, "capacity_gb:2", 2, 20000);
	run(ALLOCSIM_PYTORCH, "capacity_gb:2,max_split_size_mb:128,garbage_collection_threshold:0.6", 1, 20000);
	run(ALLOCSIM_PYTORCH, "expandable_segments:True,capacity_gb:2,max_split_size_mb:100", 3, 20000);
	run(ALLOCSIM_BFC, NULL, 1, 20000);
	run(ALLOCSIM_BFC, "memory_limit_mb:3000,garbage_collection:True", 1, 20000);
	run(ALLOCSIM_BFC, "allow_growth:False,capacity_gb:4", 1, 10000);
	run(ALLOCSIM_RAW, "capacity_gb:1", 1, 10000);
	sim_done();
	return check_done();
}
