/*
 * test_roundtrip.c - the trace format end to end: every event type and field
 * written by stp_writer comes back from stp_reader unchanged and in seq
 * order; randomized traces round-trip; chunks of interleaved threads merge by
 * seq; a file cut at every byte reads a prefix and reports the cut; flipped
 * bytes never crash the reader.
 */
#include "check.h"
#include "stprof/trace.h"
#include "stprof/trace_codec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

#define NEV 20000
static stp_event evs[NEV];
static stp_range ranges_store[NEV][4];
static uint64_t frames[NEV][40]; /* the call path written with event i */
static uint32_t nframes[NEV];
static char names[64][32];
/* A FOLD event's spaces and sites, a function of its index (the events
 * are all written before they are read back) */
static uint64_t mix(uint64_t x)
{
	x = (x ^ (x >> 31)) * 0x7fb5d329728ea185ull;
	x = (x ^ (x >> 27)) * 0x81dadef4bc2dd44dull;
	return x ^ (x >> 33);
}
static void fold_parts(uint64_t i, stp_fold_space sp[4], uint32_t *nsp, stp_fold_site si[4], uint64_t ip[4],
                       uint32_t *nsi, uint8_t *counted)
{
	uint64_t h = mix(i + 1);
	*nsp = (uint32_t)(h % 4);
	*counted = (uint8_t)((h >> 16) & 1); /* 1.3's counts, or a 1.2 FOLD */
	*nsi = (uint32_t)((h >> 8) % 4);
	for (uint32_t k = 0; k < 4; k++) {
		uint64_t g = mix(h + k);
		sp[k] = (stp_fold_space){.kind = (uint8_t)(g % 4), .device = (int32_t)((g >> 4) % 3) - 1,
		                         .pool = (uint32_t)((g >> 8) % 2), .allocs = (g >> 9) % 1000, .bytes = g >> 3,
		                         .peak = g >> 20, .carried_in = (g >> 30) % 4096, .carried_out = (g >> 40) % 4096,
		                         .sampled = (g >> 9) % 1000 / 2, .sampled_est = (g >> 44) % 100000,
		                         .peak_objects = *counted ? (g >> 50) % 200 : 0};
		ip[k] = 0x400000 + (g % 64) * 16;
		si[k] = (stp_fold_site){.device = -1, .allocs = (g >> 12) % 100, .bytes = (g >> 24) % 100000};
	}
}
static stp_fold_space fold_spaces[4];
static stp_fold_site fold_sites[4];

static void make_event(stp_writer *w, stp_event *ev, uint64_t i, uint64_t t)
{
	memset(ev, 0, sizeof *ev);
	nframes[i] = 0;
	ev->seq = i;
	ev->time_ns = t;
	ev->tid = 100 + (uint32_t)(rnd() % 4);
	unsigned type = 1 + (unsigned)(rnd() % STP_EV_TYPE_MAX);
	ev->type = (uint8_t)type;
	switch (type) {
	case STP_EV_PROCESS:
		ev->u.process = (stp_process_info){.pid = 1234, .ppid = 1, .rank = -1, .local_rank = 3, .world_size = 8,
		                                   .cmdline = stp_writer_string(w, "prog --x"), .exe = 0,
		                                   .hostname = stp_writer_string(w, "host"),
		                                   .start_realtime_ns = rnd(), .start_monotonic_ns = t};
		break;
	case STP_EV_THREAD:
		ev->u.thread.tid = (uint32_t)rnd();
		ev->u.thread.name = stp_writer_string(w, names[rnd() % 64]);
		break;
	case STP_EV_MODULE:
		ev->u.module.path = stp_writer_string(w, names[rnd() % 64]);
		ev->u.module.base = rnd();
		ev->u.module.size = rnd() >> 20;
		ev->u.module.bias = rnd();
		ev->u.module.build_id_len = (uint32_t)(rnd() % (STP_BUILD_ID_MAX + 1));
		for (unsigned k = 0; k < ev->u.module.build_id_len; k++)
			ev->u.module.build_id[k] = (uint8_t)rnd();
		break;
	case STP_EV_ALLOC:
	case STP_EV_SEGMENT_RESERVE:
	case STP_EV_SEGMENT_RELEASE:
	case STP_EV_REFUSED: {
		stp_alloc_info *a = &ev->u.alloc;
		a->addr = 0x7f0000000000ull + (rnd() % (1u << 30));
		a->size = rnd() % 3 ? rnd() % 5000 : rnd();
		a->requested = rnd() % 2 ? a->size : a->size - (a->size ? rnd() % a->size : 0);
		a->device = -1;
		if (rnd() % 3 == 0) {
			a->kind = (uint8_t)(rnd() % 4);
			a->device = (int32_t)(rnd() % 8) - 1;
			a->stream = rnd() % 5 ? rnd() % 16 : rnd();
			a->pool = (uint32_t)(rnd() % 3);
		}
		if (rnd() % 4) {
			uint32_t n = 1 + (uint32_t)(rnd() % 40);
			for (uint32_t k = 0; k < n; k++)
				frames[i][k] = 0x400000 + (rnd() % 64) * 16 + k * 4096;
			nframes[i] = n;
			a->stack = stp_writer_stack(w, frames[i], n);
		}
		break;
	}
	case STP_EV_FREE:
		ev->u.free.addr = 0x7f0000000000ull + (rnd() % (1u << 30));
		ev->u.free.device = -1;
		if (rnd() % 2)
			ev->u.free.size = rnd() % 100000;
		if (rnd() % 3 == 0) {
			ev->u.free.kind = STP_MEM_DEVICE;
			ev->u.free.device = 0;
			ev->u.free.stream = 7;
		}
		break;
	case STP_EV_API: {
		stp_api_info *a = &ev->u.api;
		a->kind = (uint8_t)(rnd() % (STP_API_OP + 1));
		a->name = stp_writer_string(w, names[rnd() % 64]);
		a->device = (int32_t)(rnd() % 3) - 1;
		a->stream = rnd() % 4;
		a->end_ns = t + rnd() % 100000;
		a->nranges = (uint32_t)(rnd() % 5);
		for (uint32_t k = 0; k < a->nranges; k++)
			ranges_store[i][k] = (stp_range){rnd(), rnd() % 100000, 1 + (uint32_t)(rnd() % 3)};
		a->ranges = ranges_store[i];
		break;
	}
	case STP_EV_MARKER:
		ev->u.marker.kind = (uint8_t)(1 + rnd() % STP_MARK_KIND_MAX);
		ev->u.marker.name = rnd() % 2 ? stp_writer_string(w, names[rnd() % 64]) : 0;
		ev->u.marker.value = (int64_t)(rnd() % 2000) - 1000;
		break;
	case STP_EV_FOLD: { /* standing for itself only: the seqs stay dense */
		stp_fold_info *f = &ev->u.fold;
		f->iteration = (int64_t)(rnd() % 100000);
		f->like = f->iteration - (int64_t)(rnd() % 50);
		f->last_seq = i + rnd() % 3;
		f->elided = 1;
		f->apis = rnd() % 2;
		f->digest = rnd();
		uint64_t ip[4];
		fold_parts(i, fold_spaces, &f->nspaces, fold_sites, ip, &f->nsites, &f->counted);
		for (uint32_t k = 0; k < f->nsites; k++)
			fold_sites[k].stack = stp_writer_stack(w, &ip[k], 1);
		f->spaces = fold_spaces;
		f->sites = fold_sites;
		break;
	}
	}
}

/* Same call path: readers give back a node id, so compare the frames. */
static int same_stack(stp_reader *r, uint32_t got, uint64_t i)
{
	uint64_t ips[64];
	uint32_t n = stp_reader_stack(r, got, ips, 64);
	return n == nframes[i] && !memcmp(ips, frames[i], n * sizeof *ips);
}

static int same_event(stp_reader *r, const stp_event *a, const stp_event *b, uint64_t i)
{
	if (a->type != b->type || a->seq != b->seq || a->time_ns != b->time_ns || a->tid != b->tid)
		return 0;
	if (a->type == STP_EV_API) {
		stp_api_info x = a->u.api, y = b->u.api;
		if (x.kind != y.kind || x.name != y.name || x.device != y.device || x.stream != y.stream ||
		    x.end_ns != y.end_ns || x.stack != y.stack || x.nranges != y.nranges)
			return 0;
		for (uint32_t k = 0; k < x.nranges; k++)
			if (x.ranges[k].addr != y.ranges[k].addr || x.ranges[k].size != y.ranges[k].size ||
			    x.ranges[k].mode != y.ranges[k].mode)
				return 0;
		return 1;
	}
	if (a->type == STP_EV_ALLOC || a->type == STP_EV_SEGMENT_RESERVE || a->type == STP_EV_SEGMENT_RELEASE ||
	    a->type == STP_EV_REFUSED) {
		stp_alloc_info x = a->u.alloc, y = b->u.alloc;
		if (!same_stack(r, x.stack, i))
			return 0;
		x.stack = y.stack = 0;
		return !memcmp(&x, &y, sizeof x);
	}
	if (a->type == STP_EV_FOLD) {
		stp_fold_info x = a->u.fold, y = b->u.fold;
		stp_fold_space sp[4];
		stp_fold_site si[4];
		uint64_t ip[4];
		uint32_t nsp, nsi;
		uint8_t counted;
		fold_parts(i, sp, &nsp, si, ip, &nsi, &counted);
		if (x.iteration != y.iteration || x.like != y.like || x.last_seq != y.last_seq || x.elided != y.elided ||
		    x.apis != y.apis || x.markers != y.markers || x.digest != y.digest || x.nspaces != nsp ||
		    x.nsites != nsi || x.counted != (counted && nsp))
			return 0;
		for (uint32_t k = 0; k < nsp; k++) {
			const stp_fold_space *g = &x.spaces[k], *w = &sp[k];
			if (g->kind != w->kind || g->device != w->device || g->pool != w->pool || g->allocs != w->allocs ||
			    g->bytes != w->bytes || g->peak != w->peak || g->carried_in != w->carried_in ||
			    g->carried_out != w->carried_out || g->sampled != w->sampled || g->sampled_est != w->sampled_est ||
			    g->peak_objects != w->peak_objects)
				return 0;
		}
		for (uint32_t k = 0; k < nsi; k++) {
			uint64_t got;
			if (stp_reader_stack(r, x.sites[k].stack, &got, 1) != 1 || got != ip[k] ||
			    x.sites[k].allocs != si[k].allocs || x.sites[k].bytes != si[k].bytes ||
			    x.sites[k].device != si[k].device || x.sites[k].kind != si[k].kind || x.sites[k].pool != si[k].pool)
				return 0;
		}
		return 1;
	}
	/* the reader fills the member of the event's type, not the whole union */
	switch (a->type) {
	case STP_EV_PROCESS: return !memcmp(&a->u.process, &b->u.process, sizeof a->u.process);
	case STP_EV_THREAD: return !memcmp(&a->u.thread, &b->u.thread, sizeof a->u.thread);
	case STP_EV_MODULE: return !memcmp(&a->u.module, &b->u.module, sizeof a->u.module);
	case STP_EV_FREE: return !memcmp(&a->u.free, &b->u.free, sizeof a->u.free);
	case STP_EV_MARKER: return !memcmp(&a->u.marker, &b->u.marker, sizeof a->u.marker);
	}
	return 0;
}

/* Writes NEV random events; returns the file's path. */
static const char *write_random(uint64_t *stack_ids)
{
	const char *path = check_tmp("rt.stp");
	char err[256];
	stp_writer *w = stp_writer_open(path, err, sizeof err);
	CHECK(w != NULL);
	uint64_t t = 1000;
	for (uint64_t i = 0; i < NEV; i++) {
		t += rnd() % 3000;
		make_event(w, &evs[i], i, t);
		CHECK(stp_writer_event(w, &evs[i]) == 0);
	}
	(void)stack_ids;
	CHECK(stp_writer_close(w, STP_END_EXIT, 3) == 0);
	return path;
}

static void test_roundtrip(void)
{
	const char *path = write_random(NULL);
	char err[256];
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	CHECK(r != NULL);
	stp_event ev;
	uint64_t n = 0, bad = 0;
	int rc;
	while ((rc = stp_reader_next(r, &ev)) > 0) {
		if (n < NEV && !same_event(r, &ev, &evs[n], n))
			bad++;
		n++;
	}
	CHECK_EQ_I(rc, 0);
	CHECK_EQ_U(n, NEV);
	CHECK_EQ_U(bad, 0);
	const stp_trace_stats *s = stp_reader_stats(r);
	CHECK(s->whole);
	CHECK_EQ_U(s->end_reason, STP_END_EXIT);
	CHECK_EQ_I(s->end_value, 3);
	CHECK_EQ_U(s->lost_events, 0);
	stp_reader_close(r);
	remove(path);
}

/* Stacks: frames come back innermost first, shared prefixes share nodes. */
static void test_stacks(void)
{
	const char *path = check_tmp("stk.stp");
	char err[256];
	stp_writer *w = stp_writer_open(path, err, sizeof err);
	uint64_t a[3] = {0x10, 0x20, 0x30}, b[3] = {0x11, 0x20, 0x30};
	uint32_t sa = stp_writer_stack(w, a, 3), sb = stp_writer_stack(w, b, 3), sa2 = stp_writer_stack(w, a, 3);
	CHECK(sa && sb && sa != sb);
	CHECK_EQ_U(sa, sa2);
	stp_event ev = {.type = STP_EV_ALLOC, .seq = STP_SEQ_AUTO, .time_ns = 5, .tid = 1};
	ev.u.alloc = (stp_alloc_info){.addr = 0x1000, .size = 16, .requested = 16, .stack = sb, .device = -1};
	CHECK(stp_writer_event(w, &ev) == 0);
	stp_writer_close(w, STP_END_EXIT, 0);
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	stp_event got;
	CHECK(stp_reader_next(r, &got) == 1);
	uint64_t ips[8];
	uint32_t n = stp_reader_stack(r, got.u.alloc.stack, ips, 8);
	CHECK_EQ_U(n, 3);
	CHECK_EQ_U(ips[0], 0x11);
	CHECK_EQ_U(ips[2], 0x30);
	CHECK_EQ_U(stp_reader_stack_count(r), 4); /* nodes 0x30, 0x20, 0x10, 0x11 */
	stp_reader_close(r);
	remove(path);
}

/* Two threads' chunks interleaved as the collector writes them: events come
 * out merged by seq; a watermark lets a gap (lost event) be skipped. */
static void put_chunk(FILE *f, unsigned type, uint32_t tid, const uint8_t *pay, size_t n)
{
	uint8_t h[STP_CHUNK_HEADER_SIZE];
	stp_chunk_header(h, type, tid, pay, (uint32_t)n);
	fwrite(h, 1, sizeof h, f);
	fwrite(pay, 1, n, f);
}

static size_t thread_chunk(uint8_t *buf, uint32_t tid, uint64_t first, uint64_t step, int n, uint64_t skip)
{
	stp_enc_state st;
	stp_enc_reset(&st, tid);
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		uint64_t seq = first + (uint64_t)i * step;
		if (seq == skip)
			continue;
		stp_event ev = {.type = STP_EV_FREE, .seq = seq, .time_ns = 100 + seq, .tid = tid};
		ev.u.free.addr = 0x5000 + seq;
		ev.u.free.device = -1;
		len += stp_enc_event(buf + len, 4096 - len, &st, &ev);
	}
	return len;
}

static void test_merge(void)
{
	const char *path = check_tmp("merge.stp");
	FILE *f = fopen(path, "wb");
	uint8_t h[STP_FILE_HEADER_SIZE], buf[4096], wm[64];
	stp_file_header(h);
	fwrite(h, 1, sizeof h, f);
	/* round 1: thread 2 wrote first, seqs 1,3,..,19; thread 1: 0,2,..,18 */
	put_chunk(f, STP_CHUNK_EVENTS, 2, buf, thread_chunk(buf, 2, 1, 2, 10, ~0ull));
	put_chunk(f, STP_CHUNK_EVENTS, 1, buf, thread_chunk(buf, 1, 0, 2, 10, ~0ull));
	fwrite(wm, 1, stp_chunk_watermark(wm, 20), f);
	/* round 2: seq 21 lost; thread 1 has 20,22,...; the mark says all < 30 are in */
	put_chunk(f, STP_CHUNK_EVENTS, 1, buf, thread_chunk(buf, 1, 20, 2, 5, ~0ull));
	put_chunk(f, STP_CHUNK_EVENTS, 2, buf, thread_chunk(buf, 2, 21, 2, 5, 21));
	fwrite(wm, 1, stp_chunk_watermark(wm, 30), f);
	fclose(f);

	char err[256];
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	stp_event ev;
	uint64_t expect = 0, n = 0, order_ok = 1;
	while (stp_reader_next(r, &ev) > 0) {
		if (expect == 21)
			expect++;
		if (ev.seq != expect || ev.tid != (ev.seq % 2 ? 2u : 1u) || ev.u.free.addr != 0x5000 + ev.seq)
			order_ok = 0;
		expect++;
		n++;
	}
	CHECK(order_ok);
	CHECK_EQ_U(n, 29);
	CHECK_EQ_U(stp_reader_stats(r)->lost_events, 1);
	CHECK(!stp_reader_stats(r)->whole);
	CHECK(stp_reader_error(r) == NULL);
	stp_reader_close(r);
	remove(path);
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(*n);
	CHECK(fread(b, 1, *n, f) == *n);
	fclose(f);
	return b;
}

static void spit(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	fwrite(b, 1, n, f);
	fclose(f);
}

/* Reads a damaged file to its end; returns events read, sets *rc and, when
 * given, *cut (the reader's stats.cut_offset, cut_bytes). */
static uint64_t read_cut(const char *path, int *rc, char *msg, size_t msglen, uint64_t cut[2])
{
	char err[256];
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	if (!r) {
		*rc = -2;
		snprintf(msg, msglen, "%s", err);
		return 0;
	}
	stp_event ev;
	uint64_t n = 0;
	while ((*rc = stp_reader_next(r, &ev)) > 0)
		n++;
	if (*rc < 0)
		snprintf(msg, msglen, "%s", stp_reader_error(r));
	if (cut) {
		cut[0] = stp_reader_stats(r)->cut_offset;
		cut[1] = stp_reader_stats(r)->cut_bytes;
	}
	stp_reader_close(r);
	return n;
}

static uint64_t read_all(const char *path, int *rc, char *msg, size_t msglen)
{
	return read_cut(path, rc, msg, msglen, NULL);
}

/* A file cut at any byte past its header reads, without an error, up to its
 * last whole chunk, and says where it was cut (issue 26: readers used to
 * refuse it); stp_trace_cut() finds the same cut without reading events. */
static void test_truncation(void)
{
	const char *path = write_random(NULL);
	size_t n;
	uint8_t *b = slurp(path, &n);
	const char *cut = check_tmp("cut.stp");
	uint64_t prev = 0;
	int monotone = 1, msg_ok = 1, clean_cuts = 0, agree = 1, errors = 0;
	/* every byte for the first 3 KiB, then a stride */
	size_t stride = n / 300 + 1;
	for (size_t len = 0; len < n; len += len < 3000 ? 1 : stride) {
		spit(cut, b, len);
		int rc;
		char msg[512] = "";
		uint64_t at[2], off = 0, bytes = 0;
		uint64_t got = read_cut(cut, &rc, msg, sizeof msg, at);
		if (got < prev && len > 3000)
			monotone = 0;
		prev = got;
		if (rc == -2) { /* the file header itself is cut: nothing to read */
			if (len >= STP_FILE_HEADER_SIZE || !strstr(msg, "offset ") || !strstr(msg, cut))
				msg_ok = 0;
			continue;
		}
		errors += rc != 0;
		clean_cuts += at[1] == 0;
		int found = stp_trace_cut(cut, &off, &bytes);
		if (found != (at[1] != 0) || (found && (off != at[0] || bytes != at[1] || off + bytes != len)))
			agree = 0;
	}
	CHECK_EQ_I(errors, 0);
	CHECK(agree);
	/* at every chunk boundary the cut is clean; one byte later the file is
	 * cut inside the next chunk's header, and reads the same events */
	for (size_t off = STP_FILE_HEADER_SIZE; off + STP_CHUNK_HEADER_SIZE <= n;) {
		uint32_t len = (uint32_t)b[off + 12] | (uint32_t)b[off + 13] << 8 | (uint32_t)b[off + 14] << 16 |
		               (uint32_t)b[off + 15] << 24;
		off += STP_CHUNK_HEADER_SIZE + len;
		int rc;
		char msg[512] = "";
		uint64_t at[2];
		spit(cut, b, off);
		uint64_t whole = read_cut(cut, &rc, msg, sizeof msg, at);
		clean_cuts += rc == 0 && at[1] == 0;
		if (off < n) {
			spit(cut, b, off + 1);
			uint64_t got = read_cut(cut, &rc, msg, sizeof msg, at);
			CHECK(rc == 0 && at[0] == off && at[1] == 1 && got == whole);
		}
	}
	CHECK(monotone);
	CHECK(msg_ok);
	CHECK(clean_cuts > 3);
	free(b);
	remove(path);
	remove(cut);
}

static void test_corruption(void)
{
	const char *path = write_random(NULL);
	size_t n;
	uint8_t *b = slurp(path, &n);
	const char *bad = check_tmp("bad.stp");
	int errors = 0;
	for (int trial = 0; trial < 300; trial++) {
		uint8_t *c = malloc(n);
		memcpy(c, b, n);
		size_t at = rnd() % n;
		c[at] ^= (uint8_t)(1 + rnd() % 255);
		spit(bad, c, n);
		int rc;
		char msg[512] = "";
		read_all(bad, &rc, msg, sizeof msg);
		errors += rc != 0;
		free(c);
	}
	CHECK(errors > 250); /* nearly every flip is caught by a checksum */
	free(b);
	remove(path);
	remove(bad);
}

/* CRC-32C: the standard check value, and hardware and table agree on odd
 * lengths and alignments. */
static void test_crc(void)
{
	CHECK_EQ_U(stp_crc32c(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ_U(stp_crc32c_table(0, "123456789", 9), 0xE3069283u);
	uint8_t buf[1024];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)rnd();
	int agree = 1;
	for (size_t off = 0; off < 16; off++)
		for (size_t n = 0; n + off <= sizeof buf; n += 37)
			if (stp_crc32c(7, buf + off, n) != stp_crc32c_table(7, buf + off, n))
				agree = 0;
	CHECK(agree);
}

int main(void)
{
	test_crc();
	for (int i = 0; i < 64; i++)
		snprintf(names[i], sizeof names[i], "name-%d%s", i, i % 7 ? "" : " with spaces");
	test_roundtrip();
	test_stacks();
	test_merge();
	test_truncation();
	test_corruption();
	return check_done();
}
