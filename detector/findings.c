/*
 * findings.c - findings aggregated per (pattern, call site, what explains
 * it): how many objects matched, their bytes, the summed waste (bytes x
 * ns), the largest inefficiency distance and the worst instance (the one
 * with the most waste).  Per-pattern totals are counted when the result is
 * built (result.c: a library's site is only known then).  Memory grows with
 * the sites that have findings, not with the objects.
 */
#include <stdlib.h>

#include "det.h"

/* The key of a finding in d->fidx. */
static uint64_t finding_key(uint32_t site, stp_det_expect why, stp_det_pattern pat)
{
	return ((uint64_t)site << 12 | (uint64_t)why << 8 | (uint64_t)pat) + 1;
}

void det_finding_add_x(stp_det *d, stp_det_pattern pat, stp_det_expect why, uint32_t site, uint64_t objects,
                       uint64_t bytes, double waste, uint64_t distance, const stp_det_instance *inst)
{
	if (d->ko_seq && objects == 1 && inst->alloc_seq && why == STP_EXPECT_NONE)
		det_ko_mark(d, inst->alloc_seq, pat);
	uint64_t key = finding_key(site, why, pat), idx;
	if (!det_map_get(&d->fidx, key, &idx)) {
		if (d->nfacc == d->facc_cap) {
			uint32_t nc = d->facc_cap ? d->facc_cap * 2 : 64;
			det_finding_acc *n = realloc(d->facc, nc * sizeof *n);
			if (!n)
				return;
			d->facc = n;
			d->facc_cap = nc;
		}
		idx = d->nfacc;
		if (det_map_put(&d->fidx, key, idx, NULL) < 0)
			return;
		d->facc[d->nfacc++] =
			(det_finding_acc){.f = {.pattern = pat, .site = site, .expected = (uint8_t)why}, .worst_waste = -1};
	}
	det_finding_acc *a = &d->facc[idx];
	a->f.objects += objects;
	a->f.bytes += bytes;
	a->f.waste_byte_ns += waste;
	if (distance > a->f.max_distance)
		a->f.max_distance = distance;
	if (waste > a->worst_waste) {
		a->worst_waste = waste;
		a->f.worst = *inst;
	}
}

void det_finding_add(stp_det *d, stp_det_pattern pat, uint32_t site, uint64_t objects, uint64_t bytes,
                     double waste, uint64_t distance, const stp_det_instance *inst)
{
	det_finding_add_x(d, pat, STP_EXPECT_NONE, site, objects, bytes, waste, distance, inst);
}

void det_finding_leak_span(stp_det *d, uint32_t site, uint32_t iters, int64_t first, int64_t last, int after_loop)
{
	uint64_t idx;
	if (!det_map_get(&d->fidx, finding_key(site, STP_EXPECT_NONE, STP_PAT_LEAK), &idx))
		return;
	stp_det_finding *f = &d->facc[idx].f;
	f->leak_iters = iters;
	f->leak_first_iter = first;
	f->leak_last_iter = last;
	if (after_loop)
		f->leak_freed_after++;
}
