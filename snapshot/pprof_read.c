/*
 * pprof_read.c - gunzip and protobuf wire-format decoding of a pprof
 * profile into the flat tables of pprof.h.
 *
 * The wire format: a message is a run of (key, value) pairs, key = field
 * number << 3 | wire type; wire type 0 is a varint, 1 eight bytes, 2 a
 * length-delimited span (strings, sub-messages, packed repeated scalars),
 * 5 four bytes; 3 and 4 (groups) are not used by profile.proto and are
 * refused.  Unknown fields are skipped, as protobuf readers do.  A repeated
 * scalar may come packed (one span) or one value per key; both are read.
 * Every read is bounded by the enclosing span; a length running past it,
 * a varint longer than 10 bytes or cut short is an error at its offset.
 */
#include "pprof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct rd {
	const uint8_t *p, *end, *base;
	const char *name;
	int gz;
	char *err;
	size_t errlen;
} rd;

static int fail(rd *r, const uint8_t *at, const char *what)
{
	snprintf(r->err, r->errlen, "%s: offset %" PRIu64 "%s: %s", r->name, (uint64_t)(at - r->base),
	         r->gz ? " (uncompressed)" : "", what);
	return -1;
}

static int varint(rd *r, const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp, *start = p;
	uint64_t x = 0;
	for (int s = 0; s < 70; s += 7) {
		if (p >= end)
			return fail(r, start, "truncated varint");
		uint8_t c = *p++;
		x |= (uint64_t)(c & 0x7f) << s;
		if (!(c & 0x80)) {
			*v = x;
			*pp = p;
			return 0;
		}
	}
	return fail(r, start, "varint longer than 10 bytes");
}

/* One field of the message in [*pp, end): its number, wire type, and either
 * its scalar value (v) or its span (sub, for wire type 2). */
typedef struct field {
	const uint8_t *at; /* the key */
	uint32_t num, wt;
	uint64_t v;
	const uint8_t *sp, *se;
} field;

static int next_field(rd *r, const uint8_t **pp, const uint8_t *end, field *f)
{
	uint64_t key;
	f->at = *pp;
	if (varint(r, pp, end, &key) < 0)
		return -1;
	f->num = (uint32_t)(key >> 3);
	f->wt = (uint32_t)(key & 7);
	if (!f->num || key >> 32)
		return fail(r, f->at, "bad field number");
	switch (f->wt) {
	case 0: return varint(r, pp, end, &f->v);
	case 1:
	case 5: {
		size_t n = f->wt == 1 ? 8 : 4;
		if ((size_t)(end - *pp) < n)
			return fail(r, f->at, "truncated fixed-size field");
		f->v = 0;
		for (size_t i = 0; i < n; i++)
			f->v |= (uint64_t)(*pp)[i] << (8 * i);
		*pp += n;
		return 0;
	}
	case 2: {
		uint64_t n;
		if (varint(r, pp, end, &n) < 0)
			return -1;
		if (n > (uint64_t)(end - *pp))
			return fail(r, f->at, "length runs past the end of its message");
		f->sp = *pp;
		f->se = *pp + n;
		*pp += n;
		return 0;
	}
	default: return fail(r, f->at, "unsupported wire type (group)");
	}
}

/* Appends one element to a growing array; -1 when out of memory. */
static int grow(void **v, size_t *n, size_t *cap, size_t elem)
{
	if (*n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 16;
	void *nv = realloc(*v, nc * elem);
	if (!nv)
		return -1;
	*v = nv;
	*cap = nc;
	return 0;
}

typedef struct caps {
	size_t strings, sample_types, samples, loc_ids, values, labels, locations, lines, functions, mappings;
} caps;

#define PUSH(r, p, c, arr, cnt, capf, at)                                                                   \
	(grow((void **)&(p)->arr, &(p)->cnt, &(c)->capf, sizeof *(p)->arr) < 0 ? fail(r, at, "out of memory") \
	                                                                       : 0)

/* A repeated integer field, packed or not, appended to arr. */
static int rep_u64(rd *r, const field *f, uint64_t **arr, size_t *n, size_t *cap)
{
	if (f->wt == 0) {
		if (grow((void **)arr, n, cap, sizeof **arr) < 0)
			return fail(r, f->at, "out of memory");
		(*arr)[(*n)++] = f->v;
		return 0;
	}
	if (f->wt != 2)
		return fail(r, f->at, "wrong wire type for a repeated integer");
	const uint8_t *q = f->sp;
	while (q < f->se) {
		uint64_t v;
		if (varint(r, &q, f->se, &v) < 0)
			return -1;
		if (grow((void **)arr, n, cap, sizeof **arr) < 0)
			return fail(r, q, "out of memory");
		(*arr)[(*n)++] = v;
	}
	return 0;
}

static int want(rd *r, const field *f, uint32_t wt)
{
	return f->wt == wt ? 0 : fail(r, f->at, wt == 2 ? "expected a length-delimited field" : "expected a varint field");
}

static int read_valtype(rd *r, const field *f, pp_valtype *vt)
{
	if (want(r, f, 2) < 0)
		return -1;
	memset(vt, 0, sizeof *vt);
	const uint8_t *q = f->sp;
	while (q < f->se) {
		field g;
		if (next_field(r, &q, f->se, &g) < 0)
			return -1;
		if ((g.num == 1 || g.num == 2) && want(r, &g, 0) < 0)
			return -1;
		if (g.num == 1)
			vt->type = (int64_t)g.v;
		else if (g.num == 2)
			vt->unit = (int64_t)g.v;
	}
	return 0;
}

static int read_sample(rd *r, const field *f, pp_profile *p, caps *c)
{
	if (want(r, f, 2) < 0 || PUSH(r, p, c, samples, nsamples, samples, f->at) < 0)
		return -1;
	pp_sample *s = &p->samples[p->nsamples];
	memset(s, 0, sizeof *s);
	s->offset = (uint64_t)(f->at - r->base);
	s->loc0 = (uint32_t)p->nloc_ids;
	s->val0 = (uint32_t)p->nvalues;
	s->lab0 = (uint32_t)p->nlabels;
	const uint8_t *q = f->sp;
	while (q < f->se) {
		field g;
		if (next_field(r, &q, f->se, &g) < 0)
			return -1;
		if (g.num == 1) {
			if (rep_u64(r, &g, &p->loc_ids, &p->nloc_ids, &c->loc_ids) < 0)
				return -1;
		} else if (g.num == 2) {
			if (rep_u64(r, &g, &p->values, &p->nvalues, &c->values) < 0)
				return -1;
		} else if (g.num == 3) {
			if (want(r, &g, 2) < 0 || PUSH(r, p, c, labels, nlabels, labels, g.at) < 0)
				return -1;
			pp_label *l = &p->labels[p->nlabels];
			memset(l, 0, sizeof *l);
			const uint8_t *u = g.sp;
			while (u < g.se) {
				field h;
				if (next_field(r, &u, g.se, &h) < 0)
					return -1;
				if (h.num >= 1 && h.num <= 4 && want(r, &h, 0) < 0)
					return -1;
				if (h.num == 1)
					l->key = (int64_t)h.v;
				else if (h.num == 2)
					l->str = (int64_t)h.v;
				else if (h.num == 3)
					l->num = (int64_t)h.v;
				else if (h.num == 4)
					l->num_unit = (int64_t)h.v;
			}
			p->nlabels++;
		}
	}
	s->nloc = (uint32_t)(p->nloc_ids - s->loc0);
	s->nval = (uint32_t)(p->nvalues - s->val0);
	s->nlab = (uint32_t)(p->nlabels - s->lab0);
	p->nsamples++;
	return 0;
}

static int read_location(rd *r, const field *f, pp_profile *p, caps *c)
{
	if (want(r, f, 2) < 0 || PUSH(r, p, c, locations, nlocations, locations, f->at) < 0)
		return -1;
	pp_location *l = &p->locations[p->nlocations];
	memset(l, 0, sizeof *l);
	l->offset = (uint64_t)(f->at - r->base);
	l->line0 = (uint32_t)p->nlines;
	const uint8_t *q = f->sp;
	while (q < f->se) {
		field g;
		if (next_field(r, &q, f->se, &g) < 0)
			return -1;
		if (g.num >= 1 && g.num <= 3 && want(r, &g, 0) < 0)
			return -1;
		if (g.num == 1)
			l->id = g.v;
		else if (g.num == 2)
			l->mapping_id = g.v;
		else if (g.num == 3)
			l->address = g.v;
		else if (g.num == 4) {
			if (want(r, &g, 2) < 0 || PUSH(r, p, c, lines, nlines, lines, g.at) < 0)
				return -1;
			pp_line *ln = &p->lines[p->nlines];
			memset(ln, 0, sizeof *ln);
			const uint8_t *u = g.sp;
			while (u < g.se) {
				field h;
				if (next_field(r, &u, g.se, &h) < 0)
					return -1;
				if (h.num >= 1 && h.num <= 3 && want(r, &h, 0) < 0)
					return -1;
				if (h.num == 1)
					ln->function_id = h.v;
				else if (h.num == 2)
					ln->line = (int64_t)h.v;
			}
			p->nlines++;
		}
	}
	l->nline = (uint32_t)(p->nlines - l->line0);
	p->nlocations++;
	return 0;
}

static int read_function(rd *r, const field *f, pp_profile *p, caps *c)
{
	if (want(r, f, 2) < 0 || PUSH(r, p, c, functions, nfunctions, functions, f->at) < 0)
		return -1;
	pp_function *fn = &p->functions[p->nfunctions];
	memset(fn, 0, sizeof *fn);
	fn->offset = (uint64_t)(f->at - r->base);
	const uint8_t *q = f->sp;
	while (q < f->se) {
		field g;
		if (next_field(r, &q, f->se, &g) < 0)
			return -1;
		if (g.num >= 1 && g.num <= 5 && want(r, &g, 0) < 0)
			return -1;
		switch (g.num) {
		case 1: fn->id = g.v; break;
		case 2: fn->name = (int64_t)g.v; break;
		case 3: fn->system_name = (int64_t)g.v; break;
		case 4: fn->filename = (int64_t)g.v; break;
		case 5: fn->start_line = (int64_t)g.v; break;
		default: break;
		}
	}
	p->nfunctions++;
	return 0;
}

static int read_mapping(rd *r, const field *f, pp_profile *p, caps *c)
{
	if (want(r, f, 2) < 0 || PUSH(r, p, c, mappings, nmappings, mappings, f->at) < 0)
		return -1;
	pp_mapping *m = &p->mappings[p->nmappings];
	memset(m, 0, sizeof *m);
	m->offset = (uint64_t)(f->at - r->base);
	const uint8_t *q = f->sp;
	while (q < f->se) {
		field g;
		if (next_field(r, &q, f->se, &g) < 0)
			return -1;
		if (g.num >= 1 && g.num <= 10 && want(r, &g, 0) < 0)
			return -1;
		switch (g.num) {
		case 1: m->id = g.v; break;
		case 2: m->memory_start = g.v; break;
		case 3: m->memory_limit = g.v; break;
		case 4: m->file_offset = g.v; break;
		case 5: m->filename = (int64_t)g.v; break;
		case 6: m->build_id = (int64_t)g.v; break;
		default: break;
		}
	}
	p->nmappings++;
	return 0;
}

static int decode(rd *r, pp_profile *p)
{
	caps c = {0};
	const uint8_t *q = r->p;
	while (q < r->end) {
		field f;
		if (next_field(r, &q, r->end, &f) < 0)
			return -1;
		switch (f.num) {
		case 1:
			if (PUSH(r, p, &c, sample_types, nsample_types, sample_types, f.at) < 0 ||
			    read_valtype(r, &f, &p->sample_types[p->nsample_types]) < 0)
				return -1;
			p->nsample_types++;
			break;
		case 2:
			if (read_sample(r, &f, p, &c) < 0)
				return -1;
			break;
		case 3:
			if (read_mapping(r, &f, p, &c) < 0)
				return -1;
			break;
		case 4:
			if (read_location(r, &f, p, &c) < 0)
				return -1;
			break;
		case 5:
			if (read_function(r, &f, p, &c) < 0)
				return -1;
			break;
		case 6:
			if (want(r, &f, 2) < 0 || PUSH(r, p, &c, strings, nstrings, strings, f.at) < 0)
				return -1;
			p->strings[p->nstrings++] = (pp_span){(const char *)f.sp, (uint32_t)(f.se - f.sp)};
			break;
		case 11:
			if (read_valtype(r, &f, &p->period_type) < 0)
				return -1;
			break;
		case 9: case 10: case 12: case 14:
			if (want(r, &f, 0) < 0)
				return -1;
			if (f.num == 9)
				p->time_nanos = (int64_t)f.v;
			else if (f.num == 10)
				p->duration_nanos = (int64_t)f.v;
			else if (f.num == 12)
				p->period = (int64_t)f.v;
			else
				p->default_sample_type = (int64_t)f.v;
			break;
		default: break; /* drop_frames, keep_frames, comment, doc_url, newer fields */
		}
	}
	return 0;
}

static int gunzip(const uint8_t *in, size_t len, const char *name, size_t max_bytes, uint8_t **out, size_t *outlen,
                  char *err, size_t errlen)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, 15 + 16) != Z_OK) {
		snprintf(err, errlen, "%s: cannot start zlib", name);
		return -1;
	}
	size_t cap = len * 4 < 65536 ? 65536 : len * 4, n = 0;
	if (cap > max_bytes + 1)
		cap = max_bytes + 1;
	uint8_t *buf = malloc(cap);
	if (!buf) {
		inflateEnd(&z);
		snprintf(err, errlen, "%s: out of memory", name);
		return -1;
	}
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)(len > UINT32_MAX ? UINT32_MAX : len);
	int rc = Z_OK;
	while (rc != Z_STREAM_END) {
		if (n == cap) {
			if (cap > max_bytes) {
				snprintf(err, errlen, "%s: more than %zu bytes once uncompressed", name, max_bytes);
				goto bad;
			}
			size_t nc = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
			uint8_t *nb = realloc(buf, nc);
			if (!nb) {
				snprintf(err, errlen, "%s: out of memory", name);
				goto bad;
			}
			buf = nb;
			cap = nc;
		}
		z.next_out = buf + n;
		z.avail_out = (uInt)(cap - n > UINT32_MAX ? UINT32_MAX : cap - n);
		rc = inflate(&z, Z_NO_FLUSH);
		n = cap - z.avail_out;
		if (rc == Z_BUF_ERROR && z.avail_in == 0) {
			snprintf(err, errlen, "%s: offset %lu: gzip stream cut short", name, (unsigned long)z.total_in);
			goto bad;
		}
		if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
			snprintf(err, errlen, "%s: offset %lu: bad gzip data (%s)", name, (unsigned long)z.total_in,
			         z.msg ? z.msg : "zlib error");
			goto bad;
		}
	}
	if (n > max_bytes) {
		snprintf(err, errlen, "%s: more than %zu bytes once uncompressed", name, max_bytes);
		goto bad;
	}
	inflateEnd(&z);
	*out = buf;
	*outlen = n;
	return 0;
bad:
	inflateEnd(&z);
	free(buf);
	return -1;
}

int pp_parse(const uint8_t *buf, size_t len, const char *name, size_t max_bytes, pp_profile *p, char *err,
             size_t errlen)
{
	memset(p, 0, sizeof *p);
	p->gzipped = pp_is_gzip(buf, len);
	if (p->gzipped) {
		if (gunzip(buf, len, name, max_bytes, &p->data, &p->len, err, errlen) < 0)
			return -1;
	} else {
		if (len > max_bytes) {
			snprintf(err, errlen, "%s: more than %zu bytes", name, max_bytes);
			return -1;
		}
		p->data = malloc(len ? len : 1);
		if (!p->data) {
			snprintf(err, errlen, "%s: out of memory", name);
			return -1;
		}
		if (len)
			memcpy(p->data, buf, len);
		p->len = len;
	}
	rd r = {.p = p->data, .end = p->data + p->len, .base = p->data, .name = name, .gz = p->gzipped,
	        .err = err, .errlen = errlen};
	if (decode(&r, p) < 0) {
		pp_free(p);
		return -1;
	}
	return 0;
}

int pp_parse_file(const char *path, size_t max_bytes, pp_profile *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof *p);
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	int bad = !buf;
	while (!bad) {
		if (n == cap) {
			if (cap > max_bytes) {
				snprintf(err, errlen, "%s: more than %zu bytes", path, max_bytes);
				fclose(f);
				free(buf);
				return -1;
			}
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb) {
				bad = 1;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		size_t k = fread(buf + n, 1, cap - n, f);
		n += k;
		if (!k)
			break;
	}
	int rerr = ferror(f);
	fclose(f);
	if (bad || rerr) {
		snprintf(err, errlen, bad ? "%s: out of memory" : "%s: read error", path);
		free(buf);
		return -1;
	}
	int rc = pp_parse(buf, n, path, max_bytes, p, err, errlen);
	free(buf);
	return rc;
}

void pp_free(pp_profile *p)
{
	free(p->data);
	free(p->strings);
	free(p->sample_types);
	free(p->samples);
	free(p->loc_ids);
	free(p->values);
	free(p->labels);
	free(p->locations);
	free(p->lines);
	free(p->functions);
	free(p->mappings);
	memset(p, 0, sizeof *p);
}

const pp_span *pp_string(const pp_profile *p, int64_t idx)
{
	static const pp_span empty = {"", 0};
	if (idx == 0)
		return &empty;
	if (idx < 0 || (uint64_t)idx >= p->nstrings)
		return NULL;
	return &p->strings[idx];
}

int pp_span_is(const pp_span *s, const char *c)
{
	size_t n = strlen(c);
	return s && s->n == n && !memcmp(s->p, c, n);
}
