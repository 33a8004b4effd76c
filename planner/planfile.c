/*
 * planfile.c - the plan file (docs/plan-format.md): a little-endian binary
 * file with a fixed header, a section directory, sections of fixed-size
 * records, and a CRC32C trailer over everything before it.
 *
 * Readers accept any minor version of major 1: unknown sections are skipped
 * and records may be longer than this version's (extra bytes ignored).
 * The parser treats the file as outside input: every length, count, offset
 * and cross-reference is checked before use; errors are one line,
 * "FILE: offset N: what".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "stprof/trace_codec.h"

#define PLAN_MAGIC "STPPLAN\0"
const stp_outkind stp_outkind_plan = {"stprof plan", PLAN_MAGIC, 8, NULL};
#define PLAN_MAJOR 1
#define PLAN_MINOR 5
#define PLAN_FLAG_DEVICE 1u /* 1.1: the plan is of device (GPU) allocations */
#define PLAN_FLAG_TENSORS 2u /* 1.1: of PyTorch CPU tensor storages */
#define PLAN_FLAG_SHAPES_VARY 4u /* 1.3: shapes vary: free pool space is lent */
#define HDR_SIZE 64
#define DIR_SIZE 24
#define TRAILER 8

enum { SEC_ENTRIES = 1, SEC_GROUPS, SEC_INTERVALS, SEC_PHASES, SEC_LAYERS, SEC_STRINGS, SEC_SOURCE, SEC_STARTUP,
       SEC_PLACED, SEC_PROGRAM, SEC_MAX = SEC_PROGRAM };
/* 1.3 added SEC_STARTUP, 1.4 SEC_PLACED, 1.5 SEC_PROGRAM: absent in older files */
#define SEC_REQUIRED SEC_SOURCE
static const uint32_t rec_size[SEC_MAX + 1] = {0, 72, 48, 16, 32, 32, 1, 80, 8, 16, 8};

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}
static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int stp_plan_write(const char *path, const stp_reqs *r, const stp_plan *p, char *err, size_t errlen)
{
	uint64_t count[SEC_MAX + 1] = {0, r->n, p->ngroups, p->nintervals, r->nphases, r->nlayers,
	                               r->strings_len ? r->strings_len : 1, 1, r->nstartup,
	                               p->startup_offset ? p->nplaced : 0, 1};
	uint64_t size = HDR_SIZE + (uint64_t)SEC_MAX * DIR_SIZE, at[SEC_MAX + 1];
	for (int s = 1; s <= SEC_MAX; s++) {
		at[s] = size;
		size += count[s] * rec_size[s];
		size = (size + 7) & ~(uint64_t)7;
	}
	size += TRAILER;
	unsigned char *b = calloc(1, size);
	if (!b) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	memcpy(b, PLAN_MAGIC, 8);
	b[8] = PLAN_MAJOR, b[10] = PLAN_MINOR;
	put32(b + 12, HDR_SIZE);
	put64(b + 16, size);
	put32(b + 24, SEC_MAX);
	put32(b + 28, (r->device ? PLAN_FLAG_DEVICE : 0) | (r->tensors ? PLAN_FLAG_TENSORS : 0) |
	                  (r->shapes_vary ? PLAN_FLAG_SHAPES_VARY : 0)); /* 1.1, 1.3 */
	put64(b + 32, p->pool);
	put64(b + 40, p->align);
	put64(b + 48, r->period);
	put64(b + 56, r->min_size); /* 1.1; 0 in 1.0 files */
	for (int s = 1; s <= SEC_MAX; s++) {
		unsigned char *d = b + HDR_SIZE + (size_t)(s - 1) * DIR_SIZE;
		put32(d, (uint32_t)s);
		put32(d + 4, rec_size[s]);
		put64(d + 8, at[s]);
		put64(d + 16, count[s]);
	}
	for (size_t i = 0; i < r->n; i++) {
		const stp_req *q = &r->req[i];
		unsigned char *e = b + at[SEC_ENTRIES] + i * 72;
		put64(e, p->offset[i]);
		put64(e + 8, q->size);
		put64(e + 16, q->callsite);
		put64(e + 24, q->t_start);
		put64(e + 32, q->t_end);
		put32(e + 40, q->ordinal);
		put32(e + 44, q->phase_start);
		put32(e + 48, q->phase_end);
		put32(e + 52, q->layer_start);
		put32(e + 56, q->layer_end);
		put32(e + 60, q->flags);
		put32(e + 64, p->group ? p->group[i] : STP_NO_GROUP);
	}
	for (uint32_t g = 0; g < p->ngroups; g++) {
		const stp_dyn_group *G = &p->groups[g];
		unsigned char *e = b + at[SEC_GROUPS] + (size_t)g * 48;
		put32(e, G->layer_start);
		put32(e + 4, G->layer_end);
		put64(e + 8, G->t_begin);
		put64(e + 16, G->t_end);
		put32(e + 24, G->first);
		put32(e + 28, G->count);
		put64(e + 32, G->requests);
		put64(e + 40, G->max_bytes);
	}
	for (uint32_t k = 0; k < p->nintervals; k++) {
		put64(b + at[SEC_INTERVALS] + (size_t)k * 16, p->intervals[k].offset);
		put64(b + at[SEC_INTERVALS] + (size_t)k * 16 + 8, p->intervals[k].size);
	}
	for (int which = 0; which < 2; which++) {
		const stp_span *sp = which ? r->layers : r->phases;
		uint32_t n = which ? r->nlayers : r->nphases;
		uint64_t base = at[which ? SEC_LAYERS : SEC_PHASES];
		for (uint32_t k = 0; k < n; k++) {
			unsigned char *e = b + base + (size_t)k * 32;
			put32(e, sp[k].name);
			put64(e + 8, (uint64_t)sp[k].value);
			put64(e + 16, sp[k].t_begin);
			put64(e + 24, sp[k].t_end);
		}
	}
	if (r->strings_len)
		memcpy(b + at[SEC_STRINGS], r->strings, r->strings_len);
	unsigned char *src = b + at[SEC_SOURCE];
	put32(src, r->source);
	put32(src + 4, r->notes);
	put64(src + 8, (uint64_t)r->iteration);
	put64(src + 16, r->begin_seq);
	put64(src + 24, r->end_seq);
	put64(src + 32, r->trace_events);
	put64(src + 40, p->stats.lower_bound);
	put64(src + 48, p->stats.lower_bound_all);
	put64(src + 56, p->stats.persistent_bytes);
	put64(src + 64, p->stats.pool_stalloc);
	put64(src + 72, p->stats.improved_requests);
	for (uint32_t k = 0; k < r->nstartup; k++)
		put64(b + at[SEC_STARTUP] + (size_t)k * 8, r->startup[k]);
	put32(b + at[SEC_PROGRAM], r->program); /* 1.5 */
	for (uint32_t k = 0, j = 0; p->startup_offset && k < r->nstartup && j < count[SEC_PLACED]; k++)
		if (p->startup_offset[k] != STP_NO_OFFSET) {
			put32(b + at[SEC_PLACED] + (size_t)j * 16, k);
			put64(b + at[SEC_PLACED] + (size_t)j++ * 16 + 8, p->startup_offset[k]);
		}
	put32(b + size - 8, stp_crc32c(0, b, size - 8));
	memcpy(b + size - 4, "PEND", 4);
	stp_outfile o;
	if (!stp_outfile_open(&o, path, &stp_outkind_plan, err, errlen)) {
		free(b);
		return -1;
	}
	fwrite(b, 1, size, o.f);
	free(b);
	return stp_outfile_commit(&o, err, errlen);
}

#define FAIL(off, ...) do { \
	char m_[200]; snprintf(m_, sizeof m_, __VA_ARGS__); \
	snprintf(err, errlen, "%s: offset %llu: %s", name, (unsigned long long)(off), m_); goto fail; } while (0)

int stp_plan_parse(const void *data, size_t len, const char *name, stp_reqs *r, stp_plan *p, char *err,
                   size_t errlen)
{
	const unsigned char *b = data;
	stp_reqs_init(r);
	memset(p, 0, sizeof *p);
	uint64_t at[SEC_MAX + 1] = {0}, cnt[SEC_MAX + 1] = {0}, rs[SEC_MAX + 1] = {0};
	int seen[SEC_MAX + 1] = {0};
	if (len < HDR_SIZE + TRAILER || memcmp(b, PLAN_MAGIC, 8))
		FAIL(0, "not a stprof plan file (bad magic or too short)");
	uint32_t major = b[8] | (uint32_t)b[9] << 8, minor = b[10] | (uint32_t)b[11] << 8;
	if (major != PLAN_MAJOR)
		FAIL(8, "plan format %u.%u, this stprof reads %d.x", major, minor, PLAN_MAJOR);
	uint32_t hsize = get32(b + 12);
	if (hsize < HDR_SIZE || hsize > len)
		FAIL(12, "bad header size %u", hsize);
	if (get64(b + 16) != len)
		FAIL(16, "file is %zu bytes, header says %llu (truncated or appended to)", len,
		     (unsigned long long)get64(b + 16));
	if (memcmp(b + len - 4, "PEND", 4))
		FAIL(len - 4, "bad trailer");
	uint32_t crc = stp_crc32c(0, b, len - 8);
	if (crc != get32(b + len - 8))
		FAIL(len - 8, "checksum mismatch (stored %08x, computed %08x): the file is damaged", get32(b + len - 8), crc);
	uint32_t nsec = get32(b + 24);
	if ((uint64_t)nsec * DIR_SIZE > len - TRAILER - hsize)
		FAIL(24, "section directory of %u entries does not fit", nsec);
	for (uint32_t k = 0; k < nsec; k++) {
		const unsigned char *d = b + hsize + (size_t)k * DIR_SIZE;
		uint64_t doff = hsize + (uint64_t)k * DIR_SIZE;
		uint32_t id = get32(d), esz = get32(d + 4);
		uint64_t off = get64(d + 8), count = get64(d + 16);
		if (id == 0 || id > SEC_MAX)
			continue; /* a later minor version's section */
		if (seen[id])
			FAIL(doff, "section %u twice", id);
		if (esz < rec_size[id])
			FAIL(doff + 4, "section %u records of %u bytes, need %u", id, esz, rec_size[id]);
		if (off > len - TRAILER || count > (len - TRAILER - off) / esz)
			FAIL(doff + 8, "section %u (%llu records at %llu) runs past the end", id, (unsigned long long)count,
			     (unsigned long long)off);
		seen[id] = 1;
		at[id] = off, cnt[id] = count, rs[id] = esz;
	}
	for (int s = 1; s <= SEC_REQUIRED; s++)
		if (!seen[s])
			FAIL(hsize, "section %d missing", s);
	if (cnt[SEC_SOURCE] != 1)
		FAIL(at[SEC_SOURCE], "source section must hold one record");
	if (cnt[SEC_PROGRAM] > 1)
		FAIL(at[SEC_PROGRAM], "program section must hold at most one record");
	if (cnt[SEC_ENTRIES] >= UINT32_MAX / 4 || cnt[SEC_GROUPS] >= UINT32_MAX || cnt[SEC_INTERVALS] >= UINT32_MAX ||
	    cnt[SEC_PHASES] >= UINT32_MAX || cnt[SEC_LAYERS] >= UINT32_MAX || cnt[SEC_STRINGS] >= UINT32_MAX ||
	    cnt[SEC_STARTUP] >= UINT32_MAX / 2 || cnt[SEC_PLACED] > cnt[SEC_STARTUP])
		FAIL(hsize, "section too large");
	/* strings: starts with "", ends with NUL */
	const char *str = (const char *)b + at[SEC_STRINGS];
	uint64_t slen = cnt[SEC_STRINGS];
	if (!slen || str[0] || str[slen - 1])
		FAIL(at[SEC_STRINGS], "string table must start and end with a NUL byte");
	r->strings = malloc(slen);
	if (!r->strings)
		FAIL(at[SEC_STRINGS], "out of memory");
	memcpy(r->strings, str, slen);
	r->strings_len = r->strings_cap = (uint32_t)slen;
#define STRREF(v, where) do { if ((v) >= slen) FAIL(where, "string reference %u out of range", (unsigned)(v)); } while (0)
	p->pool = get64(b + 32);
	p->align = get64(b + 40);
	r->period = get64(b + 48);
	r->min_size = get64(b + 56); /* 1.1: 0 in 1.0 files */
	r->device = (get32(b + 28) & PLAN_FLAG_DEVICE) != 0;
	r->tensors = (get32(b + 28) & PLAN_FLAG_TENSORS) != 0;
	r->shapes_vary = (get32(b + 28) & PLAN_FLAG_SHAPES_VARY) != 0;
	if (!p->align || p->align > ((uint64_t)1 << 40))
		FAIL(40, "bad alignment %llu", (unsigned long long)p->align);
	/* phases and layers */
	for (int which = 0; which < 2; which++) {
		int s = which ? SEC_LAYERS : SEC_PHASES;
		uint32_t n = (uint32_t)cnt[s];
		stp_span *sp = n ? calloc(n, sizeof *sp) : NULL;
		if (n && !sp)
			FAIL(at[s], "out of memory");
		for (uint32_t k = 0; k < n; k++) {
			const unsigned char *e = b + at[s] + (size_t)k * rs[s];
			sp[k].name = get32(e);
			sp[k].value = (int64_t)get64(e + 8);
			sp[k].t_begin = get64(e + 16);
			sp[k].t_end = get64(e + 24);
			if (sp[k].name >= slen) {
				uint32_t bad = sp[k].name;
				free(sp);
				FAIL(at[s] + (uint64_t)k * rs[s], "string reference %u out of range", bad);
			}
		}
		if (which) {
			r->layers = sp;
			r->nlayers = n;
		} else {
			r->phases = sp;
			r->nphases = n;
		}
	}
	/* source */
	const unsigned char *src = b + at[SEC_SOURCE];
	r->source = get32(src);
	r->notes = get32(src + 4);
	STRREF(r->source, at[SEC_SOURCE]);
	STRREF(r->notes, at[SEC_SOURCE] + 4);
	if (cnt[SEC_PROGRAM]) { /* 1.5 */
		r->program = get32(b + at[SEC_PROGRAM]);
		STRREF(r->program, at[SEC_PROGRAM]);
	}
	r->iteration = (int64_t)get64(src + 8);
	r->begin_seq = get64(src + 16);
	r->end_seq = get64(src + 24);
	r->trace_events = get64(src + 32);
	p->stats.lower_bound = get64(src + 40);
	p->stats.lower_bound_all = get64(src + 48);
	p->stats.persistent_bytes = get64(src + 56);
	p->stats.pool_stalloc = get64(src + 64);
	p->stats.improved_requests = get64(src + 72);
	/* groups and intervals */
	p->ngroups = (uint32_t)cnt[SEC_GROUPS];
	p->nintervals = (uint32_t)cnt[SEC_INTERVALS];
	p->groups = calloc(p->ngroups + 1, sizeof *p->groups);
	p->intervals = calloc(p->nintervals + 1, sizeof *p->intervals);
	if (!p->groups || !p->intervals)
		FAIL(at[SEC_GROUPS], "out of memory");
	for (uint32_t k = 0; k < p->nintervals; k++) {
		const unsigned char *e = b + at[SEC_INTERVALS] + (size_t)k * rs[SEC_INTERVALS];
		p->intervals[k].offset = get64(e);
		p->intervals[k].size = get64(e + 8);
		if (p->intervals[k].offset > p->pool || p->intervals[k].size > p->pool - p->intervals[k].offset)
			FAIL(at[SEC_INTERVALS] + (uint64_t)k * rs[SEC_INTERVALS], "interval %u outside the pool", k);
	}
	for (uint32_t g = 0; g < p->ngroups; g++) {
		const unsigned char *e = b + at[SEC_GROUPS] + (size_t)g * rs[SEC_GROUPS];
		stp_dyn_group *G = &p->groups[g];
		G->layer_start = get32(e);
		G->layer_end = get32(e + 4);
		G->t_begin = get64(e + 8);
		G->t_end = get64(e + 16);
		G->first = get32(e + 24);
		G->count = get32(e + 28);
		G->requests = get64(e + 32);
		G->max_bytes = get64(e + 40);
		if ((uint64_t)G->first + G->count > p->nintervals)
			FAIL(at[SEC_GROUPS] + (uint64_t)g * rs[SEC_GROUPS], "group %u names intervals out of range", g);
		if (G->layer_start >= (r->nlayers ? r->nlayers : 1) || G->layer_end >= (r->nlayers ? r->nlayers : 1))
			FAIL(at[SEC_GROUPS] + (uint64_t)g * rs[SEC_GROUPS], "group %u names a layer out of range", g);
		if (G->t_begin > r->period || G->t_end > r->period)
			FAIL(at[SEC_GROUPS] + (uint64_t)g * rs[SEC_GROUPS], "group %u: time beyond the period", g);
	}
	/* entries */
	size_t n = (size_t)cnt[SEC_ENTRIES];
	r->req = malloc((n + 1) * sizeof *r->req);
	p->offset = malloc((n + 1) * sizeof *p->offset);
	p->group = malloc((n + 1) * sizeof *p->group);
	if (!r->req || !p->offset || !p->group)
		FAIL(at[SEC_ENTRIES], "out of memory");
	r->cap = n + 1;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *e = b + at[SEC_ENTRIES] + i * rs[SEC_ENTRIES];
		uint64_t eo = at[SEC_ENTRIES] + i * rs[SEC_ENTRIES];
		stp_req *q = &r->req[i];
		p->offset[i] = get64(e);
		q->size = get64(e + 8);
		q->callsite = get64(e + 16);
		q->t_start = get64(e + 24);
		q->t_end = get64(e + 32);
		q->ordinal = get32(e + 40);
		q->phase_start = get32(e + 44);
		q->phase_end = get32(e + 48);
		q->layer_start = get32(e + 52);
		q->layer_end = get32(e + 56);
		q->flags = get32(e + 60);
		p->group[i] = get32(e + 64);
		r->n = i + 1;
		if (p->group[i] != STP_NO_GROUP && p->group[i] >= p->ngroups)
			FAIL(eo + 64, "entry %zu names dynamic group %u of %u", i, p->group[i], p->ngroups);
		if (p->offset[i] == STP_NO_OFFSET && !(q->flags & STP_REQ_DYNAMIC))
			FAIL(eo, "entry %zu: static request without an offset", i);
		if (p->offset[i] != STP_NO_OFFSET &&
		    (q->size > p->pool || p->offset[i] > p->pool - pl_align_up(q->size, p->align)))
			FAIL(eo, "entry %zu: [offset, offset + size) outside the pool", i);
	}
	p->n = n;
	/* the start-up sequence (1.3) */
	if (cnt[SEC_STARTUP]) {
		r->startup = malloc(cnt[SEC_STARTUP] * sizeof *r->startup);
		if (!r->startup)
			FAIL(at[SEC_STARTUP], "out of memory");
		r->nstartup = r->startup_cap = (uint32_t)cnt[SEC_STARTUP];
		for (uint32_t k = 0; k < r->nstartup; k++)
			r->startup[k] = get64(b + at[SEC_STARTUP] + (size_t)k * rs[SEC_STARTUP]);
	}
	/* where start-up temporaries that outlive start-up go (1.4) */
	if (cnt[SEC_PLACED]) {
		p->startup_offset = malloc((size_t)r->nstartup * sizeof *p->startup_offset);
		if (!p->startup_offset)
			FAIL(at[SEC_PLACED], "out of memory");
		for (uint32_t k = 0; k < r->nstartup; k++)
			p->startup_offset[k] = STP_NO_OFFSET;
		for (uint32_t j = 0, last = 0; j < cnt[SEC_PLACED]; j++) {
			const unsigned char *e = b + at[SEC_PLACED] + (size_t)j * rs[SEC_PLACED];
			uint64_t eo = at[SEC_PLACED] + (uint64_t)j * rs[SEC_PLACED];
			uint32_t k = get32(e);
			uint64_t off = get64(e + 8);
			if (k >= r->nstartup || (j && k <= last))
				FAIL(eo, "placement %u: start-up position %u out of order or range", j, k);
			if (!(r->startup[k] & STP_STARTUP_OUTLIVES))
				FAIL(eo, "placement %u: start-up position %u does not outlive start-up", j, k);
			uint64_t sz = STP_STARTUP_SIZE(r->startup[k]);
			if (off % p->align || sz > p->pool || off > p->pool - pl_align_up(sz, p->align))
				FAIL(eo + 8, "placement %u: [offset, offset + size) outside the pool or unaligned", j);
			p->startup_offset[k] = off;
			last = k;
		}
		p->nplaced = (uint32_t)cnt[SEC_PLACED];
	}
	{
		char e2[200];
		if (stp_reqs_check(r, e2, sizeof e2) < 0)
			FAIL(at[SEC_ENTRIES], "%s", e2);
	}
	return 0;
fail:
	stp_plan_free(p);
	stp_reqs_free(r);
	return -1;
#undef STRREF
}

int stp_plan_read(const char *path, stp_reqs *r, stp_plan *p, char *err, size_t errlen)
{
	stp_reqs_init(r);
	memset(p, 0, sizeof *p);
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || ftell(f) < 0) {
		fclose(f);
		snprintf(err, errlen, "%s: cannot seek (not a regular file?)", path);
		return -1;
	}
	long len = ftell(f);
	rewind(f);
	unsigned char *b = malloc((size_t)len + 1);
	if (!b || fread(b, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		free(b);
		snprintf(err, errlen, "%s: read error", path);
		return -1;
	}
	fclose(f);
	int rc = stp_plan_parse(b, (size_t)len, path, r, p, err, errlen);
	free(b);
	return rc;
}
