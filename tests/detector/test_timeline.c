/*
 * test_timeline.c - stp_det_timeline_run (the planner's cheap call) finds
 * the same windows, per-iteration counts and peaks, and steady iteration
 * as the full stp_det_run, with markers and with detected iterations; and
 * detection without markers finds the constructed period, iterations and
 * forward/backward turnaround exactly; a repeating run that keeps what it
 * allocates (a server storing what it is sent) is not taken for iterations;
 * one iteration begun by a marker and none ended gives way to the period.
 */
#include <string.h>

#include "check.h"
#include "checked_run.h"
#include "scenarios.h"
#include "stprof/detector.h"

static void same(const char *path)
{
	char err[512];
	stp_det *a = checked_det_run(path, NULL, err, sizeof err);
	stp_det *b = stp_det_timeline_run(path, NULL, err, sizeof err);
	CHECK(a && b);
	if (!a || !b) {
		stp_det_free(a);
		stp_det_free(b);
		return;
	}
	const stp_det_timeline *x = &stp_det_result_of(a)->timeline, *y = &stp_det_result_of(b)->timeline;
	CHECK(x->niterations > 0);
	CHECK_EQ_U(x->niterations, y->niterations);
	CHECK_EQ_U(x->nphases, y->nphases);
	CHECK_EQ_U(x->iter_source, y->iter_source);
	CHECK_EQ_U(x->phase_source, y->phase_source);
	CHECK_EQ_I(x->steady, y->steady);
	CHECK_STR(x->method, y->method);
	for (uint32_t k = 0; k < x->niterations && k < y->niterations; k++) {
		CHECK_EQ_U(x->iterations[k].begin_seq, y->iterations[k].begin_seq);
		CHECK_EQ_U(x->iterations[k].end_seq, y->iterations[k].end_seq);
		CHECK_EQ_U(x->iterations[k].begin_ns, y->iterations[k].begin_ns);
		CHECK_EQ_U(x->iterations[k].end_ns, y->iterations[k].end_ns);
		CHECK_EQ_U(x->iterations[k].allocs, y->iterations[k].allocs);
		CHECK_EQ_U(x->iterations[k].peak_bytes, y->iterations[k].peak_bytes);
	}
	for (uint32_t i = 0; i < x->nphases && i < y->nphases; i++) {
		CHECK_EQ_U(x->phases[i].begin_ns, y->phases[i].begin_ns);
		CHECK_EQ_U(x->phases[i].end_ns, y->phases[i].end_ns);
	}
	const stp_det_result *rb = stp_det_result_of(b);
	CHECK_EQ_U(rb->nsites, 0);
	CHECK(rb->sim == NULL);
	CHECK_EQ_U(rb->events, stp_det_result_of(a)->events);
	stp_det_free(a);
	stp_det_free(b);
}

/* One round of a training-like pattern: 12 activations, their frees in
 * reverse, 3 temporary alloc/free pairs; with phases, the activations in a
 * "forward" phase and their frees in a "backward" one, micro-batch it. */
static void train_round(tg *g, int it, int phases)
{
	if (phases)
		tg_mark(g, STP_MARK_PHASE_BEGIN, "forward", it);
	for (uint64_t k = 0; k < 12; k++)
		tg_alloc(g, 0x200000 + k * 0x10000, 4096 + k * 512, tg_stack(g, 0x100 + k * 8, 0x200, 0));
	if (phases) {
		tg_mark(g, STP_MARK_PHASE_END, "forward", it);
		tg_mark(g, STP_MARK_PHASE_BEGIN, "backward", it);
	}
	for (uint64_t k = 12; k-- > 0;)
		tg_free(g, 0x200000 + k * 0x10000);
	if (phases)
		tg_mark(g, STP_MARK_PHASE_END, "backward", it);
	for (uint64_t k = 0; k < 3; k++) {
		tg_alloc(g, 0x900000, 256, tg_stack(g, 0x300 + k * 8, 0x200, 0));
		tg_free(g, 0x900000);
	}
}

/* The no-markers trace below, by construction: seq 2 allocates the weights;
 * iteration k (from 0) is seq 3+30k .. 32+30k: 12 activations (3..14),
 * their 12 frees, then 3 temporary alloc/free pairs.  Detection must find
 * the period (15 allocations), the 8 iterations starting at the first
 * activation (not among the temporaries), and the turnaround after the
 * 12th activation.  The last iteration ends after its last allocation. */
static void detected(const char *path)
{
	stp_det *d;
	const stp_det_timeline *t = checked_timeline(path, &d);
	if (!t)
		return;
	CHECK_EQ_U(t->iter_source, STP_DET_SRC_DETECTED);
	CHECK_EQ_U(t->phase_source, STP_DET_SRC_DETECTED);
	CHECK_EQ_U(t->period_allocs, 15);
	CHECK(t->confidence >= 0.99);
	CHECK(t->method && strstr(t->method, "no iteration markers") && strstr(t->method, "period of 15"));
	CHECK_EQ_U(t->niterations, 8);
	CHECK_EQ_U(t->nphases, 16);
	for (uint32_t k = 0; k < t->niterations && k < 8; k++) {
		const stp_det_iteration *it = &t->iterations[k];
		CHECK_EQ_U(it->begin_seq, 3 + 30 * k);
		CHECK_EQ_U(it->end_seq, k < 7 ? 33 + 30 * k : 242);
		CHECK_EQ_U(it->allocs, 15);
		CHECK_EQ_U(it->peak_bytes, (1u << 20) + 12 * 4096 + 512 * 66);
		CHECK_EQ_U(it->nphases, 2);
	}
	for (uint32_t i = 0; i + 1 < t->nphases && i < 16; i += 2) {
		uint64_t k = i / 2;
		CHECK_STR(t->phases[i].name, "forward");
		CHECK_STR(t->phases[i + 1].name, "backward");
		CHECK_EQ_U(t->phases[i].begin_seq, 3 + 30 * k);
		CHECK_EQ_U(t->phases[i].end_seq, 15 + 30 * k);
		CHECK_EQ_U(t->phases[i + 1].begin_seq, 15 + 30 * k);
	}
	CHECK_EQ_I(t->steady, 1);
	stp_det_free(d);
}

/* A server's requests: each stores a key and a value and frees a
 * temporary, 400 times, the same sizes and call paths each time.  The
 * pattern repeats exactly and holds every byte, but the live bytes grow by
 * all the store keeps (99.8% of what the run allocates): no iterations, and
 * the method says why (Redis under redis-benchmark did this). */
/* Closes g's trace at path and reads its timeline (NULL after a failed
 * check). */
static const stp_det_timeline *closed_timeline(tg *g, const char *path, stp_det **d)
{
	CHECK(tg_close(g) == 0);
	return checked_timeline(path, d);
}

static void server(const char *path)
{
	tg g;
	CHECK(tg_open(&g, path) == 0);
	uint32_t key = tg_stack(&g, 0x500, 0x600, 0), val = tg_stack(&g, 0x508, 0x600, 0),
	         tmp = tg_stack(&g, 0x510, 0x600, 0);
	for (uint64_t r = 0; r < 400; r++) {
		tg_alloc(&g, 0x1000000 + r * 0x1000, 64, key);
		tg_alloc(&g, 0x1000800 + r * 0x1000, 1000, val);
		tg_alloc(&g, 0x900000, 2, tmp);
		tg_free(&g, 0x900000);
	}
	stp_det *d;
	const stp_det_timeline *t = closed_timeline(&g, path, &d);
	if (!t)
		return;
	CHECK_EQ_U(t->niterations, 0);
	CHECK_EQ_U(t->iter_source, STP_DET_SRC_NONE);
	CHECK(t->method && strstr(t->method, "no credible iteration") && strstr(t->method, "keeps 99.") &&
	      strstr(t->method, "of the bytes it allocates"));
	stp_det_free(d);
}

/* One ITER_BEGIN and never an ITER_END, phase markers whose micro-batch
 * only grows, then `reps` rounds (train_round):
 * what stprof's shim leaves when torch.compile compiled the optimizer step
 * (its step hooks traced as nothing).  With 8 rounds the allocations'
 * period makes the iterations, and the method says why; with 1 there is
 * no period and the markers' one iteration stays. */
static void lone_iteration(const char *path, int reps)
{
	tg g;
	CHECK(tg_open(&g, path) == 0);
	uint32_t w = tg_stack(&g, 0x10, 0x20, 0);
	tg_alloc(&g, 0x100000, 1 << 20, w);
	tg_mark(&g, STP_MARK_ITER_BEGIN, NULL, 0);
	for (int it = 0; it < reps; it++)
		train_round(&g, it, 1);
	stp_det *d;
	const stp_det_timeline *t = closed_timeline(&g, path, &d);
	if (!t)
		return;
	if (reps > 1) {
		CHECK_EQ_U(t->iter_source, STP_DET_SRC_DETECTED);
		CHECK_EQ_U(t->period_allocs, 15);
		CHECK(t->niterations >= 6);
		CHECK(t->method && strstr(t->method, "one iteration begun by a marker, none ended; detected a period"));
	} else {
		CHECK_EQ_U(t->iter_source, STP_DET_SRC_MARKERS);
		CHECK_EQ_U(t->niterations, 1);
		CHECK(t->method && strstr(t->method, "iteration and phase markers"));
	}
	stp_det_free(d);
	same(path);
}

int main(void)
{
	const char *p1 = check_tmp("tl-markers.stp");
	tg g;
	CHECK(tg_open(&g, p1) == 0);
	scenario_train(&g, 0);
	same(p1);
	unlink(p1);

	/* no markers: 8 iterations of a forward/backward allocation pattern */
	const char *p2 = check_tmp("tl-detect.stp");
	CHECK(tg_open(&g, p2) == 0);
	uint32_t w = tg_stack(&g, 0x10, 0x20, 0);
	tg_alloc(&g, 0x100000, 1 << 20, w);
	for (int it = 0; it < 8; it++)
		train_round(&g, it, 0);
	CHECK(stp_writer_close(g.w, STP_END_EXIT, 0) == 0);
	same(p2);
	detected(p2);
	unlink(p2);

	const char *p3 = check_tmp("tl-server.stp");
	server(p3);
	unlink(p3);

	const char *p4 = check_tmp("tl-lone.stp");
	lone_iteration(p4, 8);
	lone_iteration(p4, 1);
	unlink(p4);
	return check_done();
}
