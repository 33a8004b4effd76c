/*
 * pb_build.h - a tiny protobuf wire-format writer for the pprof tests and
 * fuzz target (header-only, test code): messages are built bottom-up into
 * growable buffers, nested by appending a finished buffer as a field.
 */
#ifndef STP_SNAPSHOT_TESTS_PB_BUILD_H
#define STP_SNAPSHOT_TESTS_PB_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct pbb {
	uint8_t *p;
	size_t n, cap;
} pbb;

static inline void pbb_bytes(pbb *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		size_t c = b->cap ? b->cap * 2 : 64;
		while (c < b->n + n)
			c *= 2;
		uint8_t *q = realloc(b->p, c);
		if (!q)
			abort();
		b->p = q;
		b->cap = c;
	}
	if (n)
		memcpy(b->p + b->n, d, n);
	b->n += n;
}

static inline void pbb_varint(pbb *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	do {
		t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pbb_bytes(b, t, n);
}

/* field num as a varint */
static inline void pbb_uint(pbb *b, uint32_t num, uint64_t v)
{
	pbb_varint(b, (uint64_t)num << 3);
	pbb_varint(b, v);
}

/* field num as a length-delimited span */
static inline void pbb_span(pbb *b, uint32_t num, const void *d, size_t n)
{
	pbb_varint(b, (uint64_t)num << 3 | 2);
	pbb_varint(b, n);
	pbb_bytes(b, d, n);
}

static inline void pbb_str(pbb *b, uint32_t num, const char *s) { pbb_span(b, num, s, strlen(s)); }

/* appends message m as field num and empties m */
static inline void pbb_msg(pbb *b, uint32_t num, pbb *m)
{
	pbb_span(b, num, m->p, m->n);
	m->n = 0;
}

static inline void pbb_free(pbb *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}
#endif
