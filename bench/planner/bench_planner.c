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
 *                                 capacity (1,048,576 for all 11), greedy and
 *                                 stprof with the search ($BENCH_BUDGET s,
 *                                 default 10), when the layout was found
 *   bench_planner perturb S FILE... the same instances with every size scaled
 *                                 by U[0.9, 1.1] for seeds 1..S: pool / lower
 *                                 bound, optimal or gap
 *   bench_planner bound FILE...   instances against their lower bound (real
 *                                 compiler traces: idealloc's S_1, Y_1,
 *                                 pangu_2.6B ...): greedy by size, stprof
 *                                 with the search, when found, how many
 *                                 within 0.5% of the bound
 *   bench_planner large S [N]     the same on the generated family of large
 *                                 MoE / pipeline instances (six kinds, seeds
 *                                 1..S, about N requests each; $BENCH_DUMP
 *                                 writes each as MiniMalloc's CSV)
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

/* the planner counts its budget in CPU seconds (STPROF_PLAN_CLOCK=cpu) */
static int cpu_clock(void)
{
	const char *c = getenv("STPROF_PLAN_CLOCK");
	return c && !strcmp(c, "cpu");
}

/* a MiniMalloc CSV; 0, or -1 with the reader's message on stderr */
static int read_instance(const char *path, stp_reqs *r)
{
	uint64_t *off;
	char err[512];
	if (stp_reqs_read_csv(path, r, &off, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	free(off);
	return 0;
}

/* budget for the search, seconds ($BENCH_BUDGET, default 10; 0: no
 * search, the steps before it alone) */
static double bench_budget(void)
{
	const char *b = getenv("BENCH_BUDGET");
	double v = b ? atof(b) : 10.0;
	return v >= 0 ? v : 10.0;
}

/* plans r with the default steps and the budget, verifies; 0 or -1 */
static int plan_csv(const stp_reqs *r, stp_plan_algo algo, double budget, stp_plan *p)
{
	stp_plan_opts o;
	stp_plan_opts_init(&o);
	o.algo = algo;
	o.budget = budget;
	char err[512];
	if (stp_plan_build(r, &o, p, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	if (stp_plan_verify(r, p, err, sizeof err)) {
		fprintf(stderr, "INVALID PLAN: %s\n", err);
		stp_plan_free(p);
		return -1;
	}
	return 0;
}

static const char *verdict(const stp_plan *p, char *buf, size_t len)
{
	if (p->stats.optimal)
		snprintf(buf, len, "optimal");
	else
		snprintf(buf, len, "gap %.2f%%", 100.0 * ((double)p->pool / (double)p->stats.proven_bound - 1));
	return buf;
}

/* The MiniMalloc instances at their best known capacity (1,048,576 for all
 * 11): greedy by size, then stprof's default steps with the search budget;
 * when the kept layout was found (the planner's clock: wall time, or CPU
 * time with STPROF_PLAN_CLOCK=cpu; one thread), and whether the
 * search proved it optimal or how far it is from the best proven bound. */
static int csv_main(int argc, char **argv)
{
	const double best = 1048576.0;
	double budget = bench_budget();
	printf("budget %.0f %s s per instance; %% = above the best known capacity 1,048,576\n", budget,
	       cpu_clock() ? "CPU" : "wall");
	printf("%-16s %6s %10s %14s %14s %9s %9s  %s\n", "instance", "bufs", "bound", "greedy", "stprof", "found s",
	       "total s", "result (step)");
	double sum[2] = {0};
	int cnt = 0, bad = 0, at_best = 0;
	for (int a = 1; a < argc; a++) {
		stp_reqs r;
		if (read_instance(argv[a], &r))
			return 1;
		const char *base = strrchr(argv[a], '/');
		printf("%-16s %6zu %10llu", base ? base + 1 : argv[a], r.n, (unsigned long long)stp_lower_bound(&r, 0));
		stp_plan g, p;
		if (plan_csv(&r, STP_ALGO_GREEDY, 0, &g) || plan_csv(&r, STP_ALGO_STALLOC, budget, &p)) {
			bad = 1;
			printf("\n");
			stp_reqs_free(&r);
			continue;
		}
		char v[64];
		printf(" %8llu %+4.0f%% %8llu %+4.1f%% %9.3f %9.3f  %s (%s)\n", (unsigned long long)g.pool,
		       (g.pool / best - 1) * 100, (unsigned long long)p.pool, (p.pool / best - 1) * 100,
		       p.stats.found_seconds, p.stats.seconds, verdict(&p, v, sizeof v), stp_plan_step_name(p.stats.step));
		fflush(stdout);
		sum[0] += g.pool / best - 1;
		sum[1] += p.pool / best - 1;
		at_best += p.pool <= best;
		cnt++;
		stp_plan_free(&g);
		stp_plan_free(&p);
		stp_reqs_free(&r);
	}
	if (cnt)
		printf("%-16s %6s %10s %13.1f%% %13.1f%%  (mean above best known); %d of %d at or below it\n", "mean", "",
		       "", 100 * sum[0] / cnt, 100 * sum[1] / cnt, at_best, cnt);
	printf("MiniMalloc's published times for these 11 at 1,048,576: 0.6 to 5.4 s each (its paper; per-instance\n"
	       "figures are not reproduced here)\n");
	return bad;
}

/* A generated family: every instance with each size scaled by a random
 * factor in [0.9, 1.1] (rounded to 256 bytes), per seed.  The best known
 * capacities no longer apply: the pool is compared with the lower bound
 * (max live bytes), and the search says optimal or its gap. */
static int perturb_main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench_planner perturb SEEDS FILE...\n");
		return 2;
	}
	int seeds = atoi(argv[1]);
	double budget = bench_budget();
	printf("sizes x U[0.9, 1.1] per seed; budget %.0f %s s; ratios are pool / lower bound\n", budget,
	       cpu_clock() ? "CPU" : "wall");
	printf("%-16s %4s %6s %10s %9s %9s %9s  %s\n", "instance", "seed", "bufs", "bound", "greedy", "stprof",
	       "found s", "result (step)");
	int bad = 0, cnt = 0, opt = 0, at_bound = 0;
	double sum_g = 0, sum_p = 0;
	for (int a = 2; a < argc; a++)
		for (int seed = 1; seed <= seeds; seed++) {
			stp_reqs r;
			uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(seed * 7919 + a);
			char err[512];
			if (read_instance(argv[a], &r))
				return 1;
			for (size_t i = 0; i < r.n; i++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				double f = 0.9 + 0.2 * (double)(x % 1000001) / 1e6;
				uint64_t sz = (uint64_t)((double)r.req[i].size * f) / 256 * 256;
				r.req[i].size = sz ? sz : 256;
			}
			const char *base = strrchr(argv[a], '/');
			stp_plan g, p;
			if (plan_csv(&r, STP_ALGO_GREEDY, 0, &g) || plan_csv(&r, STP_ALGO_STALLOC, budget, &p)) {
				bad = 1;
				stp_reqs_free(&r);
				continue;
			}
			const char *dump = getenv("BENCH_DUMP"); /* a folder: each instance, with greedy's offsets */
			if (dump) {
				char out[1024];
				snprintf(out, sizeof out, "%s/%s.seed%d.csv", dump, base ? base + 1 : argv[a], seed);
				if (stp_reqs_write_csv(out, &r, g.offset, err, sizeof err))
					fprintf(stderr, "%s\n", err);
			}
			double lb = (double)p.stats.lower_bound;
			char v[64];
			printf("%-16s %4d %6zu %10.0f %9.4f %9.4f %9.3f  %s (%s)\n", base ? base + 1 : argv[a], seed, r.n, lb,
			       g.pool / lb, p.pool / lb, p.stats.found_seconds, verdict(&p, v, sizeof v),
			       stp_plan_step_name(p.stats.step));
			fflush(stdout);
			cnt++;
			opt += p.stats.optimal;
			at_bound += p.pool <= p.stats.lower_bound;
			sum_g += g.pool / lb;
			sum_p += p.pool / lb;
			stp_plan_free(&g);
			stp_plan_free(&p);
			stp_reqs_free(&r);
		}
	if (cnt)
		printf("%d instances: mean pool/bound greedy %.4f, stprof %.4f; %d at the bound, %d proven optimal\n", cnt,
		       sum_g / cnt, sum_p / cnt, at_bound, opt);
	return bad;
}

/* One instance of the large family: `kind` picks the schedule and model,
 * `seed` the draws.  Expert tensors keep the sizes drawn for this iteration
 * and are static (a compiler planning one step knows them), so every
 * (layer, micro-batch, expert) has its own size; jitter adds op workspaces of
 * random sizes whose lifetimes interleave. */
static const char *const large_kinds[] = {
	"1f1b+moe8+jitter", "interleaved+moe16+recompute", "gpipe+moe4+jitter",
	"1f1b+moe32 stage 2", "interleaved+jitter", "1f1b+recompute+moe8+jitter",
};
#define NLARGE ((int)(sizeof large_kinds / sizeof *large_kinds))

static int make_large(int kind, int seed, size_t n, stp_reqs *r)
{
	stp_gen_opts o;
	stp_gen_opts_init(&o);
	o.seed = (uint64_t)seed;
	o.stages = 4;
	o.stage = 0;
	o.hidden = 2048 + 1024 * (uint64_t)(seed % 3);
	o.seq = 4096;
	switch (kind) {
	case 0: o.experts = 8, o.jitter = 1; break;
	case 1: o.schedule = STP_GEN_INTERLEAVED, o.experts = 16, o.recompute = 1; break;
	case 2: o.schedule = STP_GEN_GPIPE, o.experts = 4, o.jitter = 1; break;
	case 3: o.experts = 32, o.stage = 2; break;
	case 4: o.schedule = STP_GEN_INTERLEAVED, o.jitter = 1; break;
	default: o.recompute = 1, o.experts = 8, o.jitter = 1; break;
	}
	stp_gen_opts_for_size(&o, n);
	char err[256];
	if (stp_gen_megatron(&o, r, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	for (size_t i = 0; i < r->n; i++)
		r->req[i].flags &= ~(uint32_t)STP_REQ_DYNAMIC;
	return 0;
}

/* Writes r as MiniMalloc's CSV (for running MiniMalloc on the same
 * instance): persistent requests and the one that wraps into the next
 * iteration are live over the whole period there. */
static int dump_minimalloc(const char *dir, int kind, int seed, const stp_reqs *r)
{
	char out[1024];
	snprintf(out, sizeof out, "%s/large%d.seed%d.csv", dir, kind, seed);
	FILE *f = fopen(out, "w");
	if (!f) {
		perror(out);
		return -1;
	}
	fprintf(f, "id,lower,upper,size\n");
	for (size_t i = 0; i < r->n; i++) {
		const stp_req *q = &r->req[i];
		int whole = (q->flags & STP_REQ_PERSISTENT) || q->t_end <= q->t_start;
		fprintf(f, "%zu,%llu,%llu,%llu\n", i, whole ? 0ull : (unsigned long long)q->t_start,
		        whole ? (unsigned long long)r->period : (unsigned long long)q->t_end, (unsigned long long)q->size);
	}
	return fclose(f) ? -1 : 0;
}

/* plans r with the default steps and `budget`, greedy by size beside it;
 * prints one row: requests, static ones, bound, greedy, stprof, when found,
 * total, result.  Returns 0, or 1 when a plan does not verify. */
static int bound_row(const char *name, const stp_reqs *r, double budget, double *sum_g, int *ng, double *sum_p,
                     int *within)
{
	stp_plan g, p;
	struct timespec c0, c1;
	char err[512];
	stp_plan_opts go;
	stp_plan_opts_init(&go);
	go.algo = STP_ALGO_GREEDY;
	go.greedy_seconds = 60; /* quadratic at worst */
	clockid_t clk = cpu_clock() ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC; /* as the planner counts */
	clock_gettime(clk, &c0);
	int grc = stp_plan_build(r, &go, &g, err, sizeof err);
	clock_gettime(clk, &c1);
	double gs = (double)(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) * 1e-9;
	if (grc < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (grc == 0 && stp_plan_verify(r, &g, err, sizeof err)) {
		fprintf(stderr, "INVALID PLAN: %s\n", err);
		stp_plan_free(&g);
		return 1;
	}
	if (grc == 1)
		memset(&g, 0, sizeof g); /* stopped: no figure */
	if (plan_csv(r, STP_ALGO_STALLOC, budget, &p)) {
		stp_plan_free(&g);
		return 1;
	}
	size_t nstatic = 0;
	for (size_t i = 0; i < r->n; i++)
		nstatic += !(r->req[i].flags & (STP_REQ_PERSISTENT | STP_REQ_DYNAMIC));
	double lb = (double)p.stats.lower_bound;
	char v[64];
	printf("%-30s %7zu %7zu ", name, r->n, nstatic);
	if (g.pool)
		printf("%9.4f %7.2f", g.pool / lb, gs);
	else
		printf("%9s %7.2f", "stopped", gs);
	printf(" %9.4f %8.2f %8.2f  %s (%s)\n", p.pool / lb, p.stats.found_seconds, p.stats.seconds,
	       verdict(&p, v, sizeof v), stp_plan_step_name(p.stats.step));
	fflush(stdout);
	if (g.pool) {
		*sum_g += g.pool / lb;
		(*ng)++;
	}
	*sum_p += p.pool / lb;
	*within += p.pool / lb <= 1.005;
	stp_plan_free(&g);
	stp_plan_free(&p);
	return 0;
}

static void bound_header(double budget)
{
	printf("budget %.0f s each; ratios are pool / lower bound; times are %s seconds of one thread\n", budget,
	       cpu_clock() ? "CPU (STPROF_PLAN_CLOCK=cpu)" : "wall");
	printf("%-30s %7s %7s %9s %7s %9s %8s %8s  %s\n", "instance", "reqs", "static", "greedy", "gr. s", "stprof",
	       "found s", "total s", "result (step)");
}

static void bound_summary(int cnt, double sum_g, int ng, double sum_p, int within)
{
	if (cnt)
		printf("%d instances: mean pool/bound greedy %.4f (%d run), stprof %.4f; %d within 0.5%% of the bound\n",
		       cnt, ng ? sum_g / ng : 0, ng, sum_p / cnt, within);
}

/* Instances against their lower bound (real compiler traces: idealloc's
 * benchmarks S_1, Y_1, pangu_2.6B ...). */
static int bound_main(int argc, char **argv)
{
	double budget = bench_budget(), sg = 0, sp = 0;
	int bad = 0, within = 0, cnt = 0, ng = 0;
	bound_header(budget);
	for (int a = 1; a < argc; a++) {
		stp_reqs r;
		if (read_instance(argv[a], &r))
			return 1;
		const char *base = strrchr(argv[a], '/');
		bad |= bound_row(base ? base + 1 : argv[a], &r, budget, &sg, &ng, &sp, &within);
		cnt++;
		stp_reqs_free(&r);
	}
	bound_summary(cnt, sg, ng, sp, within);
	return bad;
}

/* The generated family of large MoE / pipeline instances: every kind for
 * seeds 1..S, about N requests each ($BENCH_DUMP: write each as a CSV). */
static int large_main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_planner large SEEDS [REQUESTS]\n");
		return 2;
	}
	int seeds = atoi(argv[1]), bad = 0, within = 0, cnt = 0, ng = 0;
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 30000;
	double budget = bench_budget(), sg = 0, sp = 0;
	const char *dump = getenv("BENCH_DUMP");
	bound_header(budget);
	for (int k = 0; k < NLARGE; k++)
		for (int seed = 1; seed <= seeds; seed++) {
			stp_reqs r;
			if (make_large(k, seed, n, &r))
				return 1;
			char name[96];
			snprintf(name, sizeof name, "%s s%d", large_kinds[k], seed);
			if (dump && dump_minimalloc(dump, k, seed, &r))
				bad = 1;
			bad |= bound_row(name, &r, budget, &sg, &ng, &sp, &within);
			cnt++;
			stp_reqs_free(&r);
		}
	bound_summary(cnt, sg, ng, sp, within);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "gen"))
		return gen_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "csv"))
		return csv_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "perturb"))
		return perturb_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "bound"))
		return bound_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "large"))
		return large_main(argc - 1, argv + 1);
	fprintf(stderr, "usage: bench_planner gen N... | csv FILE... | perturb SEEDS FILE... | bound FILE... |\n"
	                "       large SEEDS [REQUESTS]\n");
	return 2;
}
