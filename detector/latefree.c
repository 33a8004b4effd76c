/*
 * latefree.c - the host-trace late-free heuristic (no access events needed).
 *
 * DrGPUM's late deallocation needs the last access of an object; a host
 * trace has none.  What it has is phases: an object allocated in phase K
 * (a phase name and micro-batch, or "between phases") normally dies a
 * certain number of segments later (transients in K itself, activations in
 * the backward phase).  An object is freed late when it outlives every
 * other call site's objects allocated in K:
 *
 *   rel(o)     = segment(free) - segment(alloc)   (segments: docs/report.md)
 *   R(s, K)    = max over the OTHER sites s' allocating in K of the
 *                late_free_quantile (0.9) of rel over s' objects
 *   late       rel(o) >= R(s, K) + late_free_min_segments (2: a whole
 *                phase and the gap after it), with at least
 *                late_free_min_peers (5) objects from the other sites
 *
 * Candidates are freed objects allocated and freed inside the loop that do
 * not cover a whole iteration (those are persistent state, not late frees),
 * neither end in an iteration the collector folded (no phases there).
 * Distance = rel - R segments.  Waste = size x lifetime x (rel - R) / rel
 * summed (the share of the lifetime past the expected death; exact for the
 * worst instance, whose wasted interval starts at the end of segment
 * segment(alloc) + R).
 *
 * Memory: one entry per (site, phase key, rel) seen, not per object.
 */
#include <stdlib.h>
#include <string.h>

#include "det.h"

typedef struct lf_entry {
	uint32_t site, key, rel;
	uint64_t count, bytes;
	double life_bytes;    /* sum of size x lifetime */
	double worst;         /* the worst instance's size x lifetime */
	stp_det_instance inst;
	uint32_t inst_seg;    /* its allocation segment */
	int late;             /* a finding: its objects are late frees */
	uint32_t orig;        /* its index before the sort (objinfo.c's ko_lf) */
	uint32_t space;       /* the memory space of its objects */
} lf_entry;

struct det_latefree {
	uint32_t *seg_key;    /* segment -> phase key (0 = between phases) */
	uint32_t nseg;
	lf_entry *e;
	uint32_t ne, cap;
	det_map idx;          /* (site, key, rel) -> entry */
};

int det_latefree_init(stp_det *d)
{
	struct det_latefree *lf = calloc(1, sizeof *lf);
	if (!lf)
		return -1;
	d->lf = lf;
	lf->nseg = d->ncuts + 1;
	lf->seg_key = calloc(lf->nseg, sizeof *lf->seg_key);
	det_map keys;
	if (!lf->seg_key || det_map_init(&lf->idx, 64) < 0 || det_map_init(&keys, 16) < 0)
		return -1;
	uint32_t nkeys = 0;
	for (uint32_t i = 0; i < d->nphases; i++) {
		const stp_det_phase *p = &d->phases[i];
		uint64_t k = ((uint64_t)(uintptr_t)p->name * 0x9e3779b97f4a7c15ull) ^ (uint64_t)p->micro_batch, id;
		if (!det_map_get(&keys, k, &id)) {
			id = ++nkeys;
			if (det_map_put(&keys, k, id, NULL) < 0) {
				det_map_destroy(&keys);
				return -1;
			}
		}
		uint32_t jb = det_count_le(d->cuts, d->ncuts, p->begin_seq);
		uint32_t je = det_count_le(d->cuts, d->ncuts, p->end_seq);
		for (uint32_t j = jb; j < je && j < lf->nseg; j++)
			lf->seg_key[j] = (uint32_t)id;
	}
	det_map_destroy(&keys);
	return 0;
}

void det_latefree_free(stp_det *d)
{
	struct det_latefree *lf = d->lf;
	if (!lf)
		return;
	free(lf->seg_key);
	free(lf->e);
	det_map_destroy(&lf->idx);
	free(lf);
	d->lf = NULL;
}

int det_latefree_object(stp_det *d, const det_obj *o, uint64_t free_ns, uint32_t ib_free, uint32_t seg_free,
                        uint32_t *entry)
{
	*entry = UINT32_MAX;
	struct det_latefree *lf = d->lf;
	uint32_t n2 = 2 * d->niters;
	if (!lf || o->ib == 0 || o->ib >= n2 || ib_free == 0 || ib_free >= n2 || o->seg >= lf->nseg)
		return 0;
	/* covers a whole iteration: persistent state, not a late free */
	if (ib_free >= ((o->ib + 1) / 2) * 2 + 2)
		return 0;
	/* allocated or freed in a folded iteration (FOLD events): its phases
	 * and most of its peers are counters, the segments say nothing */
	if (((o->ib & 1) && d->iters[o->ib / 2].folded) || ((ib_free & 1) && d->iters[ib_free / 2].folded))
		return 0;
	uint32_t rel = seg_free - o->seg;
	if (rel > 0xffff)
		rel = 0xffff;
	uint32_t key = lf->seg_key[o->seg];
	uint64_t k = ((uint64_t)o->site << 40) ^ ((uint64_t)key << 16) ^ rel, i;
	k = k * 2 + 1;
	if (!det_map_get(&lf->idx, k, &i)) {
		if (lf->ne == lf->cap) {
			uint32_t nc = lf->cap ? lf->cap * 2 : 256;
			lf_entry *ne = realloc(lf->e, nc * sizeof *ne);
			if (!ne)
				return -1;
			lf->e = ne;
			lf->cap = nc;
		}
		i = lf->ne++;
		lf->e[i] = (lf_entry){.site = o->site, .key = key, .rel = rel, .worst = -1, .orig = (uint32_t)i,
		                      .space = o->space};
		if (det_map_put(&lf->idx, k, i, NULL) < 0)
			return -1;
	}
	lf_entry *e = &lf->e[i];
	*entry = (uint32_t)i;
	double lb = (double)det_obj_bytes(o) * (double)(free_ns - o->alloc_ns);
	e->count++;
	e->bytes += det_obj_bytes(o);
	e->life_bytes += lb;
	if (lb > e->worst) {
		e->worst = lb;
		e->inst_seg = o->seg;
		e->inst = (stp_det_instance){.alloc_seq = o->alloc_seq, .alloc_ns = o->alloc_ns, .free_ns = free_ns,
		                             .addr = o->addr, .size = o->size, .other_site = UINT32_MAX};
	}
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const lf_entry *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return x->rel < y->rel ? -1 : x->rel > y->rel;
}

typedef struct site_q {
	uint32_t site, q;
	uint64_t count;
} site_q;

int det_latefree_finish(stp_det *d)
{
	struct det_latefree *lf = d->lf;
	if (!lf || !lf->ne)
		return 0;
	qsort(lf->e, lf->ne, sizeof *lf->e, cmp_entry);
	site_q *sq = malloc(lf->ne * sizeof *sq);
	if (!sq)
		return -1;
	for (uint32_t a = 0; a < lf->ne;) {
		uint32_t b = a;
		while (b < lf->ne && lf->e[b].key == lf->e[a].key)
			b++;
		/* [a, b): one phase key; per site its quantile of rel */
		uint32_t ns = 0;
		uint64_t total = 0;
		for (uint32_t i = a; i < b;) {
			uint32_t j = i;
			uint64_t c = 0;
			while (j < b && lf->e[j].site == lf->e[i].site)
				c += lf->e[j++].count;
			uint64_t need = (uint64_t)((double)c * d->opt.late_free_quantile + 0.999999), cum = 0;
			uint32_t q = lf->e[j - 1].rel;
			for (uint32_t k = i; k < j; k++) {
				cum += lf->e[k].count;
				if (cum >= need) {
					q = lf->e[k].rel;
					break;
				}
			}
			sq[ns++] = (site_q){lf->e[i].site, q, c};
			total += c;
			i = j;
		}
		/* the two highest quantiles: "max over the other sites" */
		uint32_t q1 = 0, q2 = 0, s1 = UINT32_MAX;
		for (uint32_t i = 0; i < ns; i++) {
			if (sq[i].q >= q1) {
				q2 = q1;
				q1 = sq[i].q;
				s1 = sq[i].site;
			} else if (sq[i].q > q2) {
				q2 = sq[i].q;
			}
		}
		uint32_t si = 0;
		for (uint32_t i = a; i < b; i++) {
			lf_entry *e = &lf->e[i];
			while (sq[si].site != e->site)
				si++;
			uint32_t r = e->site == s1 ? q2 : q1;
			uint64_t peers = total - sq[si].count;
			if (ns < 2 || peers < d->opt.late_free_min_peers || e->rel < r + d->opt.late_free_min_segments)
				continue;
			uint32_t exp_seg = e->inst_seg + r;
			uint64_t exp_ns = exp_seg < d->ncuts ? d->cut_ns[exp_seg] : d->end_ns;
			stp_det_instance in = e->inst;
			in.distance = e->rel - r;
			in.at_ns = exp_ns < in.free_ns ? exp_ns : in.free_ns;
			in.until_ns = in.free_ns;
			double share = (double)(e->rel - r) / (double)e->rel;
			/* objects under 1/1024 of their space's peak: too small to matter */
			int small = in.size < d->spaces[e->space].peak_bytes / 1024;
			e->late = !small;
			det_finding_add_x(d, STP_PAT_LATE_FREE, small ? STP_EXPECT_NEGLIGIBLE : STP_EXPECT_NONE, e->site, e->count,
			                  e->bytes, e->life_bytes * share, in.distance, &in);
		}
		a = b;
	}
	free(sq);
	/* the exporter's per-object patterns: objects counted in a late entry */
	if (d->ko_lf && lf->ne) {
		uint8_t *late = calloc(lf->ne, 1);
		if (!late)
			return -1;
		for (uint32_t i = 0; i < lf->ne; i++)
			late[lf->e[i].orig] = (uint8_t)lf->e[i].late;
		for (uint64_t k = 0; k < d->nko; k++)
			if (d->ko_lf[k] != UINT32_MAX && late[d->ko_lf[k]])
				d->ko_info[k] |= (uint16_t)(1u << (4 + STP_PAT_LATE_FREE));
		free(late);
	}
	return 0;
}
