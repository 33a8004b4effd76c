/*
 * pickle_write.c - a protocol 2 pickle writer (see pickle.h).
 *
 * Emits only what the reader accepts and every Python 3 unpickler reads:
 * EMPTY_DICT/EMPTY_LIST + MARK .. SETITEMS/APPENDS, MARK .. TUPLE,
 * BINUNICODE, BININT1/BININT2/BININT/LONG1, BINFLOAT, NEWTRUE/NEWFALSE,
 * NONE, BINPUT/LONG_BINPUT, BINGET/LONG_BINGET.  A container is closed
 * with one SETITEMS/APPENDS of all its items (Python batches by 1000; any
 * count is valid).  Write errors are sticky and reported by pkw_close.
 */
#include "pickle.h"

#include <stdlib.h>
#include <string.h>

#define CONSTS 64
struct pk_writer {
	FILE *f;
	uint32_t memo;
	int bad;
	const char *cptr[CONSTS]; /* pkw_const's strings, by pointer hash */
	uint32_t cmemo[CONSTS];
};

static void put(pk_writer *w, const void *b, size_t n)
{
	if (!w->bad && fwrite(b, 1, n, w->f) != n)
		w->bad = 1;
}

static void op(pk_writer *w, uint8_t o) { put(w, &o, 1); }

static void le(pk_writer *w, uint64_t v, size_t n)
{
	uint8_t b[8];
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(w, b, n);
}

pk_writer *pkw_open(FILE *f)
{
	pk_writer *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->f = f;
	op(w, 0x80);
	op(w, 2);
	return w;
}

FILE *pkw_stream(pk_writer *w) { return w->f; }

void pkw_dict_begin(pk_writer *w) { op(w, '}'); op(w, '('); }
void pkw_dict_end(pk_writer *w) { op(w, 'u'); }
void pkw_list_begin(pk_writer *w) { op(w, ']'); op(w, '('); }
void pkw_list_end(pk_writer *w) { op(w, 'e'); }
void pkw_tuple_begin(pk_writer *w) { op(w, '('); }
void pkw_tuple_end(pk_writer *w) { op(w, 't'); }
void pkw_none(pk_writer *w) { op(w, 'N'); }
void pkw_bool(pk_writer *w, int v) { op(w, v ? 0x88 : 0x89); }

void pkw_str(pk_writer *w, const char *s)
{
	size_t n = strlen(s);
	op(w, 'X');
	le(w, n, 4);
	put(w, s, n);
}

void pkw_const(pk_writer *w, const char *s)
{
	size_t h = ((uintptr_t)s >> 3) % CONSTS;
	if (w->cptr[h] == s) {
		pkw_memo_get(w, w->cmemo[h]);
		return;
	}
	pkw_str(w, s);
	w->cptr[h] = s;
	w->cmemo[h] = pkw_memo_put(w);
}

void pkw_int(pk_writer *w, int64_t v)
{
	if (v >= 0 && v < 256) {
		op(w, 'K');
		le(w, (uint64_t)v, 1);
	} else if (v >= 0 && v < 65536) {
		op(w, 'M');
		le(w, (uint64_t)v, 2);
	} else if (v >= INT32_MIN && v <= INT32_MAX) {
		op(w, 'J');
		le(w, (uint64_t)(uint32_t)(int32_t)v, 4);
	} else {
		/* LONG1: the shortest two's complement little-endian form */
		size_t n = 8;
		while (n > 1) {
			int64_t top = v >> (8 * (n - 1) - 1);
			if (top != 0 && top != -1)
				break;
			n--;
		}
		op(w, 0x8a);
		le(w, n, 1);
		le(w, (uint64_t)v, n);
	}
}

void pkw_uint(pk_writer *w, uint64_t v)
{
	if (v <= INT64_MAX) {
		pkw_int(w, (int64_t)v);
		return;
	}
	op(w, 0x8a); /* 9 bytes: the value and a zero sign byte */
	le(w, 9, 1);
	le(w, v, 8);
	le(w, 0, 1);
}

void pkw_float(pk_writer *w, double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof u);
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(u >> (56 - 8 * i));
	op(w, 'G');
	put(w, b, 8);
}

uint32_t pkw_memo_put(pk_writer *w)
{
	uint32_t i = w->memo++;
	if (i < 256) {
		op(w, 'q');
		le(w, i, 1);
	} else {
		op(w, 'r');
		le(w, i, 4);
	}
	return i;
}

void pkw_memo_get(pk_writer *w, uint32_t idx)
{
	if (idx < 256) {
		op(w, 'h');
		le(w, idx, 1);
	} else {
		op(w, 'j');
		le(w, idx, 4);
	}
}

int pkw_close(pk_writer *w)
{
	op(w, '.');
	if (fflush(w->f) != 0)
		w->bad = 1;
	int rc = w->bad ? -1 : 0;
	free(w);
	return rc;
}
