/*
 * state.c - the small helpers over the detector's state (det.h) that the
 * passes share: memory spaces, interned names, timeline cuts, and the
 * binary search and lifetime buckets.  The bottom of the detector: it calls
 * nothing above it, so calls among scan.c, windows.c, analyze.c, result.c
 * and the rest run one way, down to here.
 *
 * Invariants: spaces[] and sstate[] grow together (one index, at most 255
 * spaces: more share the last); name_store[v] is the string interned for
 * the reader string id whose names map value is v; cuts[] and cut_ns[]
 * grow together.
 */
#include <stdlib.h>
#include <string.h>

#include "det.h"
#include "space.h"

int det_space_index(stp_det *d, uint8_t kind, int32_t device)
{
	if (kind == STP_MEM_HOST && device != DET_DEV_TENSORS)
		device = -1;
	for (uint32_t i = 0; i < d->nspaces; i++)
		if (d->spaces[i].kind == kind && d->spaces[i].device == device)
			return (int)i;
	if (d->nspaces >= 255)
		return 254; /* the rest share the last space */
	if (d->nspaces == d->spaces_cap) {
		uint32_t nc = d->spaces_cap ? d->spaces_cap * 2 : 4;
		stp_det_space *ns = realloc(d->spaces, nc * sizeof *ns);
		if (!ns)
			return -1;
		d->spaces = ns;
		det_space_state *nst = realloc(d->sstate, nc * sizeof *nst);
		if (!nst)
			return -1;
		d->sstate = nst;
		d->spaces_cap = nc;
	}
	d->spaces[d->nspaces] =
	        (stp_det_space){.kind = kind, .device = device, .tensors = device == DET_DEV_TENSORS, .peak_like = -1};
	d->sstate[d->nspaces] = (det_space_state){.it_peak_seq = UINT64_MAX};
	return (int)d->nspaces++;
}

const char *det_intern(stp_det *d, const stp_reader *r, uint32_t sid)
{
	uint64_t v;
	if (det_map_get(&d->names, sid, &v))
		return d->name_store[v];
	if (d->nnames == d->names_cap) {
		uint32_t nc = d->names_cap ? d->names_cap * 2 : 16;
		char **n = realloc(d->name_store, nc * sizeof *n);
		if (!n)
			return "";
		d->name_store = n;
		d->names_cap = nc;
	}
	const char *s = stp_reader_string(r, sid);
	char *c = strdup(*s ? s : "(unnamed)");
	if (!c || det_map_put(&d->names, sid, d->nnames, NULL) < 0) {
		free(c);
		return "";
	}
	d->name_store[d->nnames] = c;
	return d->name_store[d->nnames++];
}

int det_push_cut(stp_det *d, uint64_t seq, uint64_t ns)
{
	if (d->ncuts == d->cuts_cap) {
		uint32_t nc = d->cuts_cap ? d->cuts_cap * 2 : 64;
		uint64_t *c = realloc(d->cuts, nc * sizeof *c);
		if (!c)
			return -1;
		d->cuts = c;
		uint64_t *t = realloc(d->cut_ns, nc * sizeof *t);
		if (!t)
			return -1;
		d->cut_ns = t;
		d->cuts_cap = nc;
	}
	d->cuts[d->ncuts] = seq;
	d->cut_ns[d->ncuts] = ns;
	d->ncuts++;
	return 0;
}

uint32_t det_count_le(const uint64_t *v, uint32_t n, uint64_t x)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

unsigned det_time_bucket(uint64_t ns)
{
	unsigned b = 0;
	uint64_t lim = 1000; /* 1 us */
	while (b < STP_DET_TIME_BUCKETS - 2 && ns >= lim) {
		b++;
		lim *= 10;
	}
	return b;
}

unsigned det_logical_bucket(uint64_t dist)
{
	if (!dist)
		return 0;
	unsigned b = 1;
	uint64_t lim = 10;
	while (b < STP_DET_LOGICAL_BUCKETS - 2 && dist >= lim) {
		b++;
		lim *= 10;
	}
	return b;
}

void det_heap_sample_note(const stp_reader *r, const stp_event *ev, uint64_t *interval)
{
	if (ev->type == STP_EV_MARKER && ev->u.marker.kind == STP_MARK_ANNOTATION && ev->u.marker.value >= 0 &&
	    !strcmp(stp_reader_string(r, ev->u.marker.name), STP_HEAP_SAMPLE_ANNOTATION))
		*interval = (uint64_t)ev->u.marker.value;
}
