/*
 * test_perfetto_export.c - stp_export_perfetto() end to end on the sample
 * trace (sample_trace.h): the output passes the lint, and reading it back
 * shows the processes, counters (final values equal the trace's), lifetime
 * lanes (as many as objects live at once in each group), flows paired, call
 * stacks weighted by bytes, API slices on stream tracks, training slices,
 * module slices on thread tracks, and the detector's plug-ins (classes,
 * patterns, symbols, findings, series).  Then --top, --window, two ranks,
 * and bad input.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pf_model.h"
#include "sample_trace.h"
#include "stprof/perfetto.h"
#include "stprof/trace.h"

#define MIB (1ull << 20)

static int lint_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	stp_lint_opts o = {.name = path, .report = stderr, .max_report = 20};
	stp_lint_result r;
	int rc = stp_lint_perfetto(f, &o, &r);
	fclose(f);
	return rc;
}

/* ---- the detector's plug-ins, as the tests wire them */
static int classify_calls, symbolize_calls;
static const char *classify(void *ctx, const stp_export_object *o)
{
	classify_calls++;
	return o->alloc->size >= 4 * MIB ? "persistent" : "scoped";
}
static size_t patterns(void *ctx, const stp_export_object *o, const char **names, size_t max)
{
	size_t n = 0;
	if (o->alloc->requested != o->alloc->size && n < max)
		names[n++] = "overallocation";
	if (o->alloc->size == 256 << 10 && n < max)
		names[n++] = "temporary idleness";
	return n;
}
static int symbolize(void *ctx, uint32_t trace, uint64_t ip, stp_export_frame *out)
{
	static char fn[64];
	symbolize_calls++;
	if (ip < 0x401000 || ip >= 0x402000)
		return 0;
	snprintf(fn, sizeof fn, "train_step_%x", (unsigned)(ip >> 8 & 0xf));
	out->function = fn;
	out->file = "train.py";
	out->line = (uint32_t)(ip & 0xff) + 1;
	return 1;
}

static const pfm_track *track_named(const pfm *m, const char *name)
{
	for (size_t i = 0; i < m->ntracks; i++)
		if (!strcmp(m->tracks[i].name, name))
			return &m->tracks[i];
	return NULL;
}

/* Final value of a counter track by time (ties: file order). */
static double final_value(const pfm *m, uint64_t uuid, int *found)
{
	uint64_t best_ts = 0;
	double v = 0;
	*found = 0;
	for (size_t i = 0; i < m->nevents; i++) {
		const pfm_event *e = &m->events[i];
		double x = 0;
		int has = 0;
		if (e->track == uuid && e->has_value) {
			x = e->value;
			has = 1;
		}
		for (int k = 0; k < e->nxc; k++)
			if (e->xc_track[k] == uuid) {
				x = (double)e->xc_val[k];
				has = 1;
			}
		if (has && (!*found || e->ts >= best_ts)) {
			best_ts = e->ts;
			v = x;
			*found = 1;
		}
	}
	return v;
}

typedef struct iv { uint64_t b, e; } iv;
static int cmp_iv(const void *a, const void *b)
{
	const iv *x = a, *y = b;
	return x->b < y->b ? -1 : x->b > y->b;
}

/* Most lifetime slices live at once under group g (an END at t comes
 * before a BEGIN at t). */
static size_t peak_of_group(const pfm *m, uint64_t g, size_t *lanes, size_t *slices)
{
	iv *v = calloc(m->nevents + 1, sizeof *v);
	size_t n = 0;
	*lanes = 0;
	for (size_t i = 0; i < m->ntracks; i++) {
		if (m->tracks[i].parent != g)
			continue;
		(*lanes)++;
		uint64_t open = 0;
		int is_open = 0;
		for (size_t j = 0; j < m->nevents; j++) {
			const pfm_event *e = &m->events[j];
			if (e->track != m->tracks[i].uuid)
				continue;
			if (e->type == 1) {
				CHECK(!is_open); /* one object at a time on a lane */
				open = e->ts;
				is_open = 1;
			} else if (e->type == 2) {
				CHECK(is_open);
				CHECK(e->ts >= open);
				v[n++] = (iv){open, e->ts};
				is_open = 0;
			}
		}
		CHECK(!is_open);
	}
	*slices = n;
	/* sweep: +1 at b, -1 at e; ends first on ties */
	uint64_t *pts = calloc(2 * n + 1, sizeof *pts);
	for (size_t i = 0; i < n; i++) {
		pts[2 * i] = v[i].b << 1 | 1;
		pts[2 * i + 1] = v[i].e << 1;
	}
	qsort(pts, 2 * n, sizeof *pts, cmp_iv); /* compares the first u64 */
	size_t cur = 0, peak = 0;
	for (size_t i = 0; i < 2 * n; i++) {
		if (pts[i] & 1) {
			if (++cur > peak)
				peak = cur;
		} else {
			cur--;
		}
	}
	free(pts);
	free(v);
	return peak;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_sample(void)
{
	const char *trace = check_tmp("sample.stp"), *out = check_tmp("sample.pftrace");
	sample_facts f;
	CHECK(sample_trace_write(trace, 4242, -1, "node0", 5000000000ull, &f) == 0);
	stp_export_finding finds[2] = {
		{.trace = 0, .time_ns = f.t_first + 500, .name = "late deallocation",
		 .suggestion = "free the activation right after its last use", .bytes = MIB, .object_seq = 7},
		{.trace = 3, .time_ns = f.t_first, .name = "not this trace"},
	};
	stp_export_point resv[3] = {{f.t_first, 0}, {f.t_first + 100, 64.0 * MIB}, {f.t_last, 70.0 * MIB}};
	stp_export_point frag[4] = {{f.t_first, 0}, {f.t_first + 10, 0}, {f.t_first + 200, 0.25}, {f.t_last, 0.5}};
	stp_export_series series[2] = {
		{.trace = 0, .space = "cuda:0", .name = "reserved (sim: caching)", .unit = STP_UNIT_BYTES,
		 .points = resv, .npoints = 3},
		{.trace = 0, .name = "fragmentation", .unit = STP_UNIT_RATIO, .points = frag, .npoints = 4},
	};
	stp_export_opts o = {.classify = classify, .patterns = patterns, .symbolize = symbolize,
	                     .findings = finds, .nfindings = 2, .series = series, .nseries = 2};
	stp_export_stats st;
	char err[512];
	const char *traces[1] = {trace};
	int rc = stp_export_perfetto(traces, 1, out, &o, &st, err, sizeof err);
	if (rc)
		fprintf(stderr, "export: %s\n", err);
	CHECK_EQ_I(rc, 0);
	CHECK_EQ_I(lint_file(out), 0);
	CHECK_EQ_U(st.objects, f.objects);
	CHECK_EQ_U(st.objects_drawn, f.objects);
	CHECK_EQ_U(st.unmatched_frees, 1);
	CHECK_EQ_U(st.unmatched_markers, 1);
	CHECK_EQ_U(st.api_slices, f.api_calls);
	CHECK_EQ_U(st.findings, 1);
	CHECK(classify_calls > 0 && symbolize_calls > 0);

	pfm m;
	CHECK_EQ_I(pfm_load(&m, out), 0);
	CHECK_EQ_U(m.packets, st.packets);
	CHECK(m.seq_ids_ok);
	CHECK(m.first_flags_ok);
	/* One process. */
	int procs = 0;
	for (size_t i = 0; i < m.ntracks; i++)
		if (m.tracks[i].process) {
			procs++;
			CHECK_EQ_I(m.tracks[i].pid, 4242);
			CHECK_STR(m.tracks[i].name, "python3.11");
		}
	CHECK_EQ_I(procs, 1);
	/* Counters, one y axis per space, final values those of the trace. */
	const pfm_track *req = track_named(&m, "cuda:0 requested"), *alc = track_named(&m, "cuda:0 allocated"),
	                *rsv = track_named(&m, "cuda:0 reserved"), *hreq = track_named(&m, "host requested");
	CHECK(req && alc && rsv && hreq);
	if (req && alc && rsv && hreq) {
		CHECK(req->counter && alc->counter && rsv->counter);
		CHECK_STR(req->share_key, alc->share_key);
		CHECK_STR(req->share_key, rsv->share_key);
		int found;
		CHECK_NEAR(final_value(&m, req->uuid, &found), (double)f.end_requested, 0.5);
		CHECK(found);
		CHECK_NEAR(final_value(&m, alc->uuid, &found), (double)f.end_allocated, 0.5);
		CHECK_NEAR(final_value(&m, rsv->uuid, &found), (double)f.end_reserved, 0.5);
		CHECK_NEAR(final_value(&m, hreq->uuid, &found), 0, 0.5);
	}
	/* Lanes: as many as objects live at once, in each group. */
	size_t total_slices = 0, groups = 0;
	for (size_t i = 0; i < m.ntracks; i++) {
		if (!strstr(m.tracks[i].name, " objects ("))
			continue;
		groups++;
		size_t lanes, slices;
		size_t peak = peak_of_group(&m, m.tracks[i].uuid, &lanes, &slices);
		CHECK_EQ_U(lanes, peak);
		CHECK(lanes > 0);
		total_slices += slices;
	}
	CHECK_EQ_U(groups, 3); /* cuda:0 persistent, cuda:0 scoped, host scoped */
	CHECK_EQ_U(total_slices, f.objects);
	CHECK(track_named(&m, "cuda:0 objects (persistent)") != NULL);
	/* Lifetime slices carry their arguments; the unfreed say so. */
	size_t unfreed = 0, with_path = 0, with_pattern = 0, lifetimes = 0;
	for (size_t i = 0; i < m.nevents; i++) {
		const pfm_event *e = &m.events[i];
		const pfm_track *t = pfm_track_get(&m, e->track);
		if (!t || strcmp(t->name, "lifetimes"))
			continue;
		if (e->type == 1) {
			lifetimes++;
			CHECK(pfm_arg_get(e, "size") && pfm_arg_get(e, "address") && pfm_arg_get(e, "class"));
			CHECK(pfm_arg_get(e, "alloc seq") != NULL);
			const pfm_arg *cp = pfm_arg_get(e, "call path");
			if (cp && strstr(cp->s, "train_step_") && strstr(cp->s, "train.py:"))
				with_path++;
			const pfm_arg *pt = pfm_arg_get(e, "patterns");
			if (pt && strstr(pt->s, "temporary idleness"))
				with_pattern++;
			const pfm_arg *sz = pfm_arg_get(e, "size"), *cl = pfm_arg_get(e, "class");
			if (sz && cl)
				CHECK_STR(cl->s, sz->u >= 4 * MIB ? "persistent" : "scoped");
		} else if (e->type == 2) {
			const pfm_arg *fr = pfm_arg_get(e, "freed");
			if (fr && fr->kind == 'b' && fr->u == 0)
				unfreed++;
			CHECK(pfm_arg_get(e, "accesses") != NULL);
		}
	}
	CHECK_EQ_U(lifetimes, f.objects);
	CHECK_EQ_U(with_path, f.objects);
	CHECK_EQ_U(with_pattern, 3);
	CHECK_EQ_U(unfreed, f.unfreed);
	/* Flows: each begins at an alloc, ends once; kernels carry steps. */
	uint64_t *begun = calloc(m.nevents * 4 + 1, sizeof *begun), *ended = calloc(m.nevents * 4 + 1, sizeof *ended);
	size_t nb = 0, ne = 0, steps_on_gemm = 0, allocs = 0, weighted = 0;
	for (size_t i = 0; i < m.nevents; i++) {
		const pfm_event *e = &m.events[i];
		if (e->type == 3 && !strcmp(e->name, "alloc")) {
			allocs++;
			CHECK_EQ_I(e->nflows, 1);
			for (int k = 0; k < e->nflows; k++)
				begun[nb++] = e->flows[k];
			const pfm_arg *sz = pfm_arg_get(e, "size");
			if (e->callstack && e->has_weight && sz && fabs(e->weight - (double)sz->u) < 0.5)
				weighted++;
			CHECK_EQ_I(e->nxc, 2);
		}
		for (int k = 0; k < e->ntflows; k++)
			ended[ne++] = e->tflows[k];
		if (e->type == 1 && !strcmp(e->name, "gemm") && e->nflows)
			steps_on_gemm++;
	}
	CHECK_EQ_U(allocs, f.objects);
	CHECK_EQ_U(weighted, f.objects);
	CHECK_EQ_U(nb, ne);
	qsort(begun, nb, sizeof *begun, cmp_u64);
	qsort(ended, ne, sizeof *ended, cmp_u64);
	CHECK(nb == ne && !memcmp(begun, ended, nb * sizeof *begun));
	CHECK_EQ_U(steps_on_gemm, 3);
	free(begun);
	free(ended);
	/* Call stacks: outermost first, frames named by the symbolizer or by
	 * module+offset. */
	CHECK(m.nstacks >= 5);
	int saw_sym = 0, saw_mod = 0;
	for (size_t i = 0; i < m.nframes; i++) {
		const char *fn = pfm_lookup(&m, m.frames[i].seq, 5, m.frames[i].func);
		CHECK(fn != NULL);
		if (fn && !strncmp(fn, "train_step_", 11)) {
			saw_sym = 1;
			CHECK(m.frames[i].file && m.frames[i].line > 0);
		}
		if (fn && !strcmp(fn, "libtorch_cuda.so+0x12340"))
			saw_mod = 1;
	}
	CHECK(saw_sym && saw_mod);
	/* API slices on stream tracks, sub-lanes sharing the stream's name. */
	size_t api = 0, lanes7 = 0;
	for (size_t i = 0; i < m.ntracks; i++)
		lanes7 += !strcmp(m.tracks[i].name, "cuda:0 stream 7");
	CHECK(lanes7 >= 2);
	CHECK(track_named(&m, "cuda:0 stream 13") && track_named(&m, "cuda:0 default stream"));
	for (size_t i = 0; i < m.nevents; i++) {
		const pfm_event *e = &m.events[i];
		const pfm_track *t = pfm_track_get(&m, e->track);
		if (e->type == 1 && t && !strncmp(t->name, "cuda:0 ", 7) && strstr(t->name, "stream"))
			api++;
	}
	CHECK_EQ_U(api, f.api_calls);
	/* Training and modules. */
	const pfm_track *tr = track_named(&m, "training");
	CHECK(tr != NULL);
	size_t iters = 0, fwd = 0, bwd = 0, opt = 0, layer = 0, left_open = 0, annotations = 0;
	for (size_t i = 0; i < m.nevents; i++) {
		const pfm_event *e = &m.events[i];
		if (e->type == 1) {
			iters += !strncmp(e->name, "iteration ", 10);
			fwd += !strcmp(e->name, "forward");
			bwd += !strcmp(e->name, "backward");
			opt += !strcmp(e->name, "optimizer");
			layer += !strcmp(e->name, "model.layer1");
			left_open += !strcmp(e->name, "left.open");
		}
		annotations += e->type == 3 && (!strcmp(e->name, "config loaded") || !strcmp(e->name, "done"));
	}
	CHECK_EQ_U(iters, f.iterations);
	CHECK_EQ_U(fwd, 3);
	CHECK_EQ_U(bwd, 3);
	CHECK_EQ_U(opt, 3);
	CHECK_EQ_U(layer, 6);
	CHECK_EQ_U(left_open, 1);
	CHECK_EQ_U(annotations, 2);
	const pfm_track *th = track_named(&m, "pt_autograd_0");
	CHECK(th && th->thread && th->tid == 4243 && th->pid == 4242);
	/* Findings and series. */
	const pfm_track *fi = track_named(&m, "findings");
	CHECK(fi != NULL);
	int finding_ok = 0;
	for (size_t i = 0; fi && i < m.nevents; i++) {
		const pfm_event *e = &m.events[i];
		if (e->track == fi->uuid && e->type == 3 && !strcmp(e->name, "late deallocation")) {
			const pfm_arg *s = pfm_arg_get(e, "suggestion");
			finding_ok = s && strstr(s->s, "last use") && e->ts == f.t_first + 500;
		}
	}
	CHECK(finding_ok);
	const pfm_track *sim = track_named(&m, "cuda:0 reserved (sim: caching)"), *fr = track_named(&m, "fragmentation");
	CHECK(sim && fr && sim->counter && fr->counter);
	if (sim && req)
		CHECK_STR(sim->share_key, req->share_key);
	if (fr) {
		int found, points = 0;
		CHECK_NEAR(final_value(&m, fr->uuid, &found), 0.5, 1e-9);
		for (size_t i = 0; i < m.nevents; i++)
			points += m.events[i].track == fr->uuid;
		CHECK_EQ_I(points, 3); /* the repeated 0 is dropped */
	}
	pfm_free(&m);
	remove(trace);
	remove(out);
}

static void test_top(void)
{
	const char *trace = check_tmp("top.stp"), *out = check_tmp("top.pftrace");
	sample_facts f;
	CHECK(sample_trace_write(trace, 4242, -1, "node0", 5000000000ull, &f) == 0);
	const char *traces[1] = {trace};
	for (int by = 0; by < 2; by++) {
		stp_export_opts o = {.top_n = 3, .top_by = (unsigned)by};
		stp_export_stats st;
		char err[512];
		CHECK_EQ_I(stp_export_perfetto(traces, 1, out, &o, &st, err, sizeof err), 0);
		CHECK_EQ_I(lint_file(out), 0);
		CHECK_EQ_U(st.objects, f.objects);
		CHECK_EQ_U(st.objects_drawn, 3);
		pfm m;
		CHECK_EQ_I(pfm_load(&m, out), 0);
		size_t slices = 0, allocs = 0;
		for (size_t i = 0; i < m.nevents; i++) {
			const pfm_event *e = &m.events[i];
			const pfm_track *t = pfm_track_get(&m, e->track);
			if (e->type == 1 && t && !strcmp(t->name, "lifetimes")) {
				slices++;
				const pfm_arg *sz = pfm_arg_get(e, "size");
				/* by size: three of the 4 MiB objects; by area: the
				 * weights live longest of all */
				CHECK(sz && sz->u == 4 * MIB);
				if (by == STP_TOP_BY_AREA) {
					const pfm_arg *cl = pfm_arg_get(e, "alloc seq");
					CHECK(cl && cl->u < 12);
				}
			}
			allocs += e->type == 3 && !strcmp(e->name, "alloc");
		}
		CHECK_EQ_U(slices, 3);
		CHECK_EQ_U(allocs, 3);
		/* Counters still count every object. */
		const pfm_track *req = track_named(&m, "cuda:0 requested");
		int found;
		CHECK(req != NULL);
		if (req)
			CHECK_NEAR(final_value(&m, req->uuid, &found), (double)f.end_requested, 0.5);
		pfm_free(&m);
	}
	remove(trace);
	remove(out);
}

static void test_window(void)
{
	const char *trace = check_tmp("win.stp"), *out = check_tmp("win.pftrace");
	sample_facts f;
	CHECK(sample_trace_write(trace, 4242, -1, "node0", 5000000000ull, &f) == 0);
	const char *traces[1] = {trace};
	uint64_t span = f.t_last - f.t_first;
	stp_export_opts o = {.has_window = 1, .window_begin_ns = span / 3, .window_end_ns = 2 * span / 3};
	stp_export_stats st;
	char err[512];
	CHECK_EQ_I(stp_export_perfetto(traces, 1, out, &o, &st, err, sizeof err), 0);
	CHECK_EQ_I(lint_file(out), 0);
	CHECK(st.objects_drawn > 0 && st.objects_drawn < f.objects);
	pfm m;
	CHECK_EQ_I(pfm_load(&m, out), 0);
	uint64_t lo = f.t_first + span / 3, hi = f.t_first + 2 * span / 3;
	size_t outside = 0, clipped = 0;
	for (size_t i = 0; i < m.nevents; i++) {
		const pfm_event *e = &m.events[i];
		outside += e->ts < lo || e->ts > hi;
		clipped += e->type == 1 && pfm_arg_get(e, "allocated before the window") != NULL;
	}
	CHECK_EQ_U(outside, 0);
	CHECK(clipped >= 4); /* the weights */
	/* The counters start at the window with the values of that moment. */
	const pfm_track *req = track_named(&m, "cuda:0 requested");
	int at_lo = 0;
	for (size_t i = 0; req && i < m.nevents; i++)
		at_lo |= m.events[i].track == req->uuid && m.events[i].ts == lo && m.events[i].has_value &&
		         m.events[i].value >= 16.0 * MIB - 400;
	CHECK(at_lo);
	pfm_free(&m);
	/* A window after the trace: only the process remains. */
	o.window_begin_ns = span * 10;
	o.window_end_ns = span * 11;
	CHECK_EQ_I(stp_export_perfetto(traces, 1, out, &o, &st, err, sizeof err), 0);
	CHECK_EQ_I(lint_file(out), 0);
	CHECK_EQ_U(st.objects_drawn, 0);
	remove(trace);
	remove(out);
}

static void test_ranks(void)
{
	const char *t0 = check_tmp("r0.stp"), *t1 = check_tmp("r1.stp"), *out = check_tmp("ranks.pftrace");
	CHECK(sample_trace_write(t0, 4242, 0, "node0", 5000000000ull, NULL) == 0);
	CHECK(sample_trace_write(t1, 4242, 1, "node1", 9000000000ull, NULL) == 0);
	const char *traces[2] = {t0, t1};
	stp_export_stats st;
	char err[512];
	CHECK_EQ_I(stp_export_perfetto(traces, 2, out, NULL, &st, err, sizeof err), 0);
	CHECK_EQ_I(lint_file(out), 0);
	pfm m;
	CHECK_EQ_I(pfm_load(&m, out), 0);
	int32_t pids[2] = {0, 0};
	int nproc = 0, r0 = 0, r1 = 0;
	uint32_t seqs[2] = {0, 0};
	for (size_t i = 0; i < m.ntracks; i++)
		if (m.tracks[i].process && nproc < 2) {
			seqs[nproc] = m.tracks[i].seq;
			pids[nproc++] = m.tracks[i].pid;
			r0 |= !strcmp(m.tracks[i].name, "rank 0: python3.11");
			r1 |= !strcmp(m.tracks[i].name, "rank 1: python3.11");
		}
	CHECK_EQ_I(nproc, 2);
	CHECK(pids[0] != pids[1]);
	CHECK(seqs[0] != seqs[1]);
	CHECK(r0 && r1);
	/* Different hosts: both on the realtime clock, 1000 ns apart. */
	uint64_t first[2] = {UINT64_MAX, UINT64_MAX};
	for (size_t i = 0; i < m.nevents; i++) {
		int k = m.events[i].seq == seqs[0] ? 0 : 1;
		if (m.events[i].ts < first[k])
			first[k] = m.events[i].ts;
	}
	CHECK(first[0] > 1700000000000000000ull && first[1] > 1700000000000000000ull);
	CHECK(first[1] - first[0] < 10000);
	pfm_free(&m);
	remove(t0);
	remove(t1);
	remove(out);
}

static void test_bad_input(void)
{
	const char *out = check_tmp("bad.pftrace"), *trace = check_tmp("cut.stp");
	char err[512];
	const char *missing[1] = {"/nonexistent/trace.stp"};
	CHECK_EQ_I(stp_export_perfetto(missing, 1, out, NULL, NULL, err, sizeof err), -1);
	CHECK(strstr(err, "/nonexistent/trace.stp") != NULL);
	CHECK(strchr(err, '\n') == NULL);
	/* Garbage. */
	FILE *g = fopen(trace, "wb");
	fputs("this is not a trace at all, not even close....", g);
	fclose(g);
	const char *traces[1] = {trace};
	CHECK_EQ_I(stp_export_perfetto(traces, 1, out, NULL, NULL, err, sizeof err), -1);
	CHECK(strstr(err, trace) != NULL);
	/* A trace cut inside a chunk: what was read is exported, cleanly,
	 * and the error names the file and offset.  (The garbage first: a
	 * writer replaces only a trace, stprof/outfile.h.) */
	remove(trace);
	CHECK(sample_trace_write(trace, 4242, -1, "node0", 5000000000ull, NULL) == 0);
	FILE *f = fopen(trace, "rb");
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fclose(f);
	CHECK(truncate(trace, size - 7) == 0);
	int rc = stp_export_perfetto(traces, 1, out, NULL, NULL, err, sizeof err);
	if (rc < 0) {
		CHECK(strstr(err, trace) != NULL && strstr(err, "offset") != NULL);
		CHECK_EQ_I(lint_file(out), 0);
	}
	/* An unwritable output. */
	CHECK(sample_trace_write(trace, 4242, -1, "node0", 5000000000ull, NULL) == 0);
	CHECK_EQ_I(stp_export_perfetto(traces, 1, "/nonexistent/dir/x.pftrace", NULL, NULL, err, sizeof err), -1);
	CHECK(strstr(err, "/nonexistent/dir/x.pftrace") != NULL);
	/* A window that ends before it begins. */
	stp_export_opts o = {.has_window = 1, .window_begin_ns = 10, .window_end_ns = 5};
	CHECK_EQ_I(stp_export_perfetto(traces, 1, out, &o, NULL, err, sizeof err), -1);
	remove(trace);
	remove(out);
}

static void test_minimal(void)
{
	/* A trace with a single event, and one with none. */
	const char *trace = check_tmp("min.stp"), *out = check_tmp("min.pftrace");
	char err[512];
	stp_writer *w = stp_writer_open(trace, err, sizeof err);
	stp_event ev = {.type = STP_EV_PROCESS, .seq = STP_SEQ_AUTO, .time_ns = 77, .tid = 9};
	ev.u.process = (stp_process_info){.pid = 9, .rank = -1, .local_rank = -1, .world_size = -1};
	CHECK(stp_writer_event(w, &ev) == 0);
	CHECK(stp_writer_close(w, STP_END_EXIT, 0) == 0);
	const char *traces[1] = {trace};
	CHECK_EQ_I(stp_export_perfetto(traces, 1, out, NULL, NULL, err, sizeof err), 0);
	CHECK_EQ_I(lint_file(out), 0);
	w = stp_writer_open(trace, err, sizeof err);
	CHECK(stp_writer_close(w, STP_END_EXIT, 0) == 0);
	CHECK_EQ_I(stp_export_perfetto(traces, 1, out, NULL, NULL, err, sizeof err), 0);
	CHECK_EQ_I(lint_file(out), 0);
	pfm m;
	CHECK_EQ_I(pfm_load(&m, out), 0);
	CHECK_EQ_U(m.ntracks, 1);
	pfm_free(&m);
	remove(trace);
	remove(out);
}

/* Random traces (any event order the writer accepts, threads' clocks apart,
 * addresses reused, markers unbalanced, ranges anywhere) export to files the
 * lint finds nothing in, whatever the options. */
static uint64_t rs = 0x2545F4914F6CDD1Dull;
static uint64_t rr(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static void test_random(void)
{
	const char *trace = check_tmp("rand.stp"), *out = check_tmp("rand.pftrace");
	char err[512];
	const char *names[4] = {"forward", "backward", "layers.0", "layers.1"};
	for (int round = 0; round < 24; round++) {
		stp_writer *w = stp_writer_open(trace, err, sizeof err);
		CHECK(w != NULL);
		if (!w)
			return;
		uint64_t clock[4] = {1000000, 1000000, 1000000, 1000000};
		uint64_t stacks[8];
		for (int i = 0; i < 8; i++) {
			uint64_t ips[6];
			for (int d = 0; d < 6; d++)
				ips[d] = 0x400000 + rr() % 4096;
			stacks[i] = stp_writer_stack(w, ips, 1 + (uint32_t)(rr() % 6));
		}
		stp_range ranges[4];
		for (int e = 0; e < 3000; e++) {
			int th = (int)(rr() % 4);
			clock[th] += rr() % 2000;
			stp_event ev = {.seq = STP_SEQ_AUTO, .tid = 100 + (uint32_t)th, .time_ns = clock[th]};
			uint64_t addr = 0x7f0000000000ull + (rr() % 64) * 4096;
			switch (rr() % 10) {
			case 0: case 1: case 2:
				ev.type = STP_EV_ALLOC;
				ev.u.alloc = (stp_alloc_info){.addr = addr, .size = 1 + rr() % 8192, .stack = (uint32_t)stacks[rr() % 8],
				                              .kind = (uint8_t)(rr() % 4), .device = (int32_t)(rr() % 2),
				                              .stream = rr() % 3};
				ev.u.alloc.requested = ev.u.alloc.size - rr() % ev.u.alloc.size;
				break;
			case 3: case 4:
				ev.type = STP_EV_FREE;
				ev.u.free = (stp_free_info){.addr = addr, .kind = STP_MEM_DEVICE, .stream = rr() % 3};
				break;
			case 5: case 6: {
				ev.type = STP_EV_API;
				uint32_t n = (uint32_t)(rr() % 5);
				for (uint32_t i = 0; i < n; i++)
					ranges[i] = (stp_range){0x7f0000000000ull + rr() % (70 * 4096), rr() % 20000, 1};
				ev.u.api = (stp_api_info){.kind = (uint8_t)(rr() % 6), .name = rr() % 2 ? stp_writer_string(w, "k") : 0,
				                          .device = (int32_t)(rr() % 3) - 1, .stream = rr() % 3,
				                          .end_ns = clock[th] + rr() % 5000, .nranges = n, .ranges = ranges};
				break;
			}
			case 7: case 8:
				ev.type = STP_EV_MARKER;
				ev.u.marker = (stp_marker_info){.kind = (uint8_t)(1 + rr() % STP_MARK_KIND_MAX),
				                                .name = rr() % 4 ? stp_writer_string(w, names[rr() % 4]) : 0,
				                                .value = (int64_t)(rr() % 5)};
				break;
			default:
				ev.type = rr() % 2 ? STP_EV_SEGMENT_RESERVE : STP_EV_SEGMENT_RELEASE;
				ev.u.segment = (stp_segment_info){.addr = 0x7e0000000000ull + (rr() % 8) * (1u << 20),
				                                  .size = rr() % 2 ? 1u << 20 : 0, .kind = STP_MEM_DEVICE};
				break;
			}
			CHECK(stp_writer_event(w, &ev) == 0);
		}
		CHECK(stp_writer_close(w, STP_END_EXIT, 0) == 0);
		stp_export_opts o = {.max_lanes = round % 3 == 0 ? 3 : 0};
		if (round % 4 == 1)
			o.top_n = 1 + rr() % 50, o.top_by = (unsigned)(rr() % 2);
		if (round % 4 == 2)
			o.has_window = 1, o.window_begin_ns = rr() % 2000000, o.window_end_ns = o.window_begin_ns + rr() % 3000000;
		const char *traces[2] = {trace, trace};
		stp_export_stats st;
		int rc = stp_export_perfetto(traces, 1 + (size_t)(round % 5 == 4), out, &o, &st, err, sizeof err);
		if (rc)
			fprintf(stderr, "round %d: %s\n", round, err);
		CHECK_EQ_I(rc, 0);
		CHECK_EQ_I(lint_file(out), 0);
		pfm m;
		CHECK_EQ_I(pfm_load(&m, out), 0);
		CHECK(m.first_flags_ok && m.seq_ids_ok);
		pfm_free(&m);
	}
	remove(trace);
	remove(out);
}

int main(void)
{
	test_sample();
	test_top();
	test_window();
	test_ranks();
	test_bad_input();
	test_minimal();
	test_random();
	return check_done();
}
