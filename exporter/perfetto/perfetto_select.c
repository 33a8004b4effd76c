/*
 * perfetto_select.c - the --top pre-pass: reads a trace once and marks the N
 * objects with the largest score in a bitmap indexed by their ALLOC seq.
 *
 * Score: bytes x lifetime (STP_TOP_BY_AREA) or bytes (STP_TOP_BY_SIZE);
 * objects the detector found a pattern in (a leak, a late free, ...) come
 * first, so a bounded timeline still draws every finding's objects.  With
 * a window, only objects live inside it count, and the lifetime is the part
 * inside it.  An object never freed lives to the trace's last event.  Ties go
 * to the earlier allocation.  Memory: the live objects plus a heap of N.
 */
#include <stdlib.h>
#include <string.h>

#include "perfetto_export.h"

typedef struct live { uint64_t seq, t, size; } live;
typedef struct scored { double score; uint64_t seq; } scored;

typedef struct sel {
	pf_export *x;
	uint32_t trace;
	uint64_t n;
	scored *heap; /* min-heap by (score, -seq) of the best n so far */
	size_t nheap, heap_cap;
	int oom;
	live *pool;
	size_t npool, cap;
	uint64_t *free_list;
	size_t nfree, free_cap;
	pf_map ix; /* addr -> pool index */
	uint64_t max_seq;
} sel;

static int worse(const scored *a, const scored *b)
{
	return a->score < b->score || (a->score == b->score && a->seq > b->seq);
}

static void offer(sel *s, double score, uint64_t seq)
{
	scored c = {score, seq};
	if (s->nheap < s->n) {
		if (pf_grow((void **)&s->heap, &s->heap_cap, s->nheap + 1, sizeof *s->heap) < 0) {
			s->oom = 1;
			return;
		}
		size_t i = s->nheap++;
		s->heap[i] = c;
		while (i && worse(&s->heap[i], &s->heap[(i - 1) / 2])) {
			scored t = s->heap[i];
			s->heap[i] = s->heap[(i - 1) / 2];
			s->heap[(i - 1) / 2] = t;
			i = (i - 1) / 2;
		}
		return;
	}
	if (!worse(&s->heap[0], &c))
		return;
	s->heap[0] = c;
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->nheap && worse(&s->heap[l], &s->heap[m]))
			m = l;
		if (r < s->nheap && worse(&s->heap[r], &s->heap[m]))
			m = r;
		if (m == i)
			break;
		scored t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

static void score(sel *s, const live *l, uint64_t t_end)
{
	uint64_t b = l->t, e = t_end < l->t ? l->t : t_end;
	if (s->x->has_window) {
		if (e < s->x->lo || b > s->x->hi)
			return;
		if (b < s->x->lo)
			b = s->x->lo;
		if (e > s->x->hi)
			e = s->x->hi;
	}
	double v = (double)l->size;
	if (s->x->opts.top_by == STP_TOP_BY_AREA)
		v *= (double)(e - b) + 1.0;
	const char *names[1];
	stp_export_object o = {.trace = s->trace, .alloc_seq = l->seq};
	if (s->x->opts.patterns && s->x->opts.patterns(s->x->opts.ctx, &o, names, 1))
		v = (v + 1.0) * 1e100; /* with a finding: before any other, by its own score */
	offer(s, v, l->seq);
}

static int drop(sel *s, uint64_t addr, uint64_t t)
{
	uint64_t *ix = pf_map_get(&s->ix, addr);
	if (!ix)
		return 0;
	uint64_t i = *ix;
	score(s, &s->pool[i], t);
	pf_map_del(&s->ix, addr);
	if (pf_grow((void **)&s->free_list, &s->free_cap, s->nfree + 1, sizeof *s->free_list) < 0)
		return -1;
	s->free_list[s->nfree++] = i;
	return 0;
}

int pf_select_top(pf_export *x, uint32_t trace, const char *path, int64_t offset, uint64_t **bits, uint64_t *nbits)
{
	sel s = {.x = x, .trace = trace, .n = x->opts.top_n};
	int rc = -1;
	char err[512];
	*bits = NULL;
	*nbits = 0;
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	if (!r) {
		pf_fail(x, "%s", err);
		return -1;
	}
	stp_event ev;
	int got;
	uint64_t t_last = 0;
	while ((got = stp_reader_next(r, &ev)) > 0) {
		uint64_t t = (uint64_t)((int64_t)ev.time_ns + offset);
		if (t > t_last)
			t_last = t;
		if (ev.seq > s.max_seq)
			s.max_seq = ev.seq;
		if (ev.type == STP_EV_ALLOC) {
			if (drop(&s, ev.u.alloc.addr, t) < 0)
				goto oom;
			uint64_t i;
			if (s.nfree) {
				i = s.free_list[--s.nfree];
			} else {
				if (pf_grow((void **)&s.pool, &s.cap, s.npool + 1, sizeof *s.pool) < 0)
					goto oom;
				i = s.npool++;
			}
			s.pool[i] = (live){ev.seq, t, ev.u.alloc.size};
			if (pf_map_put(&s.ix, ev.u.alloc.addr, i) < 0)
				goto oom;
		} else if (ev.type == STP_EV_FREE) {
			if (drop(&s, ev.u.free.addr, t) < 0)
				goto oom;
		}
	}
	if (s.oom)
		goto oom;
	if (got < 0) {
		pf_fail(x, "%s", stp_reader_error(r));
		goto out;
	}
	for (size_t j = 0; j < s.ix.cap; j++)
		if (s.ix.keys[j] != UINT64_MAX)
			score(&s, &s.pool[s.ix.vals[j]], t_last);
	if (s.ix.has_max)
		score(&s, &s.pool[s.ix.max_val], t_last);
	if (s.oom)
		goto oom;
	uint64_t words = s.max_seq / 64 + 1;
	*bits = calloc(words, sizeof **bits);
	if (!*bits)
		goto oom;
	*nbits = words * 64;
	for (size_t j = 0; j < s.nheap; j++)
		(*bits)[s.heap[j].seq / 64] |= 1ull << (s.heap[j].seq % 64);
	rc = 0;
	goto out;
oom:
	pf_fail(x, "%s: out of memory selecting the top objects", path);
out:
	stp_reader_close(r);
	free(s.heap);
	free(s.pool);
	free(s.free_list);
	pf_map_free(&s.ix);
	return rc;
}
