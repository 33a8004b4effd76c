/*
 * viewer_enc.c - how the viewer's data is written: growable byte and u64
 * arrays, varint columns (unsigned, zigzag, zigzag deltas) appended to one
 * blob, the blob deflated with zlib and base64 encoded (the page inflates
 * it with the browser's DecompressionStream), JSON strings that are safe
 * inside a <script> element, a u64 map and interned strings.
 *
 * Invariants: an array or byte buffer that failed to grow keeps what it
 * had and sets oom (the writer checks once at the end); map keys are never
 * UINT64_MAX (the empty slot).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "viewer.h"

static int reserve(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 256;
	while (nc < need)
		nc *= 2;
	void *q = realloc(*p, nc * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = nc;
	return 0;
}

void vw_put(vw_bytes *b, const void *p, size_t n)
{
	if (b->oom || reserve((void **)&b->p, &b->cap, b->n + n, 1) < 0) {
		b->oom = 1;
		return;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

void vw_puts(vw_bytes *b, const char *s)
{
	vw_put(b, s, strlen(s));
}

void vw_printf(vw_bytes *b, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof buf) {
		vw_put(b, buf, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	vw_put(b, big, (size_t)n);
	free(big);
}

void vw_json_str(vw_bytes *b, const char *s)
{
	vw_put(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		char e[8];
		if (*p == '"' || *p == '\\') {
			e[0] = '\\';
			e[1] = (char)*p;
			vw_put(b, e, 2);
		} else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&' || *p == 0x7f) {
			snprintf(e, sizeof e, "\\u%04x", *p);
			vw_put(b, e, 6);
		} else {
			vw_put(b, p, 1);
		}
	}
	vw_put(b, "\"", 1);
}

void vw_bytes_free(vw_bytes *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

void vw_push(vw_u64s *a, uint64_t v)
{
	if (a->oom || reserve((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v) < 0) {
		a->oom = 1;
		return;
	}
	a->v[a->n++] = v;
}

void vw_u64s_free(vw_u64s *a)
{
	free(a->v);
	memset(a, 0, sizeof *a);
}

/* ------------------------------------------------------------ columns */

static void varint(vw_bytes *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	while (v >= 0x80) {
		t[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	t[n++] = (uint8_t)v;
	vw_put(b, t, n);
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

void vw_column(vw_bytes *blob, vw_bytes *cols, const char *name, const uint64_t *v, size_t n, char codec,
               char type)
{
	size_t off = blob->n;
	int64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		if (codec == 'u')
			varint(blob, v[i]);
		else if (codec == 'z')
			varint(blob, zigzag((int64_t)v[i]));
		else {
			varint(blob, zigzag((int64_t)(v[i] - (uint64_t)prev)));
			prev = (int64_t)v[i];
		}
	}
	vw_printf(cols, "%s\"%s\":[%zu,%zu,\"%c\",\"%c\"]", cols->n ? "," : "", name, off, n, codec, type);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int vw_blob_write(const vw_bytes *blob, FILE *f, const char **enc)
{
	uLongf zn = compressBound(blob->n);
	uint8_t *z = malloc(zn ? zn : 1);
	if (!z)
		return -1;
	if (compress2(z, &zn, blob->n ? blob->p : (const Bytef *)"", blob->n, 6) != Z_OK) {
		free(z);
		return -1;
	}
	*enc = "deflate";
	char line[77];
	size_t k = 0;
	for (size_t i = 0; i < zn; i += 3) {
		uint32_t a = z[i], b = i + 1 < zn ? z[i + 1] : 0, c = i + 2 < zn ? z[i + 2] : 0;
		uint32_t v = a << 16 | b << 8 | c;
		line[k++] = b64[v >> 18];
		line[k++] = b64[(v >> 12) & 63];
		line[k++] = i + 1 < zn ? b64[(v >> 6) & 63] : '=';
		line[k++] = i + 2 < zn ? b64[v & 63] : '=';
		if (k == 76 || i + 3 >= zn) {
			line[k++] = '\n';
			fwrite(line, 1, k, f);
			k = 0;
		}
	}
	free(z);
	return ferror(f) ? -1 : 0;
}

/* ------------------------------------------------------------ map */

static size_t slot_of(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

int vw_map_get(const vw_map *m, uint64_t key, uint64_t *val)
{
	if (!m->cap)
		return 0;
	for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->k[i] == UINT64_MAX)
			return 0;
		if (m->k[i] == key) {
			*val = m->v[i];
			return 1;
		}
	}
}

int vw_map_put(vw_map *m, uint64_t key, uint64_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 1024;
		uint64_t *k = malloc(nc * sizeof *k), *v = malloc(nc * sizeof *v);
		if (!k || !v) {
			free(k);
			free(v);
			return -1;
		}
		memset(k, 0xff, nc * sizeof *k);
		for (size_t i = 0; i < m->cap; i++) {
			if (m->k[i] == UINT64_MAX)
				continue;
			size_t j = slot_of(m->k[i], nc);
			while (k[j] != UINT64_MAX)
				j = (j + 1) & (nc - 1);
			k[j] = m->k[i];
			v[j] = m->v[i];
		}
		free(m->k);
		free(m->v);
		m->k = k;
		m->v = v;
		m->cap = nc;
	}
	size_t i = slot_of(key, m->cap);
	while (m->k[i] != UINT64_MAX && m->k[i] != key)
		i = (i + 1) & (m->cap - 1);
	if (m->k[i] == UINT64_MAX)
		m->n++;
	m->k[i] = key;
	m->v[i] = val;
	return 0;
}

void vw_map_free(vw_map *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------ strings */

int64_t vw_str(vw_strs *t, const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	uint64_t id;
	for (;; h++) {
		if (h == UINT64_MAX)
			h = 0;
		if (!vw_map_get(&t->ix, h, &id))
			break;
		if (!strcmp(t->s[id], s))
			return (int64_t)id;
	}
	size_t len = strlen(s);
	if (t->max_bytes && t->bytes + len > t->max_bytes)
		return -1;
	if (reserve((void **)&t->s, &t->cap, t->n + 1, sizeof *t->s) < 0) {
		t->oom = 1;
		return -1;
	}
	char *c = strdup(s);
	if (!c || vw_map_put(&t->ix, h, t->n) < 0) {
		free(c);
		t->oom = 1;
		return -1;
	}
	t->s[t->n] = c;
	t->bytes += len;
	return (int64_t)t->n++;
}

void vw_strs_free(vw_strs *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	vw_map_free(&t->ix);
	memset(t, 0, sizeof *t);
}
