/*
 * bench_allocsim.c - throughput and memory of the allocator models and of the
 * whole fragmentation report, on the synthetic training loop of workload.h.
 *
 *   bench_allocsim [EVENTS [TRACE.stp]]
 *
 * 1. builds the event log in memory and replays it through each model
 *    (events/s each), the worst-moment replay and the recommendations;
 * 2. writes the same events as a .stp trace (device 0) and runs the whole
 *    report on it (read + every model + explain + recommendations), then
 *    without recommendations;
 * and prints events/s and bytes per event (event log, and the process's
 * peak RSS over the events).  Each figure is the best of REPS runs.  One thread; timings are the thread's CPU time
 * (the machines this runs on are shared; wall-clock would count other load).
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

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define REPS 3

static long max_rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static void log_alloc(void *ctx, uint64_t id, uint64_t size, uint64_t stream, uint64_t time, uint32_t stack)
{
	allocsim_events_alloc(ctx, id, size, stream, time, stack);
}

static void log_free(void *ctx, uint64_t id, uint64_t time)
{
	allocsim_events_free(ctx, id, time);
}

static stp_writer *W;
static uint32_t stacks[64];

static void stp_alloc(void *ctx, uint64_t id, uint64_t size, uint64_t stream, uint64_t time, uint32_t stack)
{
	(void)ctx;
	stp_event ev = {.type = STP_EV_ALLOC, .seq = STP_SEQ_AUTO, .time_ns = time, .tid = 1};
	ev.u.alloc = (stp_alloc_info){.addr = id, .size = size, .requested = size, .stack = stacks[stack % 64],
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

int main(int argc, char **argv)
{
	uint64_t events = argc > 1 ? strtoull(argv[1], NULL, 10) : 5000000;
	char path[256];
	snprintf(path, sizeof path, "%s", argc > 2 ? argv[2] : "/tmp/stprof-bench-allocsim.stp");
	char err[256], b1[32];

	/* 1. in memory */
	long rss0 = max_rss_kb();
	allocsim_events *log = allocsim_events_new();
	double t0 = now();
	wl_rng = 0x853c49e6748fea9bull;
	wl_sink ls = {log_alloc, log_free, log};
	wl_run(&ls, events);
	double t1 = now();
	allocsim_events_trim(log);
	size_t n = allocsim_events_count(log);
	printf("allocsim bench: %zu events (synthetic training loop, 48 layers, drifting batch)\n", n);
	printf("  event log: built at %.1f M events/s, %.1f bytes/event\n", (double)n / (t1 - t0) / 1e6,
	       (double)allocsim_events_memory(log) / (double)n);

	static const char *confs[] = {"", "expandable_segments:True", "max_split_size_mb:128",
	                              "roundup_power2_divisions:4", "model:bfc", "model:bfc,allow_growth:False,capacity_gb:80",
	                              "model:raw"};
	allocsim_result base;
	allocsim_config basec;
	allocsim_config_default(&basec, ALLOCSIM_PYTORCH);
	double models_time = 0;
	for (size_t i = 0; i < sizeof confs / sizeof *confs; i++) {
		allocsim_config c;
		allocsim_config_default(&c, ALLOCSIM_PYTORCH);
		allocsim_config_parse(&c, confs[i], NULL, 0);
		allocsim_result r;
		double best = 1e30;
		for (int rep = 0; rep < REPS; rep++) {
			if (rep)
				allocsim_result_clear(&r);
			t0 = now();
			if (allocsim_run(log, &c, NULL, &r, err, sizeof err)) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
			t1 = now();
			if (t1 - t0 < best)
				best = t1 - t0;
		}
		t0 = 0;
		t1 = best;
		if (i < 1 || i >= 4)
			models_time += t1 - t0;
		printf("  %-44s %6.1f M events/s  (M_r %s, E %.1f%%)\n", r.label, (double)n / (t1 - t0) / 1e6,
		       allocsim_events_count(log) ? (snprintf(b1, sizeof b1, "%.2f GiB", (double)r.peak_reserved / (1 << 30)), b1) : "",
		       100 * r.efficiency);
		if (i == 0)
			base = r;
		else
			allocsim_result_clear(&r);
	}
	allocsim_snapshot s;
	t0 = now();
	allocsim_explain(log, &basec, base.peak_reserved_event, &s, err, sizeof err);
	t1 = now();
	printf("  %-44s %6.1f M events/s  (%zu segments, %zu blocks at the peak)\n", "explain (replay to the peak)",
	       (double)(base.peak_reserved_event + 1) / (t1 - t0) / 1e6, s.nsegments, s.nblocks);
	allocsim_snapshot_clear(&s);
	{
		allocsim_result r;
		t0 = now();
		allocsim_run_explained(log, &basec, NULL, &r, &s, err, sizeof err);
		t1 = now();
		printf("  %-44s %6.1f M events/s  (snapshot at event %llu)\n", "pytorch + worst moment in one run",
		       (double)n / (t1 - t0) / 1e6, (unsigned long long)s.event);
		allocsim_snapshot_clear(&s);
		allocsim_result_clear(&r);
	}
	allocsim_recommendation rec[3];
	t0 = now();
	size_t nr = 0;
	{
		double best = 1e30;
		for (int r = 0; r < REPS; r++) {
			t0 = now();
			nr = allocsim_recommend(log, &basec, &base, rec, 3);
			t1 = now();
			if (t1 - t0 < best)
				best = t1 - t0;
		}
		t0 = 0;
		t1 = best;
	}
	printf("  %-44s %6.1f M events/s  (%.2f s, %zu improving settings%s%s)\n", "recommendations (all candidates)",
	       (double)n / (t1 - t0) / 1e6, t1 - t0, nr, nr ? ", best: " : "", nr ? rec[0].settings : "");
	printf("  4 report models (pytorch, bfc x2, raw): %.1f M events/s\n", (double)n / models_time / 1e6);
	allocsim_result_clear(&base);
	long rss1 = max_rss_kb();
	printf("  peak RSS growth: %.1f bytes/event (event log + model state)\n",
	       (double)(rss1 - rss0) * 1024.0 / (double)n);
	allocsim_events_destroy(log);

	/* 2. the whole report from a trace file */
	W = stp_writer_open(path, err, sizeof err);
	if (!W) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	for (int i = 0; i < 64; i++) {
		uint64_t ips[4] = {0x400000 + (uint64_t)i * 64, 0x401000, 0x402000, 0x403000};
		stacks[i] = stp_writer_stack(W, ips, 4);
	}
	wl_rng = 0x853c49e6748fea9bull;
	wl_sink ss = {stp_alloc, stp_free, NULL};
	wl_run(&ss, events);
	stp_writer_close(W, STP_END_EXIT, 0);

	for (int pass = 0; pass < 2; pass++) {
		allocsim_report rep;
		allocsim_replay_opts o = {.no_recommend = pass == 1};
		double best = 1e30;
		for (int r = 0; r < REPS; r++) {
			if (r)
				allocsim_report_clear(&rep);
			t0 = now();
			if (allocsim_replay_file(path, &o, &rep, err, sizeof err)) {
				fprintf(stderr, "%s\n", err);
				return 1;
			}
			t1 = now();
			if (t1 - t0 < best)
				best = t1 - t0;
		}
		t0 = 0;
		t1 = best;
		printf("  whole report from %s (read, %zu models, explain%s): %.2f s, %.1f M events/s, log %.1f bytes/event\n",
		       path, rep.ndevices ? rep.devices[0].nresults : 0, pass ? "" : ", recommendations", t1 - t0,
		       (double)rep.trace_events / (t1 - t0) / 1e6, (double)rep.memory / (double)rep.trace_events);
		allocsim_report_clear(&rep);
	}
	/* reading alone, for reference */
	uint64_t k = 0;
	double best = 1e30;
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
	t0 = 0;
	t1 = best;
	printf("  reading the trace alone: %.1f M events/s\n", (double)k / (t1 - t0) / 1e6);
	printf("  peak RSS: %.1f MiB\n", (double)max_rss_kb() / 1024.0);
	if (argc <= 2)
		unlink(path);
	return 0;
}
