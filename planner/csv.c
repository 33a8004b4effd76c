/*
 * csv.c - MiniMalloc's benchmark CSV: a header naming the columns (id,
 * lower, upper, size; optional alignment and offset; any order), then one
 * buffer per line, live over the half-open [lower, upper).  Reading builds a
 * request set (period = the largest upper, ordinal = id); writing adds an
 * `offset` column, which is MiniMalloc's output format.
 *
 * Outside input: every error is one line "FILE:LINE: what", never a crash.
 * Numbers are unsigned decimal; blank lines and a trailing CR are accepted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { C_ID, C_LOWER, C_UPPER, C_SIZE, C_ALIGN, C_OFFSET, C_NCOLS };
static const char *const col_names[C_NCOLS] = {"id", "lower", "upper", "size", "alignment", "offset"};
#define MAX_COLS 16

/* splits line [p, end) at commas into fields; returns the count or -1 */
static int split_fields(const char *p, const char *end, const char **f, size_t *flen)
{
	int n = 0;
	for (;;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *fe = c ? c : end;
		if (n == MAX_COLS)
			return -1;
		/* trim spaces */
		const char *a = p, *b = fe;
		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		f[n] = a;
		flen[n++] = (size_t)(b - a);
		if (!c)
			return n;
		p = c + 1;
	}
}

static int parse_u64(const char *s, size_t len, uint64_t *out)
{
	if (!len || len > 20)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int stp_reqs_parse_csv(const char *data, size_t len, const char *name, stp_reqs *r, uint64_t **offsets,
                       char *err, size_t errlen)
{
	stp_reqs_init(r);
	*offsets = NULL;
	int col[C_NCOLS];
	for (int k = 0; k < C_NCOLS; k++)
		col[k] = -1;
	int ncols = 0, have_header = 0;
	uint64_t *off = NULL;
	size_t ocap = 0;
	const char *p = data, *end = data + len;
	unsigned long line = 0;
	const char *f[MAX_COLS];
	size_t flen[MAX_COLS];
	uint64_t period = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		line++;
		const char *ls = p;
		p = nl ? nl + 1 : end;
		if (le > ls && le[-1] == '\r')
			le--;
		if (le == ls)
			continue;
		if (memchr(ls, 0, (size_t)(le - ls))) {
			snprintf(err, errlen, "%s:%lu: NUL byte in the line", name, line);
			goto fail;
		}
		int nf = split_fields(ls, le, f, flen);
		if (nf < 0) {
			snprintf(err, errlen, "%s:%lu: more than %d columns", name, line, MAX_COLS);
			goto fail;
		}
		if (!have_header) {
			for (int k = 0; k < nf; k++) {
				int known = 0;
				for (int c = 0; c < C_NCOLS; c++)
					if (flen[k] == strlen(col_names[c]) && !memcmp(f[k], col_names[c], flen[k])) {
						if (col[c] >= 0) {
							snprintf(err, errlen, "%s:%lu: column '%s' twice", name, line, col_names[c]);
							goto fail;
						}
						col[c] = k;
						known = 1;
					}
				(void)known; /* unknown columns are ignored */
			}
			for (int c = 0; c < C_ALIGN; c++)
				if (col[c] < 0) {
					snprintf(err, errlen, "%s:%lu: header lacks column '%s' (want id,lower,upper,size)", name,
					         line, col_names[c]);
					goto fail;
				}
			ncols = nf;
			have_header = 1;
			continue;
		}
		if (nf != ncols) {
			snprintf(err, errlen, "%s:%lu: %d fields, the header has %d", name, line, nf, ncols);
			goto fail;
		}
		uint64_t v[C_NCOLS] = {0, 0, 0, 0, 1, 0};
		for (int c = 0; c < C_NCOLS; c++) {
			if (col[c] < 0)
				continue;
			if (parse_u64(f[col[c]], flen[col[c]], &v[c]) < 0) {
				snprintf(err, errlen, "%s:%lu: %s is not an unsigned integer", name, line, col_names[c]);
				goto fail;
			}
		}
		if (v[C_UPPER] <= v[C_LOWER]) {
			snprintf(err, errlen, "%s:%lu: upper (%" PRIu64 ") must be greater than lower (%" PRIu64 ")", name,
			         line, v[C_UPPER], v[C_LOWER]);
			goto fail;
		}
		if (v[C_UPPER] >= (uint64_t)1 << 40 || !v[C_SIZE] || v[C_SIZE] >= (uint64_t)1 << 48) {
			snprintf(err, errlen, "%s:%lu: size 0 or value too large", name, line);
			goto fail;
		}
		if (v[C_ID] > UINT32_MAX || r->n >= UINT32_MAX / 8) {
			snprintf(err, errlen, "%s:%lu: id too large or too many buffers", name, line);
			goto fail;
		}
		if (col[C_ALIGN] >= 0 && v[C_ALIGN] > 1) {
			snprintf(err, errlen, "%s:%lu: per-buffer alignment %" PRIu64 " is not supported (use --align)", name,
			         line, v[C_ALIGN]);
			goto fail;
		}
		stp_req q = {0};
		q.size = v[C_SIZE];
		q.t_start = v[C_LOWER];
		q.t_end = v[C_UPPER];
		q.ordinal = (uint32_t)v[C_ID];
		if (stp_reqs_add(r, &q) < 0)
			goto oom;
		if (v[C_UPPER] > period)
			period = v[C_UPPER];
		if (col[C_OFFSET] >= 0) {
			if (r->n > ocap) {
				size_t nc = ocap ? 2 * ocap : 1024;
				uint64_t *no = realloc(off, nc * sizeof *no);
				if (!no)
					goto oom;
				off = no;
				ocap = nc;
			}
			off[r->n - 1] = v[C_OFFSET];
		}
	}
	if (!have_header) {
		snprintf(err, errlen, "%s:1: empty file (want a header id,lower,upper,size)", name);
		goto fail;
	}
	r->period = period;
	r->source = stp_reqs_string(r, name);
	*offsets = off;
	return 0;
oom:
	snprintf(err, errlen, "%s:%lu: out of memory", name, line);
fail:
	free(off);
	stp_reqs_free(r);
	return -1;
}

int stp_reqs_read_csv(const char *path, stp_reqs *r, uint64_t **offsets, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + len, 1, cap - len, f);
		/* text has no NUL: stop at the first one (/dev/zero, a binary
		 * file), so memory stays within what was read of real text */
		const char *nul = got ? memchr(buf + len, 0, got) : NULL;
		if (nul) {
			snprintf(err, errlen, "%s: offset %zu: NUL byte: not a CSV file", path, (size_t)(nul - buf));
			free(buf);
			fclose(f);
			return -1;
		}
		len += got;
		if (len < cap)
			break;
		char *nb = realloc(buf, cap * 2);
		if (!nb) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = nb;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (!buf || bad) {
		free(buf);
		snprintf(err, errlen, "%s: %s", path, bad ? "read error" : "out of memory");
		return -1;
	}
	int rc = stp_reqs_parse_csv(buf, len, path, r, offsets, err, errlen);
	free(buf);
	return rc;
}

#define CSV_HEADER "id,lower,upper,size,offset\n"
const stp_outkind stp_outkind_csv = {"offset CSV (id,lower,upper,size,offset)", CSV_HEADER, sizeof CSV_HEADER - 1, NULL};

int stp_reqs_write_csv(const char *path, const stp_reqs *r, const uint64_t *offsets, char *err, size_t errlen)
{
	stp_outfile o = {0};
	FILE *f = strcmp(path, "-") ? stp_outfile_open(&o, path, &stp_outkind_csv, err, errlen) : stdout;
	if (!f)
		return -1;
	fprintf(f, CSV_HEADER);
	for (size_t i = 0; i < r->n; i++) {
		const stp_req *q = &r->req[i];
		fprintf(f, "%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", q->ordinal, q->t_start, q->t_end,
		        q->size, offsets[i]);
	}
	if (f != stdout)
		return stp_outfile_commit(&o, err, errlen);
	if (ferror(f) | fflush(f)) {
		snprintf(err, errlen, "%s: write error", path);
		return -1;
	}
	return 0;
}
