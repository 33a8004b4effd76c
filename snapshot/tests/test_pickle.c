/*
 * test_pickle.c - the data-only pickle reader and writer (snapshot/pickle.h):
 * what PyTorch's writers emit is read, shared memo nodes stay shared, and
 * hostile input (code opcodes, memo reference loops, huge claimed lengths,
 * deep nesting, truncation) is refused with "NAME: offset N: ..." and
 * bounded memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../pickle.h"
#include "check.h"

static pk_doc *parse(const char *bytes, size_t n, char *err)
{
	return pk_parse((const uint8_t *)bytes, n, "t.pickle", err, 256);
}

static void refused(const char *bytes, size_t n, const char *want_offset, const char *want_text)
{
	char err[256] = "";
	pk_doc *d = parse(bytes, n, err);
	CHECK(d == NULL);
	pk_free(d);
	CHECK(strstr(err, want_offset) != NULL);
	CHECK(strstr(err, want_text) != NULL);
	if (!strstr(err, want_offset) || !strstr(err, want_text))
		fprintf(stderr, "  got: %s\n", err);
	CHECK(strchr(err, '\n') == NULL);
}

/* ------------------------------------------------------------ shaped reads */

enum { S_NONE, S_TOP, S_KEEP, S_ITEM, S_ATOM, S_N };
static const pk_key top_keys[] = {{"keep", S_KEEP}, {"atom", S_ATOM}, {NULL, 0}};
static const pk_key item_keys[] = {{"x", S_ATOM}, {NULL, 0}};
static const pk_place shape_places[S_N] = {
	[S_TOP] = {top_keys, 0, 0, 0, 0},
	[S_KEEP] = {NULL, S_ITEM, 0, 1, 0},
	[S_ITEM] = {item_keys, 0, 0, 0, 0},
	[S_ATOM] = {NULL, 0, 1, 0, 0},
};
static const char *const shape_strings[] = {"keep", "atom", "x", NULL};

typedef struct seen { uint64_t items, sum; } seen;

static int count_items(void *ctx, const pk_val *list, const pk_val *item, char *err, size_t errlen)
{
	(void)list;
	(void)err;
	(void)errlen;
	seen *s = ctx;
	s->items++;
	s->sum += (uint64_t)pk_int(pk_get(item, "x"), 0);
	return pk_get(item, "y") ? -1 : 0; /* an unknown key never reaches the sink */
}

/* The pickle of {"junk": [[], [], ...] (n, each memoized, as Python writes
 * them), "keep": [{"x": i, "y": [i]} ...] (n), "atom": 7}. */
static char *hostile(size_t n, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	pk_writer *w = pkw_open(f);
	pkw_dict_begin(w);
	pkw_const(w, "junk");
	pkw_list_begin(w);
	for (size_t i = 0; i < n; i++) {
		pkw_list_begin(w);
		pkw_list_end(w);
		pkw_memo_put(w);
	}
	pkw_list_end(w);
	pkw_const(w, "keep");
	pkw_list_begin(w);
	for (size_t i = 0; i < n; i++) {
		pkw_dict_begin(w);
		pkw_const(w, "x");
		pkw_int(w, (int64_t)i);
		pkw_const(w, "y");
		pkw_list_begin(w);
		pkw_int(w, (int64_t)i);
		pkw_list_end(w);
		pkw_dict_end(w);
		pkw_memo_put(w);
	}
	pkw_list_end(w);
	pkw_const(w, "atom");
	pkw_int(w, 7);
	pkw_dict_end(w);
	pkw_close(w);
	fclose(f);
	return buf;
}

/* Issue 26: 41-49 bytes of memory per input byte, whatever the pickle held.
 * A shaped read keeps what the shape names: a million dropped lists and a
 * million items handed on cost a few nodes at once, where the whole read
 * holds them all. */
static void test_shaped(void)
{
	char err[256];
	size_t len, n = 1000000;
	char *p = hostile(n, &len);
	seen s = {0, 0};
	pk_shape shape = {shape_places, S_N, shape_strings, count_items, &s};
	pk_doc *d = pk_read(NULL, (const uint8_t *)p, len, "h.pickle", &shape, err, sizeof err);
	CHECK(d != NULL);
	if (d) {
		uint64_t now, peak;
		pk_node_counts(d, &now, &peak);
		CHECK(peak < 64);
		CHECK_EQ_U(s.items, n);
		CHECK_EQ_U(s.sum, (uint64_t)n * (n - 1) / 2);
		CHECK_EQ_I(pk_int(pk_get(pk_root(d), "atom"), 0), 7);
		CHECK(pk_get(pk_root(d), "junk") == NULL);
		pk_free(d);
	} else {
		fprintf(stderr, "%s\n", err);
	}
	d = pk_parse((const uint8_t *)p, len, "h.pickle", err, sizeof err);
	CHECK(d != NULL);
	if (d) {
		uint64_t now, peak;
		pk_node_counts(d, &now, &peak);
		CHECK(peak > 4 * n); /* whole: every list, dict, int */
		pk_free(d);
	}
	free(p);
	/* a streamed list that contains itself */
	static const char loop[] = "\x80\x02}q\x00X\x04\x00\x00\x00" "keepq\x01]q\x02(h\x02" "eu.";
	s = (seen){0, 0};
	d = pk_read(NULL, (const uint8_t *)loop, sizeof loop - 1, "l.pickle", &shape, err, sizeof err);
	CHECK(d == NULL && strstr(err, "contains itself"));
	pk_free(d);
	/* the stack and the marks are bounded */
	size_t big = 2 + (PK_STACK_MAX + 1) + 1;
	char *nn = malloc(big);
	memset(nn, 'N', big);
	nn[0] = (char)0x80;
	nn[1] = 2;
	nn[big - 1] = '.';
	refused(nn, big, "offset", "values on the stack");
	memset(nn + 2, '(', big - 3);
	refused(nn, big, "offset", "marks");
	free(nn);
}

int main(void)
{
	test_shaped();
	char err[256];
	/* protocol 4 as Python writes {'a': [1, 'x', -2, 2**63, True, None, 1.5], 'b': same list} */
	static const char p4[] = "\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00"
	                         "}\x94(\x8c\x01" "a\x94]\x94(K\x01\x8c\x01x\x94J\xfe\xff\xff\xff"
	                         "\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00\x88NG\x3f\xf8\x00\x00\x00\x00\x00\x00"
	                         "e\x8c\x01" "b\x94h\x02u.";
	pk_doc *d = parse(p4, sizeof p4 - 1, err);
	CHECK(d != NULL);
	if (!d) {
		fprintf(stderr, "%s\n", err);
		return check_done();
	}
	const pk_val *r = pk_root(d), *a = pk_get(r, "a"), *b = pk_get(r, "b");
	CHECK_EQ_I(pk_protocol(d), 4);
	CHECK(a && a->type == PK_LIST && a->n == 7);
	CHECK(a == b); /* memo-shared, not copied */
	if (a && a->n == 7) {
		CHECK_EQ_I(pk_int(a->u.items[0], 0), 1);
		CHECK_STR(pk_str(a->u.items[1], NULL), "x");
		CHECK_EQ_I(pk_int(a->u.items[2], 0), -2);
		CHECK_EQ_U(pk_uint(a->u.items[3], 0), 1ull << 63);
		CHECK_EQ_I(a->u.items[4]->type, PK_BOOL);
		CHECK_EQ_I(a->u.items[5]->type, PK_NONE);
		CHECK(a->u.items[6]->type == PK_FLOAT && a->u.items[6]->u.f == 1.5);
	}
	pk_free(d);

	/* code is never run: GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ */
	refused("\x80\x02" "cos\nsystem\n", 12, "offset 2", "would import or call code");
	refused("\x80\x04\x8c\x02os\x8c\x06system\x93", 15, "offset 14", "would import or call code");
	refused("\x80\x02NNR.", 5, "offset 4", "would import or call code");
	refused("\x80\x02]b.", 5, "offset 3", "would import or call code");
	/* a memo reference loop: l = []; l.append(l) */
	refused("\x80\x02]q\x00h\x00" "a.", 9, "offset 2", "contains itself");
	/* a dict that holds itself through a list */
	refused("\x80\x02}q\x00K\x01]q\x01h\x00" "as.", 15, "offset 2", "contains itself");
	/* claimed lengths larger than the input are refused before any allocation */
	refused("\x80\x04\x8d\x00\xca\x9a\x3b\x00\x00\x00\x00", 11, "offset 2", "1000000000 bytes claimed");
	refused("\x80\x02X\x00\xca\x9a\x3b", 7, "offset 2", "1000000000 bytes claimed");
	refused("\x80\x02\x8b\x00\xca\x9a\x3b", 7, "offset 2", "1000000000 bytes claimed");
	refused("\x80\x04\x95\x00\xca\x9a\x3b\x00\x00\x00\x00N.", 13, "offset 2", "FRAME of 1000000000");
	/* a memo index far beyond anything stored */
	refused("\x80\x02Nr\x00\xca\x9a\x3b.", 8, "offset 3", "memo index 1000000000 out of range");
	refused("\x80\x02h\x05.", 5, "offset 2", "never stored");
	/* truncated, no STOP, stack misuse, other protocols */
	refused("\x80\x02X\x05\x00\x00\x00" "ab", 9, "offset 2", "5 bytes claimed");
	refused("\x80\x02N", 3, "offset 3", "no STOP");
	refused("\x80\x02" "a.", 4, "offset 2", "stack underflow");
	refused("\x80\x02NN.", 5, "offset 4", "STOP with 2 values");
	refused("(dp0\n.", 6, "offset 0", "not a pickle");
	refused("\x80\x06N.", 4, "offset 0", "protocol 6");
	refused("\x80\x02\x8f.", 4, "offset 2", "not one a memory snapshot uses");
	/* nesting deeper than PK_MAX_DEPTH */
	{
		size_t n = 2 + 2 * 400 + 400 + 1;
		char *deep = malloc(n);
		size_t k = 0;
		deep[k++] = (char)0x80;
		deep[k++] = 2;
		for (int i = 0; i < 400; i++) {
			deep[k++] = ']';
		}
		for (int i = 0; i < 399; i++)
			deep[k++] = 'a';
		deep[k++] = '.';
		refused(deep, k, "offset", "nested deeper than");
		free(deep);
	}

	/* the writer: every value kind back through the reader */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	pk_writer *w = pkw_open(f);
	pkw_dict_begin(w);
	pkw_str(w, "ints");
	pkw_list_begin(w);
	static const int64_t ints[] = {0, 255, 256, 65535, 65536, -1, -129, INT32_MIN, INT32_MAX, 1ll << 40, -(1ll << 40),
	                               INT64_MAX, INT64_MIN};
	for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
		pkw_int(w, ints[i]);
	pkw_uint(w, UINT64_MAX);
	pkw_list_end(w);
	uint32_t m = pkw_memo_put(w);
	pkw_str(w, "again");
	pkw_memo_get(w, m);
	pkw_str(w, "t");
	pkw_tuple_begin(w);
	pkw_float(w, -0.25);
	pkw_bool(w, 1);
	pkw_none(w);
	pkw_tuple_end(w);
	pkw_dict_end(w);
	CHECK_EQ_I(pkw_close(w), 0);
	fclose(f);
	d = pk_parse((const uint8_t *)buf, len, "w.pickle", err, sizeof err);
	CHECK(d != NULL);
	if (d) {
		const pk_val *l = pk_get(pk_root(d), "ints");
		CHECK(l && l->n == sizeof ints / sizeof *ints + 1);
		for (size_t i = 0; l && i < sizeof ints / sizeof *ints; i++)
			CHECK_EQ_I(pk_int(l->u.items[i], 12345), ints[i]);
		if (l)
			CHECK_EQ_U(pk_uint(l->u.items[l->n - 1], 0), UINT64_MAX);
		CHECK(pk_get(pk_root(d), "again") == l);
		const pk_val *t = pk_get(pk_root(d), "t");
		CHECK(t && t->type == PK_TUPLE && t->n == 3 && t->u.items[0]->u.f == -0.25);
		pk_free(d);
	} else {
		fprintf(stderr, "%s\n", err);
	}
	free(buf);
	return check_done();
}
