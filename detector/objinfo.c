/*
 * objinfo.c - per-object class and patterns for the timeline exporter
 * (opt.keep_objects): one record per allocation, in allocation order (so
 * sorted by the ALLOC event's seq): the seq (8 bytes), the class and the
 * pattern bits (2 bytes), the late-free entry it was counted in (4 bytes).
 * Patterns found per object mark it when they are added (the instance's
 * alloc_seq); late free is decided per (site, phase, distance) after pass
 * 2, so its objects are marked through their entry at the end.  Lookups
 * come in allocation order from the exporter: a cursor makes them O(1),
 * with a binary search otherwise.
 */
#include <stdlib.h>

#include "det.h"

int det_ko_push(stp_det *d, uint64_t seq)
{
	if (d->nko == d->ko_cap) {
		uint64_t nc = d->ko_cap ? d->ko_cap * 2 : 4096;
		uint64_t *s = realloc(d->ko_seq, nc * sizeof *s);
		if (!s)
			return -1;
		d->ko_seq = s;
		uint16_t *i = realloc(d->ko_info, nc * sizeof *i);
		if (!i)
			return -1;
		d->ko_info = i;
		uint32_t *l = realloc(d->ko_lf, nc * sizeof *l);
		if (!l)
			return -1;
		d->ko_lf = l;
		d->ko_cap = nc;
	}
	d->ko_seq[d->nko] = seq;
	d->ko_info[d->nko] = STP_CLASS_UNCLASSIFIED;
	d->ko_lf[d->nko] = UINT32_MAX;
	d->nko++;
	return 0;
}

uint64_t det_ko_find(const stp_det *d, uint64_t seq)
{
	uint64_t lo = 0, hi = d->nko;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (d->ko_seq[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->nko && d->ko_seq[lo] == seq ? lo : UINT64_MAX;
}

void det_ko_mark(stp_det *d, uint64_t seq, stp_det_pattern p)
{
	uint64_t k = d->ko_hint < d->nko && d->ko_seq[d->ko_hint] == seq ? d->ko_hint : det_ko_find(d, seq);
	if (k != UINT64_MAX)
		d->ko_info[k] |= (uint16_t)(1u << (4 + p));
}

int stp_det_object_info(stp_det *d, uint64_t alloc_seq, unsigned *patterns)
{
	if (!d->ko_seq)
		return -1;
	uint64_t k = d->ko_cursor;
	if (k >= d->nko || d->ko_seq[k] != alloc_seq) {
		if (k + 1 < d->nko && d->ko_seq[k + 1] == alloc_seq)
			k++;
		else if ((k = det_ko_find(d, alloc_seq)) == UINT64_MAX)
			return -1;
	}
	d->ko_cursor = k;
	uint16_t v = d->ko_info[k];
	if (patterns)
		*patterns = v >> 4;
	return v & 15;
}
