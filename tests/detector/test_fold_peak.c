/*
 * test_fold_peak.c - a peak inside a folded iteration names the objects it
 * holds.  A loop whose steady iterations are folded (FOLD events) can reach
 * its peak in one of them, up to 1% above the iteration written in full
 * that it repeats.  Between steps a DataLoader loop has no object recorded
 * live, so counting only recorded objects said "a peak of N bytes in no
 * object" and the self-check failed the report (seen once on
 * tests/python/test_loader_fold.sh).  The objects at such a peak are those
 * of the iteration it repeats (its `like`), at that one's highest moment
 * (stp_det_space.peak_like), so its call sites and classes are the step's,
 * not only what outlived the step.  Where that iteration is not in the
 * trace (or, under --window, its highest moment lies outside the window),
 * a 1.3 FOLD counts the objects at its peak; a 1.2 one (no counts) holds
 * at least one more than were live at its start.
 */
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "checked_run.h"
#include "stprof/detector.h"
#include "tracegen.h"

/* The writer numbers events in order: tg_open wrote seqs 0 and 1, and each
 * tg_* call one more; `next` follows it so a FOLD can name its last seq. */
static uint64_t next = 2;

/* An iteration written in full: two objects allocated then freed. */
static void full_iteration(tg *g, int64_t it, uint32_t st)
{
	tg_mark(g, STP_MARK_ITER_BEGIN, 0, it);
	tg_alloc(g, 0x10000, 1000, st);
	tg_alloc(g, 0x20000, 500, st);
	tg_free(g, 0x10000);
	tg_free(g, 0x20000);
	tg_mark(g, STP_MARK_ITER_END, 0, it);
	next += 6;
}

/* One like it, folded: its four events stand in one FOLD (taking the first
 * one's seq; its ITER_END comes 4 later) whose peak is a few bytes higher,
 * within the collector's 1%. */
static void folded_iteration(tg *g, int64_t it, int counted, int64_t like)
{
	tg_mark(g, STP_MARK_ITER_BEGIN, 0, it);
	next++;
	stp_fold_space sp = {.kind = STP_MEM_HOST, .device = -1, .pool = 0, .allocs = 2, .bytes = 1500,
	                     .peak = 1500 + 5 * (uint64_t)it, .peak_objects = counted ? 2 : 0};
	stp_event ev = {.type = STP_EV_FOLD, .tid = g->tid, .seq = next};
	ev.u.fold = (stp_fold_info){.iteration = it, .like = like, .last_seq = next + 4, .elided = 4, .digest = 1,
	                            .nspaces = 1, .counted = (uint8_t)counted, .spaces = &sp};
	g->now += g->step_ns;
	ev.time_ns = g->now;
	CHECK(stp_writer_event(g->w, &ev) == 0);
	stp_event end = {.type = STP_EV_MARKER, .tid = g->tid, .seq = next + 4};
	end.u.marker = (stp_marker_info){.kind = STP_MARK_ITER_END, .value = it};
	g->now += 4 * g->step_ns;
	end.time_ns = g->now;
	CHECK(stp_writer_event(g->w, &end) == 0);
	next += 5;
}

/* A loop of 4 iterations, the middle two folded, repeating iteration like;
 * with `persistent`, one object live throughout. */
static void write_trace(const char *p, int persistent, int counted, int64_t like)
{
	tg g;
	next = 2;
	CHECK(tg_open(&g, p) == 0);
	uint32_t st = tg_stack(&g, 0x100, 0x900, 0), sw = tg_stack(&g, 0x200, 0x900, 0);
	if (persistent) {
		tg_alloc(&g, 0x90000, 4096, sw);
		next++;
	}
	for (int64_t it = 0; it < 4; it++)
		if (it == 1 || it == 2)
			folded_iteration(&g, it, counted, like);
		else
			full_iteration(&g, it, st);
	if (persistent)
		tg_free(&g, 0x90000);
	CHECK(tg_close(&g) == 0);
}

/* A checked run of trace p (options o, or the defaults): the detector in
 * *out and its primary space, or NULL (a failed check) when there is none;
 * the caller stp_det_frees *out either way. */
static const stp_det_space *primary_of(const char *p, const stp_det_options *o, stp_det **out)
{
	char err[512];
	*out = checked_det_run(p, o, err, sizeof err); /* the self-check passes */
	CHECK(*out != NULL);
	if (!*out) {
		fprintf(stderr, "%s\n", err);
		return NULL;
	}
	const stp_det_result *r = stp_det_result_of(*out);
	CHECK(r->primary >= 0);
	return r->primary >= 0 ? &r->spaces[r->primary] : NULL;
}

/* The heap's peak is iteration 2's folded one, with `objects` in it: the
 * two of iteration 0, which it repeats (like 0), at its highest, or (like
 * 9: no such iteration) the FOLD's own count. */
static void expect(int persistent, int counted, int64_t like, uint64_t objects)
{
	const char *p = check_tmp("fold-peak.stp");
	write_trace(p, persistent, counted, like);
	stp_det *d;
	const stp_det_space *s = primary_of(p, NULL, &d);
	if (s) {
		const stp_det_result *r = stp_det_result_of(d);
		uint64_t peak = (persistent ? 4096 : 0) + 1510;
		if (s->peak_bytes != peak || s->peak_objects != objects)
			fprintf(stderr, "persistent %d counted %d: peak %llu bytes in %llu objects, want %llu in %llu\n",
			        persistent, counted, (unsigned long long)s->peak_bytes,
			        (unsigned long long)s->peak_objects, (unsigned long long)peak,
			        (unsigned long long)objects);
		CHECK(s->peak_bytes == peak);
		CHECK(s->peak_objects == objects);
		CHECK(s->folded_allocs == 4);
		CHECK(s->peak_like == (like == 0 ? 0 : -1));
		if (like == 0) /* the sites hold what iteration 0 held at its highest */
			CHECK(s->peak_like_bytes == (persistent ? 4096 : 0) + 1500);
		uint64_t at_peak = 0, objs = 0;
		for (uint32_t i = 0; i < r->nsites; i++) {
			stp_det_site x;
			stp_det_site_get(d, i, &x);
			at_peak += x.peak_bytes;
			objs += x.peak_objects;
		}
		CHECK(objs == (like == 0 ? objects : (uint64_t)persistent));
		CHECK(at_peak == (like == 0 ? (persistent ? 4096 : 0) + 1500 : (persistent ? 4096u : 0u)));
	}
	stp_det_free(d);
	unlink(p);
}

/* Under a window from b_us (microseconds from the trace's start) on: the
 * peak is still iteration 2's folded one; iteration 0's highest moment
 * (about 3 us in) stands for it only when the window holds it. */
static void expect_window(uint64_t b_us, int64_t like_want)
{
	const char *p = check_tmp("fold-peak-window.stp");
	write_trace(p, 0, 1, 0);
	stp_det_options o;
	stp_det_options_default(&o);
	o.has_window = 1;
	o.window_begin_ns = b_us * 1000;
	o.window_end_ns = UINT64_MAX;
	stp_det *d;
	const stp_det_space *s = primary_of(p, &o, &d);
	if (s) {
		if (s->peak_bytes != 1510 || s->peak_objects != 2 || s->peak_like != like_want)
			fprintf(stderr,
			        "window from %llu us: peak %llu bytes in %llu objects, like %lld; want 1510 in 2, like %lld\n",
			        (unsigned long long)b_us, (unsigned long long)s->peak_bytes,
			        (unsigned long long)s->peak_objects, (long long)s->peak_like, (long long)like_want);
		CHECK(s->peak_bytes == 1510);
		CHECK(s->peak_objects == 2);
		CHECK(s->peak_like == like_want);
	}
	stp_det_free(d);
	unlink(p);
}

int main(void)
{
	expect(0, 1, 0, 2); /* nothing live between steps: iteration 0's two */
	expect(1, 1, 0, 3); /* and the one live throughout */
	expect(0, 0, 0, 2); /* a 1.2 FOLD alike */
	expect(1, 0, 0, 3);
	expect(0, 1, 9, 2); /* no iteration 9: the FOLD's own two */
	expect(1, 1, 9, 3);
	expect(0, 0, 9, 1); /* a 1.2 FOLD: at least one */
	expect(1, 0, 9, 2);
	expect_window(0, 0);  /* the window holds iteration 0's highest moment */
	expect_window(8, -1); /* it opens after iteration 0: the FOLD's own count */
	return check_done();
}
