/*
 * stalloc.c - the STAlloc static plan (paper §5.1), in four steps:
 *
 *  1. Pinned requests (persistent, or live across the cyclic cut) are
 *     stacked at the bottom of the pool, in request order.
 *  2. HomoPhase groups: static requests that start in phase P and end in a
 *     different phase Q form group (P, Q).  All of them are live at the end
 *     of P, so the group's local plan stacks them contiguously; the stack is
 *     ordered by free time, latest at the bottom, so the space a group frees
 *     opens from its top down.  Requests within one phase (transient) and
 *     requests with no phase stay single units.
 *  3. Fusion: group (P, Q) and group (Q, R) are fused by inserting the
 *     smaller's requests into the larger's plan where the larger's requests
 *     have already been freed (or are not yet allocated), scanning addresses
 *     upward and taking the earliest-starting request that fits (paper's
 *     procedure).  The fusion is kept only when the fused plan's TMP
 *     (time-memory product) is higher than the weighted average of the two.
 *  4. HomoSize: every unit (group plan or single request) in descending size,
 *     ties by start time, is placed into the free rectangles (rects.c): the
 *     free intervals of larger groups' layers first, else a new memory layer
 *     (Algorithm 1).
 *
 * Offsets are absolute.  During steps 2-3 off[] holds a group member's
 * offset relative to its group; step 4 adds the group's base.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct group {
	uint32_t head, tail, count;
	uint32_t ps, pe;
	uint32_t S, E;       /* span */
	uint64_t H;          /* height */
	double U;            /* sum of size x lifetime */
	int alive;
} group;

typedef struct unit {
	uint64_t h;
	uint32_t s, e;
	uint32_t head;       /* first member (single request: the request) */
	uint32_t grouped;
} unit;

typedef struct fctx {
	const pl_work *w;
	uint64_t *off;
	uint32_t *next;
} fctx;

typedef struct hmember {
	uint64_t top;
	uint32_t te;
} hmember;

static int cmp_hmember(const void *a, const void *b)
{
	const hmember *x = a, *y = b;
	return x->top < y->top ? -1 : x->top > y->top;
}

typedef struct gmember {
	uint32_t ts, id;
} gmember;

static int cmp_gmember(const void *a, const void *b)
{
	const gmember *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static uint32_t dsu_find(uint32_t *p, uint32_t x)
{
	while (p[x] != x) {
		p[x] = p[p[x]];
		x = p[x];
	}
	return x;
}

/*
 * Tries to insert guest g's requests into host h's plan.  mirror = 0: the
 * guest's requests live after the host's are freed; mirror = 1: before the
 * host's are allocated (time read backwards).  On success (TMP improves)
 * merges g into h and returns 1; 0 when rejected; -1 without memory.
 */
static int fuse(fctx *c, group *h, group *g, int mirror)
{
	const pl_work *w = c->w;
	uint32_t M = w->T;
#define TS(i) (mirror ? M - w->e[i] : w->s[i])
#define TE(i) (mirror ? M - w->s[i] : w->e[i])
	uint32_t nh = h->count, ng = g->count;
	hmember *hb = malloc(nh * sizeof *hb);
	uint32_t *suf = malloc((nh + 1) * sizeof *suf);
	gmember *gs = malloc(ng * sizeof *gs);
	uint32_t *dsu = malloc((ng + 1) * sizeof *dsu);
	uint64_t *rel = malloc(ng * sizeof *rel);
	if (!hb || !suf || !gs || !dsu || !rel) {
		free(hb), free(suf), free(gs), free(dsu), free(rel);
		return -1;
	}
	uint32_t k = 0;
	for (uint32_t i = h->head; k < nh; i = c->next[i], k++)
		hb[k] = (hmember){c->off[i] + w->size[i], TE(i)};
	qsort(hb, nh, sizeof *hb, cmp_hmember);
	suf[nh] = 0;
	for (uint32_t j = nh; j-- > 0;)
		suf[j] = hb[j].te > suf[j + 1] ? hb[j].te : suf[j + 1];
	k = 0;
	for (uint32_t i = g->head; k < ng; i = c->next[i], k++)
		gs[k] = (gmember){TS(i), i};
	qsort(gs, ng, sizeof *gs, cmp_gmember);
	for (uint32_t j = 0; j <= ng; j++)
		dsu[j] = j;
	uint64_t addr = 0, top = h->H;
	uint32_t j = 0, placed = 0;
	while (placed < ng) {
		while (j < nh && hb[j].top <= addr)
			j++;
		uint32_t th = j < nh ? suf[j] : 0;
		uint32_t lo = 0, hi = ng;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (gs[mid].ts < th)
				lo = mid + 1;
			else
				hi = mid;
		}
		uint32_t p = dsu_find(dsu, lo);
		if (p < ng) {
			uint32_t id = gs[p].id;
			rel[p] = addr;
			addr += w->size[id];
			if (addr > top)
				top = addr;
			dsu[p] = p + 1;
			placed++;
		} else {
			addr = hb[j].top; /* j < nh here: th = 0 lets every request fit */
		}
	}
	uint32_t S = h->S < g->S ? h->S : g->S, E = h->E > g->E ? h->E : g->E;
	double U = h->U + g->U;
	double wa = U / ((double)h->H * (h->E - h->S) + (double)g->H * (g->E - g->S));
	double tmp = U / ((double)top * (E - S));
	int ok = tmp > wa;
	if (ok) {
		for (uint32_t q = 0; q < ng; q++)
			c->off[gs[q].id] = rel[q];
		c->next[h->tail] = g->head;
		h->tail = g->tail;
		h->count += g->count;
		h->S = S;
		h->E = E;
		h->H = top;
		h->U = U;
		g->alive = 0;
	}
	free(hb), free(suf), free(gs), free(dsu), free(rel);
	return ok;
#undef TS
#undef TE
}

static size_t first_with_ps(const group *gr, size_t ng, uint32_t ps)
{
	size_t lo = 0, hi = ng;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (gr[mid].ps < ps)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int fuse_groups(fctx *c, group *gr, size_t ng, stp_plan_stats *st)
{
	for (size_t gi = 0; gi < ng; gi++) {
		if (!gr[gi].alive)
			continue;
		int attempts = 0;
		for (;;) {
			int merged = 0;
			for (size_t hj = first_with_ps(gr, ng, gr[gi].pe); hj < ng && gr[hj].ps == gr[gi].pe; hj++) {
				if (hj == gi || !gr[hj].alive)
					continue;
				if (++attempts > 8)
					break;
				int rc;
				if (gr[gi].H >= gr[hj].H) {
					rc = fuse(c, &gr[gi], &gr[hj], 0);
				} else {
					/* the later group is the host: gi's requests go before its own */
					group host = gr[hj];
					host.alive = 1;
					rc = fuse(c, &host, &gr[gi], 1);
					if (rc == 1) {
						/* keep the merged group in gi's slot, phases (gi.ps, hj.pe) */
						uint32_t ps = gr[gi].ps;
						gr[gi] = host;
						gr[gi].ps = ps;
						gr[gi].alive = 1;
						gr[hj].alive = 0;
					}
				}
				if (rc < 0)
					return -1;
				if (rc == 1) {
					gr[gi].pe = gr[hj].pe;
					st->fused_groups++;
					merged = 1;
					break;
				}
			}
			if (!merged || attempts > 8)
				break;
		}
	}
	return 0;
}

int pl_stalloc(const stp_reqs *r, const pl_work *w, int fusion, uint64_t *off, stp_plan_stats *st)
{
	size_t n = w->n;
	int rc = -1;
	uint64_t base = 0;
	for (size_t i = 0; i < n; i++) {
		off[i] = STP_NO_OFFSET;
		if (w->kind[i] == PL_PINNED) {
			off[i] = base;
			base += w->size[i];
		}
	}
	st->persistent_bytes = base;

	uint32_t *next = malloc((n + 1) * sizeof *next);
	pl_kv *kv = malloc((n + 1) * sizeof *kv), *tmp = malloc((n + 1) * sizeof *tmp);
	group *gr = NULL;
	unit *un = NULL;
	pl_rects *R = NULL;
	if (!next || !kv || !tmp)
		goto out;

	/* 2. HomoPhase groups, members ordered by (group, end desc, start asc) */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		const stp_req *q = &r->req[i];
		if (w->kind[i] == PL_STATIC && q->phase_start && q->phase_end && q->phase_start != q->phase_end)
			kv[m++] = (pl_kv){w->s[i], (uint32_t)i};
	}
	pl_sort_kv(kv, tmp, m);
	for (size_t j = 0; j < m; j++)
		kv[j].k = UINT32_MAX - w->e[kv[j].v];
	pl_sort_kv(kv, tmp, m);
	for (size_t j = 0; j < m; j++) {
		const stp_req *q = &r->req[kv[j].v];
		kv[j].k = (uint64_t)q->phase_start << 32 | q->phase_end;
	}
	pl_sort_kv(kv, tmp, m);
	size_t ng = 0;
	for (size_t j = 0; j < m; j++)
		ng += j == 0 || kv[j].k != kv[j - 1].k;
	gr = calloc(ng + 1, sizeof *gr);
	if (!gr)
		goto out;
	ng = 0;
	for (size_t j = 0; j < m; j++) {
		uint32_t i = kv[j].v;
		if (j == 0 || kv[j].k != kv[j - 1].k) {
			group *g = &gr[ng++];
			g->head = g->tail = i;
			g->ps = r->req[i].phase_start;
			g->pe = r->req[i].phase_end;
			g->S = w->s[i];
			g->E = w->e[i];
			g->alive = 1;
		} else {
			group *g = &gr[ng - 1];
			next[g->tail] = i;
			g->tail = i;
		}
		group *g = &gr[ng - 1];
		off[i] = g->H;
		g->H += w->size[i];
		g->count++;
		g->U += (double)w->size[i] * (w->e[i] - w->s[i]);
		if (w->s[i] < g->S)
			g->S = w->s[i];
		if (w->e[i] > g->E)
			g->E = w->e[i];
	}
	st->phase_groups = ng;

	/* 3. fusion */
	if (fusion) {
		fctx c = {w, off, next};
		if (fuse_groups(&c, gr, ng, st) < 0)
			goto out;
	}

	/* 4. units, in descending size (ties: earlier start first) */
	size_t nu = 0, cap = 0;
	for (size_t g = 0; g < ng; g++)
		cap += gr[g].alive;
	for (size_t i = 0; i < n; i++)
		cap += w->kind[i] == PL_STATIC && off[i] == STP_NO_OFFSET;
	un = malloc((cap + 1) * sizeof *un);
	if (!un)
		goto out;
	for (size_t g = 0; g < ng; g++)
		if (gr[g].alive)
			un[nu++] = (unit){gr[g].H, gr[g].S, gr[g].E, gr[g].head, gr[g].count};
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] == PL_STATIC && off[i] == STP_NO_OFFSET)
			un[nu++] = (unit){w->size[i], w->s[i], w->e[i], (uint32_t)i, 0};
	st->units = nu;
	for (size_t u = 0; u < nu; u++)
		kv[u] = (pl_kv){un[u].s, (uint32_t)u};
	pl_sort_kv(kv, tmp, nu);
	for (size_t u = 0; u < nu; u++)
		kv[u].k = UINT64_MAX - un[kv[u].v].h;
	pl_sort_kv(kv, tmp, nu);
	free(tmp);
	tmp = NULL;
	R = pl_rects_new(2 * nu + 16, base, w->T);
	if (!R)
		goto out;
	for (size_t j = 0; j < nu; j++) {
		const unit *u = &un[kv[j].v];
		st->size_groups += j == 0 || kv[j].k != kv[j - 1].k;
		uint64_t o = pl_rects_place(R, u->h, u->s, u->e);
		if (o == STP_NO_OFFSET)
			goto out;
		if (!u->grouped) {
			off[u->head] = o;
			continue;
		}
		uint32_t i = u->head;
		for (uint32_t k = 0; k < u->grouped; k++, i = next[i])
			off[i] += o;
	}
	rc = 0;
out:
	pl_rects_free(R);
	free(next);
	free(kv);
	free(tmp);
	free(gr);
	free(un);
	return rc;
}
