/*
 * work.c - builds the planner's working view (pl_work, see internal.h):
 * classifies requests (static / pinned / dynamic), aligns sizes, picks the
 * cyclic cut and rotates every lifetime onto the linear timeline [0, T).
 *
 * The cut: a plan must stay valid when the iteration repeats, and requests
 * that wrap (allocated late, freed early in the next iteration) are live
 * across the iteration boundary.  Any tick c can serve as the boundary of a
 * linear timeline; requests live across c (c strictly inside their cyclic
 * lifetime) must then be pinned for the whole period.  We pick the tick with
 * the fewest such bytes; with no wrapping request that is tick 0 and nothing
 * is pinned besides the persistent requests.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void pl_work_free(pl_work *w)
{
	free(w->s);
	free(w->e);
	free(w->size);
	free(w->kind);
	memset(w, 0, sizeof *w);
}

/* The tick with the fewest static bytes live across it. */
static int choose_cut(const stp_reqs *r, const pl_work *w, uint64_t *cut)
{
	size_t n = r->n, m = 0;
	uint64_t at0 = 0;
	int any_wrap = 0;
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] == PL_STATIC && r->req[i].t_end < r->req[i].t_start)
			any_wrap = 1;
	*cut = 0;
	if (!any_wrap)
		return 0;
	pl_kv *ev = malloc(n * 4 * sizeof *ev), *tmp = malloc(n * 4 * sizeof *tmp);
	if (!ev || !tmp) {
		free(ev);
		free(tmp);
		return -1;
	}
	uint64_t T = r->period;
	for (size_t i = 0; i < n; i++) {
		if (w->kind[i] != PL_STATIC)
			continue;
		uint64_t s = r->req[i].t_start, e = r->req[i].t_end;
		if (e > s) {
			ev[m++] = (pl_kv){s << 1 | 1, (uint32_t)i};
			ev[m++] = (pl_kv){e << 1, (uint32_t)i};
		} else {
			if (e > 0)
				at0 += w->size[i];
			ev[m++] = (pl_kv){s << 1 | 1, (uint32_t)i};
			ev[m++] = (pl_kv){T << 1, (uint32_t)i};
			ev[m++] = (pl_kv){0 << 1 | 1, (uint32_t)i};
			ev[m++] = (pl_kv){e << 1, (uint32_t)i};
		}
	}
	pl_sort_kv(ev, tmp, m);
	uint64_t best = at0, live = 0;
	size_t j = 0;
	while (j < m) {
		uint64_t t = ev[j].k >> 1;
		while (j < m && ev[j].k == t << 1)
			live -= w->size[ev[j++].v];
		if (t > 0 && t < T && live < best) {
			best = live;
			*cut = t;
		}
		while (j < m && (ev[j].k >> 1) == t)
			live += w->size[ev[j++].v];
	}
	free(ev);
	free(tmp);
	return 0;
}

int pl_work_build(const stp_reqs *r, uint64_t align, pl_work *w)
{
	size_t n = r->n;
	memset(w, 0, sizeof *w);
	w->n = n;
	w->s = malloc((n + 1) * sizeof *w->s);
	w->e = malloc((n + 1) * sizeof *w->e);
	w->size = malloc((n + 1) * sizeof *w->size);
	w->kind = malloc(n + 1);
	if (!w->s || !w->e || !w->size || !w->kind) {
		pl_work_free(w);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const stp_req *q = &r->req[i];
		w->size[i] = pl_align_up(q->size, align);
		if (q->flags & STP_REQ_DYNAMIC)
			w->kind[i] = PL_DYNAMIC;
		else if ((q->flags & STP_REQ_PERSISTENT) || q->t_start == q->t_end)
			w->kind[i] = PL_PINNED;
		else
			w->kind[i] = PL_STATIC;
	}
	if (choose_cut(r, w, &w->cut) < 0) {
		pl_work_free(w);
		return -1;
	}
	uint64_t T = r->period, c = w->cut;
	/* rotated times, 64-bit first; compressed to ranks when T won't fit 32 bits,
	 * or is so much longer than the request list that arrays of T entries
	 * (dynamic.c) would cost memory out of proportion to the input */
	int compress = T >= UINT32_MAX || T / 16 > (uint64_t)n + 65536;
	uint64_t *s64 = NULL, *e64 = NULL;
	if (compress) {
		s64 = malloc(n * sizeof *s64);
		e64 = malloc(n * sizeof *e64);
		if (!s64 || !e64) {
			free(s64);
			free(e64);
			pl_work_free(w);
			return -1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const stp_req *q = &r->req[i];
		uint64_t s = 0, e = T;
		if (w->kind[i] != PL_PINNED) {
			s = (q->t_start + T - c) % (T ? T : 1);
			e = (q->t_end + T - c) % (T ? T : 1);
			if (e == 0)
				e = T;
			if (e <= s) {
				/* live across the cut: pinned (dynamic ones keep the whole period) */
				if (w->kind[i] == PL_STATIC) {
					w->kind[i] = PL_PINNED;
					w->pinned_extra++;
				}
				s = 0;
				e = T;
			}
		}
		if (w->kind[i] == PL_PINNED)
			w->pinned_bytes += w->size[i];
		if (compress) {
			s64[i] = s;
			e64[i] = e;
		} else {
			w->s[i] = (uint32_t)s;
			w->e[i] = (uint32_t)e;
		}
	}
	w->T = (uint32_t)T;
	w->ranked = compress;
	if (compress) {
		pl_kv *a = malloc(2 * n * sizeof *a), *tmp = malloc(2 * n * sizeof *tmp);
		if (!a || !tmp) {
			free(a);
			free(tmp);
			free(s64);
			free(e64);
			pl_work_free(w);
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			a[2 * i] = (pl_kv){s64[i], (uint32_t)(2 * i)};
			a[2 * i + 1] = (pl_kv){e64[i], (uint32_t)(2 * i + 1)};
		}
		pl_sort_kv(a, tmp, 2 * n);
		uint32_t rank = 0;
		for (size_t j = 0; j < 2 * n; j++) {
			if (j && a[j].k != a[j - 1].k)
				rank++;
			uint32_t v = a[j].v;
			if (v & 1)
				w->e[v >> 1] = rank;
			else
				w->s[v >> 1] = rank;
		}
		w->T = rank + 1;
		for (size_t i = 0; i < n; i++)
			if (w->kind[i] == PL_PINNED || (w->kind[i] == PL_DYNAMIC && e64[i] == T && s64[i] == 0)) {
				w->s[i] = 0;
				w->e[i] = w->T;
			}
		free(a);
		free(tmp);
		free(s64);
		free(e64);
	}
	return 0;
}

long pl_rank_ends(const pl_work *w, int pinned_too, uint32_t *sa, uint32_t *sb)
{
	size_t n = w->n, m = 0;
	pl_kv *a = malloc((2 * n + 1) * sizeof *a), *tmp = malloc((2 * n + 1) * sizeof *tmp);
	if (!a || !tmp) {
		free(a);
		free(tmp);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] == PL_STATIC || (pinned_too && w->kind[i] == PL_PINNED)) {
			a[m++] = (pl_kv){w->s[i], (uint32_t)(2 * i)};
			a[m++] = (pl_kv){w->e[i], (uint32_t)(2 * i + 1)};
		}
	pl_sort_kv(a, tmp, m);
	long K = 0;
	for (size_t j = 0; j < m; j++) {
		if (j && a[j].k != a[j - 1].k)
			K++;
		if (a[j].v & 1)
			sb[a[j].v >> 1] = (uint32_t)K;
		else
			sa[a[j].v >> 1] = (uint32_t)K;
	}
	free(a);
	free(tmp);
	return K;
}

uint64_t pl_pool(const pl_work *w, const uint64_t *off)
{
	uint64_t top = 0;
	for (size_t i = 0; i < w->n; i++)
		if (w->kind[i] != PL_DYNAMIC && off[i] != STP_NO_OFFSET && off[i] + w->size[i] > top)
			top = off[i] + w->size[i];
	return top;
}
