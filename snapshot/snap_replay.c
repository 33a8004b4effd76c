/*
 * snap_replay.c - the state before a snapshot's ring buffer (see snap_int.h).
 *
 * The ring buffer of a PyTorch snapshot forgets its oldest entries, but the
 * snapshot's `segments` are the state after its last one.  Undoing the
 * entries from last to first gives the state before the first:
 *   alloc          -> the block was not allocated before it
 *   free_completed -> it was (its size: the entry's, rounded)
 *   segment_alloc / segment_map  -> the range was not reserved / mapped
 *   segment_free / segment_unmap -> it was
 * Blocks are keyed by address in a hash map.  Segments are ranges; an
 * expandable segment's map/unmap may cover part of one, so a range is
 * trimmed or split when the entry is not a whole one.
 */
#include <stdlib.h>
#include <string.h>

#include "snap_int.h"
#include "u64map.h"

int imp_push(imp_vec *vec, const imp_ev *e)
{
	if (vec->n == vec->cap) {
		size_t nc = vec->cap ? vec->cap * 2 : 256;
		imp_ev *nv = realloc(vec->v, nc * sizeof *nv);
		if (!nv)
			return -1;
		vec->v = nv;
		vec->cap = nc;
	}
	vec->v[vec->n++] = *e;
	return 0;
}

/* live segment ranges; dead ones have size 0 */
typedef struct ranges {
	imp_vec r;
	u64map by_addr; /* start address -> index */
} ranges;

static int range_add(ranges *rs, const imp_ev *e)
{
	if (!e->size)
		return 0;
	if (imp_push(&rs->r, e) < 0)
		return -1;
	return u64map_put(&rs->by_addr, e->addr, rs->r.n - 1);
}

/* Removes [a, a+s) from whichever live range holds it. */
static int range_remove(ranges *rs, uint64_t a, uint64_t s)
{
	uint64_t i;
	if (u64map_get(&rs->by_addr, a, &i) && rs->r.v[i].size) {
		imp_ev *r = &rs->r.v[i];
		u64map_del(&rs->by_addr, a);
		if (s >= r->size) {
			r->size = 0;
			return 0;
		}
		r->addr += s; /* a map at the start of a larger range */
		r->size -= s;
		return u64map_put(&rs->by_addr, r->addr, i);
	}
	for (size_t k = 0; k < rs->r.n; k++) {
		imp_ev *r = &rs->r.v[k];
		if (!r->size || a <= r->addr || a >= r->addr + r->size)
			continue;
		uint64_t end = r->addr + r->size, cut_end = a + s < end ? a + s : end;
		r->size = a - r->addr; /* keep the head */
		if (cut_end < end) {   /* and the tail as a range of its own */
			imp_ev tail = *r;
			tail.addr = cut_end;
			tail.size = end - cut_end;
			return range_add(rs, &tail);
		}
		return 0;
	}
	return 0; /* not live: nothing to undo */
}

int imp_replay_initial(const imp_vec *end_segs, const imp_vec *end_allocs, const imp_vec *tr, imp_vec *out)
{
	ranges segs = {0};
	imp_vec blocks = {0};
	u64map live = {0}; /* address -> index in blocks */
	int rc = -1;
	for (size_t i = 0; i < end_segs->n; i++)
		if (range_add(&segs, &end_segs->v[i]) < 0)
			goto done;
	for (size_t i = 0; i < end_allocs->n; i++)
		if (imp_push(&blocks, &end_allocs->v[i]) < 0 || u64map_put(&live, end_allocs->v[i].addr, blocks.n - 1) < 0)
			goto done;
	for (size_t i = tr->n; i-- > 0;) {
		const imp_ev *e = &tr->v[i];
		switch (e->type) {
		case STP_EV_ALLOC: u64map_del(&live, e->addr); break;
		case STP_EV_FREE: {
			imp_ev b = *e;
			b.type = STP_EV_ALLOC;
			if (imp_push(&blocks, &b) < 0 || u64map_put(&live, b.addr, blocks.n - 1) < 0)
				goto done;
			break;
		}
		case STP_EV_SEGMENT_RESERVE:
			if (range_remove(&segs, e->addr, e->size) < 0)
				goto done;
			break;
		case STP_EV_SEGMENT_RELEASE: {
			imp_ev s = *e;
			s.type = STP_EV_SEGMENT_RESERVE;
			if (range_add(&segs, &s) < 0)
				goto done;
			break;
		}
		default: break;
		}
	}
	for (size_t i = 0; i < segs.r.n; i++)
		if (segs.r.v[i].size) {
			imp_ev s = segs.r.v[i];
			s.type = STP_EV_SEGMENT_RESERVE;
			if (imp_push(out, &s) < 0)
				goto done;
		}
	/* blocks still live, in the order they were met (end state first) */
	for (size_t i = 0; i < blocks.n; i++) {
		uint64_t idx;
		if (u64map_get(&live, blocks.v[i].addr, &idx) && idx == i && imp_push(out, &blocks.v[i]) < 0)
			goto done;
	}
	rc = 0;
done:
	free(segs.r.v);
	u64map_free(&segs.by_addr);
	free(blocks.v);
	u64map_free(&live);
	return rc;
}
