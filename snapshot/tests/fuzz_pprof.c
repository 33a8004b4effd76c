/*
 * fuzz_pprof.c - libFuzzer target for the pprof reader (gunzip included)
 * and the JAX device memory profile importer.  The first byte picks the
 * mode:
 *   odd:  byte-level: the rest is parsed (gzip'd when it starts with the
 *         gzip magic) and, when it parses, imported into /dev/null;
 *   even: structure-aware: the rest drives a generator of profile-shaped
 *         messages (sample types, samples with packed and unpacked ids and
 *         values and labels, locations with inlined lines, functions,
 *         mappings, strings; ids and string indices in and out of range,
 *         repeated ids, odd wire types), optionally gzip'd, then parsed and
 *         imported.
 * Invariants: no crash, no leak, no error message longer than one line,
 * at most 4 MiB decompressed (the bound is the reader's own parameter).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../pprof.h"
#include "../snap_int.h"
#include "pb_build.h"
#include "stprof/snapshot.h"

typedef struct src {
	const uint8_t *p;
	size_t n, i;
} src;

static unsigned next(src *s) { return s->i < s->n ? s->p[s->i++] : 0; }

static const char *const strs[] = {"", "allocations", "count", "space", "bytes", "kind", "buffer", "executable",
                                   "device", "cpu:0", "cuda:3", "TPU_1(process=0)", "f", "x.py", "\x1f"};
#define NSTR (sizeof strs / sizeof *strs)

static void run(const uint8_t *p, size_t n)
{
	char err[1024];
	pp_profile pr;
	if (pp_parse(p, n, "fuzz.prof", 4u << 20, &pr, err, sizeof err) < 0) {
		if (strchr(err, '\n'))
			abort();
		return;
	}
	if (snap_pprof_import_profile(&pr, "fuzz.prof", "/dev/null", NULL, err, sizeof err) < 0 && strchr(err, '\n'))
		abort();
	pp_free(&pr);
}

/* a small id or index, sometimes out of range */
static uint64_t ref(src *s) { return next(s) % 8 == 0 ? 0xffffffffu + next(s) : next(s) % 12; }

static void gen(src *s, pbb *b)
{
	pbb m = {0}, sub = {0};
	unsigned nmsg = next(s) % 24;
	for (unsigned k = 0; k < nmsg; k++) {
		switch (next(s) % 8) {
		case 0: /* sample type */
			pbb_uint(&m, 1, ref(s));
			pbb_uint(&m, 2, ref(s));
			pbb_msg(b, 1, &m);
			break;
		case 1: { /* sample */
			unsigned nl = next(s) % 5;
			if (next(s) & 1) {
				for (unsigned i = 0; i < nl; i++)
					pbb_varint(&sub, ref(s));
				pbb_span(&m, 1, sub.p, sub.n);
				sub.n = 0;
			} else {
				for (unsigned i = 0; i < nl; i++)
					pbb_uint(&m, 1, ref(s));
			}
			unsigned nv = next(s) % 4;
			for (unsigned i = 0; i < nv; i++)
				pbb_uint(&m, 2, next(s) % 4 == 0 ? UINT64_MAX - next(s) : (uint64_t)next(s) << (next(s) % 40));
			unsigned nlab = next(s) % 3;
			for (unsigned i = 0; i < nlab; i++) {
				pbb_uint(&sub, 1, ref(s));
				pbb_uint(&sub, 2, ref(s));
				if (next(s) & 1)
					pbb_uint(&sub, 3, next(s));
				pbb_msg(&m, 3, &sub);
			}
			pbb_msg(b, 2, &m);
			break;
		}
		case 2: { /* location */
			pbb_uint(&m, 1, ref(s));
			if (next(s) & 1)
				pbb_uint(&m, 3, (uint64_t)next(s) << 12);
			if (next(s) & 1)
				pbb_uint(&m, 2, ref(s));
			unsigned nl = next(s) % 3;
			for (unsigned i = 0; i < nl; i++) {
				pbb_uint(&sub, 1, ref(s));
				pbb_uint(&sub, 2, next(s) % 5 == 0 ? UINT64_MAX - next(s) : next(s));
				pbb_msg(&m, 4, &sub);
			}
			pbb_msg(b, 4, &m);
			break;
		}
		case 3: /* function */
			pbb_uint(&m, 1, ref(s));
			pbb_uint(&m, 2, ref(s));
			if (next(s) & 1)
				pbb_uint(&m, 3, ref(s));
			pbb_uint(&m, 4, ref(s));
			pbb_msg(b, 5, &m);
			break;
		case 4: /* mapping */
			pbb_uint(&m, 1, ref(s));
			pbb_uint(&m, 2, (uint64_t)next(s) << 20);
			pbb_uint(&m, 3, (uint64_t)next(s) << 21);
			pbb_uint(&m, 5, ref(s));
			pbb_msg(b, 3, &m);
			break;
		case 5: /* strings, the whole table in order most of the time */
			if (next(s) & 1) {
				for (size_t i = 0; i < NSTR; i++)
					pbb_str(b, 6, strs[i]);
			} else {
				pbb_str(b, 6, strs[next(s) % NSTR]);
			}
			break;
		case 6: /* scalars, and a field of an odd wire type */
			pbb_uint(b, 9, next(s));
			if (next(s) % 4 == 0)
				pbb_varint(b, (uint64_t)(next(s) % 16) << 3 | next(s) % 8);
			break;
		default: /* a fixed64 and a fixed32 field, both skipped */
			pbb_varint(b, 13 << 3 | 1);
			pbb_bytes(b, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
			pbb_varint(b, 15 << 3 | 5);
			pbb_bytes(b, "\x01\x02\x03\x04", 4);
			break;
		}
	}
	pbb_free(&m);
	pbb_free(&sub);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1) {
		run(data + 1, size - 1);
		return 0;
	}
	src s = {data + 1, size - 1, 0};
	int gz = next(&s) & 1;
	pbb b = {0};
	gen(&s, &b);
	if (gz) {
		uLongf cap = compressBound((uLong)b.n) + 32;
		uint8_t *out = malloc(cap);
		z_stream z;
		memset(&z, 0, sizeof z);
		if (out && deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
			z.next_in = b.p;
			z.avail_in = (uInt)b.n;
			z.next_out = out;
			z.avail_out = (uInt)cap;
			if (deflate(&z, Z_FINISH) == Z_STREAM_END)
				run(out, cap - z.avail_out);
			deflateEnd(&z);
		}
		free(out);
	} else {
		run(b.p, b.n);
	}
	pbb_free(&b);
	return 0;
}
