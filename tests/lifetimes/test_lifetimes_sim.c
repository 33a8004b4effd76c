/*
 * test_lifetimes_sim.c - the host heap models (stprof/allocsim.h,
 * allocsim_host_*) and the replay of a trace through them for the
 * Lifetimes section (stp_lt_simulate), with figures worked out by hand:
 *   - a heap that fragments on purpose: 4,096 short-lived and 4,096
 *     never-freed objects of 1,000 bytes allocated in turn, then the
 *     short-lived ones freed.  Size classes (1 KiB slots, 8 a block, 2,048
 *     a huge page) and glibc-like (1,008-byte chunks in a row) keep all 4
 *     huge pages pinned; the lifetime heap, predicted or with each object's
 *     own class, keeps the never-freed ones' 2 pages and the page of the
 *     short class's current span (which it keeps while in use, as the heap
 *     does): 3.  At the live peak every model holds 4.
 *   - glibc-like's mmap threshold rises to a freed mapping's size (a
 *     request of 150 KiB then comes from the arena, next to a small one).
 */
#include <string.h>

#include "check.h"
#include "stprof/allocsim.h"
#include "stprof/lifetimes.h"
#include "stprof/trace.h"

#define BIAS 0x555500000000ull
#define N 4096

static stp_writer *w;
static uint64_t t;

static void ev_alloc(uint64_t addr, uint64_t size, uint32_t stack)
{
	stp_event ev = {.type = STP_EV_ALLOC, .seq = STP_SEQ_AUTO, .time_ns = t, .tid = 1};
	ev.u.alloc = (stp_alloc_info){.addr = addr, .size = size, .requested = size, .stack = stack,
	                              .kind = STP_MEM_HOST, .device = -1};
	CHECK(stp_writer_event(w, &ev) == 0);
}

static void ev_free(uint64_t addr)
{
	stp_event ev = {.type = STP_EV_FREE, .seq = STP_SEQ_AUTO, .time_ns = t, .tid = 1};
	ev.u.free = (stp_free_info){.addr = addr, .kind = STP_MEM_HOST, .device = -1};
	CHECK(stp_writer_event(w, &ev) == 0);
}

static uint32_t stack_of(uint64_t a, uint64_t b)
{
	uint64_t ips[2] = {BIAS + a, BIAS + b};
	return stp_writer_stack(w, ips, 2);
}

static void write_fragmenting(const char *path)
{
	char err[256];
	t = 1000000000ull;
	w = stp_writer_open(path, err, sizeof err);
	CHECK(w != NULL);
	stp_event ev = {.type = STP_EV_MODULE, .seq = STP_SEQ_AUTO, .time_ns = t, .tid = 1};
	ev.u.module = (stp_module_info){.path = stp_writer_string(w, "/usr/bin/server"), .base = BIAS, .size = 0x10000,
	                                .bias = BIAS};
	CHECK(stp_writer_event(w, &ev) == 0);
	uint32_t shortlived = stack_of(0x1000, 0x2000), kept = stack_of(0x1000, 0x3000);
	for (uint64_t i = 0; i < N; i++) { /* 0.8 ms */
		ev_alloc(0x10000000 + i * 0x1000, 1000, shortlived);
		t += 100;
		ev_alloc(0x90000000 + i * 0x1000, 1000, kept);
		t += 100;
	}
	t += 2000000; /* the short-lived ones live 2 to 3.2 ms: all under 10 ms */
	for (uint64_t i = 0; i < N; i++) {
		ev_free(0x10000000 + i * 0x1000);
		t += 100;
	}
	CHECK(stp_writer_close(w, STP_END_EXIT, 0) == 0);
}

static void fragmenting_trace(void)
{
	const char *path = check_tmp("lt-sim.stp");
	write_fragmenting(path);
	char err[512] = "";
	stp_lt_learner *l = stp_lt_learner_new(STP_LT_DEPTH_DEFAULT);
	stp_lt_model m;
	CHECK(l && stp_lt_learner_add(l, path, err, sizeof err) == 0);
	CHECK(stp_lt_learner_model(l, &m) == 0);
	stp_lt_learner_free(l);
	l = stp_lt_learner_new(m.depth);
	stp_lt_sim s;
	CHECK(stp_lt_simulate(&m, l, path, &s, err, sizeof err) == 0);
	CHECK_EQ_U(s.allocs, 2 * N);
	const stp_lt_sim_point *end = &s.samples[STP_LT_SIM_SAMPLES - 1];
	CHECK_EQ_U(s.peak.live, 2 * N * 1000);
	CHECK_EQ_U(end->live, N * 1000);
	static const uint64_t end_pages[STP_LT_SIM_MODELS] = {4, 4, 3, 3};
	static const uint64_t end_blocks[STP_LT_SIM_MODELS] = {1024, 1008, 513, 513};
	for (int i = 0; i < STP_LT_SIM_MODELS; i++) {
		CHECK_EQ_U(s.peak.pages[i], 4);
		CHECK_EQ_U(s.max_pages[i], 4);
		CHECK_EQ_U(end->pages[i], end_pages[i]);
		CHECK_EQ_U(end->blocks[i], end_blocks[i]);
	}
	/* the sites: the two contexts, their own classes as predicted */
	CHECK_EQ_U(s.nsites, 2);
	for (size_t k = 0; k < s.nsites; k++) {
		CHECK_EQ_U(s.site[k].allocs, N);
		CHECK_EQ_U(s.site[k].label, s.site[k].predicted);
	}
	CHECK(s.site[0].label == 0 || s.site[1].label == 0);
	CHECK(s.site[0].label == STP_LT_NEVER || s.site[1].label == STP_LT_NEVER);
	stp_lt_learner_free(l);
	stp_lt_model_free(&m);
}

static void host_models(void)
{
	/* size classes: 2,048 slots of 1 KiB fill one huge page */
	allocsim_host *h = allocsim_host_new(ALLOCSIM_HOST_SIZE_CLASSES);
	CHECK(h != NULL);
	for (uint64_t i = 0; i < 2048; i++)
		CHECK(allocsim_host_alloc(h, 0x1000 + i * 16, 1000, 0) == 0);
	allocsim_host_usage u = allocsim_host_usage_of(h);
	CHECK_EQ_U(u.pages, 1);
	CHECK_EQ_U(u.blocks, 256);
	CHECK(allocsim_host_alloc(h, 0x100000, 1000, 0) == 0);
	CHECK_EQ_U(allocsim_host_usage_of(h).pages, 2);
	allocsim_host_free(h, 0x100000);
	allocsim_host_free(h, 0x100000); /* not live: ignored */
	/* above 2 MiB: whole pages */
	CHECK(allocsim_host_alloc(h, 0x200000, 5u << 20, 0) == 0);
	CHECK_EQ_U(allocsim_host_usage_of(h).pages, 2 + 3);
	allocsim_host_free(h, 0x200000);
	CHECK_EQ_U(allocsim_host_usage_of(h).max_pages, 5);
	allocsim_host_delete(h);

	/* glibc-like: a mapping of 200 KiB freed raises the mmap threshold, so
	 * 150 KiB then comes from the arena, sharing the small chunk's block */
	h = allocsim_host_new(ALLOCSIM_HOST_GLIBC);
	CHECK(h != NULL);
	CHECK(allocsim_host_alloc(h, 1, 100, 0) == 0);
	CHECK(allocsim_host_alloc(h, 2, 200 << 10, 0) == 0);
	u = allocsim_host_usage_of(h);
	CHECK_EQ_U(u.blocks, 1 + 26); /* (200 KiB + 16) rounded to 4 KiB: 26 blocks */
	CHECK_EQ_U(u.pages, 2);       /* the arena's and the mapping's */
	allocsim_host_free(h, 2);
	CHECK(allocsim_host_alloc(h, 3, 150 << 10, 0) == 0);
	u = allocsim_host_usage_of(h);
	CHECK_EQ_U(u.blocks, 19); /* [112, 112 + 153,616): blocks 0 to 18 */
	CHECK_EQ_U(u.pages, 1);
	/* a freed chunk between live ones is reused by best fit: no growth */
	CHECK(allocsim_host_alloc(h, 4, 100, 0) == 0);
	CHECK(allocsim_host_alloc(h, 5, 100, 0) == 0);
	allocsim_host_free(h, 3);
	CHECK_EQ_U(allocsim_host_usage_of(h).blocks, 2); /* the first small chunk's block and the two after */
	CHECK(allocsim_host_alloc(h, 6, 100 << 10, 0) == 0);
	CHECK_EQ_U(allocsim_host_usage_of(h).blocks, 14); /* [112, 112 + 102,416) and the two at 153,728 */
	allocsim_host_free(h, 1);
	allocsim_host_free(h, 4);
	allocsim_host_free(h, 5);
	allocsim_host_free(h, 6);
	u = allocsim_host_usage_of(h);
	CHECK_EQ_U(u.blocks, 0);
	CHECK_EQ_U(u.pages, 0);
	allocsim_host_delete(h);
	CHECK_STR(allocsim_host_name(ALLOCSIM_HOST_GLIBC), "glibc-like");
}

int main(void)
{
	fragmenting_trace();
	host_models();
	return check_done();
}
