/*
 * test_objinfo.c - per-object class and patterns (opt.keep_objects, what
 * the timeline exporter asks for): tallied over every ALLOC of the trace
 * they give the result's class counts and per-pattern object counts, and
 * each finding's worst instance carries its pattern.
 */
#include "check.h"
#include "checked_run.h"
#include "scenarios.h"
#include "stprof/detector.h"

static void check_trace(const char *path)
{
	char err[512];
	stp_det_options o;
	stp_det_options_default(&o);
	o.keep_objects = 1;
	stp_det *d = checked_det_run(path, &o, err, sizeof err);
	CHECK(d != NULL);
	if (!d)
		return;
	const stp_det_result *r = stp_det_result_of(d);
	uint64_t cls[STP_CLASS_COUNT] = {0}, pat[STP_PAT_COUNT] = {0};
	stp_reader *rd = stp_reader_open(path, err, sizeof err);
	CHECK(rd != NULL);
	stp_event ev;
	while (rd && stp_reader_next(rd, &ev) > 0) {
		if (ev.type != STP_EV_ALLOC)
			continue;
		unsigned pm = 0;
		int c = stp_det_object_info(d, ev.seq, &pm);
		CHECK(c >= 0 && c < STP_CLASS_COUNT);
		if (c >= 0 && c < STP_CLASS_COUNT)
			cls[c]++;
		for (unsigned p = 0; p < STP_PAT_COUNT; p++)
			pat[p] += (pm >> p) & 1;
	}
	if (rd)
		stp_reader_close(rd);
	for (unsigned c = 0; c < STP_CLASS_COUNT; c++)
		CHECK_EQ_U(cls[c], r->class_objects[c]);
	for (unsigned p = 0; p < STP_PAT_COUNT; p++)
		CHECK_EQ_U(pat[p], r->pattern_objects[p]);
	for (uint32_t i = 0; i < r->nfindings; i++) {
		unsigned pm = 0;
		const stp_det_finding *f = &r->findings[i];
		CHECK(stp_det_object_info(d, f->worst.alloc_seq, &pm) >= 0);
		CHECK((pm >> f->pattern) & 1);
	}
	CHECK(stp_det_object_info(d, 0, NULL) < 0);
	stp_det_free(d);
	/* without the option: unknown */
	d = checked_det_run(path, NULL, err, sizeof err);
	CHECK(d && stp_det_object_info(d, 1, NULL) < 0);
	stp_det_free(d);
}

int main(void)
{
	tg g;
	const char *p1 = check_tmp("oi-train.stp"), *p2 = check_tmp("oi-patterns.stp");
	CHECK(tg_open(&g, p1) == 0);
	scenario_train(&g, 0);
	check_trace(p1);
	CHECK(tg_open(&g, p2) == 0);
	scenario_patterns(&g);
	check_trace(p2);
	unlink(p1);
	unlink(p2);
	return check_done();
}
