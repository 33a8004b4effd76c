/*
 * select.c - stp_det_select(): the level of detail every timeline of
 * stprof shares (the Perfetto exporter's --top, the HTML viewer's object
 * bound): reads a trace once and marks the N objects with the largest
 * score in a bitmap indexed by their ALLOC seq.
 *
 * Score: bytes x lifetime, or bytes; objects with a finding come first (by
 * their own score), so a bounded timeline still draws every finding's
 * objects.  With a window only objects live inside it count, and the
 * lifetime is the part inside it.  An object never freed lives to the
 * trace's last event; an allocation at a live address ends the object
 * there (a lost free).  Ties go to the earlier allocation.
 *
 * Memory: the live eligible objects (a map entry and 24 bytes each) plus a
 * heap of N.
 */
#include <stdio.h>
#include <stdlib.h>

#include "livemap.h"
#include "stprof/detector.h"

typedef struct sel_live { uint64_t seq, t, size; } sel_live;
typedef struct sel_scored { double score; uint64_t seq; } sel_scored;

typedef struct sel {
	const stp_det_select_opts *o;
	sel_scored *heap;      /* min-heap by (score, -seq) of the best n so far */
	uint64_t nheap, heap_cap;
	sel_live *pool;
	uint64_t npool, cap;
	uint64_t *free_list;
	uint64_t nfree, free_cap;
	det_map ix;            /* addr -> pool index */
	uint64_t max_seq;
	int oom;
} sel;

static int worse(const sel_scored *a, const sel_scored *b)
{
	return a->score < b->score || (a->score == b->score && a->seq > b->seq);
}

static void sift_down(sel *s, uint64_t i)
{
	for (;;) {
		uint64_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->nheap && worse(&s->heap[l], &s->heap[m]))
			m = l;
		if (r < s->nheap && worse(&s->heap[r], &s->heap[m]))
			m = r;
		if (m == i)
			return;
		sel_scored t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

static void offer(sel *s, double score, uint64_t seq)
{
	sel_scored c = {score, seq};
	if (s->nheap < s->o->n) {
		if (s->nheap == s->heap_cap) {
			uint64_t nc = s->heap_cap ? s->heap_cap * 2 : 1024;
			sel_scored *h = realloc(s->heap, nc * sizeof *h);
			if (!h) {
				s->oom = 1;
				return;
			}
			s->heap = h;
			s->heap_cap = nc;
		}
		uint64_t i = s->nheap++;
		s->heap[i] = c;
		while (i && worse(&s->heap[i], &s->heap[(i - 1) / 2])) {
			sel_scored t = s->heap[i];
			s->heap[i] = s->heap[(i - 1) / 2];
			s->heap[(i - 1) / 2] = t;
			i = (i - 1) / 2;
		}
		return;
	}
	if (!worse(&s->heap[0], &c))
		return;
	s->heap[0] = c;
	sift_down(s, 0);
}

static void score(sel *s, const sel_live *l, uint64_t t_end)
{
	const stp_det_select_opts *o = s->o;
	uint64_t b = l->t, e = t_end < l->t ? l->t : t_end;
	if (o->has_window) {
		if (e < o->lo || b > o->hi)
			return;
		if (b < o->lo)
			b = o->lo;
		if (e > o->hi)
			e = o->hi;
	}
	double v = (double)l->size;
	if (!o->by_size)
		v *= (double)(e - b) + 1.0;
	if (o->has_finding && o->has_finding(o->ctx, l->seq))
		v = (v + 1.0) * 1e100; /* with a finding: before any other, by its own score */
	offer(s, v, l->seq);
}

/* Ends the object at addr, if one is live there, at time t. */
static void end_at(sel *s, uint64_t addr, uint64_t t)
{
	uint64_t i;
	if (!det_map_del(&s->ix, addr, &i))
		return;
	score(s, &s->pool[i], t);
	if (s->nfree == s->free_cap) {
		uint64_t nc = s->free_cap ? s->free_cap * 2 : 1024;
		uint64_t *f = realloc(s->free_list, nc * sizeof *f);
		if (!f) {
			s->oom = 1;
			return;
		}
		s->free_list = f;
		s->free_cap = nc;
	}
	s->free_list[s->nfree++] = i;
}

static void begin(sel *s, const stp_event *ev, uint64_t t)
{
	uint64_t i;
	if (s->nfree) {
		i = s->free_list[--s->nfree];
	} else {
		if (s->npool == s->cap) {
			uint64_t nc = s->cap ? s->cap * 2 : 1024;
			sel_live *p = realloc(s->pool, nc * sizeof *p);
			if (!p) {
				s->oom = 1;
				return;
			}
			s->pool = p;
			s->cap = nc;
		}
		i = s->npool++;
	}
	s->pool[i] = (sel_live){ev->seq, t, ev->u.alloc.size};
	if (det_map_put(&s->ix, ev->u.alloc.addr, i, NULL) < 0)
		s->oom = 1;
}

int stp_det_select(const char *path, const stp_det_select_opts *o, uint64_t **bits, uint64_t *nbits, char *err,
                   size_t errlen)
{
	sel s = {.o = o};
	int rc = -1;
	*bits = NULL;
	*nbits = 0;
	stp_reader *r = stp_reader_open(path, err, errlen);
	if (!r)
		return -1;
	if (det_map_init(&s.ix, 1024) < 0)
		goto oom;
	stp_event ev;
	int got;
	uint64_t t_last = 0;
	while ((got = stp_reader_next(r, &ev)) > 0 && !s.oom) {
		uint64_t t = (uint64_t)((int64_t)ev.time_ns + o->offset);
		if (t > t_last)
			t_last = t;
		if (ev.seq > s.max_seq)
			s.max_seq = ev.seq;
		if (ev.type == STP_EV_ALLOC) {
			end_at(&s, ev.u.alloc.addr, t);
			if (!o->eligible || o->eligible(o->ctx, &ev))
				begin(&s, &ev, t);
		} else if (ev.type == STP_EV_FREE) {
			end_at(&s, ev.u.free.addr, t);
		}
	}
	if (s.oom)
		goto oom;
	if (got < 0) {
		snprintf(err, errlen, "%s", stp_reader_error(r));
		goto out;
	}
	uint64_t it = 0, key, v;
	while (det_map_next(&s.ix, &it, &key, &v))
		score(&s, &s.pool[v], t_last);
	if (s.oom)
		goto oom;
	uint64_t words = s.max_seq / 64 + 1;
	*bits = calloc(words, sizeof **bits);
	if (!*bits)
		goto oom;
	*nbits = words * 64;
	for (uint64_t j = 0; j < s.nheap; j++)
		(*bits)[s.heap[j].seq / 64] |= 1ull << (s.heap[j].seq % 64);
	rc = 0;
	goto out;
oom:
	snprintf(err, errlen, "%s: out of memory selecting the objects to draw", path);
out:
	stp_reader_close(r);
	free(s.heap);
	free(s.pool);
	free(s.free_list);
	det_map_destroy(&s.ix);
	return rc;
}
