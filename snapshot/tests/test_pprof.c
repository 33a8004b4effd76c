/*
 * test_pprof.c - the pprof reader and the JAX device memory profile
 * importer on profiles built here byte by byte (pb_build.h), plain and
 * gzip'd: the tables, the trace written (allocations split by count, the
 * host for "cpu" devices, the label's ordinal otherwise, frames innermost
 * first with inlined lines, executables marked, 0-byte samples skipped),
 * and a one-line error at the right offset for each kind of bad input
 * (a sample's count past what an import writes included).
 */
#include <zlib.h>

#include "../pprof.h"
#include "../snap_int.h"
#include "check.h"
#include "pb_build.h"
#include "stprof/snapshot.h"
#include "stprof/srcframe.h"
#include "stprof/trace.h"

enum { S_EMPTY, S_ALLOCS, S_COUNT, S_SPACE, S_BYTES, S_KIND, S_BUFFER, S_EXEC, S_DEVICE, S_CPU, S_CUDA1,
       S_F, S_TRAIN, S_G, S_LIB, S_N };
static const char *const strs[S_N] = {"", "allocations", "count", "space", "bytes", "kind", "buffer", "executable",
                                      "device", "cpu:0", "cuda:1", "f", "train.py", "g", "lib.py"};

static void sample(pbb *out, const uint64_t *locs, int nloc, uint64_t count, uint64_t bytes, int kind, int dev)
{
	pbb s = {0}, pk = {0}, l = {0};
	for (int i = 0; i < nloc; i++)
		pbb_varint(&pk, locs[i]);
	pbb_span(&s, 1, pk.p, pk.n); /* packed location ids */
	pbb_uint(&s, 2, count);       /* values one by one (unpacked) */
	pbb_uint(&s, 2, bytes);
	pbb_uint(&l, 1, S_KIND);
	pbb_uint(&l, 2, (uint64_t)kind);
	pbb_msg(&s, 3, &l);
	pbb_uint(&l, 1, S_DEVICE);
	pbb_uint(&l, 2, (uint64_t)dev);
	pbb_msg(&s, 3, &l);
	pbb_msg(out, 2, &s);
	pbb_free(&s);
	pbb_free(&pk);
	pbb_free(&l);
}

/* The profile of the file comment; bad != 0 plants one fault. */
static void build(pbb *b, int bad)
{
	pbb m = {0}, ln = {0};
	pbb_uint(&m, 1, S_ALLOCS);
	pbb_uint(&m, 2, bad == 5 ? S_COUNT : S_COUNT);
	pbb_msg(b, 1, &m);
	pbb_uint(&m, 1, S_SPACE);
	pbb_uint(&m, 2, bad == 5 ? S_COUNT : S_BYTES); /* 5: no sample type in bytes */
	pbb_msg(b, 1, &m);
	uint64_t l12[] = {1, 2}, l3[] = {3}, l2[] = {2}, l9[] = {9};
	sample(b, l12, 2, 3, 3000, S_BUFFER, S_CPU);
	sample(b, l3, 1, 1, 1 << 20, S_BUFFER, S_CUDA1);
	sample(b, bad == 2 ? l9 : l2, 1, 1, 4096, S_EXEC, S_CUDA1); /* 2: an undefined location */
	sample(b, l2, 1, 1, 0, S_EXEC, S_CPU);
	if (bad == 6) /* 6: a count no profile has (it would take days to write) */
		sample(b, l2, 1, 1ull << 40, 1ull << 41, S_BUFFER, S_CPU);
	/* locations: 1 = g:7; 2 = f:42; 3 = g:8 inlined into f:43 */
	const struct {
		uint64_t id, fn1, line1, fn2, line2;
	} L[] = {{1, 20, 7, 0, 0}, {2, 10, 42, 0, 0}, {3, 20, 8, 10, 43}};
	for (int i = 0; i < 3; i++) {
		pbb_uint(&m, 1, L[i].id);
		pbb_uint(&ln, 1, L[i].fn1);
		pbb_uint(&ln, 2, L[i].line1);
		pbb_msg(&m, 4, &ln);
		if (L[i].fn2) {
			pbb_uint(&ln, 1, L[i].fn2);
			pbb_uint(&ln, 2, L[i].line2);
			pbb_msg(&m, 4, &ln);
		}
		pbb_msg(b, 4, &m);
	}
	pbb_uint(&m, 1, 10);
	pbb_uint(&m, 2, bad == 3 ? 999 : S_F); /* 3: a string index past the table */
	pbb_uint(&m, 4, S_TRAIN);
	pbb_msg(b, 5, &m);
	pbb_uint(&m, 1, 20);
	pbb_uint(&m, 2, S_G);
	pbb_uint(&m, 4, S_LIB);
	pbb_msg(b, 5, &m);
	for (int i = 0; i < S_N; i++)
		pbb_str(b, 6, strs[i]);
	pbb_uint(b, 9, 1234567890); /* time_nanos */
	if (bad == 4)
		pbb_varint(b, 7 << 3 | 3); /* 4: a group */
	pbb_free(&m);
	pbb_free(&ln);
}

static void gzip_of(const pbb *in, pbb *out)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	CHECK(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
	out->n = 0;
	uint8_t tmp[4096];
	z.next_in = in->p;
	z.avail_in = (uInt)in->n;
	int rc;
	do {
		z.next_out = tmp;
		z.avail_out = sizeof tmp;
		rc = deflate(&z, Z_FINISH);
		pbb_bytes(out, tmp, sizeof tmp - z.avail_out);
	} while (rc == Z_OK);
	CHECK(rc == Z_STREAM_END);
	deflateEnd(&z);
}

static int write_file(const char *path, const pbb *b)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t k = fwrite(b->p, 1, b->n, f);
	fclose(f);
	return k == b->n ? 0 : -1;
}

/* The frames of a stack as "FUNCTION FILE:LINE;..." from the trace's source frames. */
static void frames_of(const stp_reader *r, char (*mods)[128], size_t nmods, uint32_t stack, char *out, size_t len)
{
	uint64_t ips[16];
	uint32_t n = stp_reader_stack(r, stack, ips, 16);
	out[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t k = (ips[i] - STP_SRCFRAME_BASE) / STP_SRCFRAME_STRIDE;
		char *copy;
		const char *fn, *file;
		uint32_t line;
		if (k >= nmods || stp_srcframe_parse(mods[k], &copy, &fn, &file, &line)) {
			snprintf(out + strlen(out), len - strlen(out), "?;");
			continue;
		}
		snprintf(out + strlen(out), len - strlen(out), "%s %s:%u;", fn, file, line);
		free(copy);
	}
}

static void test_import(int gz)
{
	pbb raw = {0}, file = {0};
	build(&raw, 0);
	if (gz)
		gzip_of(&raw, &file);
	else
		pbb_bytes(&file, raw.p, raw.n);
	const char *in = check_tmp(gz ? "p.prof" : "p.pb"), *out = check_tmp("p.stp");
	CHECK(write_file(in, &file) == 0);
	CHECK_EQ_I(stp_snapshot_is_pprof(in), gz);
	char err[512];
	stp_pprof_import_stats st;
	int rc = stp_pprof_import(in, out, &st, err, sizeof err);
	if (rc)
		fprintf(stderr, "%s\n", err);
	CHECK(rc == 0);
	CHECK_EQ_I(st.gzipped, gz);
	CHECK_EQ_U(st.samples, 4);
	CHECK_EQ_U(st.buffers, 4);
	CHECK_EQ_U(st.executables, 2);
	CHECK_EQ_U(st.skipped, 1);
	CHECK_EQ_U(st.allocations, 5);
	CHECK_EQ_U(st.bytes, 3000 + (1 << 20) + 4096);
	CHECK_EQ_U(st.devices, 2);
	CHECK_EQ_U(st.frames, 5); /* g:7 f:42 g:8 f:43 (compiled executable) */

	stp_reader *r = stp_reader_open(out, err, sizeof err);
	CHECK(r != NULL);
	if (!r)
		goto done;
	static char mods[16][128];
	size_t nmods = 0, nalloc = 0;
	stp_event ev;
	char fr[512];
	while (stp_reader_next(r, &ev) > 0) {
		CHECK_EQ_U(ev.time_ns, 1234567890);
		if (ev.type == STP_EV_MODULE && nmods < 16)
			snprintf(mods[nmods++], sizeof mods[0], "%s", stp_reader_string(r, ev.u.module.path));
		if (ev.type != STP_EV_ALLOC)
			continue;
		const stp_alloc_info *a = &ev.u.alloc;
		CHECK_EQ_U(a->pool, STP_POOL_JAX);
		CHECK_EQ_U(a->addr % 256, 0);
		frames_of(r, mods, nmods, a->stack, fr, sizeof fr);
		if (nalloc < 3) { /* 3 buffers of 1000 bytes on the host */
			CHECK_EQ_U(a->size, 1000);
			CHECK_EQ_U(a->kind, STP_MEM_HOST);
			CHECK_EQ_I(a->device, -1);
			CHECK_STR(fr, "g lib.py:7;f train.py:42;");
		} else if (nalloc == 3) { /* inlined: g:8 first, then f:43 */
			CHECK_EQ_U(a->size, 1 << 20);
			CHECK_EQ_U(a->kind, STP_MEM_DEVICE);
			CHECK_EQ_I(a->device, 1);
			CHECK_STR(fr, "g lib.py:8;f train.py:43;");
		} else {
			CHECK_EQ_U(a->size, 4096);
			CHECK_EQ_I(a->device, 1);
			CHECK_STR(fr, "(compiled executable) jax:0;f train.py:42;");
		}
		nalloc++;
	}
	CHECK_EQ_U(nalloc, 5);
	CHECK(stp_reader_stats(r)->whole);
	stp_reader_close(r);
done:
	unlink(in);
	unlink(out);
	pbb_free(&raw);
	pbb_free(&file);
}

/* Parses and imports a profile that must fail; checks the message. */
static void expect_error(const pbb *b, const char *want)
{
	char err[512] = "";
	pp_profile p;
	int rc = pp_parse(b->p, b->n, "bad.prof", 1 << 20, &p, err, sizeof err);
	if (!rc) {
		rc = snap_pprof_import_profile(&p, "bad.prof", "/dev/null", NULL, err, sizeof err);
		pp_free(&p);
	}
	CHECK(rc < 0);
	CHECK(strchr(err, '\n') == NULL);
	if (!strstr(err, want)) {
		fprintf(stderr, "error \"%s\" lacks \"%s\"\n", err, want);
		CHECK(0);
	}
}

static void test_errors(void)
{
	pbb b = {0}, g = {0};
	build(&b, 2);
	expect_error(&b, "bad.prof: offset ");
	expect_error(&b, "sample names a location that is not defined");
	b.n = 0;
	build(&b, 3);
	expect_error(&b, "function names a string past the string table");
	b.n = 0;
	build(&b, 4);
	char want[64];
	snprintf(want, sizeof want, "offset %zu: unsupported wire type (group)", b.n - 1);
	expect_error(&b, want);
	b.n = 0;
	build(&b, 5);
	expect_error(&b, "bad.prof: not a memory profile (no sample type in bytes)");
	b.n = 0;
	build(&b, 6);
	expect_error(&b, "more than 16777216 allocations in the profile (this sample has 1099511627776)");
	/* cut anywhere: an error at an offset, or a shorter profile; never a crash */
	b.n = 0;
	build(&b, 0);
	size_t full = b.n;
	for (size_t cut = 1; cut < full; cut++) {
		char err[512];
		pp_profile p;
		if (pp_parse(b.p, cut, "cut.prof", 1 << 20, &p, err, sizeof err) == 0) {
			snap_pprof_import_profile(&p, "cut.prof", "/dev/null", NULL, err, sizeof err);
			pp_free(&p);
		} else {
			CHECK(strncmp(err, "cut.prof: offset ", 17) == 0);
		}
	}
	b.n = 3; /* the first sample type's key, length and half its bytes */
	expect_error(&b, "offset 0: length runs past the end of its message");
	uint8_t longv[12] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	pbb lv = {0};
	pbb_bytes(&lv, longv, sizeof longv);
	expect_error(&lv, "offset 1: varint longer than 10 bytes");
	/* gzip: cut short, too big once uncompressed */
	b.n = 0;
	build(&b, 0);
	gzip_of(&b, &g);
	char err[512];
	pp_profile p;
	CHECK(pp_parse(g.p, g.n / 2, "half.prof", 1 << 20, &p, err, sizeof err) < 0);
	CHECK(strstr(err, "half.prof: offset ") && strstr(err, "gzip stream cut short"));
	CHECK(pp_parse(g.p, g.n, "big.prof", 64, &p, err, sizeof err) < 0);
	CHECK(strstr(err, "big.prof: more than 64 bytes once uncompressed") != NULL);
	CHECK(pp_parse(g.p, g.n, "ok.prof", 1 << 20, &p, err, sizeof err) == 0);
	CHECK(p.gzipped && p.nsamples == 4 && p.nstrings == S_N);
	pp_free(&p);
	CHECK(stp_pprof_import("/nonexistent/x.prof", "/dev/null", NULL, err, sizeof err) < 0);
	CHECK(strstr(err, "/nonexistent/x.prof: ") == err);
	pbb_free(&b);
	pbb_free(&g);
	pbb_free(&lv);
}

int main(void)
{
	test_import(0);
	test_import(1);
	test_errors();
	return check_done();
}
