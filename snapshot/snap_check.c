/*
 * snap_check.c - a snapshot's allocations checked against its segments
 * (snap_int.h, imp_outside_segments).  PyTorch's caching allocator hands
 * out blocks of its segments only, so every allocation lies inside the
 * segments reserved (or mapped) on its device at that moment.  One that
 * does not means the snapshot's `segments` and trace are not the
 * allocator's whole state (segments of another pool or process, a trace
 * spliced from elsewhere): its reserved bytes would give an impossible
 * efficiency, and the importer drops them (snap_import.c).
 *
 * The events are replayed forwards; live ranges are kept sorted by
 * (device, start), disjoint; an allocation is covered when contiguous live
 * ranges of its device span it (expandable segments map a reservation in
 * pages, and a block may cross pages).  Memory: one record per live range.
 */
#include <stdlib.h>
#include <string.h>

#include "snap_int.h"

typedef struct rng {
	int32_t device;
	uint64_t lo, hi; /* [lo, hi) */
} rng;

typedef struct rset {
	rng *v;
	size_t n, cap;
} rset;

static int before(int32_t dev, uint64_t a, const rng *r) { return dev < r->device || (dev == r->device && a < r->lo); }

/* Index of the first range that does not come before (dev, a). */
static size_t lower(const rset *s, int32_t dev, uint64_t a)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (before(dev, a, &s->v[mid]) || (s->v[mid].device == dev && s->v[mid].lo == a))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static int insert(rset *s, size_t at, rng r)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 64;
		rng *nv = realloc(s->v, nc * sizeof *nv);
		if (!nv)
			return -1;
		s->v = nv;
		s->cap = nc;
	}
	memmove(s->v + at + 1, s->v + at, (s->n - at) * sizeof *s->v);
	s->v[at] = r;
	s->n++;
	return 0;
}

static void erase(rset *s, size_t at)
{
	memmove(s->v + at, s->v + at + 1, (s->n - at - 1) * sizeof *s->v);
	s->n--;
}

/* Removes [lo, hi) of dev from the live ranges it overlaps. */
static int release(rset *s, int32_t dev, uint64_t lo, uint64_t hi)
{
	size_t i = lower(s, dev, lo);
	if (i && s->v[i - 1].device == dev && s->v[i - 1].hi > lo)
		i--;
	while (i < s->n && s->v[i].device == dev && s->v[i].lo < hi) {
		rng *r = &s->v[i];
		if (r->hi <= lo) {
			i++;
			continue;
		}
		rng tail = {dev, hi, r->hi};
		if (r->lo < lo) { /* keep the head */
			r->hi = lo;
			i++;
		} else {
			erase(s, i);
		}
		if (tail.hi > tail.lo) /* and the tail */
			return insert(s, lower(s, dev, tail.lo), tail);
	}
	return 0;
}

static int reserve(rset *s, int32_t dev, uint64_t lo, uint64_t hi)
{
	if (release(s, dev, lo, hi) < 0) /* reserved again: replaces */
		return -1;
	return insert(s, lower(s, dev, lo), (rng){dev, lo, hi});
}

static int covered(const rset *s, int32_t dev, uint64_t lo, uint64_t hi)
{
	size_t i = lower(s, dev, lo);
	if (i < s->n && s->v[i].device == dev && s->v[i].lo == lo)
		; /* starts a range */
	else if (i && s->v[i - 1].device == dev && s->v[i - 1].lo <= lo && s->v[i - 1].hi > lo)
		i--;
	else
		return 0;
	uint64_t at = lo;
	for (; i < s->n && s->v[i].device == dev && s->v[i].lo <= at; i++) {
		if (s->v[i].hi >= hi)
			return 1;
		at = s->v[i].hi;
	}
	return 0;
}

static uint64_t end_of(uint64_t a, uint64_t n) { return a + n < a ? UINT64_MAX : a + n; }

uint64_t imp_outside_segments(const imp_vec *ev, uint64_t *first)
{
	rset s = {0};
	uint64_t outside = 0;
	int have_segments = 0;
	for (size_t i = 0; i < ev->n; i++)
		have_segments |= ev->v[i].type == STP_EV_SEGMENT_RESERVE;
	if (!have_segments) /* nothing to check against (stprof's synthetic segments were left out) */
		return 0;
	for (size_t i = 0; i < ev->n; i++) {
		const imp_ev *e = &ev->v[i];
		uint64_t hi = end_of(e->addr, e->size);
		int rc = 0;
		if (e->type == STP_EV_SEGMENT_RESERVE)
			rc = reserve(&s, e->device, e->addr, hi);
		else if (e->type == STP_EV_SEGMENT_RELEASE)
			rc = release(&s, e->device, e->addr, hi);
		else if (e->type == STP_EV_ALLOC && !covered(&s, e->device, e->addr, hi) && !outside++ && first)
			*first = e->addr;
		if (rc < 0) {
			free(s.v);
			return UINT64_MAX;
		}
	}
	free(s.v);
	return outside;
}
