/*
 * allocsim_recommend.c - tries PyTorch allocator settings on a recorded
 * event log and keeps the ones that help.
 *
 * Candidates, each simulated on the whole log:
 *   1. one knob at a time: expandable_segments:True; max_split_size_mb in
 *      {20, 128, 512} (only values below the largest segment the base run
 *      made: a larger one changes nothing); roundup_power2_divisions in
 *      {4, 8};
 *   2. the best improving value of each knob, combined in pairs and all three.
 * A candidate is better when it has fewer OOMs, then a lower peak reserved.
 * A candidate stops as soon as it cannot enter the best `max`: when its
 * OOMs pass the base's, or (no OOM in the base) when its reserved reaches
 * the base's peak, or the max-th best peak found so far.  Bad candidates
 * therefore cost a fraction of a replay.
 */
#include <string.h>

#include "allocsim_internal.h"

typedef struct cand {
	allocsim_config c;
	allocsim_result r;
	int ran, better;
	int knobs; /* settings changed from the base */
} cand;

static int better(const allocsim_result *a, const allocsim_result *b)
{
	if (a->aborted)
		return 0;
	if (a->ooms != b->ooms)
		return a->ooms < b->ooms;
	return a->peak_reserved < b->peak_reserved;
}

typedef struct bar {
	uint64_t best[8]; /* the smallest finished peaks (no OOM), ascending */
	size_t n, max;
} bar;

static uint64_t bar_limit(const bar *b, const allocsim_result *base_r)
{
	if (base_r->ooms)
		return 0;
	/* a candidate is better only below the base's peak: one that reaches
	 * it can stop there (equal is not better) */
	uint64_t lim = base_r->peak_reserved ? base_r->peak_reserved - 1 : 0;
	if (b->n >= b->max && b->best[b->max - 1] < lim)
		lim = b->best[b->max - 1];
	return lim;
}

static void bar_add(bar *b, const allocsim_result *r)
{
	if (r->aborted || r->ooms)
		return;
	if (b->n == b->max && r->peak_reserved >= b->best[b->n - 1])
		return;
	size_t i = b->n < b->max ? b->n++ : b->n - 1;
	while (i > 0 && b->best[i - 1] > r->peak_reserved) {
		b->best[i] = b->best[i - 1];
		i--;
	}
	b->best[i] = r->peak_reserved;
}

static bar g_bar; /* per allocsim_recommend call (not reentrant) */

static void run_cand(const allocsim_events *e, const allocsim_result *base_r, cand *k)
{
	allocsim_run_opts o = {.max_samples = 2,
	                       .abort_above = bar_limit(&g_bar, base_r),
	                       .abort_ooms_at = base_r->ooms + 1};
	if (allocsim_run(e, &k->c, &o, &k->r, NULL, 0)) {
		memset(&k->r, 0, sizeof k->r);
		k->r.aborted = 1;
	}
	allocsim_result_clear(&k->r);
	k->ran = 1;
	k->better = better(&k->r, base_r);
	bar_add(&g_bar, &k->r);
}

static int same_config(const allocsim_config *a, const allocsim_config *b)
{
	return a->expandable_segments == b->expandable_segments && a->max_split_size == b->max_split_size &&
	       !memcmp(a->roundup_power2_divisions, b->roundup_power2_divisions, sizeof a->roundup_power2_divisions);
}

static int cmp_cand(const void *x, const void *y)
{
	const cand *a = x, *b = y;
	if (a->better != b->better)
		return a->better ? -1 : 1;
	if (a->r.ooms != b->r.ooms)
		return a->r.ooms < b->r.ooms ? -1 : 1;
	if (a->r.peak_reserved != b->r.peak_reserved)
		return a->r.peak_reserved < b->r.peak_reserved ? -1 : 1;
	if (a->knobs != b->knobs)
		return a->knobs < b->knobs ? -1 : 1; /* the simpler change first */
	return 0;
}

static int same_effect(const cand *a, const allocsim_recommendation *o)
{
	return a->r.peak_reserved == o->peak_reserved && a->r.ooms == o->ooms &&
	       a->r.peak_allocated == o->peak_allocated;
}

size_t allocsim_recommend(const allocsim_events *e, const allocsim_config *base, const allocsim_result *base_r,
                          allocsim_recommendation *out, size_t max)
{
	if (base->model != ALLOCSIM_PYTORCH || !max)
		return 0;
	enum { MAXC = 24 };
	cand *k = calloc(MAXC, sizeof *k);
	if (!k)
		return 0;
	size_t n = 0;
	int best_e = -1, best_m = -1, best_r = -1;
	memset(&g_bar, 0, sizeof g_bar);
	g_bar.max = max < 8 ? max : 8;

	if (!base->expandable_segments) {
		k[n].c = *base;
		k[n].c.expandable_segments = 1;
		k[n].knobs = 1;
		run_cand(e, base_r, &k[n]);
		if (k[n].better)
			best_e = (int)n;
		n++;
	}
	static const uint64_t split_mb[] = {20, 128, 512};
	for (size_t i = 0; i < sizeof split_mb / sizeof *split_mb; i++) {
		uint64_t v = split_mb[i] * ALLOCSIM_MIB;
		if (v >= base_r->largest_segment || v == base->max_split_size || v < base->large_segment_size)
			continue;
		k[n].c = *base;
		k[n].c.max_split_size = v;
		k[n].knobs = 1;
		run_cand(e, base_r, &k[n]);
		if (k[n].better && (best_m < 0 || cmp_cand(&k[n], &k[best_m]) < 0))
			best_m = (int)n;
		n++;
	}
	static const uint32_t divs[] = {4, 8};
	for (size_t i = 0; i < sizeof divs / sizeof *divs; i++) {
		k[n].c = *base;
		for (int j = 0; j < ALLOCSIM_POW2_INTERVALS; j++)
			k[n].c.roundup_power2_divisions[j] = divs[i];
		if (same_config(&k[n].c, base))
			continue;
		k[n].knobs = 1;
		run_cand(e, base_r, &k[n]);
		if (k[n].better && (best_r < 0 || cmp_cand(&k[n], &k[best_r]) < 0))
			best_r = (int)n;
		n++;
	}
	/* combinations of the best value of each knob */
	int best[3] = {best_e, best_m, best_r};
	for (int mask = 3; mask < 8; mask++) {
		int bits = 0, ok = 1;
		allocsim_config c = *base;
		for (int j = 0; j < 3; j++)
			if (mask & (1 << j)) {
				bits++;
				if (best[j] < 0) {
					ok = 0;
					break;
				}
				if (j == 0)
					c.expandable_segments = 1;
				else if (j == 1)
					c.max_split_size = k[best[j]].c.max_split_size;
				else
					memcpy(c.roundup_power2_divisions, k[best[j]].c.roundup_power2_divisions,
					       sizeof c.roundup_power2_divisions);
			}
		if (!ok || bits < 2 || n >= MAXC)
			continue;
		k[n].c = c;
		k[n].knobs = bits;
		run_cand(e, base_r, &k[n]);
		n++;
	}
	qsort(k, n, sizeof *k, cmp_cand);
	size_t w = 0;
	for (size_t i = 0; i < n && w < max; i++) {
		if (!k[i].better)
			break;
		int dup = 0;
		for (size_t j = 0; j < w; j++)
			dup |= same_effect(&k[i], &out[j]);
		if (dup)
			continue; /* a simpler setting already does the same */
		allocsim_recommendation *o = &out[w++];
		memset(o, 0, sizeof *o);
		allocsim_config c = k[i].c;
		c.capacity = 0;
		c.name[0] = 0;
		allocsim_config_format(&c, o->settings, sizeof o->settings);
		o->peak_allocated = k[i].r.peak_allocated;
		o->peak_reserved = k[i].r.peak_reserved;
		o->efficiency = k[i].r.efficiency;
		o->ooms = k[i].r.ooms;
		o->alloc_retries = k[i].r.alloc_retries;
		o->reserved_delta = (int64_t)k[i].r.peak_reserved - (int64_t)base_r->peak_reserved;
		o->efficiency_delta = k[i].r.efficiency - base_r->efficiency;
	}
	free(k);
	return w;
}
