/*
 * bench_allocsim.c - throughput and memory of the allocator models and of the
 * whole fragmentation report, on two synthetic workloads:
 *   train   the training loop of workload.h (large tensors, few sizes,
 *           drifting batch): what the report is for;
 *   small   small objects (16 B .. 64 KiB) with random lifetimes: a host
 *           heap seen through the "what if on a GPU" fallback; large free
 *           sets, and settings that keep improving, the costly case for
 *           the recommendations.
 *
 *   bench_allocsim [EVENTS [TRACE.stp]]
 *
 * For each workload: builds the event log in memory and replays it through
 * each model (events/s each), then writes it as a .stp trace (device 0) and
 * runs the whole report on it (read + every model + worst moment +
 * recommendations), and without the recommendations.  Prints events/s and
 * bytes per event (the event log, and the process's peak RSS growth).  One
 * thread; timings are the thread's CPU time, best of REPS runs (the
 * machines this runs on are shared; wall-clock would count other load).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "stprof/allocsim.h"
#include "stprof/trace.h"
#include "workload.h"

#define REPS 3

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long max_rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* ---------------------------------------------------------------- sinks */

static void log_alloc(void *ctx, uint64_t id, uint64_t size, uint64_t stream, uint64_t time, uint32_t stack)
{
	allocsim_events_alloc(ctx, id, size, stream, time, stack);
}

static void log_free(void *ctx, uint64_t id, uint64_t time)
{
	allocsim_events_free(ctx, id, time);
}

static stp_writer *W;
static uint32_t stacks[512];

static void stp_alloc(void *ctx, uint64_t id, uint64_t size, uint64_t stream, uint64_t time, uint32_t stack)
{
	(void)ctx;
	stp_event ev = {.type = STP_EV_ALLOC, .seq = STP_SEQ_AUTO, .time_ns = time, .tid = 1};
	ev.u.alloc = (stp_alloc_info){.addr = id, .size = size, .requested = size, .stack = stacks[stack % 512],
	                              .kind = STP_MEM_DEVICE, .device = 0, .stream = stream};
	stp_writer_event(W, &ev);
}

static void stp_free(void *ctx, uint64_t id, uint64_t time)
{
	(void)ctx;
	stp_event ev = {.type = STP_EV_FREE, .seq = STP_SEQ_AUTO, .time_ns = time, .tid = 1};
	ev.u.free = (stp_free_info){.addr = id, .kind = STP_MEM_DEVICE, .device = 0};
	stp_writer_event(W, &ev);
}

/* ---------------------------------------------------------------- workloads */

static uint64_t small_run(const wl_sink *s, uint64_t events)
{
	enum { LIVE = 50000 };
	static uint64_t live[LIVE];
	size_t nl = 0;
	uint64_t id = 1, n = 0, t = 0;
	while (n < events) {
		if (nl < 16 || (nl < LIVE && wl_rnd() % 100 < 50)) {
			uint64_t sz = 16 + wl_rnd() % (wl_rnd() % 8 ? 512 : 65536);
			s->alloc(s->ctx, id << 4, sz, 0, t += 50, (uint32_t)(1 + wl_rnd() % 500));
			live[nl++] = id++ << 4;
		} else {
			size_t i = wl_rnd() % nl;
			s->free(s->ctx, live[i], t += 50);
			live[i] = live[--nl];
		}
		n++;
	}
	return n;
}

typedef uint64_t (*gen_fn)(const wl_sink *s, uint64_t events);

static void scenario(const char *name, gen_fn gen, uint64_t events, const char *path)
{
	char err[256];
	/* 1. in memory */
	long rss0 = max_rss_kb();
	allocsim_events *log = allocsim_events_new();
	wl_rng = 0x853c49e6748fea9bull;
	wl_sink ls = {log_alloc, log_free, log};
	double t0 = now();
	gen(&ls, events);
	double t1 = now();
	allocsim_events_trim(log);
	size_t n = allocsim_events_count(log);
	printf("%s: %zu events\n", name, n);
	printf("  event log: built at %.1f M events/s, %.1f bytes/event\n", (double)n / (t1 - t0) / 1e6,
	       (double)allocsim_events_memory(log) / (double)n);

	static const char *confs[] = {"", "expandable_segments:True", "model:bfc",
	                              "model:bfc,allow_growth:False,capacity_gb:80", "model:raw"};
	allocsim_config basec;
	allocsim_config_default(&basec, ALLOCSIM_PYTORCH);
	allocsim_result base;
	memset(&base, 0, sizeof base);
	for (size_t i = 0; i < sizeof confs / sizeof *confs; i++) {
		allocsim_config c;
		allocsim_config_default(&c, ALLOCSIM_PYTORCH);
		allocsim_config_parse(&c, confs[i], NULL, 0);
		allocsim_result r;
		double best = 1e30;
		for (int rep = 0; rep < REPS; rep++) {
			t0 = now();
			allocsim_run(log, &c, NULL, &r, NULL, 0);
			t1 = now();
			if (t1 - t0 < best)
				best = t1 - t0;
			if (rep + 1 < REPS)
				allocsim_result_clear(&r);
		}
		printf("  %-40s %6.1f M events/s  (M_r %.3f GiB, E %.1f%%)\n", r.label, (double)n / best / 1e6,
		       (double)r.peak_reserved / (1 << 30), 100 * r.efficiency);
		if (i == 0)
			base = r;
		else
			allocsim_result_clear(&r);
	}
	double best = 1e30;
	allocsim_snapshot s;
	for (int rep = 0; rep < REPS; rep++) {
		allocsim_result r;
		t0 = now();
		allocsim_run_explained(log, &basec, NULL, &r, &s, NULL, 0);
		t1 = now();
		if (t1 - t0 < best)
			best = t1 - t0;
		allocsim_result_clear(&r);
		if (rep + 1 < REPS)
			allocsim_snapshot_clear(&s);
	}
	printf("  %-40s %6.1f M events/s  (%zu segments, %zu blocks at event %llu)\n", "pytorch + worst moment in the run",
	       (double)n / best / 1e6, s.nsegments, s.nblocks, (unsigned long long)s.event);
	allocsim_snapshot_clear(&s);
	allocsim_recommendation rec[3];
	size_t nr = 0;
	best = 1e30;
	for (int rep = 0; rep < REPS; rep++) {
		t0 = now();
		nr = allocsim_recommend(log, &basec, &base, rec, 3);
		t1 = now();
		if (t1 - t0 < best)
			best = t1 - t0;
	}
	printf("  %-40s %6.1f M events/s  (%zu improving%s%s)\n", "recommendations", (double)n / best / 1e6, nr,
	       nr ? ", best: " : "", nr ? rec[0].settings : "");
	allocsim_result_clear(&base);
	printf("  peak RSS growth: %.1f bytes/event (event log + model state)\n",
	       (double)(max_rss_kb() - rss0) * 1024.0 / (double)n);
	allocsim_events_destroy(log);

	/* 2. the whole report from a trace file */
	W = stp_writer_open(path, err, sizeof err);
	if (!W) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	for (int i = 0; i < 512; i++) {
		uint64_t ips[4] = {0x400000 + (uint64_t)i * 64, 0x401000, 0x402000, 0x403000};
		stacks[i] = stp_writer_stack(W, ips, 4);
	}
	wl_rng = 0x853c49e6748fea9bull;
	wl_sink ss = {stp_alloc, stp_free, NULL};
	gen(&ss, events);
	stp_writer_close(W, STP_END_EXIT, 0);

	for (int pass = 0; pass < 2; pass++) {
		allocsim_report rep;
		allocsim_replay_opts o = {.no_recommend = pass == 1};
		best = 1e30;
		for (int r = 0; r < REPS; r++) {
			t0 = now();
			if (allocsim_replay_file(path, &o, &rep, err, sizeof err)) {
				fprintf(stderr, "%s\n", err);
				exit(1);
			}
			t1 = now();
			if (t1 - t0 < best)
				best = t1 - t0;
			if (r + 1 < REPS)
				allocsim_report_clear(&rep);
		}
		printf("  whole report (read, %zu models, worst moment%s): %.1f M events/s, log %.1f bytes/event\n",
		       rep.ndevices ? rep.devices[0].nresults : 0, pass ? "" : ", recommendations",
		       (double)rep.trace_events / best / 1e6, (double)rep.memory / (double)rep.trace_events);
		allocsim_report_clear(&rep);
	}
	uint64_t k = 0;
	best = 1e30;
	for (int rep = 0; rep < REPS; rep++) {
		stp_reader *r = stp_reader_open(path, err, sizeof err);
		stp_event ev;
		k = 0;
		t0 = now();
		while (stp_reader_next(r, &ev) > 0)
			k++;
		t1 = now();
		stp_reader_close(r);
		if (t1 - t0 < best)
			best = t1 - t0;
	}
	printf("  reading the trace alone: %.1f M events/s\n", (double)k / best / 1e6);
}

int main(int argc, char **argv)
{
	uint64_t events = argc > 1 ? strtoull(argv[1], NULL, 10) : 3000000;
	char path[256];
	snprintf(path, sizeof path, "%s", argc > 2 ? argv[2] : "/tmp/stprof-bench-allocsim.stp");
	scenario("train (48-layer training loop, drifting batch)", wl_run, events, path);
	scenario("small (16 B - 64 KiB objects, random lifetimes)", small_run, events, path);
	printf("peak RSS: %.1f MiB\n", (double)max_rss_kb() / 1024.0);
	if (argc <= 2)
		unlink(path);
	return 0;
}
