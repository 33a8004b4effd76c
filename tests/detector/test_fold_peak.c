/*
 * test_fold_peak.c - a peak inside a folded iteration names the objects it
 * holds.  A loop whose steady iterations are folded (FOLD events) can reach
 * its peak in one of them, up to 1% above the iteration written in full
 * that it repeats.  Between steps a DataLoader loop has no object recorded
 * live, so counting only recorded objects said "a peak of N bytes in no
 * object" and the self-check failed the report (seen once on
 * tests/python/test_loader_fold.sh).  A 1.3 FOLD counts the objects at its
 * peak; a 1.2 one (no counts) holds at least one more than were live at
 * its start.
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
static void folded_iteration(tg *g, int64_t it, int counted)
{
	tg_mark(g, STP_MARK_ITER_BEGIN, 0, it);
	next++;
	stp_fold_space sp = {.kind = STP_MEM_HOST, .device = -1, .pool = 0, .allocs = 2, .bytes = 1500,
	                     .peak = 1500 + 5 * (uint64_t)it, .peak_objects = counted ? 2 : 0};
	stp_event ev = {.type = STP_EV_FOLD, .tid = g->tid, .seq = next};
	ev.u.fold = (stp_fold_info){.iteration = it, .like = 0, .last_seq = next + 4, .elided = 4, .digest = 1,
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

/* A loop of 4 iterations, the middle two folded; with `persistent`, one
 * object live throughout. */
static void write_trace(const char *p, int persistent, int counted)
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
			folded_iteration(&g, it, counted);
		else
			full_iteration(&g, it, st);
	if (persistent)
		tg_free(&g, 0x90000);
	CHECK(tg_close(&g) == 0);
}

/* The heap's peak is iteration 2's folded one, with `objects` in it. */
static void expect(int persistent, int counted, uint64_t objects)
{
	char err[512];
	const char *p = check_tmp("fold-peak.stp");
	write_trace(p, persistent, counted);
	stp_det *d = checked_det_run(p, NULL, err, sizeof err); /* the self-check passes */
	CHECK(d != NULL);
	if (!d) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	const stp_det_result *r = stp_det_result_of(d);
	CHECK(r->primary >= 0);
	if (r->primary >= 0) {
		const stp_det_space *s = &r->spaces[r->primary];
		uint64_t peak = (persistent ? 4096 : 0) + 1510;
		if (s->peak_bytes != peak || s->peak_objects != objects)
			fprintf(stderr, "persistent %d counted %d: peak %llu bytes in %llu objects, want %llu in %llu\n",
			        persistent, counted, (unsigned long long)s->peak_bytes,
			        (unsigned long long)s->peak_objects, (unsigned long long)peak,
			        (unsigned long long)objects);
		CHECK(s->peak_bytes == peak);
		CHECK(s->peak_objects == objects);
		CHECK(s->folded_allocs == 4);
	}
	stp_det_free(d);
	unlink(p);
}

int main(void)
{
	expect(0, 1, 2); /* nothing live between steps: the FOLD's own two */
	expect(1, 1, 3); /* and the one live throughout */
	expect(0, 0, 1); /* a 1.2 FOLD: at least one */
	expect(1, 0, 2);
	return check_done();
}
