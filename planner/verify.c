/*
 * verify.c - proves a plan valid, independently of how it was built.
 *
 * It works on the original (cyclic) lifetimes, not on the planner's working
 * timeline: every placed request becomes one or two pieces of [0, period)
 * (two when it wraps, the whole period when persistent), and a sweep over
 * time keeps the live pieces in an ordered set by offset (a treap).  Frees
 * come before allocations at the same tick (lifetimes are half-open).  When a
 * piece goes live it must not overlap its neighbours in address; that is
 * enough for every pair, since the live set stays disjoint.  Then every
 * dynamic group's intervals are checked against the static requests live
 * during the group's range.  O(n log n) plus O(groups x n) for the groups.
 *
 * Start-up placements (plans 1.4, planner/startup.c): each placed
 * temporary's range must be covered by slots of persistent requests made
 * after it is freed (their ordinal at or past its startup_until; from a
 * plan file, which keeps no free position, made after it was made), and
 * two placed temporaries may share bytes only when the first is freed
 * before the second is made (known only with a trace's startup_until).
 * O(p log n + p^2) for p placements.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct vnode {
	uint64_t key;
	uint32_t id, l, r, prio;
} vnode;

typedef struct vset {
	vnode *nd;
	uint32_t nn, root, freel;
	uint64_t rng;
} vset;

static uint32_t vrand(vset *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return (uint32_t)s->rng;
}

static void vsplit(vnode *nd, uint32_t t, uint64_t key, uint32_t *L, uint32_t *R)
{
	if (!t) {
		*L = *R = 0;
		return;
	}
	if (nd[t].key < key) {
		vsplit(nd, nd[t].r, key, &nd[t].r, R);
		*L = t;
	} else {
		vsplit(nd, nd[t].l, key, L, &nd[t].l);
		*R = t;
	}
}

static uint32_t vmerge(vnode *nd, uint32_t a, uint32_t b)
{
	if (!a || !b)
		return a ? a : b;
	if (nd[a].prio > nd[b].prio) {
		nd[a].r = vmerge(nd, nd[a].r, b);
		return a;
	}
	nd[b].l = vmerge(nd, a, nd[b].l);
	return b;
}

static uint32_t vinsert(vnode *nd, uint32_t t, uint32_t k)
{
	if (!t)
		return k;
	if (nd[k].prio > nd[t].prio) {
		vsplit(nd, t, nd[k].key, &nd[k].l, &nd[k].r);
		return k;
	}
	if (nd[k].key < nd[t].key)
		nd[t].l = vinsert(nd, nd[t].l, k);
	else
		nd[t].r = vinsert(nd, nd[t].r, k);
	return t;
}

static uint32_t verase(vnode *nd, uint32_t t, uint64_t key, uint32_t id, uint32_t *gone)
{
	if (!t)
		return 0;
	if (nd[t].key == key && nd[t].id == id) {
		*gone = t;
		return vmerge(nd, nd[t].l, nd[t].r);
	}
	if (key < nd[t].key)
		nd[t].l = verase(nd, nd[t].l, key, id, gone);
	else
		nd[t].r = verase(nd, nd[t].r, key, id, gone);
	return t;
}

/* the node with the largest key <= k, 0 if none */
static uint32_t vpred(const vnode *nd, uint32_t t, uint64_t k)
{
	uint32_t p = 0;
	while (t) {
		if (nd[t].key <= k) {
			p = t;
			t = nd[t].r;
		} else {
			t = nd[t].l;
		}
	}
	return p;
}

static uint32_t vsucc(const vnode *nd, uint32_t t, uint64_t k)
{
	uint32_t s = 0;
	while (t) {
		if (nd[t].key >= k) {
			s = t;
			t = nd[t].l;
		} else {
			t = nd[t].r;
		}
	}
	return s;
}

static void describe(const stp_reqs *r, const stp_plan *p, uint32_t i, char *buf, size_t len)
{
	const stp_req *q = &r->req[i];
	snprintf(buf, len, "request %u (ordinal %u, size %" PRIu64 ", ticks [%" PRIu64 ", %" PRIu64 ")%s, offset %" PRIu64 ")",
	         i, q->ordinal, q->size, q->t_start, q->t_end,
	         (q->flags & STP_REQ_PERSISTENT) ? " persistent" : (q->t_end <= q->t_start ? " wraps" : ""),
	         p->offset[i]);
}

static uint64_t asize(const stp_reqs *r, const stp_plan *p, uint32_t i)
{
	return pl_align_up(r->req[i].size, p->align);
}

typedef struct vq {
	const stp_reqs *r;
	const stp_plan *p;
	const stp_interval *iv;
	uint32_t count, hit;
	const uint32_t *req_of;
} vq;

/* does request id's address range meet one of the group's intervals? */
static void probe(uint32_t piece, void *ctx)
{
	vq *q = ctx;
	if (q->hit != UINT32_MAX)
		return;
	uint32_t i = q->req_of[piece];
	uint64_t o = q->p->offset[i], e = o + asize(q->r, q->p, i);
	uint32_t lo = 0, hi = q->count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (q->iv[mid].offset < e)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && q->iv[lo - 1].offset + q->iv[lo - 1].size > o)
		q->hit = i;
}

/* Pieces of the placed requests on [0, period) in an interval index (times
 * as ranks so that any period fits 32 bits); each group's window is a query. */
static int verify_groups(const stp_reqs *r, const stp_plan *p, char *err, size_t errlen)
{
	size_t n = r->n, m = 0;
	uint64_t T = r->period;
	int rc = -1;
	uint32_t *ps = malloc((2 * n + 1) * sizeof *ps), *pe = malloc((2 * n + 1) * sizeof *pe);
	uint32_t *req_of = malloc((2 * n + 1) * sizeof *req_of), *ids = malloc((2 * n + 1) * sizeof *ids);
	uint64_t *t64 = malloc((4 * n + 2) * sizeof *t64);
	pl_itree t = {0};
	if (!ps || !pe || !req_of || !ids || !t64) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	/* 64-bit piece bounds first */
	uint64_t *s64 = t64, *e64 = t64 + 2 * n + 1;
	for (size_t i = 0; i < n; i++) {
		const stp_req *q = &r->req[i];
		if (p->offset[i] == STP_NO_OFFSET)
			continue;
		if ((q->flags & STP_REQ_PERSISTENT) || q->t_start == q->t_end) {
			s64[m] = 0, e64[m] = T, req_of[m++] = (uint32_t)i;
		} else if (q->t_end > q->t_start) {
			s64[m] = q->t_start, e64[m] = q->t_end, req_of[m++] = (uint32_t)i;
		} else {
			s64[m] = q->t_start, e64[m] = T, req_of[m++] = (uint32_t)i;
			if (q->t_end > 0)
				s64[m] = 0, e64[m] = q->t_end, req_of[m++] = (uint32_t)i;
		}
	}
	/* times -> ranks among the distinct piece bounds */
	pl_kv *a = malloc((2 * m + 1) * sizeof *a), *tmp = malloc((2 * m + 1) * sizeof *tmp);
	if (!a || !tmp) {
		free(a), free(tmp);
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t j = 0; j < m; j++) {
		a[2 * j] = (pl_kv){s64[j], (uint32_t)(2 * j)};
		a[2 * j + 1] = (pl_kv){e64[j], (uint32_t)(2 * j + 1)};
	}
	pl_sort_kv(a, tmp, 2 * m);
	uint64_t *vals = (uint64_t *)tmp; /* distinct bounds, ascending (fits: 16 B per pair) */
	uint32_t nv = 0;
	for (size_t j = 0; j < 2 * m; j++) {
		if (!nv || vals[nv - 1] != a[j].k)
			vals[nv++] = a[j].k;
		if (a[j].v & 1)
			pe[a[j].v >> 1] = nv - 1;
		else
			ps[a[j].v >> 1] = nv - 1;
	}
	free(a);
	for (size_t j = 0; j < m; j++)
		ids[j] = (uint32_t)j;
	if (pl_itree_init(&t, ps, pe, m, ids, (uint32_t)m) < 0) {
		free(tmp);
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t j = 0; j < m; j++)
		pl_itree_set(&t, (uint32_t)j, 1);
	for (uint32_t g = 0; g < p->ngroups; g++) {
		const stp_dyn_group *G = &p->groups[g];
		if ((uint64_t)G->first + G->count > p->nintervals) {
			snprintf(err, errlen, "dynamic group %u: intervals out of range", g);
			goto fail;
		}
		const stp_interval *iv = p->intervals + G->first;
		for (uint32_t k = 0; k < G->count; k++)
			if (iv[k].offset > p->pool || iv[k].size > p->pool - iv[k].offset ||
			    (k && iv[k].offset < iv[k - 1].offset + iv[k - 1].size)) {
				snprintf(err, errlen, "dynamic group %u: interval %u outside the pool or unsorted", g, k);
				goto fail;
			}
		if (!G->count)
			continue;
		/* window bounds -> ranks: first bound >= t */
		uint64_t wb[2][2];
		int nw = 0;
		if (G->t_end > G->t_begin) {
			wb[nw][0] = G->t_begin, wb[nw++][1] = G->t_end;
		} else {
			wb[nw][0] = G->t_begin, wb[nw++][1] = T;
			wb[nw][0] = 0, wb[nw++][1] = G->t_end;
		}
		vq q = {r, p, iv, G->count, UINT32_MAX, req_of};
		for (int k = 0; k < nw; k++) {
			if (wb[k][0] >= wb[k][1])
				continue;
			/* piece [ps, pe) overlaps [b0, b1) iff ps < b1 and pe > b0; in ranks:
			 * ps < rank(first bound >= b1), pe > rank(last bound <= b0) */
			uint32_t lo = 0, hi = nv;
			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;
				if (vals[mid] < wb[k][1])
					lo = mid + 1;
				else
					hi = mid;
			}
			uint32_t r1 = lo;
			lo = 0, hi = nv;
			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;
				if (vals[mid] <= wb[k][0])
					lo = mid + 1;
				else
					hi = mid;
			}
			/* lo = count of bounds <= b0: pe must be >= lo, i.e. pe > lo - 1 */
			uint32_t r0 = lo ? lo - 1 : 0;
			if (!lo) {
				/* every bound is above b0: any piece ends after it */
				pl_itree_query(&t, 0, r1, probe, &q);
			} else {
				pl_itree_query(&t, r0, r1, probe, &q);
			}
		}
		if (q.hit != UINT32_MAX) {
			char a1[256];
			describe(r, p, q.hit, a1, sizeof a1);
			snprintf(err, errlen, "dynamic group %u (ticks [%" PRIu64 ", %" PRIu64 ")): an interval overlaps %s",
			         g, G->t_begin, G->t_end, a1);
			goto fail;
		}
	}
	rc = 0;
fail:
	free(tmp);
out:
	pl_itree_free(&t);
	free(ps), free(pe), free(req_of), free(ids), free(t64);
	return rc;
}

static int verify_startup(const stp_reqs *r, const stp_plan *p, char *err, size_t errlen)
{
	/* the persistent requests' slots by offset (key), request index (value) */
	size_t n = r->n, ns = 0;
	pl_kv *sl = malloc((n + 1) * sizeof *sl), *tmp = malloc((n + 1) * sizeof *tmp);
	if (!sl || !tmp) {
		free(sl);
		free(tmp);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if ((r->req[i].flags & STP_REQ_PERSISTENT) && p->offset[i] != STP_NO_OFFSET)
			sl[ns++] = (pl_kv){p->offset[i], (uint32_t)i};
	pl_sort_kv(sl, tmp, ns);
	free(tmp);
	int rc = -1;
	char a[256];
	for (uint32_t i = 0; i < r->nstartup; i++) {
		uint64_t o = p->startup_offset[i];
		if (o == STP_NO_OFFSET)
			continue;
		uint64_t size = pl_startup_bytes(r, p, i), end = o + size;
		if (end < o || end > p->pool) {
			snprintf(err, errlen, "start-up temporary at position %u (size %" PRIu64 ", offset %" PRIu64
			         ") outside the pool of %" PRIu64 " bytes", i, size, o, p->pool);
			goto out;
		}
		uint32_t until = r->startup_until ? r->startup_until[i] : i + 1;
		if (until == UINT32_MAX || until <= i) {
			snprintf(err, errlen, "start-up temporary at position %u (size %" PRIu64 ", offset %" PRIu64
			         ") is placed but not freed after it is made", i, size, o);
			goto out;
		}
		/* walk the slots that cover [o, end): persistent slots never overlap */
		for (uint64_t at = o; at < end;) {
			size_t lo = 0, hi = ns; /* the last slot starting at or below at */
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				if (sl[mid].k <= at)
					lo = mid + 1;
				else
					hi = mid;
			}
			uint32_t q = lo ? sl[lo - 1].v : 0;
			if (!lo || sl[lo - 1].k + asize(r, p, q) <= at) {
				snprintf(err, errlen, "start-up temporary at position %u (size %" PRIu64 ", offset %" PRIu64
				         "): byte %" PRIu64 " lies in no persistent request's slot", i, size, o, at);
				goto out;
			}
			if (r->req[q].ordinal < until) {
				describe(r, p, q, a, sizeof a);
				snprintf(err, errlen, "start-up temporary at position %u (size %" PRIu64 ", offset %" PRIu64
				         ", %s %u) over the slot of %s, made before that", i, size, o,
				         r->startup_until ? "freed before position" : "made at position",
				         r->startup_until ? until : i, a);
				goto out;
			}
			at = sl[lo - 1].k + asize(r, p, q);
		}
		if (!r->startup_until)
			continue;
		for (uint32_t j = 0; j < i; j++) { /* placed earlier, still live when i is made */
			uint64_t oj = p->startup_offset[j];
			if (oj == STP_NO_OFFSET || r->startup_until[j] <= i)
				continue;
			uint64_t ej = oj + pl_startup_bytes(r, p, j);
			if (oj < end && o < ej) {
				snprintf(err, errlen, "start-up temporaries at positions %u and %u overlap (offsets %" PRIu64
				         " and %" PRIu64 ") while both live", j, i, oj, o);
				goto out;
			}
		}
	}
	rc = 0;
out:
	free(sl);
	return rc;
}

int stp_plan_verify(const stp_reqs *r, const stp_plan *p, char *err, size_t errlen)
{
	size_t n = r->n;
	char a[256], b[256];
	if (p->n != n) {
		snprintf(err, errlen, "plan has %zu entries for %zu requests", p->n, n);
		return -1;
	}
	uint64_t T = r->period;
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		const stp_req *q = &r->req[i];
		uint64_t o = p->offset[i];
		if (o == STP_NO_OFFSET) {
			if (!(q->flags & STP_REQ_DYNAMIC)) {
				describe(r, p, (uint32_t)i, a, sizeof a);
				snprintf(err, errlen, "%s: static request without an offset", a);
				return -1;
			}
			continue;
		}
		if (q->size > p->pool || o > p->pool - asize(r, p, (uint32_t)i) || (p->align > 1 && o % p->align)) {
			describe(r, p, (uint32_t)i, a, sizeof a);
			snprintf(err, errlen, "%s: outside the pool of %" PRIu64 " bytes or misaligned", a, p->pool);
			return -1;
		}
		m += 4;
	}
	pl_kv *ev = malloc((m + 1) * sizeof *ev), *tmp = malloc((m + 1) * sizeof *tmp);
	vset S = {0};
	S.nd = malloc((n + 2) * sizeof *S.nd);
	S.rng = 0x2545F4914F6CDD1Dull;
	int rc = -1;
	if (!ev || !tmp || !S.nd) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	m = 0;
	for (size_t i = 0; i < n; i++) {
		const stp_req *q = &r->req[i];
		if (p->offset[i] == STP_NO_OFFSET)
			continue;
		uint64_t s = q->t_start, e = q->t_end;
		if ((q->flags & STP_REQ_PERSISTENT) || s == e) {
			ev[m++] = (pl_kv){0 << 1 | 1, (uint32_t)i};
			ev[m++] = (pl_kv){T << 1, (uint32_t)i};
		} else if (e > s) {
			ev[m++] = (pl_kv){s << 1 | 1, (uint32_t)i};
			ev[m++] = (pl_kv){e << 1, (uint32_t)i};
		} else {
			ev[m++] = (pl_kv){s << 1 | 1, (uint32_t)i};
			ev[m++] = (pl_kv){T << 1, (uint32_t)i};
			if (e > 0) {
				ev[m++] = (pl_kv){0 << 1 | 1, (uint32_t)i};
				ev[m++] = (pl_kv){e << 1, (uint32_t)i};
			}
		}
	}
	pl_sort_kv(ev, tmp, m);
	S.nn = 1;
	for (size_t j = 0; j < m; j++) {
		uint32_t i = ev[j].v;
		uint64_t o = p->offset[i], sz = asize(r, p, i);
		if (!(ev[j].k & 1)) {
			uint32_t gone = 0;
			S.root = verase(S.nd, S.root, o, i, &gone);
			if (gone) {
				S.nd[gone].l = S.freel;
				S.freel = gone;
			}
			continue;
		}
		uint32_t pred = vpred(S.nd, S.root, o), succ = vsucc(S.nd, S.root, o);
		uint32_t other = UINT32_MAX;
		if (pred && S.nd[pred].key + asize(r, p, S.nd[pred].id) > o)
			other = S.nd[pred].id;
		else if (succ && o + sz > S.nd[succ].key)
			other = S.nd[succ].id;
		if (other != UINT32_MAX) {
			describe(r, p, other, a, sizeof a);
			describe(r, p, i, b, sizeof b);
			snprintf(err, errlen, "overlap at tick %" PRIu64 ": %s and %s", ev[j].k >> 1, a, b);
			goto out;
		}
		uint32_t k = S.freel ? S.freel : S.nn++;
		if (k == S.freel)
			S.freel = S.nd[k].l;
		S.nd[k] = (vnode){o, i, 0, 0, vrand(&S)};
		S.root = vinsert(S.nd, S.root, k);
	}
	/* dynamic groups: their intervals must be idle over the group's range */
	if (p->ngroups && verify_groups(r, p, err, errlen) < 0)
		goto out;
	if (p->nplaced && p->startup_offset && verify_startup(r, p, err, errlen) < 0)
		goto out;
	rc = 0;
out:
	free(ev);
	free(tmp);
	free(S.nd);
	return rc;
}
