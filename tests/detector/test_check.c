/*
 * test_check.c - the self-check (stp_det_check, docs/report.md
 * "Self-check") finds what it claims to: a crafted training trace's result
 * passes it, and each figure of the result put out of step with the others
 * (the classes' bytes, a space's allocations, its peak, its bytes live at
 * the end, an iteration's peak) is one violation named in words, and the
 * result passes again once the figure is put back.  A check that never
 * fails would let every test trace through.
 */
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "checked_run.h"
#include "scenarios.h"
#include "stprof/detector.h"

/* Puts *fig out by delta, expects stp_det_check to name `words`, puts it back. */
static void tamper(stp_det *d, uint64_t *fig, uint64_t delta, const char *words)
{
	char buf[2048] = "";
	uint64_t was = *fig;
	*fig = was + delta;
	uint32_t n = stp_det_check(d, buf, sizeof buf);
	*fig = was;
	CHECK(n >= 1);
	if (!strstr(buf, words)) {
		fprintf(stderr, "tampered '%s': the check said:\n%s", words, buf);
		CHECK(0);
	}
	CHECK(stp_det_check(d, buf, sizeof buf) == 0);
}

int main(void)
{
	tg g;
	char err[512];
	const char *p = check_tmp("chk-train.stp");
	CHECK(tg_open(&g, p) == 0);
	scenario_train(&g, 0);
	stp_det *d = checked_det_run(p, NULL, err, sizeof err);
	CHECK(d != NULL);
	if (!d)
		return check_done();
	/* The result is the detector's own memory, const to its readers: the
	 * test writes it only to see the check notice. */
	stp_det_result *r = (stp_det_result *)stp_det_result_of(d);
	CHECK(r->primary >= 0 && r->timeline.niterations > 0);
	if (r->primary < 0 || !r->timeline.niterations)
		return check_done();
	stp_det_space *s = (stp_det_space *)&r->spaces[r->primary];
	stp_det_iteration *it = (stp_det_iteration *)&r->timeline.iterations[0];

	tamper(d, &r->class_bytes[STP_CLASS_PERSISTENT], 4096, "classes' bytes = the analyzed space's bytes allocated");
	tamper(d, &r->class_objects[STP_CLASS_TRANSIENT], 1, "classes' objects = the analyzed space's allocations");
	tamper(d, &s->allocs, 1, "call sites' allocations = the analyzed space's");
	tamper(d, &s->peak_bytes, s->bytes_allocated, "peak within bytes allocated");
	tamper(d, &s->live_bytes_end, 1, "bytes live at the end = allocated - freed");
	tamper(d, &it->peak_bytes, s->peak_bytes, "its peak within the analyzed space's");
	stp_det_free(d);
	unlink(p);
	return check_done();
}
