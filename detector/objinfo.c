/*
 * objinfo.c - per-object records for the exporters (opt.keep_objects): one
 * record per allocation, in allocation order (so sorted by the ALLOC
 * event's seq): the seq (8 bytes), the class and the pattern bits (2
 * bytes), the late-free entry it was counted in (4 bytes).  Patterns found
 * per object mark it when they are added (the instance's alloc_seq); late
 * free is decided per (site, phase, distance) after pass 2, so its objects
 * are marked through their entry at the end.  Lookups come in allocation
 * order from the exporter: a cursor makes them O(1), with a binary search
 * otherwise.
 *
 * keep_objects >= 2 (the HTML viewer) adds the seq of the event that ended
 * the object (its FREE, or the ALLOC that reused its address: the
 * detector's matching, so an exporter needs no address map of its own) and
 * the module it was made in (12 bytes); keep_accesses N adds its first N
 * accesses (24 bytes each, a list per object through a shared pool) and
 * how many APIs touched it.
 */
#include <stdlib.h>

#include "det.h"
#include "space.h"

typedef struct det_ko_acc {
	uint64_t ns;
	uint32_t name;  /* trace string id */
	uint32_t next;  /* next record of the same object + 1, 0 none */
	uint8_t kind, mode;
} det_ko_acc;

static int grow(void **p, uint64_t n, size_t elem)
{
	void *q = realloc(*p, n * elem);
	if (!q)
		return -1;
	*p = q;
	return 0;
}

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
		if (d->opt.keep_objects >= 2 &&
		    (grow((void **)&d->ko_end, nc, sizeof *d->ko_end) < 0 ||
		     grow((void **)&d->ko_mod, nc, sizeof *d->ko_mod) < 0))
			return -1;
		if (d->opt.keep_accesses &&
		    (grow((void **)&d->ko_acc, nc, sizeof *d->ko_acc) < 0 ||
		     grow((void **)&d->ko_nacc, nc, sizeof *d->ko_nacc) < 0))
			return -1;
		d->ko_cap = nc;
	}
	d->ko_seq[d->nko] = seq;
	d->ko_info[d->nko] = STP_CLASS_UNCLASSIFIED;
	d->ko_lf[d->nko] = UINT32_MAX;
	if (d->ko_end) {
		d->ko_end[d->nko] = UINT64_MAX;
		d->ko_mod[d->nko] = det_modbytes_current(d);
	}
	if (d->ko_acc)
		d->ko_acc[d->nko] = d->ko_nacc[d->nko] = 0;
	d->nko++;
	return 0;
}

void det_ko_end(stp_det *d, uint64_t k, uint64_t end_seq)
{
	if (d->ko_end && k < d->nko)
		d->ko_end[k] = end_seq;
}

int det_ko_access(stp_det *d, uint64_t k, uint64_t ns, uint32_t name, uint8_t kind, uint8_t mode)
{
	if (!d->ko_acc || k >= d->nko)
		return 0;
	uint32_t n = d->ko_nacc[k];
	if (n < UINT32_MAX)
		d->ko_nacc[k] = n + 1;
	if (n >= d->opt.keep_accesses)
		return 0;
	if (d->nacc_rec >= UINT32_MAX - 1)
		return 0; /* the pool is full: counted, not listed */
	if (d->nacc_rec == d->acc_rec_cap) {
		uint64_t nc = d->acc_rec_cap ? d->acc_rec_cap * 2 : 4096;
		if (grow((void **)&d->acc_rec, nc, sizeof *d->acc_rec) < 0)
			return -1;
		d->acc_rec_cap = nc;
	}
	uint32_t r = (uint32_t)d->nacc_rec++;
	d->acc_rec[r] = (det_ko_acc){.ns = ns, .name = name, .kind = kind, .mode = mode};
	/* append: walk to the tail (at most keep_accesses records) */
	uint32_t *link = &d->ko_acc[k];
	while (*link)
		link = &d->acc_rec[*link - 1].next;
	*link = r + 1;
	return 0;
}

void det_ko_free(stp_det *d)
{
	free(d->ko_seq);
	free(d->ko_info);
	free(d->ko_lf);
	free(d->ko_end);
	free(d->ko_mod);
	free(d->ko_acc);
	free(d->ko_nacc);
	free(d->acc_rec);
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

/* The record of alloc_seq through the cursor, UINT64_MAX when none. */
static uint64_t record_of(stp_det *d, uint64_t alloc_seq)
{
	if (!d->ko_seq)
		return UINT64_MAX;
	uint64_t k = d->ko_cursor;
	if (k >= d->nko || d->ko_seq[k] != alloc_seq) {
		if (k + 1 < d->nko && d->ko_seq[k + 1] == alloc_seq)
			k++;
		else if ((k = det_ko_find(d, alloc_seq)) == UINT64_MAX)
			return UINT64_MAX;
	}
	d->ko_cursor = k;
	return k;
}

int stp_det_object_info(stp_det *d, uint64_t alloc_seq, unsigned *patterns)
{
	uint64_t k = record_of(d, alloc_seq);
	if (k == UINT64_MAX)
		return -1;
	uint16_t v = d->ko_info[k];
	if (patterns)
		*patterns = v >> 4;
	return v & 15;
}

int stp_det_object(stp_det *d, uint64_t alloc_seq, stp_det_object_rec *out)
{
	uint64_t k = d->ko_end ? record_of(d, alloc_seq) : UINT64_MAX;
	if (k == UINT64_MAX)
		return -1;
	uint16_t v = d->ko_info[k];
	*out = (stp_det_object_rec){.cls = v & 15, .patterns = v >> 4, .end_seq = d->ko_end[k]};
	out->module = d->ko_mod[k] ? det_modbytes_name(d, d->ko_mod[k] - 1) : NULL;
	if (d->ko_nacc)
		out->accesses = d->ko_nacc[k];
	return 0;
}

uint32_t stp_det_object_accesses(stp_det *d, uint64_t alloc_seq, stp_det_access *out, uint32_t max)
{
	uint64_t k = record_of(d, alloc_seq);
	if (k == UINT64_MAX || !d->ko_acc)
		return 0;
	uint32_t n = 0;
	for (uint32_t r = d->ko_acc[k]; r && n < max; r = d->acc_rec[r - 1].next) {
		const det_ko_acc *a = &d->acc_rec[r - 1];
		out[n++] = (stp_det_access){.ns = a->ns, .name = d->rd ? stp_reader_string(d->rd, a->name) : "",
		                            .kind = a->kind, .mode = a->mode};
	}
	return n;
}
