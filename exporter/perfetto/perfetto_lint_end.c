/*
 * perfetto_lint_end.c - the lint's checks that need the whole file: parents
 * of tracks (declared somewhere, no cycles), nesting of slices per track as
 * the trace processor will rebuild it after sorting by timestamp, and flows
 * in time order.  See perfetto_lint.c.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_lint.h"

#define violation pf_lint_violation
#define track_get pf_lint_track

void pf_lint_check_parents(lint *l)
{
	uint32_t stamp = 0;
	for (size_t i = 0; i < l->ntracks; i++) {
		track *t = &l->tracks[i];
		if (!t->declared || !t->has_parent)
			continue;
		track *p = track_get(l, t->parent, 0);
		if (!p || !p->declared) {
			violation(l, STP_LINT_PARENT, t->pkt, t->off,
			          "track %" PRIu64 " has parent %" PRIu64 ", which is never declared", t->uuid, t->parent);
			continue;
		}
	}
	/* Cycles: walk up from each track; a track met twice in one walk. */
	for (size_t i = 0; i < l->ntracks; i++) {
		track *t = &l->tracks[i];
		if (!t->declared || t->walk)
			continue;
		stamp++;
		track *c = t;
		while (c && c->declared && !c->walk) {
			c->walk = stamp;
			c = c->has_parent ? track_get(l, c->parent, 0) : NULL;
		}
		if (c && c->walk == stamp && !c->reported && c->has_parent && c->parent != c->uuid) {
			c->reported = 1;
			violation(l, STP_LINT_PARENT, c->pkt, c->off, "track %" PRIu64 " is its own ancestor", c->uuid);
		}
	}
}

static const sev *g_sevs; /* for qsort */

static int cmp_sev(const void *a, const void *b)
{
	const sev *x = &g_sevs[*(const uint32_t *)a], *y = &g_sevs[*(const uint32_t *)b];
	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	return i < j ? -1 : i > j;
}

static int cmp_fev(const void *a, const void *b)
{
	const fev *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->ix < y->ix ? -1 : x->ix > y->ix;
}

static int cmp_sev_file(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const sev *x = &g_sevs[i], *y = &g_sevs[j];
	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Pairs BEGIN/END per track twice: in file order (what the writer meant)
 * and sorted by timestamp, ties in file order (what the trace processor
 * builds).  Every slice must end at the same time both ways. */
void pf_lint_check_nesting(lint *l)
{
	size_t n = l->nsevs;
	if (!n)
		return;
	const sev *v = l->sevs;
	uint64_t *end_file = malloc(n * sizeof *end_file);
	uint32_t *byfile = malloc(n * sizeof *byfile);
	uint32_t *bytime = malloc(n * sizeof *bytime);
	uint32_t *stack = malloc(n * sizeof *stack);
	uint8_t *bad = calloc(n, 1);
	if (!end_file || !byfile || !bytime || !stack || !bad) {
		l->oom = 1;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		byfile[i] = bytime[i] = (uint32_t)i;
		end_file[i] = UINT64_MAX;
	}
	g_sevs = v;
	qsort(byfile, n, sizeof *byfile, cmp_sev_file);
	qsort(bytime, n, sizeof *bytime, cmp_sev);
	for (size_t i = 0; i < n;) {
		uint32_t tr = v[byfile[i]].track;
		size_t sp = 0;
		for (; i < n && v[byfile[i]].track == tr; i++) {
			uint32_t e = byfile[i];
			if (v[e].type == 1) {
				stack[sp++] = e;
				continue;
			}
			if (!sp) {
				bad[e] = 1;
				violation(l, STP_LINT_NESTING, v[e].pkt, v[e].off,
				          "an END on track %" PRIu64 " with no slice open on it", l->tracks[tr].uuid);
				continue;
			}
			uint32_t b = stack[--sp];
			end_file[b] = v[e].ts;
			if (v[e].ts < v[b].ts) {
				bad[b] = bad[e] = 1;
				violation(l, STP_LINT_NESTING, v[e].pkt, v[e].off,
				          "an END at %" PRIu64 " before its BEGIN at %" PRIu64 " (packet %u)", v[e].ts,
				          v[b].ts, v[b].pkt);
			}
		}
		while (sp) {
			uint32_t b = stack[--sp];
			bad[b] = 1;
			violation(l, STP_LINT_NESTING, v[b].pkt, v[b].off,
			          "a slice on track %" PRIu64 " that never ends", l->tracks[tr].uuid);
		}
	}
	for (size_t i = 0; i < n;) {
		uint32_t tr = v[bytime[i]].track;
		size_t sp = 0;
		for (; i < n && v[bytime[i]].track == tr; i++) {
			uint32_t e = bytime[i];
			if (v[e].type == 1) {
				stack[sp++] = e;
				continue;
			}
			if (!sp) {
				if (!bad[e])
					violation(l, STP_LINT_NESTING, v[e].pkt, v[e].off,
					          "once sorted by time, this END on track %" PRIu64 " closes nothing",
					          l->tracks[tr].uuid);
				bad[e] = 1;
				continue;
			}
			uint32_t b = stack[--sp];
			if (!bad[b] && end_file[b] != v[e].ts) {
				bad[b] = 1;
				violation(l, STP_LINT_NESTING, v[b].pkt, v[b].off,
				          "slices overlap without nesting on track %" PRIu64 ": this slice ends at %" PRIu64
				          " as written, but at %" PRIu64 " once sorted by time",
				          l->tracks[tr].uuid, end_file[b], v[e].ts);
			}
		}
		while (sp) {
			uint32_t b = stack[--sp];
			if (!bad[b])
				violation(l, STP_LINT_NESTING, v[b].pkt, v[b].off,
				          "once sorted by time, this slice on track %" PRIu64 " never ends",
				          l->tracks[tr].uuid);
			bad[b] = 1;
		}
	}
out:
	free(end_file);
	free(byfile);
	free(bytime);
	free(stack);
	free(bad);
}

void pf_lint_check_flows(lint *l)
{
	if (!l->nfevs)
		return;
	qsort(l->fevs, l->nfevs, sizeof *l->fevs, cmp_fev);
	pf_map active; /* flow id -> index of its source in fevs, count in high bits */
	memset(&active, 0, sizeof active);
	uint64_t *count = calloc(l->nfevs, sizeof *count);
	if (!count) {
		l->oom = 1;
		return;
	}
	for (size_t i = 0; i < l->nfevs; i++) {
		const fev *f = &l->fevs[i];
		uint64_t *src = pf_map_get(&active, f->id);
		if (!f->term) {
			if (!src) {
				if (pf_map_put(&active, f->id, i) < 0) {
					l->oom = 1;
					break;
				}
				count[i] = 1;
			} else {
				count[*src]++;
			}
		} else if (!src) {
			violation(l, STP_LINT_FLOW, f->pkt, f->off,
			          "flow %" PRIu64 " is terminated here but no event began it before (by time)", f->id);
		} else {
			pf_map_del(&active, f->id);
		}
	}
	for (size_t j = 0; j < active.cap; j++) {
		if (active.keys[j] == UINT64_MAX)
			continue;
		const fev *f = &l->fevs[active.vals[j]];
		if (count[active.vals[j]] < 2)
			violation(l, STP_LINT_FLOW, f->pkt, f->off, "flow %" PRIu64 " begins here and goes nowhere", f->id);
	}
	if (active.has_max && count[active.max_val] < 2) {
		const fev *f = &l->fevs[active.max_val];
		violation(l, STP_LINT_FLOW, f->pkt, f->off, "flow %" PRIu64 " begins here and goes nowhere", f->id);
	}
	pf_map_free(&active);
	free(count);
}
