/*
 * fuzz_trace_struct.c - structure-aware libFuzzer target for every reader of
 * traces: the fuzz bytes drive a generator of well-formed traces (the real
 * writer), with extreme but legal values: sizes near 2^64, addresses at the
 * ends of the space, timestamps out of order and far apart, many threads,
 * deep call paths, devices and streams at their limits, markers unbalanced.
 * The trace then goes through the detector and its text, JSON and HTML
 * reports, the Perfetto exporter and the planner's converter and planner.
 * Half of the traces are first cut at any byte: they must read to their last
 * whole chunk without an error, as stp_trace_cut() says.  Byte-level
 * targets (fuzz_trace, fuzz_report) rarely reach such traces: random bytes
 * seldom make a valid chunk, let alone a valid 2^46 allocation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stprof/detector.h"
#include "stprof/perfetto.h"
#include "stprof/plan.h"
#include "stprof/report.h"
#include "stprof/trace.h"
#include "stprof/trace_codec.h"
#include "wf_src.h"

#define MAX_EVENTS 2000

static void generate(wf_src *s, const char *path)
{
	char err[256];
	stp_writer *w = stp_writer_open(path, err, sizeof err);
	if (!w)
		return;
	uint64_t now = wf_u64(s) >> (wf_u8(s) & 63);
	stp_event ev = {.type = STP_EV_PROCESS, .tid = wf_u32(s), .seq = STP_SEQ_AUTO, .time_ns = now};
	ev.u.process = (stp_process_info){.pid = wf_u32(s), .ppid = wf_u32(s), .rank = (int32_t)wf_u32(s),
	                                  .local_rank = -1, .world_size = (int32_t)wf_u32(s),
	                                  .cmdline = stp_writer_string(w, "fuzz --struct"),
	                                  .start_monotonic_ns = wf_u64(s)};
	stp_writer_event(w, &ev);
	uint64_t addrs[64] = {0};
	uint64_t ips[256];
	stp_range ranges[4];
	for (int i = 0; i < MAX_EVENTS && s->n; i++) {
		uint8_t op = wf_u8(s);
		memset(&ev, 0, sizeof ev);
		ev.seq = STP_SEQ_AUTO;
		ev.tid = (op & 0x80) ? wf_u32(s) : 1; /* many threads */
		switch (wf_u8(s) & 7) { /* the clock: steady, still, back, leaps */
		case 0: now -= now ? wf_u8(s) : 0; break;
		case 1: now += wf_u64(s); break;
		case 2: break;
		default: now += 1 + wf_u8(s); break;
		}
		ev.time_ns = now;
		uint8_t slot = wf_u8(s) & 63;
		switch (op & 15) {
		case 0: case 1: case 2: case 3: { /* allocation */
			ev.type = STP_EV_ALLOC;
			uint32_t depth = wf_u8(s);
			for (uint32_t k = 0; k < depth; k++)
				ips[k] = k & 1 ? wf_u64(s) : 0x400000 + k * 16;
			addrs[slot] = (wf_u8(s) & 1) ? wf_u64(s) : 0x10000 + (uint64_t)slot * 0x1000;
			ev.u.alloc = (stp_alloc_info){.addr = addrs[slot], .size = wf_u64(s), .requested = wf_u64(s),
			                              .stack = stp_writer_stack(w, ips, depth), .kind = wf_u8(s) & 3,
			                              .device = (int32_t)wf_u32(s), .stream = wf_u64(s), .pool = wf_u32(s)};
			break;
		}
		case 4: case 5: case 6: /* free, of a known address or not */
			ev.type = STP_EV_FREE;
			ev.u.free = (stp_free_info){.addr = (op & 0x40) ? wf_u64(s) : addrs[slot], .size = wf_u64(s),
			                            .kind = wf_u8(s) & 3, .device = (int32_t)wf_u32(s),
			                            .stream = wf_u64(s)};
			break;
		case 7: case 8: /* segments */
			ev.type = (op & 1) ? STP_EV_SEGMENT_RESERVE : STP_EV_SEGMENT_RELEASE;
			ev.u.segment = (stp_segment_info){.addr = addrs[slot], .size = wf_u64(s), .requested = wf_u64(s),
			                                  .kind = STP_MEM_DEVICE, .device = (int32_t)(wf_u8(s) & 3),
			                                  .stream = wf_u64(s)};
			break;
		case 9: { /* an API touching ranges */
			ev.type = STP_EV_API;
			uint32_t nr = wf_u8(s) & 3;
			for (uint32_t k = 0; k < nr; k++)
				ranges[k] = (stp_range){addrs[wf_u8(s) & 63] + wf_u64(s), wf_u64(s), wf_u8(s) & 3};
			ev.u.api = (stp_api_info){.kind = wf_u8(s) % 6, .name = stp_writer_string(w, "k"),
			                          .device = (int32_t)wf_u32(s), .stream = wf_u64(s),
			                          .end_ns = now + wf_u64(s) / 2, .nranges = nr, .ranges = ranges};
			if (ev.u.api.end_ns < now)
				ev.u.api.end_ns = now;
			break;
		}
		case 10: case 11: /* markers, balanced or not */
			ev.type = STP_EV_MARKER;
			ev.u.marker = (stp_marker_info){.kind = 1 + wf_u8(s) % STP_MARK_KIND_MAX,
			                                .name = stp_writer_string(w, (op & 0x20) ? "forward" : "x"),
			                                .value = (int64_t)wf_u64(s)};
			break;
		case 12: /* a thread */
			ev.type = STP_EV_THREAD;
			ev.u.thread = (stp_thread_info){.tid = wf_u32(s), .name = stp_writer_string(w, "t")};
			break;
		case 13: /* a module anywhere */
			ev.type = STP_EV_MODULE;
			ev.u.module = (stp_module_info){.path = stp_writer_string(w, "/nonexistent/lib.so"), .base = wf_u64(s),
			                                .size = wf_u64(s), .bias = wf_u64(s)};
			break;
		default: { /* a burst of threads, one allocation each */
			uint32_t n = wf_u8(s);
			for (uint32_t k = 0; k < n; k++) {
				stp_event a = {.type = STP_EV_ALLOC, .tid = 1000 + k * 7919, .seq = STP_SEQ_AUTO, .time_ns = now};
				a.u.alloc = (stp_alloc_info){.addr = 0x7f0000000000ull + k * 64, .size = 64, .requested = 64,
				                             .device = -1};
				stp_writer_event(w, &a);
			}
			continue;
		}
		}
		stp_writer_event(w, &ev);
	}
	if (wf_u8(s) & 1)
		stp_writer_close(w, STP_END_EXIT, (int32_t)wf_u32(s));
	else
		stp_writer_abandon(w);
}

/* Reads path to its end: 1 read cleanly, 0 an error, -1 not opened;
 * cut[2]: the reader's cut_offset and cut_bytes. */
static int read_clean(const char *path, uint64_t cut[2])
{
	char err[512];
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	if (!r)
		return -1;
	stp_event ev;
	int rc;
	while ((rc = stp_reader_next(r, &ev)) > 0)
		;
	cut[0] = stp_reader_stats(r)->cut_offset;
	cut[1] = stp_reader_stats(r)->cut_bytes;
	stp_reader_close(r);
	return rc == 0;
}

/* The trace cut at a byte the fuzz bytes choose (issue 26): a trace that
 * read cleanly whole reads cleanly cut (to its last whole chunk), and
 * stp_trace_cut() finds the cut the reader found. */
static void cut_trace(wf_src *s, const char *path)
{
	struct stat sb;
	uint64_t cut[2], off = 0, bytes = 0;
	if (stat(path, &sb) || sb.st_size <= STP_FILE_HEADER_SIZE || read_clean(path, cut) != 1)
		return;
	uint64_t at = STP_FILE_HEADER_SIZE + wf_u64(s) % (uint64_t)(sb.st_size - STP_FILE_HEADER_SIZE);
	if (truncate(path, (off_t)at))
		return;
	if (read_clean(path, cut) != 1)
		abort(); /* a cut trace is no error */
	int found = stp_trace_cut(path, &off, &bytes);
	if (found != (cut[1] != 0) || (found && (off != cut[0] || bytes != cut[1] || off + bytes != at)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], out[64];
	snprintf(path, sizeof path, "/tmp/fuzz-tstruct-%d.stp", (int)getpid());
	snprintf(out, sizeof out, "/tmp/fuzz-tstruct-%d.pftrace", (int)getpid());
	wf_src s = {data, size};
	generate(&s, path);
	if (wf_u8(&s) & 1) /* every reader below then reads it cut */
		cut_trace(&s, path);
	char err[512];
	stp_det_options o;
	stp_det_options_default(&o);
	o.series_points = 50;
	o.detect_max_allocs = 4096;
	o.keep_objects = 1;
	stp_det *d = stp_det_run(path, &o, err, sizeof err);
	if (d) {
		char why[2048]; /* the report's figures add up (docs/report.md, "Self-check") */
		if (stp_det_check(d, why, sizeof why)) {
			fprintf(stderr, "fuzz_trace_struct: the report's figures do not add up:\n%s", why);
			abort();
		}
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			stp_report_text(d, NULL, null);
			stp_report_json(d, NULL, null);
			stp_report_html(d, NULL, null);
			fclose(null);
		}
		stp_export_opts eo;
		memset(&eo, 0, sizeof eo);
		stp_export_detector *x = stp_export_detector_attach(&d, 1, &eo);
		const char *traces[1] = {path};
		(void)stp_export_perfetto(traces, 1, out, &eo, NULL, err, sizeof err);
		stp_export_detector_free(x);
		stp_det_free(d);
	}
	stp_window win;
	stp_window_init(&win);
	stp_reqs r;
	if (stp_reqs_from_trace(path, &win, &r, err, sizeof err) == 0) {
		stp_plan_opts po;
		stp_plan_opts_init(&po);
		stp_plan p;
		if (r.n < 2000 && stp_plan_build(&r, &po, &p, err, sizeof err) == 0) {
			(void)stp_plan_verify(&r, &p, err, sizeof err);
			stp_plan_free(&p);
		}
		stp_reqs_free(&r);
	}
	unlink(path);
	unlink(out);
	return 0;
}
