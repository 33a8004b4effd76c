/*
 * test_watch.c - what a model tells a watcher (allocsim_model_watch) and
 * where it put each object (allocsim_model_block), the two things the HTML
 * viewer draws the models' segments from.  Under a random trace, for
 * PyTorch's caching allocator, its expandable segments and BFC, after
 * every event: the ranges reported mapped and not yet unmapped never
 * overlap and add up to the model's reserved bytes; an unmap gives back
 * mapped bytes only; every live object's block lies in mapped memory
 * (expandable segments: across pages mapped at different times), is at
 * least its size, and no two blocks overlap; empty_cache unmaps
 * everything once all is freed.
 */
#include <stdlib.h>

#include "check.h"
#include "stprof/allocsim.h"

#define MiB (1024ull * 1024ull)
#define NOBJ 64
#define NRANGE 4096

typedef struct range { uint64_t addr, size; uint32_t seg; } range;
static range ranges[NRANGE];
static size_t nranges;
static int bad_unmap;

static void watch(void *ctx, int mapped, uint64_t addr, uint64_t size, uint32_t seg)
{
	(void)ctx;
	if (mapped) {
		if (nranges < NRANGE)
			ranges[nranges++] = (range){addr, size, seg};
		return;
	}
	/* an unmap takes whole mapped ranges or parts of them (expandable pages:
	 * one free block can span pages mapped at different times) */
	uint64_t end = addr + size, taken = 0;
	for (size_t i = 0; i < nranges;) {
		range *r = &ranges[i];
		uint64_t rend = r->addr + r->size;
		if (rend <= addr || r->addr >= end) {
			i++;
			continue;
		}
		uint64_t lo = r->addr > addr ? r->addr : addr, hi = rend < end ? rend : end;
		taken += hi - lo;
		range rest = {end, rend > end ? rend - end : 0, r->seg};
		r->size = r->addr < addr ? addr - r->addr : 0;
		if (rest.size && nranges < NRANGE)
			ranges[nranges++] = rest;
		if (!r->size)
			*r = ranges[--nranges];
		else
			i++;
	}
	bad_unmap += taken != size;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* [a, a + n) is mapped: covered by ranges of one segment */
static int inside(uint64_t a, uint64_t n)
{
	uint64_t at = a, end = a + n;
	for (int progress = 1; at < end && progress;) {
		progress = 0;
		for (size_t i = 0; i < nranges; i++)
			if (ranges[i].addr <= at && at < ranges[i].addr + ranges[i].size) {
				at = ranges[i].addr + ranges[i].size;
				progress = 1;
			}
	}
	return at >= end;
}

static void check_state(allocsim_model *m, const uint64_t *live, const uint64_t *size)
{
	uint64_t sum = 0, alloc, resv;
	for (size_t i = 0; i < nranges; i++) {
		sum += ranges[i].size;
		for (size_t j = i + 1; j < nranges; j++)
			CHECK(ranges[i].addr + ranges[i].size <= ranges[j].addr ||
			      ranges[j].addr + ranges[j].size <= ranges[i].addr);
	}
	allocsim_model_usage(m, &alloc, &resv);
	CHECK_EQ_U(sum, resv);
	uint64_t at[NOBJ], len[NOBJ];
	for (int k = 0; k < NOBJ; k++) {
		len[k] = 0;
		if (!live[k])
			continue;
		len[k] = allocsim_model_block(m, live[k], &at[k]);
		CHECK(len[k] >= size[k]);
		CHECK(inside(at[k], len[k]));
		for (int j = 0; j < k; j++)
			if (len[j])
				CHECK(at[j] + len[j] <= at[k] || at[k] + len[k] <= at[j]);
	}
}

static void run(const char *conf, allocsim_model_kind kind)
{
	allocsim_config c;
	char err[256];
	allocsim_config_default(&c, kind);
	CHECK(allocsim_config_parse(&c, conf, err, sizeof err) == 0);
	allocsim_model *m = allocsim_model_new(&c, err, sizeof err);
	CHECK(m != NULL);
	if (!m)
		return;
	nranges = 0;
	bad_unmap = 0;
	allocsim_model_watch(m, watch, NULL);
	uint64_t live[NOBJ] = {0}, size[NOBJ] = {0}, next = 1;
	for (int step = 0; step < 3000; step++) {
		int k = (int)(rnd() % NOBJ);
		if (live[k]) {
			CHECK(allocsim_model_free(m, live[k], (uint64_t)step) == 0);
			CHECK_EQ_U(allocsim_model_block(m, live[k], NULL), 0);
			live[k] = 0;
		} else {
			uint64_t r = rnd() % 10;
			size[k] = r < 6 ? 1 + rnd() % (512 * 1024) : r < 9 ? MiB + rnd() % (30 * MiB) : 100 * MiB;
			live[k] = next++;
			CHECK(allocsim_model_alloc(m, live[k], size[k], rnd() % 2, (uint64_t)step, 1, NULL) >= 0);
		}
		if (step % 7 == 0)
			allocsim_model_empty_cache(m, (uint64_t)step);
		check_state(m, live, size);
	}
	for (int k = 0; k < NOBJ; k++)
		if (live[k])
			allocsim_model_free(m, live[k], 9999);
	allocsim_model_empty_cache(m, 10000);
	CHECK_EQ_U(nranges, 0);
	CHECK_EQ_U(bad_unmap, 0);
	allocsim_model_destroy(m);
}

int main(int argc, char **argv)
{
	if (argc > 1) { /* one configuration, for debugging */
		run(argv[1], argv[1][0] == 'b' ? ALLOCSIM_BFC : ALLOCSIM_PYTORCH);
		return check_done();
	}
	run("", ALLOCSIM_PYTORCH);
	run("expandable_segments:True", ALLOCSIM_PYTORCH);
	run("", ALLOCSIM_BFC);
	run("garbage_collection:True,capacity_mb:2048", ALLOCSIM_BFC);
	return check_done();
}
