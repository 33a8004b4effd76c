/*
 * plan_lifetimes.c - `stprof plan --lifetimes TRACE... -o MODEL`: learns a
 * lifetime model (planner/lifetime_learn.c, stprof/lifetimes.h) from the
 * host-heap allocations of one or more traces, writes it, and prints the
 * lifetimes seen and the model's accuracy on a held-out trace (--test) as
 * Llama's Table 3 gives it: weighted by allocations and unweighted (by
 * calling context).  `stprof run --plan MODEL -- PROGRAM` then runs a
 * program with libstalloc placing its allocations by predicted class
 * (allocator/lifetime_*.c, docs/lifetimes.md).
 * Exit: 0 done, 1 bad input, 2 usage.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "guard.h"
#include "input.h"
#include "lifetimes_report.h"
#include "stprof/lifetimes.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: stprof plan --lifetimes [OPTIONS] TRACE... -o MODEL\n"
	        "\n"
	        "Learns the lifetime class of the host-heap allocations of every calling\n"
	        "context in the traces (Llama's log-scale classes: <10ms, <100ms, <1s, <10s,\n"
	        "<100s, <1000s, >=1000s, never freed; a context's class is the class of its\n"
	        "objects' 95th-percentile lifetime), with the prefixes of every context so\n"
	        "that a context never seen is predicted from the frames it shares with\n"
	        "known ones.  `stprof run --plan MODEL -- PROGRAM` then places the\n"
	        "program's allocations by predicted class in 2 MiB huge pages\n"
	        "(docs/lifetimes.md).\n"
	        "\n"
	        "Options:\n"
	        "  -o, --output MODEL  where to write the model (required)\n"
	        "      --test TRACE    a held-out trace: print the model's accuracy on its\n"
	        "                      contexts, weighted by allocations and unweighted\n"
	        "      --depth N       frames of a calling context (1..%d, default %d)\n"
	        "  -q, --quiet         print nothing but errors (else the lifetime section of\n"
	        "                      the report follows: what the model would do with the\n"
	        "                      held-out run, or the first trace)\n"
	        "  -h, --help          this text\n",
	        STP_LT_DEPTH_MAX, STP_LT_DEPTH_DEFAULT);
}

static double pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0.0; }

static void print_hist(const char *what, const uint64_t *h)
{
	uint64_t n = 0;
	for (unsigned c = 0; c < STP_LT_CLASSES; c++)
		n += h[c];
	printf("  %s:", what);
	for (unsigned c = 0; c < STP_LT_CLASSES; c++)
		printf(" %s %.1f%%", stp_lt_class_name(c), pct(h[c], n));
	printf("\n");
}

int cmd_plan_lifetimes(int argc, char **argv)
{
	enum { O_TEST = 256, O_DEPTH, O_LIFETIMES };
	static const struct option opts[] = {{"output", required_argument, 0, 'o'}, {"test", required_argument, 0, O_TEST},
	                                     {"depth", required_argument, 0, O_DEPTH},
	                                     {"lifetimes", no_argument, 0, O_LIFETIMES},
	                                     {"quiet", no_argument, 0, 'q'},           {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	const char *out = NULL, *test = NULL;
	uint64_t depth = STP_LT_DEPTH_DEFAULT;
	int quiet = 0, c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case O_TEST: test = optarg; break;
		case O_DEPTH:
			if (stprof_parse_uint(optarg, STP_LT_DEPTH_MAX, &depth) < 0 || !depth) {
				stprof_err("plan: --depth wants 1..%d, not '%s'", STP_LT_DEPTH_MAX, optarg);
				return 2;
			}
			break;
		case O_LIFETIMES: break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc || !out) {
		stprof_err("plan --lifetimes: %s", optind >= argc ? "no trace given" : "no model file given (-o MODEL)");
		usage(stderr);
		return 2;
	}
	char err[1024];
	/* the model is written as every output is: not over an input, refused
	 * before the work when it may not be written (stprof/outfile.h) */
	if (stprof_refuse_same("plan --lifetimes", out, (const char *const *)argv + optind, (size_t)(argc - optind)))
		return 2;
	if (stp_outfile_check(out, &stp_outkind_lifetimes, err, sizeof err) < 0) {
		stprof_err("plan --lifetimes: %s", err);
		return 1;
	}
	if (stprof_inputs("plan --lifetimes", argc, argv, optind, STPROF_IN_TRACE) ||
	    (test && stprof_input("plan --lifetimes", &test, STPROF_IN_TRACE)))
		return 1;
	stp_lt_learner *l = stp_lt_learner_new((uint32_t)depth);
	if (!l) {
		stprof_err("plan --lifetimes: out of memory");
		return 1;
	}
	for (int i = optind; i < argc; i++)
		if (stp_lt_learner_add(l, argv[i], err, sizeof err) < 0) {
			stprof_err("%s", err);
			stp_lt_learner_free(l);
			return 1;
		}
	stp_lt_model m;
	char **lines = NULL;
	size_t nlines = 0;
	if (stp_lt_learner_model(l, &m) < 0) {
		stprof_err("plan --lifetimes: out of memory");
		stp_lt_learner_free(l);
		return 1;
	}
	nlines = stp_lt_learner_comments(l, &m, &lines, 40);
	int rc = stp_lt_write(out, &m, (const char *const *)lines, nlines, err, sizeof err);
	for (size_t i = 0; i < nlines; i++)
		free(lines[i]);
	free(lines);
	if (rc < 0) {
		stprof_err("%s", err);
		goto done;
	}
	if (!quiet) {
		uint64_t h[STP_LT_CLASSES];
		stp_lt_learner_histogram(l, h);
		printf("stprof plan --lifetimes: %d trace%s, %" PRIu64 " host allocations from %" PRIu64
		       " calling contexts (%u frames)\n",
		       argc - optind, argc - optind == 1 ? "" : "s", stp_lt_learner_allocs(l), stp_lt_learner_contexts(l),
		       (unsigned)depth);
		print_hist("lifetimes", h);
		printf("  model: %" PRIu64 " context prefixes, unseen contexts without shared frames: %s; written to %s\n",
		       m.n, stp_lt_class_name(m.fallback), out);
	}
	if (test) {
		stp_lt_learner *t = stp_lt_learner_new((uint32_t)depth);
		if (!t || stp_lt_learner_add(t, test, err, sizeof err) < 0) {
			stprof_err("%s", t ? err : "plan --lifetimes: out of memory");
			stp_lt_learner_free(t);
			rc = -1;
			goto done;
		}
		stp_lt_accuracy a;
		stp_lt_evaluate(&m, t, &a);
		if (!quiet) {
			printf("  held-out %s: %" PRIu64 " allocations, %" PRIu64 " contexts\n", test, a.allocs, a.contexts);
			printf("  accuracy (Llama Table 3): weighted %.1f%%, unweighted %.1f%%; within one class: weighted "
			       "%.1f%%, unweighted %.1f%%\n",
			       pct(a.alloc_exact, a.allocs), pct(a.ctx_exact, a.contexts), pct(a.alloc_near, a.allocs),
			       pct(a.ctx_near, a.contexts));
			printf("  contexts in the model: %.1f%% (%.1f%% of allocations); predicted from shared frames: "
			       "%.1f%% (%.1f%%)\n",
			       pct(a.ctx_known, a.contexts), pct(a.alloc_known, a.allocs), pct(a.ctx_backoff, a.contexts),
			       pct(a.alloc_backoff, a.allocs));
		}
		stp_lt_learner_free(t);
	}
	if (!quiet) {
		/* what the model would do with the held-out run (else the first) */
		char what[1100];
		snprintf(what, sizeof what, "the model just learned%s", test ? ", on the held-out run" : "");
		lifetimes_data *ld = malloc(sizeof *ld);
		if (!ld || lifetimes_compute(test ? test : argv[optind], &m, what, ld, err, sizeof err) < 0) {
			stprof_err("%s", ld ? err : "out of memory");
			rc = -1;
		} else if (stp_report_lifetimes_text(&ld->view, stdout) < 0) {
			rc = -1;
		}
		free(ld);
	}
done:
	stp_lt_model_free(&m);
	stp_lt_learner_free(l);
	return rc < 0 ? 1 : 0;
}
