/*
 * search.c - the exact step: "do the static requests fit under capacity C?"
 * decided by a depth-first search over canonical layouts (MiniMalloc's ideas,
 * built from the paper, not its code).
 *
 * Time is cut into sections (between consecutive distinct lifetime ends of
 * the static requests).  Every section k has a floor f[k]: everything below
 * it is placed or proven empty.  A node takes the leftmost lowest section k
 * (floor m) that still has unplaced requests, and branches:
 *   place:  an unplaced request b that starts in k and whose sections all sit
 *           at floor m goes to offset m (its sections rise to m + size);
 *   waste:  nothing lands at m in k: k's floor rises to L, a level no
 *           request covering k can lie below in any gravity-packed layout
 *           (one where no request can drop): the lowest such request rests
 *           on something in a neighbouring section, so
 *           L = min(f[k-1] when a request crosses into k from the left,
 *                   f[k+1] (or m + the smallest unplaced size when f[k+1]=m)
 *                   when one crosses out to the right).
 *           With no request crossing either edge the waste branch is empty.
 * Every gravity-packed layout (and one exists for every feasible C) is
 * reached this way, so an exhausted search proves that C does not fit.
 * Pruning ("inference"): a section whose floor plus its unplaced bytes exceed
 * C fails; requests identical in (sections, size) are tried once per node
 * (symmetry).  Sections fall into independent components (no request
 * crosses between them) that are searched one after the other.
 *
 * Pinned requests sit below everything (pl_work); the search places the
 * STATIC ones above w->pinned_bytes.  Invariants: f[k] <= C for every
 * section with unplaced requests; rem[k] is the unplaced bytes covering k;
 * cross[k] counts unplaced requests covering sections k-1 and k.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct sreq {
	uint32_t sa, sb;   /* sections [sa, sb) */
	uint64_t size;
	uint32_t id;       /* index in pl_work */
} sreq;

typedef struct frame {
	uint32_t k;        /* section */
	uint64_t m;        /* its floor when the node was opened */
	uint32_t next;     /* next candidate position in by_start[k] to try; UINT32_MAX = waste tried */
	uint32_t placed;   /* request placed by this frame, UINT32_MAX = none (or waste) */
	uint64_t prev_size;/* size of the last candidate tried (symmetry) */
	uint32_t prev_sb;
} frame;

typedef struct srch {
	uint32_t nq, K;
	sreq *q;
	uint32_t *first, *list;  /* requests starting in section k: list[first[k] .. first[k+1]) */
	uint64_t *f, *rem, *eff;
	uint32_t *cross;
	uint8_t *done;
	uint64_t *off;           /* offset per request (index into q) */
	frame *st;
	size_t stcap;
	uint64_t cap, nodes, node_limit;
	double deadline;
	int timed_out;
} srch;

static void srch_free(srch *s)
{
	free(s->q);
	free(s->first);
	free(s->list);
	free(s->f);
	free(s->rem);
	free(s->eff);
	free(s->cross);
	free(s->done);
	free(s->off);
	free(s->st);
}

/* candidate order inside a start section: larger first, then longer */
static int cmp_cand(const void *pa, const void *pb, void *ctx)
{
	const sreq *q = ctx;
	const sreq *a = &q[*(const uint32_t *)pa], *b = &q[*(const uint32_t *)pb];
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	if (a->sb != b->sb)
		return a->sb > b->sb ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* insertion sort with context (lists are short; qsort_r is not C11) */
static void sort_list(uint32_t *a, uint32_t n, const sreq *q)
{
	for (uint32_t i = 1; i < n; i++) {
		uint32_t x = a[i], j = i;
		while (j > 0 && cmp_cand(&x, &a[j - 1], (void *)q) < 0) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = x;
	}
}

static int build(srch *s, const pl_work *w)
{
	size_t n = w->n;
	uint32_t nq = 0;
	for (size_t i = 0; i < n; i++)
		nq += w->kind[i] == PL_STATIC;
	s->nq = nq;
	pl_kv *t = malloc((2 * (size_t)nq + 1) * sizeof *t), *tmp = malloc((2 * (size_t)nq + 1) * sizeof *tmp);
	s->q = malloc((nq + 1) * sizeof *s->q);
	if (!t || !tmp || !s->q) {
		free(t);
		free(tmp);
		return -1;
	}
	uint32_t j = 0;
	for (size_t i = 0; i < n; i++)
		if (w->kind[i] == PL_STATIC) {
			s->q[j] = (sreq){0, 0, w->size[i], (uint32_t)i};
			t[2 * j] = (pl_kv){w->s[i], 2 * j};
			t[2 * j + 1] = (pl_kv){w->e[i], 2 * j + 1};
			j++;
		}
	pl_sort_kv(t, tmp, 2 * (size_t)nq);
	uint32_t K = 0;
	for (size_t a = 0; a < 2 * (size_t)nq; a++) {
		if (a && t[a].k != t[a - 1].k)
			K++;
		uint32_t v = t[a].v;
		if (v & 1)
			s->q[v >> 1].sb = K;
		else
			s->q[v >> 1].sa = K;
	}
	free(t);
	free(tmp);
	s->K = K; /* sections 0 .. K-1 (the last point closes the last section) */
	s->first = calloc((size_t)K + 2, sizeof *s->first);
	s->list = malloc((nq + 1) * sizeof *s->list);
	s->f = calloc((size_t)K + 2, sizeof *s->f);
	s->rem = calloc((size_t)K + 2, sizeof *s->rem);
	s->eff = calloc((size_t)K + 2, sizeof *s->eff);
	s->cross = calloc((size_t)K + 2, sizeof *s->cross);
	s->done = calloc(nq + 1, 1);
	s->off = malloc((nq + 1) * sizeof *s->off);
	s->stcap = (size_t)nq * 2 + K + 2;
	s->st = malloc(s->stcap * sizeof *s->st);
	if (!s->first || !s->list || !s->f || !s->rem || !s->eff || !s->cross || !s->done || !s->off || !s->st)
		return -1;
	for (uint32_t i = 0; i < nq; i++)
		s->first[s->q[i].sa + 1]++;
	for (uint32_t k = 0; k < K + 1; k++)
		s->first[k + 1] += s->first[k];
	uint32_t *fill = calloc((size_t)K + 1, sizeof *fill);
	if (!fill)
		return -1;
	for (uint32_t i = 0; i < nq; i++)
		s->list[s->first[s->q[i].sa] + fill[s->q[i].sa]++] = i;
	free(fill);
	for (uint32_t k = 0; k < K; k++)
		sort_list(s->list + s->first[k], s->first[k + 1] - s->first[k], s->q);
	return 0;
}

static void take(srch *s, uint32_t i, int sign)
{
	const sreq *q = &s->q[i];
	for (uint32_t k = q->sa; k < q->sb; k++) {
		if (sign > 0)
			s->rem[k] += q->size;
		else
			s->rem[k] -= q->size;
		if (k > q->sa)
			s->cross[k] += sign;
	}
}

/* The waste level of section k (floor m): a lower bound on the offset of
 * the lowest unplaced request covering k when nothing lands at m in k.
 * That request rests on something in another of its sections: a placed
 * request (then it lies at or above its own max floor e_y > m), or an
 * unplaced one z (then at least m + size of z).  A request that covers only
 * k cannot rest on anything: it is not the lowest.  UINT64_MAX: none can be. */
static uint64_t waste_level(const srch *s, uint32_t k, uint64_t m, uint32_t b)
{
	/* the two smallest unplaced requests that reach past k (for z) */
	uint64_t mn1 = UINT64_MAX, mn2 = UINT64_MAX;
	uint32_t id1 = UINT32_MAX;
	for (uint32_t i = 0; i < s->nq; i++) {
		const sreq *q = &s->q[i];
		if (s->done[i] || q->sb <= k + 1 || q->sa >= b)
			continue;
		if (q->size < mn1) {
			mn2 = mn1;
			mn1 = q->size;
			id1 = i;
		} else if (q->size < mn2)
			mn2 = q->size;
	}
	uint64_t L = UINT64_MAX;
	for (uint32_t i = 0; i < s->nq; i++) {
		const sreq *q = &s->q[i];
		if (s->done[i] || q->sa > k || q->sb <= k || q->sb == q->sa + 1)
			continue;
		uint64_t e = 0;
		for (uint32_t j = q->sa; j < q->sb && e < L; j++)
			if (s->f[j] > e)
				e = s->f[j];
		if (e <= m) {
			/* rests on an unplaced z in a later section (q starts at k) */
			uint64_t z = i == id1 ? mn2 : mn1;
			e = z == UINT64_MAX ? UINT64_MAX : m + z;
		}
		if (e < L)
			L = e;
	}
	return L;
}

/* The inference over the whole component [a, b): every unplaced request
 * lies at or above its max floor e_y, so nothing covering section j lies
 * below eff[j] = min e_y over the unplaced requests covering j; the section
 * fails when eff[j] + its unplaced bytes exceed the capacity.  0 = prune. */
static int feasible(srch *s, uint32_t a, uint32_t b)
{
	for (uint32_t j = a; j < b; j++)
		s->eff[j] = UINT64_MAX;
	for (uint32_t k = a; k < b; k++)
		for (uint32_t p = s->first[k]; p < s->first[k + 1]; p++) {
			uint32_t i = s->list[p];
			if (s->done[i])
				continue;
			const sreq *q = &s->q[i];
			uint64_t e = 0;
			for (uint32_t j = q->sa; j < q->sb; j++)
				if (s->f[j] > e)
					e = s->f[j];
			if (e + q->size > s->cap)
				return 0;
			for (uint32_t j = q->sa; j < q->sb; j++)
				if (e < s->eff[j])
					s->eff[j] = e;
		}
	for (uint32_t j = a; j < b; j++)
		if (s->rem[j] && s->eff[j] + s->rem[j] > s->cap)
			return 0;
	return 1;
}

/* Searches sections [a, b) (a component); base is the floor for all. Returns
 * 1 found (offsets in s->off), 0 proven infeasible, -1 out of time, -2 no memory. */
static int solve(srch *s, uint32_t a, uint32_t b, uint64_t base)
{
	for (uint32_t k = a; k < b; k++)
		s->f[k] = base;
	int depth = 0;
	uint32_t remaining = 0;
	for (uint32_t k = a; k < b; k++)
		remaining += s->first[k + 1] - s->first[k];
	for (uint32_t k = a; k < b; k++)
		if (s->f[k] + s->rem[k] > s->cap)
			return 0;
	if (!remaining)
		return 1;
	/* open the root */
	int open = 1;
	for (;;) {
		frame *fr;
		if (open) {
			if (!remaining)
				return 1;
			if ((++s->nodes & 1023) == 0 && (pl_now() > s->deadline || s->nodes > s->node_limit)) {
				s->timed_out = 1;
				return -1;
			}
			uint32_t k = UINT32_MAX;
			uint64_t m = UINT64_MAX;
			for (uint32_t j = a; j < b; j++)
				if (s->rem[j] && s->f[j] < m) {
					m = s->f[j];
					k = j;
				}
			if ((size_t)depth == s->stcap) {
				frame *ns = realloc(s->st, s->stcap * 2 * sizeof *ns);
				if (!ns)
					return -2;
				s->st = ns;
				s->stcap *= 2;
			}
			fr = &s->st[depth++];
			*fr = (frame){k, m, s->first[k], UINT32_MAX, 0, 0};
			open = 0;
		}
		fr = &s->st[depth - 1];
		/* undo what this frame did last */
		if (fr->placed != UINT32_MAX) {
			const sreq *q = &s->q[fr->placed];
			for (uint32_t k = q->sa; k < q->sb; k++)
				s->f[k] = fr->m;
			s->done[fr->placed] = 0;
			take(s, fr->placed, +1);
			remaining++;
			fr->placed = UINT32_MAX;
		} else if (fr->next == UINT32_MAX - 1) {
			s->f[fr->k] = fr->m; /* waste undone */
			fr->next = UINT32_MAX;
		}
		uint32_t k = fr->k;
		uint64_t m = fr->m;
		int advanced = 0;
		while (fr->next < s->first[k + 1]) {
			uint32_t i = s->list[fr->next++];
			const sreq *q = &s->q[i];
			if (s->done[i] || m + q->size > s->cap)
				continue;
			if (q->size == fr->prev_size && q->sb == fr->prev_sb)
				continue; /* same as the last one tried here */
			int ok = 1;
			for (uint32_t j = q->sa + 1; j < q->sb && ok; j++)
				ok = s->f[j] == m;
			if (!ok)
				continue;
			fr->prev_size = q->size;
			fr->prev_sb = q->sb;
			s->done[i] = 1;
			take(s, i, -1);
			remaining--;
			s->off[i] = m;
			fr->placed = i;
			for (uint32_t j = q->sa; j < q->sb; j++) {
				s->f[j] = m + q->size;
				if (s->rem[j] && s->f[j] + s->rem[j] > s->cap)
					ok = 0;
			}
			if (!ok || !feasible(s, a, b))
				break; /* undone at the top of the loop */
			advanced = 1;
			break;
		}
		if (fr->placed != UINT32_MAX) {
			if (advanced)
				open = 1;
			continue;
		}
		if (fr->next != UINT32_MAX && fr->next != UINT32_MAX - 1) {
			/* the waste branch */
			fr->next = UINT32_MAX;
			uint64_t L = waste_level(s, k, m, b);
			if (L != UINT64_MAX && L > m && L + s->rem[k] <= s->cap) {
				s->f[k] = L;
				fr->next = UINT32_MAX - 1;
				if (feasible(s, a, b)) {
					open = 1;
					continue;
				}
				s->f[k] = m;
				fr->next = UINT32_MAX;
			}
		}
		/* exhausted: pop */
		depth--;
		if (!depth)
			return 0;
	}
}

int pl_search(const pl_work *w, uint64_t cap, double deadline, uint64_t node_limit, uint64_t *off,
              uint64_t *nodes)
{
	srch s;
	memset(&s, 0, sizeof s);
	int rc = -2;
	if (build(&s, w) < 0)
		goto out;
	s.cap = cap;
	s.deadline = deadline;
	s.node_limit = node_limit ? node_limit : UINT64_MAX;
	for (uint32_t i = 0; i < s.nq; i++)
		take(&s, i, +1);
	rc = 1;
	/* components: sections no request crosses into start a new one */
	uint32_t a = 0;
	for (uint32_t k = 1; k <= s.K && rc == 1; k++)
		if (k == s.K || !s.cross[k]) {
			rc = solve(&s, a, k, w->pinned_bytes);
			a = k;
		}
	if (rc == 1) {
		uint64_t base = 0; /* pinned requests stacked at the bottom, as greedy does */
		for (size_t i = 0; i < w->n; i++)
			if (w->kind[i] == PL_PINNED) {
				off[i] = base;
				base += w->size[i];
			} else if (w->kind[i] == PL_DYNAMIC)
				off[i] = STP_NO_OFFSET;
		for (uint32_t i = 0; i < s.nq; i++)
			off[s.q[i].id] = s.off[i];
	}
out:
	if (nodes)
		*nodes += s.nodes;
	srch_free(&s);
	return rc;
}
