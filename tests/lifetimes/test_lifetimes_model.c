/*
 * test_lifetimes_model.c - lifetime models (stprof/lifetimes.h): classes,
 * the learner on hand-made traces (a short-lived and a never-freed context
 * of one module), prediction of a context never seen from the frames it
 * shares with a known one, the accuracy of Llama's Table 3 on a held-out
 * trace, and the model file: round trip, and every kind of bad input
 * refused with the file and offset named.
 */
#include "check.h"
#include "stprof/lifetimes.h"
#include "stprof/trace.h"

#define MS 1000000ull
#define BIAS 0x555500000000ull

static stp_writer *w;
static uint64_t t;

static void ev_alloc(uint64_t addr, uint32_t stack)
{
	stp_event ev = {.type = STP_EV_ALLOC, .seq = STP_SEQ_AUTO, .time_ns = t, .tid = 1};
	ev.u.alloc = (stp_alloc_info){.addr = addr, .size = 64, .requested = 64, .stack = stack, .kind = STP_MEM_HOST,
	                              .device = -1};
	CHECK(stp_writer_event(w, &ev) == 0);
}

static void ev_free(uint64_t addr)
{
	stp_event ev = {.type = STP_EV_FREE, .seq = STP_SEQ_AUTO, .time_ns = t, .tid = 1};
	ev.u.free = (stp_free_info){.addr = addr, .kind = STP_MEM_HOST, .device = -1};
	CHECK(stp_writer_event(w, &ev) == 0);
}

/* Contexts (innermost first, module-relative): A and B share the malloc
 * wrapper's frame 0x1000; C shares A's two innermost frames. */
static const uint64_t A[3] = {0x1000, 0x2000, 0x3000}, B[3] = {0x1000, 0x2100, 0x3000}, C[3] = {0x1000, 0x2000, 0x3500};

static uint32_t stack_of(const uint64_t *f)
{
	uint64_t ips[3];
	for (int i = 0; i < 3; i++)
		ips[i] = BIAS + f[i];
	return stp_writer_stack(w, ips, 3);
}

/* n short-lived objects of context s1 (1 ms each), m never freed of s2. */
static void write_trace(const char *path, const uint64_t *s1, int n, const uint64_t *s2, int m)
{
	char err[256];
	t = 1000 * MS;
	w = stp_writer_open(path, err, sizeof err);
	CHECK(w != NULL);
	stp_event ev = {.type = STP_EV_MODULE, .seq = STP_SEQ_AUTO, .time_ns = t, .tid = 1};
	ev.u.module = (stp_module_info){.path = stp_writer_string(w, "/usr/bin/server"), .base = BIAS, .size = 0x10000,
	                                .bias = BIAS};
	CHECK(stp_writer_event(w, &ev) == 0);
	uint32_t a = stack_of(s1), b = s2 ? stack_of(s2) : 0;
	for (int i = 0; i < n; i++) {
		ev_alloc(0x10000 + 64 * (uint64_t)i, a);
		t += MS;
		ev_free(0x10000 + 64 * (uint64_t)i);
	}
	for (int i = 0; i < m; i++)
		ev_alloc(0x900000 + 64 * (uint64_t)i, b);
	CHECK(stp_writer_close(w, STP_END_EXIT, 0) == 0);
}

static void prefixes(const uint64_t *f, uint64_t *pre)
{
	uint64_t h = 0, mh = stp_lt_module_hash("server");
	for (int i = 0; i < 3; i++)
		pre[i] = h = stp_lt_extend(h, stp_lt_frame_hash(mh, f[i]));
}

static void classes(void)
{
	CHECK_EQ_U(stp_lt_class_of(0), 0);
	CHECK_EQ_U(stp_lt_class_of(10 * MS - 1), 0);
	CHECK_EQ_U(stp_lt_class_of(10 * MS), 1);
	CHECK_EQ_U(stp_lt_class_of(999 * MS), 2);
	CHECK_EQ_U(stp_lt_class_of(5000 * MS), 3);
	CHECK_EQ_U(stp_lt_class_of(2000000 * MS), 6);
	CHECK_STR(stp_lt_class_name(0), "<10ms");
	CHECK_STR(stp_lt_class_name(STP_LT_NEVER), "never");
	CHECK(stp_lt_class_limit_ns(6) == UINT64_MAX);
}

static void learn_and_predict(void)
{
	const char *train = check_tmp("lt-train.stp"), *test = check_tmp("lt-test.stp");
	write_trace(train, A, 90, B, 10);
	write_trace(test, A, 30, C, 0);
	char err[512];
	stp_lt_learner *l = stp_lt_learner_new(8);
	CHECK(l && stp_lt_learner_add(l, train, err, sizeof err) == 0);
	CHECK_EQ_U(stp_lt_learner_allocs(l), 100);
	CHECK_EQ_U(stp_lt_learner_contexts(l), 2);
	uint64_t h[STP_LT_CLASSES];
	stp_lt_learner_histogram(l, h);
	CHECK_EQ_U(h[0], 90);
	CHECK_EQ_U(h[STP_LT_NEVER], 10);
	stp_lt_model m;
	CHECK(stp_lt_learner_model(l, &m) == 0);
	CHECK_EQ_U(m.depth, 8);
	CHECK_EQ_U(m.n, 5); /* {0x1000}, A's 2 and 3 frames, B's 2 and 3 */
	CHECK_EQ_U(m.fallback, STP_LT_NEVER); /* p95 of everything */
	uint64_t pa[3], pb[3], pc[3];
	prefixes(A, pa);
	prefixes(B, pb);
	prefixes(C, pc);
	unsigned level;
	CHECK_EQ_U(stp_lt_predict(&m, pa, 3, &level), 0);
	CHECK_EQ_U(level, 3);
	CHECK_EQ_U(stp_lt_predict(&m, pb, 3, &level), STP_LT_NEVER);
	CHECK_EQ_U(level, 3);
	/* C was never seen: its two innermost frames are A's alone */
	CHECK_EQ_U(stp_lt_predict(&m, pc, 3, &level), 0);
	CHECK_EQ_U(level, 2);
	/* the wrapper's frame alone is shared: 10% never freed, p95 = never */
	CHECK_EQ_U(stp_lt_predict(&m, pa, 1, &level), STP_LT_NEVER);
	/* nothing shared at all: the fallback */
	uint64_t other = stp_lt_extend(0, stp_lt_frame_hash(stp_lt_module_hash("libz.so"), 0x10));
	CHECK_EQ_U(stp_lt_predict(&m, &other, 1, &level), STP_LT_NEVER);
	CHECK_EQ_U(level, 0);

	/* held out: A (known) and C (from shared frames), both truly <10ms */
	stp_lt_learner *tl = stp_lt_learner_new(8);
	CHECK(tl && stp_lt_learner_add(tl, test, err, sizeof err) == 0);
	stp_lt_accuracy a;
	CHECK(stp_lt_evaluate(&m, tl, &a) == 0);
	CHECK_EQ_U(a.contexts, 1); /* the test trace has A only (m = 0 objects of C) */
	CHECK_EQ_U(a.ctx_exact, 1);
	CHECK_EQ_U(a.allocs, 30);
	CHECK_EQ_U(a.alloc_exact, 30);
	stp_lt_learner_free(tl);
	write_trace(test, C, 20, B, 20);
	tl = stp_lt_learner_new(8);
	CHECK(tl && stp_lt_learner_add(tl, test, err, sizeof err) == 0);
	CHECK(stp_lt_evaluate(&m, tl, &a) == 0);
	CHECK_EQ_U(a.contexts, 2);
	CHECK_EQ_U(a.ctx_exact, 2);       /* C by its shared frames, B known */
	CHECK_EQ_U(a.ctx_backoff, 1);
	CHECK_EQ_U(a.alloc_backoff, 20);
	CHECK_EQ_U(a.confusion[0][0], 20);
	CHECK_EQ_U(a.confusion[STP_LT_NEVER][STP_LT_NEVER], 20);
	stp_lt_learner_free(tl);

	/* the file: round trip */
	const char *mp = check_tmp("lt.model");
	const char *comment[] = {"a comment"};
	CHECK(stp_lt_write(mp, &m, comment, 1, err, sizeof err) == 0);
	CHECK(stp_lt_is_model(mp));
	CHECK(!stp_lt_is_model(train));
	stp_lt_model r;
	CHECK(stp_lt_read(mp, &r, err, sizeof err) == 0);
	CHECK_EQ_U(r.n, m.n);
	CHECK_EQ_U(r.depth, m.depth);
	CHECK_EQ_U(r.fallback, m.fallback);
	for (uint64_t i = 0; i < r.n && i < m.n; i++) {
		CHECK(r.e[i].key == m.e[i].key);
		CHECK_EQ_U(r.e[i].label, m.e[i].label);
		CHECK_EQ_U(r.e[i].level, m.e[i].level);
		CHECK_EQ_U(r.e[i].count, m.e[i].count);
	}
	stp_lt_model_free(&r);
	stp_lt_model_free(&m);
	stp_lt_learner_free(l);
	/* a trace that is not one */
	l = stp_lt_learner_new(8);
	CHECK(stp_lt_learner_add(l, mp, err, sizeof err) < 0);
	CHECK(strstr(err, mp) != NULL);
	stp_lt_learner_free(l);
	CHECK(stp_lt_learner_new(0) == NULL);
	CHECK(stp_lt_learner_new(STP_LT_DEPTH_MAX + 1) == NULL);
}

static void bad(const char *text, const char *offset, const char *what)
{
	stp_lt_model m;
	char err[512] = "";
	CHECK(stp_lt_parse(text, strlen(text), "m.lt", &m, err, sizeof err) < 0);
	char want[64];
	snprintf(want, sizeof want, "m.lt: offset %s: ", offset);
	if (strncmp(err, want, strlen(want)) || !strstr(err, what))
		fprintf(stderr, "unexpected error for %s: %s\n", what, err);
	CHECK(!strncmp(err, want, strlen(want)));
	CHECK(strstr(err, what) != NULL);
}

static void bad_files(void)
{
	const char *h = "stprof-lifetimes 1\ndepth 2\nfallback 7\n";
	char buf[512];
	bad("", "0", "not a stprof lifetime model");
	bad("stprof-lifetimes 2\n", "0", "not a stprof lifetime model");
	bad("stprof-lifetimes 1\ndepth 0\n", "19", "depth");
	bad("stprof-lifetimes 1\ndepth 17\n", "19", "depth");
	bad("stprof-lifetimes 1\ndepth 2\nfallback 8\n", "27", "fallback");
	snprintf(buf, sizeof buf, "%sentries 99999999999\n", h);
	bad(buf, "38", "entries");
	snprintf(buf, sizeof buf, "%sentries 2\ne 1 10 5 0\ne 1 10 5 0\n", h);
	bad(buf, "59", "strictly increasing");
	snprintf(buf, sizeof buf, "%sentries 1\ne 3 10 5 0\n", h);
	bad(buf, "48", "entry 1 of 1");
	snprintf(buf, sizeof buf, "%sentries 1\ne 1 10 5 8\n", h);
	bad(buf, "48", "entry 1 of 1");
	snprintf(buf, sizeof buf, "%sentries 1\ne 1 1ffffffffffffffff 5 0\n", h);
	bad(buf, "48", "entry 1");
	snprintf(buf, sizeof buf, "%sentries 1\ne 1 10 5 0\nextra\n", h);
	bad(buf, "59", "after the last entry");
	snprintf(buf, sizeof buf, "%sentries 1\ne 1 10 5 0", h);
	bad(buf, "48", "entry 1");
	/* comments anywhere between records are fine */
	snprintf(buf, sizeof buf, "stprof-lifetimes 1\n# x\ndepth 2\n# y\nfallback 3\nentries 1\n# z\ne 2 ff 5 1\n# end\n");
	stp_lt_model m;
	char err[256];
	CHECK(stp_lt_parse(buf, strlen(buf), "m.lt", &m, err, sizeof err) == 0);
	CHECK_EQ_U(m.n, 1);
	CHECK(m.e && m.e[0].key == 0xff && m.e[0].level == 2 && m.e[0].label == 1);
	CHECK_EQ_U(m.fallback, 3);
	stp_lt_model_free(&m);
	CHECK(stp_lt_read("/nonexistent/m.lt", &m, err, sizeof err) < 0);
	CHECK(strstr(err, "/nonexistent/m.lt: offset 0:") != NULL);
}

int main(void)
{
	classes();
	learn_and_predict();
	bad_files();
	return check_done();
}
