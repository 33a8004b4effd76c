/*
 * simsites.c - the allocator models' worst-moment call sites, by the
 * report's call sites.  The models count by stack id; several stacks make
 * one call site (the site is the path cut at --site-depth), so the same
 * "site #N" appeared on several rows with different figures.  Here rows of
 * one site are merged (figures summed, the first stack kept as its name),
 * and the order (split free bytes, pinning bytes, splits) restored.
 *
 * Invariant: after det_sim_merge_sites no two rows of a snapshot name the
 * same call site; rows whose stack has no site keep their own row.
 */
#include <stdlib.h>

#include "det.h"

static uint32_t internal_site(const stp_det *d, uint32_t stack)
{
	if (stack >= d->site_of_stack_cap || !d->site_of_stack[stack])
		return UINT32_MAX;
	return d->site_of_stack[stack] - 1;
}

/* Rows sorted by (site, stack) so that one site's rows are adjacent. */
typedef struct keyed {
	uint32_t site;
	allocsim_site row;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return x->row.stack < y->row.stack ? -1 : x->row.stack > y->row.stack;
}

static void merge_snapshot(const stp_det *d, allocsim_snapshot *s)
{
	if (s->nsites < 2)
		return;
	keyed *k = malloc(s->nsites * sizeof *k);
	if (!k)
		return; /* left as the models wrote it */
	for (size_t i = 0; i < s->nsites; i++)
		k[i] = (keyed){internal_site(d, s->sites[i].stack), s->sites[i]};
	qsort(k, s->nsites, sizeof *k, cmp_keyed);
	size_t n = 0;
	for (size_t i = 0; i < s->nsites; i++) {
		if (n && k[i].site != UINT32_MAX && k[i].site == k[n - 1].site) {
			allocsim_site *o = &k[n - 1].row;
			o->splits += k[i].row.splits;
			o->split_free_bytes += k[i].row.split_free_bytes;
			o->pinning_bytes += k[i].row.pinning_bytes;
			o->live_bytes += k[i].row.live_bytes;
			continue;
		}
		k[n++] = k[i];
	}
	for (size_t i = 0; i < n; i++)
		s->sites[i] = k[i].row;
	s->nsites = n;
	free(k);
	qsort(s->sites, s->nsites, sizeof *s->sites, allocsim_site_cmp);
}

void det_sim_merge_sites(stp_det *d)
{
	for (size_t i = 0; i < d->sim.ndevices; i++)
		if (d->sim.devices[i].has_worst)
			merge_snapshot(d, &d->sim.devices[i].worst);
}
