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
 * O((k + 1) log n) for k overlapping requests.  Shortcut: a group whose range
 * contains a tick where the static requests fill the whole pool has no
 * reusable space at all (a prefix count of such ticks answers in O(1)); in a
 * tight plan that is most groups.
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
	uint32_t *full = NULL;
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
	/* full[t]: ticks before t where live static bytes == pool */
	full = calloc((size_t)w->T + 2, sizeof *full);
	uint64_t *diff = calloc((size_t)w->T + 2, sizeof *diff);
	if (!full || !diff) {
		free(diff);
		goto out;
	}
	for (uint32_t j = 0; j < ns; j++) {
		diff[w->s[ids[j]]] += w->size[ids[j]];
		diff[w->e[ids[j]]] -= w->size[ids[j]];
	}
	uint64_t live = 0;
	for (uint32_t x = 0; x < w->T; x++) {
		live += diff[x];
		full[x + 1] = full[x] + (live >= p->pool);
	}
	free(diff);
	if (pl_itree_init(&t, w->s, w->e, n, ids, ns) < 0)
		goto out;
	for (uint32_t j = 0; j < ns; j++)
		pl_itree_set(&t, ids[j], 1);
	uint64_t T = r->period, floor = 0;
	int rotatable = !w->ranked; /* working times are ticks, not ranks (work.c) */
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
		uint64_t ra = 0, rb = w->T;
		if (!(t0 == 0 && t1 == T)) {
			ra = (t0 + T - w->cut) % T;
			rb = (t1 + T - w->cut) % T;
			if (rb == 0)
				rb = T;
		}
		uint32_t nfull = ra < rb ? full[rb] - full[ra] : full[w->T] - full[ra] + full[rb];
		if (nfull) {
			g->count = 0;
			p->ngroups++;
			j0 = j1;
			continue;
		}
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
		if (d.n)
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
	free(full);
	return rc;
}

typedef struct live_blk {
	uint64_t off, size;
} live_blk;

int pl_dynamic_replay(const stp_reqs *r, stp_plan *p)
{
	size_t n = r->n, m = 0;
	if (!p->stats.dynamic_requests)
		return 0;
	pl_kv *ev = malloc((2 * n + 1) * sizeof *ev), *tmp = malloc((2 * n + 1) * sizeof *tmp);
	live_blk *lv = malloc((n + 1) * sizeof *lv);
	uint64_t *where = malloc((n + 1) * sizeof *where);
	if (!ev || !tmp || !lv || !where) {
		free(ev), free(tmp), free(lv), free(where);
		return -1;
	}
	uint64_t fallback = 0, peak = 0, fit = 0;
	for (size_t i = 0; i < n; i++) {
		const stp_req *q = &r->req[i];
		if (!(q->flags & STP_REQ_DYNAMIC) || p->group[i] == STP_NO_GROUP)
			continue;
		if (q->t_end <= q->t_start) {
			/* live across the iteration boundary: counted as fallback all along */
			fallback += pl_align_up(q->size, p->align);
			continue;
		}
		ev[m++] = (pl_kv){q->t_start << 1 | 1, (uint32_t)i};
		ev[m++] = (pl_kv){q->t_end << 1, (uint32_t)i};
	}
	peak = fallback;
	pl_sort_kv(ev, tmp, m);
	size_t nl = 0;
	for (size_t j = 0; j < m; j++) {
		uint32_t i = ev[j].v;
		uint64_t sz = pl_align_up(r->req[i].size, p->align);
		if (!(ev[j].k & 1)) {
			if (where[i] == STP_NO_OFFSET) {
				fallback -= sz;
				continue;
			}
			size_t lo = 0, hi = nl;
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				if (lv[mid].off < where[i])
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < nl && lv[lo].off == where[i]) {
				memmove(&lv[lo], &lv[lo + 1], (nl - lo - 1) * sizeof *lv);
				nl--;
			}
			continue;
		}
		/* best fit over the group's intervals minus the live dynamic blocks */
		const stp_dyn_group *G = &p->groups[p->group[i]];
		uint64_t best = STP_NO_OFFSET, best_len = UINT64_MAX;
		for (uint32_t k = 0; k < G->count; k++) {
			uint64_t a = p->intervals[G->first + k].offset, b = a + p->intervals[G->first + k].size;
			size_t lo = 0, hi = nl;
			while (lo < hi) { /* first live block ending after a */
				size_t mid = (lo + hi) / 2;
				if (lv[mid].off + lv[mid].size <= a)
					lo = mid + 1;
				else
					hi = mid;
			}
			uint64_t cur = a;
			for (size_t x = lo; cur < b; x++) {
				uint64_t gap_end = x < nl && lv[x].off < b ? lv[x].off : b;
				if (gap_end > cur && gap_end - cur >= sz && gap_end - cur < best_len) {
					best = cur;
					best_len = gap_end - cur;
				}
				if (x >= nl || lv[x].off >= b)
					break;
				if (lv[x].off + lv[x].size > cur)
					cur = lv[x].off + lv[x].size;
			}
		}
		where[i] = best;
		if (best == STP_NO_OFFSET) {
			fallback += sz;
			if (fallback > peak)
				peak = fallback;
			continue;
		}
		fit++;
		size_t lo = 0, hi = nl;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (lv[mid].off < best)
				lo = mid + 1;
			else
				hi = mid;
		}
		memmove(&lv[lo + 1], &lv[lo], (nl - lo) * sizeof *lv);
		lv[lo] = (live_blk){best, sz};
		nl++;
	}
	p->stats.dynamic_fit = fit;
	p->stats.dynamic_fallback_peak = peak;
	free(ev), free(tmp), free(lv), free(where);
	return 0;
}
