/*
 * dynamic.c - dynamic reusable space (STAlloc §5.2).
 *
 * Dynamic requests (sizes known only at run time) are grouped by the pair
 * (layer at allocation, layer at free): a HomoLayer group.  The group's time
 * range runs from the start of its first layer to the end of its last one
 * (widened to cover the requests seen in the trace).  Its reusable space is
 * the part of the pool [0, pool) that no static or pinned request occupies at
 * any time of that range.  Static requests overlapping the range are found
 * with the interval index over the working timeline, so a group costs
 * O((k + 1) log n) for k overlapping requests.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct dctx {
	pl_kv *a;
	size_t n, cap;
	const uint64_t *off;
	int oom;
} dctx;

static void grab(uint32_t id, void *ctx)
{
	dctx *d = ctx;
	if (d->n == d->cap) {
		size_t nc = d->cap ? 2 * d->cap : 256;
		pl_kv *na = realloc(d->a, nc * sizeof *na);
		if (!na) {
			d->oom = 1;
			return;
		}
		d->a = na;
		d->cap = nc;
	}
	d->a[d->n++] = (pl_kv){d->off[id], id};
}

static int cmp_kv(const void *x, const void *y)
{
	const pl_kv *a = x, *b = y;
	return a->k < b->k ? -1 : a->k > b->k;
}

static int push_interval(stp_plan *p, uint32_t *cap, uint64_t o, uint64_t sz)
{
	if (p->nintervals == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 64;
		stp_interval *ni = realloc(p->intervals, nc * sizeof *ni);
		if (!ni)
			return -1;
		p->intervals = ni;
		*cap = nc;
	}
	p->intervals[p->nintervals++] = (stp_interval){o, sz};
	return 0;
}

/* peak live bytes of a group's own requests (original times) */
static uint64_t group_peak(const stp_reqs *r, const pl_kv *mem, size_t k)
{
	pl_kv *ev = malloc((4 * k + 1) * sizeof *ev), *tmp = malloc((4 * k + 1) * sizeof *tmp);
	if (!ev || !tmp) {
		free(ev), free(tmp);
		return 0;
	}
	size_t m = 0;
	for (size_t j = 0; j < k; j++) {
		const stp_req *q = &r->req[mem[j].v];
		if (q->t_end > q->t_start) {
			ev[m++] = (pl_kv){q->t_start << 1 | 1, mem[j].v};
			ev[m++] = (pl_kv){q->t_end << 1, mem[j].v};
		} else {
			ev[m++] = (pl_kv){q->t_start << 1 | 1, mem[j].v};
			ev[m++] = (pl_kv){r->period << 1, mem[j].v};
			ev[m++] = (pl_kv){1, mem[j].v};
			ev[m++] = (pl_kv){q->t_end << 1, mem[j].v};
		}
	}
	pl_sort_kv(ev, tmp, m);
	uint64_t live = 0, peak = 0;
	for (size_t j = 0; j < m; j++) {
		if (ev[j].k & 1) {
			live += r->req[ev[j].v].size;
			peak = live > peak ? live : peak;
		} else {
			live -= r->req[ev[j].v].size;
		}
	}
	free(ev), free(tmp);
	return peak;
}

int pl_dynamic(const stp_reqs *r, const pl_work *w, stp_plan *p)
{
	size_t n = w->n, m = 0;
	int rc = -1;
	uint32_t icap = 0, gcap = 0;
	pl_kv *kv = malloc((n + 1) * sizeof *kv), *tmp = malloc((n + 1) * sizeof *tmp);
	uint32_t *ids = malloc((n + 1) * sizeof *ids);
	pl_itree t = {0};
	dctx d = {0};
	d.off = p->offset;
	if (!kv || !tmp || !ids)
		goto out;
	uint32_t ns = 0;
	for (size_t i = 0; i < n; i++) {
		p->group[i] = STP_NO_GROUP;
		if (w->kind[i] == PL_DYNAMIC)
			kv[m++] = (pl_kv){(uint64_t)r->req[i].layer_start << 32 | r->req[i].layer_end, (uint32_t)i};
		else
			ids[ns++] = (uint32_t)i; /* static and pinned: wherever they were put */
	}
	p->stats.dynamic_requests = m;
	if (!m) {
		rc = 0;
		goto out;
	}
	pl_sort_kv(kv, tmp, m);
	if (pl_itree_init(&t, w->s, w->e, n, ids, ns) < 0)
		goto out;
	for (uint32_t j = 0; j < ns; j++)
		pl_itree_set(&t, ids[j], 1);
	uint64_t T = r->period, floor = 0;
	int rotatable = T < UINT32_MAX; /* working times are ticks, not ranks */
	for (size_t j0 = 0; j0 < m;) {
		size_t j1 = j0;
		while (j1 < m && kv[j1].k == kv[j0].k)
			j1++;
		const stp_req *q0 = &r->req[kv[j0].v];
		uint64_t t0 = UINT64_MAX, t1 = 0;
		int whole = 0;
		for (size_t j = j0; j < j1; j++) {
			const stp_req *q = &r->req[kv[j].v];
			if (q->t_end <= q->t_start)
				whole = 1;
			t0 = q->t_start < t0 ? q->t_start : t0;
			t1 = q->t_end > t1 ? q->t_end : t1;
		}
		if (q0->layer_start && q0->layer_start < r->nlayers && r->layers[q0->layer_start].t_begin < t0)
			t0 = r->layers[q0->layer_start].t_begin;
		if (q0->layer_end && q0->layer_end < r->nlayers && r->layers[q0->layer_end].t_end > t1)
			t1 = r->layers[q0->layer_end].t_end;
		if (whole || !rotatable || t1 > T || t0 >= t1) {
			t0 = 0;
			t1 = T;
		}
		if (p->ngroups == gcap) {
			gcap = gcap ? 2 * gcap : 16;
			stp_dyn_group *ng = realloc(p->groups, gcap * sizeof *ng);
			if (!ng)
				goto out;
			p->groups = ng;
		}
		stp_dyn_group *g = &p->groups[p->ngroups];
		memset(g, 0, sizeof *g);
		g->layer_start = q0->layer_start;
		g->layer_end = q0->layer_end;
		g->t_begin = t0;
		g->t_end = t1;
		g->first = p->nintervals;
		g->requests = j1 - j0;
		g->max_bytes = group_peak(r, kv + j0, j1 - j0);
		for (size_t j = j0; j < j1; j++)
			p->group[kv[j].v] = p->ngroups;
		/* static requests live during [t0, t1) of the rotated timeline */
		d.n = 0;
		if (t0 == 0 && t1 == T) {
			pl_itree_query(&t, 0, w->T, grab, &d);
		} else {
			uint64_t a = (t0 + T - w->cut) % T, b = (t1 + T - w->cut) % T;
			if (b == 0)
				b = T;
			if (a < b) {
				pl_itree_query(&t, (uint32_t)a, (uint32_t)b, grab, &d);
			} else {
				pl_itree_query(&t, (uint32_t)a, (uint32_t)T, grab, &d);
				pl_itree_query(&t, 0, (uint32_t)b, grab, &d);
			}
		}
		if (d.oom)
			goto out;
		qsort(d.a, d.n, sizeof *d.a, cmp_kv);
		uint64_t cur = floor;
		for (size_t k = 0; k < d.n; k++) {
			uint64_t o = d.a[k].k, end = o + w->size[d.a[k].v];
			if (o > cur && push_interval(p, &icap, cur, o - cur) < 0)
				goto out;
			if (end > cur)
				cur = end;
		}
		if (p->pool > cur && push_interval(p, &icap, cur, p->pool - cur) < 0)
			goto out;
		g->count = p->nintervals - g->first;
		p->ngroups++;
		j0 = j1;
	}
	rc = 0;
out:
	pl_itree_free(&t);
	free(d.a);
	free(kv);
	free(tmp);
	free(ids);
	return rc;
}
