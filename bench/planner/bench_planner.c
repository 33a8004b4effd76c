/*
 * bench_planner.c - figures for the planner.
 *
 *   bench_planner gen N...        for each N: generated traces of about N
 *                                 requests (1F1B dense, interleaved with
 *                                 recomputation, 1F1B with MoE, 1F1B with
 *                                 random-size op temporaries); per
 *                                 algorithm: planning time, pool / lower
 *                                 bound, memory per request
 *   bench_planner csv FILE...     MiniMalloc instances: pool vs the best known
 *                                 capacity (1,048,576 for all 11)
 *
 * Times are the planning's CPU time (one thread), which a shared machine
 * disturbs less than wall time.  Each plan runs in a child process so its
 * peak memory can be measured:
 * the child generates the requests, resets its peak-RSS counter
 * (/proc/self/clear_refs), plans, and reports (VmHWM - VmRSS before) / N as
 * the planner's working bytes per request; the request array itself is
 * sizeof(stp_req) per request more (the B/request column includes it).
 * With dynamic requests (MoE), the trace's own dynamic requests are replayed
 * into their reusable space: the share that fits, and (pool + the fallback
 * allocator's peak) against the bound with them, both without persistent bytes.  Greedy-by-size is skipped above
 * $BENCH_GREEDY_MAX requests (default 100000): it is quadratic at worst.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stprof/plan.h"

static long proc_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, field, n))
			v = atol(line + n + 1);
	if (f)
		fclose(f);
	return v;
}

static void reset_peak(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

typedef struct result {
	double seconds, ratio, np_ratio, bytes_per_req;
	double dyn_ratio, dyn_fit;
	double wall; /* (pool + fallback peak) / bound with dynamic; share of dynamic requests that fit */
	size_t n;
	int ok;
} result;

static int make(const char *kind, size_t n, stp_reqs *r)
{
	stp_gen_opts o;
	stp_gen_opts_init(&o);
	if (!strcmp(kind, "interleaved+recompute")) {
		o.schedule = STP_GEN_INTERLEAVED;
		o.recompute = 1;
	} else if (!strcmp(kind, "1f1b+moe")) {
		o.experts = 8;
	} else if (!strcmp(kind, "1f1b+jitter")) {
		o.jitter = 1;
	}
	o.stage = 1;
	stp_gen_opts_for_size(&o, n);
	char err[256];
	if (stp_gen_megatron(&o, r, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

static result run_one(const char *kind, size_t n, stp_plan_algo algo)
{
	result res = {0};
	int fd[2];
	if (pipe(fd))
		return res;
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		stp_reqs r;
		if (make(kind, n, &r))
			_exit(1);
		reset_peak();
		long base = proc_kb("VmRSS:");
		stp_plan_opts o;
		stp_plan_opts_init(&o);
		o.algo = algo;
		stp_plan p;
		char err[512];
		struct timespec c0, c1;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		if (stp_plan_build(&r, &o, &p, err, sizeof err)) {
			fprintf(stderr, "%s\n", err);
			_exit(1);
		}
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		long peak = proc_kb("VmHWM:");
		result x = {0};
		x.n = r.n;
		x.seconds = (double)(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) * 1e-9;
		x.wall = p.stats.seconds;
		x.ratio = (double)p.pool / (double)p.stats.lower_bound;
		x.np_ratio = (double)(p.pool - p.stats.persistent_bytes) /
		             (double)(p.stats.lower_bound - p.stats.persistent_bytes);
		x.bytes_per_req = (double)(peak - base) * 1024.0 / (double)r.n;
		if (p.stats.dynamic_requests) {
			x.dyn_ratio = (double)(p.pool + p.stats.dynamic_fallback_peak - p.stats.persistent_bytes) /
			              (double)(p.stats.lower_bound_all - p.stats.persistent_bytes);
			x.dyn_fit = (double)p.stats.dynamic_fit / (double)p.stats.dynamic_requests;
		}
		x.ok = stp_plan_verify(&r, &p, err, sizeof err) == 0;
		if (!x.ok)
			fprintf(stderr, "INVALID PLAN: %s\n", err);
		if (write(fd[1], &x, sizeof x) != sizeof x)
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	if (read(fd[0], &res, sizeof res) != sizeof res)
		res.ok = -1;
	close(fd[0]);
	int st;
	waitpid(pid, &st, 0);
	return res;
}

static int gen_main(int argc, char **argv)
{
	const char *kinds[] = {"1f1b", "interleaved+recompute", "1f1b+moe", "1f1b+jitter"};
	const char *algos[] = {"stalloc", "stalloc-only", "greedy"};
	const char *gm = getenv("BENCH_GREEDY_MAX");
	size_t greedy_max = gm ? strtoul(gm, NULL, 10) : 100000;
	printf("%-22s %9s %-13s %9s %11s %14s %10s %8s  %s\n", "trace", "requests", "algorithm", "cpu s", "pool/bound",
	       "non-persist.", "B/request", "verified", "dynamic: non-persistent (pool+fallback)/bound, fit");
	int bad = 0;
	for (int a = 1; a < argc; a++) {
		size_t n = strtoul(argv[a], NULL, 10);
		for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
			for (int al = 0; al < 3; al++) {
				stp_plan_algo algo = al == 0 ? STP_ALGO_STALLOC : al == 1 ? STP_ALGO_STALLOC_ONLY : STP_ALGO_GREEDY;
				if (algo == STP_ALGO_GREEDY && n > greedy_max) {
					printf("%-22s %9zu %-13s %9s\n", kinds[k], n, algos[al], "skipped");
					continue;
				}
				result x = run_one(kinds[k], n, algo);
				if (x.ok <= 0)
					bad = 1;
				printf("%-22s %9zu %-13s %9.3f %11.4f %14.4f %10.0f %8s", kinds[k], x.n, algos[al], x.seconds,
				       x.ratio, x.np_ratio, x.bytes_per_req + sizeof(stp_req), x.ok > 0 ? "yes" : "NO");
				if (x.dyn_fit > 0 || x.dyn_ratio > 0)
					printf("  %.4f, %.0f%%", x.dyn_ratio, 100 * x.dyn_fit);
				printf("\n");
				fflush(stdout);
			}
		}
	}
	return bad;
}

static int csv_main(int argc, char **argv)
{
	const double best = 1048576.0;
	printf("%-16s %6s %10s %14s %14s %14s\n", "instance", "bufs", "bound", "stalloc", "stalloc-only", "greedy");
	double sum[3] = {0};
	int cnt = 0, bad = 0;
	for (int a = 1; a < argc; a++) {
		stp_reqs r;
		uint64_t *off;
		char err[512];
		if (stp_reqs_read_csv(argv[a], &r, &off, err, sizeof err)) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		free(off);
		const char *base = strrchr(argv[a], '/');
		printf("%-16s %6zu %10llu", base ? base + 1 : argv[a], r.n, (unsigned long long)stp_lower_bound(&r, 0));
		for (int al = 0; al < 3; al++) {
			stp_plan_opts o;
			stp_plan_opts_init(&o);
			o.algo = al == 0 ? STP_ALGO_STALLOC : al == 1 ? STP_ALGO_STALLOC_ONLY : STP_ALGO_GREEDY;
			stp_plan p;
			if (stp_plan_build(&r, &o, &p, err, sizeof err) || stp_plan_verify(&r, &p, err, sizeof err)) {
				fprintf(stderr, "%s\n", err);
				bad = 1;
				continue;
			}
			printf(" %8llu %+4.0f%%", (unsigned long long)p.pool, (p.pool / best - 1) * 100);
			sum[al] += p.pool / best - 1;
			stp_plan_free(&p);
		}
		cnt++;
		printf("\n");
		stp_reqs_free(&r);
	}
	if (cnt)
		printf("%-16s %6s %10s %13.1f%% %13.1f%% %13.1f%%  (mean above best known)\n", "mean", "", "",
		       100 * sum[0] / cnt, 100 * sum[1] / cnt, 100 * sum[2] / cnt);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "gen"))
		return gen_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "csv"))
		return csv_main(argc - 1, argv + 1);
	fprintf(stderr, "usage: bench_planner gen N... | csv FILE...\n");
	return 2;
}
