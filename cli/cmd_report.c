/*
 * cmd_report.c - `stprof report [OPTIONS] TRACE`: diagnose a trace and
 * print the report (text by default, or JSON / HTML).  Exit 0 on success,
 * 1 when the trace is damaged or the output cannot be written, 2 on usage
 * errors.  A trace cut short by a killed program is not damaged: the
 * report covers what was read and says so.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "children.h"
#include "commands.h"
#include "lifetimes_report.h"
#include "stprof/detector.h"
#include "stprof/report.h"
#include "guard.h"
#include "input.h"
#include "snapshot_cli.h"
#include "traceset.h"
#include "programtrace.h"
#include "selfcheck.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: stprof report [OPTIONS] TRACE\n"
	        "       stprof report [OPTIONS] TRACE TRACE... | DIR    (several ranks)\n\n"
	        "Reads a trace recorded by `stprof record` and tells where the memory went: objects\n"
	        "allocated, freed and still live, the peak and when it happened, iterations and\n"
	        "phases, lifetime classes (persistent / scoped / transient / init-only / leaked),\n"
	        "the call sites holding the most memory at the peak, and inefficiency patterns\n"
	        "(DrGPUM): early allocation, late deallocation, redundant allocation, unused\n"
	        "allocation, memory leak, temporary idleness, dead write, plus a late-free\n"
	        "heuristic for host traces.  Findings are listed worst first (bytes x time wasted).\n"
	        "Patterns that need access events are reported as unavailable when the trace has\n"
	        "none.  See docs/report.md for every definition.\n\n"
	        "Several ranks: given several traces (e.g. one per rank of a torchrun job), a\n"
	        "directory of rank traces, or a trace with rank traces beside it (FILE.rank<R>,\n"
	        "what `stprof torchrun ...` writes), it reports a row per rank (peak live and\n"
	        "reserved bytes, when, iteration and phase, iterations) and one merged view:\n"
	        "which rank peaks, by how much, and the call sites and phases whose bytes differ\n"
	        "most between it and the others.  A trace without a rank (the launcher) is listed,\n"
	        "not compared.  See docs/report.md, \"Several ranks\".\n\n"
	        "Output:\n"
	        "  -f, --format FMT        text (default), json (docs/report-json.md) or html (one\n"
	        "                          self-contained page: an interactive memory timeline of\n"
	        "                          every object, the allocator state at any moment, plots)\n"
	        "      --viewer-objects N  html: objects the timeline draws one by one (1000000); the\n"
	        "                          rest (the smallest by bytes x lifetime, findings kept) as\n"
	        "                          one band; 0 leaves the timeline out\n"
	        "      --no-viewer         html: the static report only (same as --viewer-objects 0)\n"
	        "  -o, --output FILE       write to FILE instead of standard output\n"
	        "  -n, --top N             call sites and findings to list (10), in every format;\n"
	        "                          JSON adds the sites its findings and models name\n"
	        "      --all               list every call site and finding (a JSON report of a\n"
	        "                          large run can then reach gigabytes)\n"
	        "      --frames N          frames shown per call path (4, at most 64)\n"
	        "      --all-frames        call paths as recorded: PyTorch's, CUDA's and the\n"
	        "                          interpreter's frames too, full C++ names (by default\n"
	        "                          a path starts at the user's own line, the operator\n"
	        "                          that allocated named, e.g. (aten::addmm))\n"
	        "      --group BY          text: the top call sites summed by the user's function,\n"
	        "                          line or module (site, the default, lists each site)\n"
	        "      --models-detail     text: the allocator models' full section even for a trace\n"
	        "                          without device allocations (a short summary by default)\n"
	        "      --progress          progress on standard error (default when it is a terminal)\n"
	        "      --no-progress       no progress\n"
	        "      --no-ranks          report on TRACE alone even when rank traces are beside it\n"
	        "      --check             write no report: check its figures against each other (classes\n"
	        "                          and call sites sum to the analyzed space's, peaks within\n"
	        "                          totals, ...; docs/report.md, \"Self-check\"); exit 1 when they\n"
	        "                          do not add up\n"
	        "      --no-lifetimes      leave out the lifetime section a trace without iterations\n"
	        "                          gets in text and JSON (classes by site over time, huge-page\n"
	        "                          footprint per allocator model; docs/lifetimes.md)\n\n"
	        "Analysis:\n"
	        "      --min-size SIZE     ignore allocations smaller than SIZE (0; 4k, 1M, ...)\n"
	        "      --window T0:T1      report the peak of this stretch of the trace and the call\n"
	        "                          sites live at it, and the findings whose worst case falls\n"
	        "                          in it; times since the first event with a unit (ns, us,\n"
	        "                          ms, s), e.g. 1.5s:2s, either side may be empty.  Classes,\n"
	        "                          totals and the allocator models stay the whole trace's\n"
	        "      --iteration N       the same for iteration N (as numbered in the report)\n"
	        "      --iterations MODE   auto (markers, else detect; default), markers, detect, none\n"
	        "      --detect-window N   allocations examined to detect iterations (2097152)\n"
	        "      --site-depth N      frames past the allocator's own that make a call site (12)\n"
	        "      --space SPACE       the memory space analyzed in depth: auto (default: device\n"
	        "                          memory, else a PyTorch run's CPU tensors, else the highest\n"
	        "                          peak), host (the heap of the interpreter and libraries),\n"
	        "                          tensors, device\n"
	        "      --partial           when the trace is damaged, report what was read before the\n"
	        "                          damage (the exit status is still 1)\n\n"
	        "Allocator models (docs/allocator-models.md):\n"
	        "      --models LIST       allocator models to replay the allocations through, comma-\n"
	        "                          separated: pytorch (PyTorch's caching allocator as the program\n"
	        "                          ran it; always included), expandable (the same with\n"
	        "                          expandable_segments flipped), bfc, raw (cudaMalloc per\n"
	        "                          allocation); all (default) or none\n"
	        "      --no-models         same as --models none\n"
	        "      --capacity SIZE     device capacity for the OOM and retry simulation (e.g. 80G;\n"
	        "                          default unlimited)\n"
	        "      --alloc-conf STR    the PYTORCH_ALLOC_CONF the program ran with, e.g.\n"
	        "                          expandable_segments:True,max_split_size_mb:128\n"
	        "      --no-recommend      do not try settings (max_split_size_mb, expandable_segments,\n"
	        "                          roundup_power2_divisions)\n"
	        "      --sim-min-size SIZE traces without device allocations: host allocations of at\n"
	        "                          least SIZE are replayed as if made on a GPU (512)\n\n"
	        "Pattern thresholds (DrGPUM's, but early allocation's: DrGPUM's is 1):\n"
	        "      --early-apis N      early allocation: at least N APIs between the allocation\n"
	        "                          and the first access (2)\n"
	        "      --late-apis N       late deallocation: at least N APIs between the last access\n"
	        "                          and the free (1)\n"
	        "      --idle-apis N       temporary idleness: at least N APIs between two accesses (2)\n"
	        "      --redundant-pct P   redundant allocation: sizes within P%% (10)\n"
	        "      --late-free-quantile Q  late free (host heuristic): freed later than the fraction\n"
	        "                          Q of its peers (0.9)\n"
	        "      --late-free-segments N  ... and at least N timeline segments after them (2)\n"
	        "      --late-free-peers N ... judged only with at least N peers (5)\n\n"
	        "  -h, --help              this help\n\n"
	        "Exit status: 0 reported; 1 the trace is damaged or unreadable, or the output could\n"
	        "not be written; 2 bad usage.\n");
}

static int check_only; /* --check */

/* --check: the figures checked against each other (stp_det_check), no
 * report written.  Returns the exit status: 0 when they add up. */
static int check_results(stp_det *const *d, const char *const *paths, size_t n)
{
	unsigned bad = 0;
	for (size_t i = 0; i < n; i++)
		if (d[i])
			bad += selfcheck_report(d[i], paths[i]);
	if (!bad)
		fprintf(stderr, "stprof report: self-check: the figures add up (%zu trace%s)\n", n, n == 1 ? "" : "s");
	return bad ? 1 : 0;
}


static void progress(void *ctx, int pass, uint64_t done, uint64_t total)
{
	if (total)
		fprintf(stderr, "\rstprof report: pass %d/2, %3.0f%%", pass, 100.0 * (double)done / (double)total);
	*(int *)ctx = 1;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* --iteration N: the window of iteration N, from a run of the detector's
 * first pass (markers, else detection).  -1 after printing why not. */
static int iteration_window(const char *trace, stp_det_options *o, int64_t n)
{
	char err[512];
	stp_det *t = stp_det_timeline_run(trace, o, err, sizeof err);
	if (!t) {
		stprof_err("%s", err);
		return -1;
	}
	const stp_det_timeline *tl = &stp_det_result_of(t)->timeline;
	int rc = -1;
	for (uint32_t i = 0; i < tl->niterations; i++)
		if (tl->iterations[i].index == n) {
			o->has_window = 1;
			o->window_begin_ns = tl->iterations[i].begin_ns;
			o->window_end_ns = tl->iterations[i].end_ns;
			rc = 0;
			break;
		}
	if (rc < 0) {
		if (tl->niterations)
			stprof_err("report: %s: no iteration %" PRId64 " (iterations %" PRId64 " to %" PRId64 ")", trace, n,
			           tl->iterations[0].index, tl->iterations[tl->niterations - 1].index);
		else
			stprof_err("report: %s: no iterations found (markers or detection): --window instead", trace);
	}
	stp_det_free(t);
	return rc;
}

/* After the error of a damaged trace, when no report follows. */
#define PARTIAL_HINT " (--partial: report what was read before it)"

/* Writes to out (NULL: standard output; else as stprof/outfile.h says)
 * with fn(arg); 0, or 1 after the error. */
static int write_out(const char *out, const stp_outkind *kind, int (*fn)(void *, FILE *), void *arg)
{
	char err[1024];
	if (!out) {
		int rc = fn(arg, stdout);
		if (fflush(stdout) != 0 || rc < 0) {
			stprof_err("standard output: write failed: %s", strerror(errno));
			return 1;
		}
		return 0;
	}
	stp_outfile o;
	if (!stp_outfile_open(&o, out, kind, err, sizeof err)) {
		stprof_err("%s", err);
		return 1;
	}
	if (fn(arg, o.f) < 0) {
		stprof_err("%s: write failed: %s", out, strerror(errno));
		stp_outfile_abort(&o);
		return 1;
	}
	if (stp_outfile_commit(&o, err, sizeof err) < 0) {
		stprof_err("%s", err);
		return 1;
	}
	return 0;
}

struct one {
	stp_det *d;
	const stp_report_options *ro;
	int (*fn)(stp_det *, const stp_report_options *, FILE *);
	const char *lifetimes; /* the trace whose lifetime section follows, or NULL */
};

static int write_one(void *arg, FILE *f)
{
	struct one *o = arg;
	if (!o->lifetimes)
		return o->fn(o->d, o->ro, f);
	/* the Lifetimes section, at the end of the text and in the JSON; when
	 * it cannot be made, the report without it and the error */
	stp_report_options ro = *o->ro;
	lifetimes_data *ld = malloc(sizeof *ld);
	char lerr[512] = "";
	if (!ld)
		stprof_err("%s: out of memory for the lifetime section", o->lifetimes);
	else if (lifetimes_compute(o->lifetimes, NULL, NULL, ld, lerr, sizeof lerr) < 0)
		stprof_err("%s", lerr);
	else
		ro.lifetimes = &ld->view;
	int rc = o->fn(o->d, &ro, f);
	free(ld);
	return rc;
}

struct several {
	stp_det **d;
	size_t n;
	const stp_report_options *ro;
	int (*fn)(stp_det *const *, size_t, const stp_report_options *, FILE *);
};

static int write_several(void *arg, FILE *f)
{
	struct several *s = arg;
	return s->fn(s->d, s->n, s->ro, f);
}

/* The report on several traces (ranks): the detector on each, then one
 * report.  Exit status as for one trace. */
static int report_several(const char *const *traces, size_t n, const stp_det_options *o,
                          const stp_report_options *ro,
                          int (*fn)(stp_det *const *, size_t, const stp_report_options *, FILE *), const char *out,
                          const stp_outkind *kind, int partial)
{
	stp_det **d = calloc(n, sizeof *d);
	if (!d)
		return 1;
	int status = 0;
	char err[512];
	for (size_t i = 0; i < n && !status; i++) {
		const char *trace = traces[i];
		int printed = 0;
		stp_det_options oi = *o;
		oi.progress_ctx = &printed;
		stprof_warn_cut(trace);
		if (stprof_pickle_input(&trace, 0)) {
			status = 1;
			break;
		}
		if (oi.progress)
			fprintf(stderr, "\rstprof report: %s (%zu of %zu)\n", traces[i], i + 1, n);
		d[i] = selfcheck_det_run(trace, &oi, err, sizeof err);
		if (printed)
			fprintf(stderr, "\r%40s\r", "");
		if (!d[i]) {
			stprof_err("%s", err);
			status = 1;
		} else if (stp_det_result_of(d[i])->error) {
			stprof_err("%s%s", stp_det_result_of(d[i])->error, partial ? "" : PARTIAL_HINT);
			if (!partial)
				status = 1;
		}
	}
	if (!status || partial) {
		size_t got = 0;
		for (size_t i = 0; i < n; i++) {
			stp_det *x = d[i];
			d[i] = NULL;
			if (x)
				d[got++] = x;
		}
		struct several s = {d, got, ro, fn};
		if (check_only) {
			const char **paths = calloc(got ? got : 1, sizeof *paths);
			for (size_t i = 0; paths && i < got; i++)
				paths[i] = stp_det_result_of(d[i])->path;
			if (!paths || check_results(d, paths, got))
				status = 1;
			free(paths);
		} else if (got && write_out(out, kind, write_several, &s))
			status = 1;
		for (size_t i = 0; i < got; i++)
			if (stp_det_result_of(d[i])->error)
				status = 1;
	}
	for (size_t i = 0; i < n; i++)
		stp_det_free(d[i]);
	free(d);
	return status;
}

/* A bad option value: the option, what it wants, what it got. */
static int bad(const char *opt, const char *want)
{
	return stprof_usage_error("report", "%s wants %s, not '%s'", opt, want, optarg);
}

int cmd_report(int argc, char **argv)
{
	enum { O_FRAMES = 256, O_MIN, O_ITER, O_WIN, O_PARTIAL, O_EARLY, O_LATE, O_IDLE, O_RED, O_LFQ, O_LFS,
	       O_LFP, O_PROG, O_NOPROG, O_DEPTH, O_MODELS, O_NOMODELS, O_CAP, O_CONF, O_NOREC, O_SIMMIN, O_ALL, O_GROUP, O_MDETAIL, O_WINDOW, O_ITERATION,
	       O_SPACE, O_NORANKS, O_NOLIFETIMES, O_VOBJ, O_NOVIEW, O_CHECK, O_ALLFRAMES };
	static const struct option opts[] = {
		{"format", required_argument, 0, 'f'}, {"output", required_argument, 0, 'o'},
		{"top", required_argument, 0, 'n'}, {"frames", required_argument, 0, O_FRAMES},
		{"min-size", required_argument, 0, O_MIN}, {"iterations", required_argument, 0, O_ITER},
		{"detect-window", required_argument, 0, O_WIN}, {"partial", no_argument, 0, O_PARTIAL},
		{"early-apis", required_argument, 0, O_EARLY}, {"late-apis", required_argument, 0, O_LATE},
		{"idle-apis", required_argument, 0, O_IDLE}, {"redundant-pct", required_argument, 0, O_RED},
		{"late-free-quantile", required_argument, 0, O_LFQ}, {"late-free-segments", required_argument, 0, O_LFS},
		{"late-free-peers", required_argument, 0, O_LFP}, {"progress", no_argument, 0, O_PROG},
		{"no-progress", no_argument, 0, O_NOPROG}, {"site-depth", required_argument, 0, O_DEPTH},
		{"models", required_argument, 0, O_MODELS}, {"no-models", no_argument, 0, O_NOMODELS},
		{"capacity", required_argument, 0, O_CAP}, {"alloc-conf", required_argument, 0, O_CONF},
		{"no-recommend", no_argument, 0, O_NOREC}, {"all", no_argument, 0, O_ALL},
		{"group", required_argument, 0, O_GROUP}, {"models-detail", no_argument, 0, O_MDETAIL},
		{"window", required_argument, 0, O_WINDOW}, {"iteration", required_argument, 0, O_ITERATION},
		{"sim-min-size", required_argument, 0, O_SIMMIN}, {"space", required_argument, 0, O_SPACE},
		{"no-ranks", no_argument, 0, O_NORANKS}, {"no-lifetimes", no_argument, 0, O_NOLIFETIMES},
		{"viewer-objects", required_argument, 0, O_VOBJ}, {"no-viewer", no_argument, 0, O_NOVIEW},
		{"check", no_argument, 0, O_CHECK}, {"all-frames", no_argument, 0, O_ALLFRAMES},
		{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	stp_det_options o;
	stp_det_options_default(&o);
	stp_report_options ro;
	stp_report_options_default(&ro);
	const char *format = "text", *out = NULL;
	int partial = 0, want_progress = isatty(2), no_ranks = 0, lifetimes = 1, c;
	int64_t iteration = -1;
	uint64_t v;
	double x;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:o:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'o': out = optarg; break;
		case 'n':
			if (stprof_parse_uint(optarg, 1000000, &v) < 0)
				return bad("-n/--top", "a number from 0 to 1000000");
			ro.top = (unsigned)v;
			break;
		case O_ALL: ro.top = UINT32_MAX; break;
		case O_MDETAIL: ro.models_detail = 1; break;
		case O_ALLFRAMES: o.all_frames = 1; break;
		case O_WINDOW:
			if (stprof_parse_window(optarg, &o.window_begin_ns, &o.window_end_ns) < 0)
				return bad("--window", "T0:T1 with T0 <= T1 (e.g. 1.5s:2s, 100ms:)");
			o.has_window = 1;
			break;
		case O_ITERATION:
			if (stprof_parse_uint(optarg, INT64_MAX, &v) < 0)
				return bad("--iteration", "an iteration number");
			iteration = (int64_t)v;
			break;
		case O_GROUP:
			if (!strcmp(optarg, "site"))
				ro.group = STP_GROUP_SITE;
			else if (!strcmp(optarg, "function"))
				ro.group = STP_GROUP_FUNCTION;
			else if (!strcmp(optarg, "module"))
				ro.group = STP_GROUP_MODULE;
			else if (!strcmp(optarg, "line"))
				ro.group = STP_GROUP_LINE;
			else
				return bad("--group", "site, function, line or module");
			break;
		case O_FRAMES:
			if (stprof_parse_uint(optarg, 64, &v) < 0)
				return bad("--frames", "a number from 0 to 64");
			ro.frames = (unsigned)v;
			break;
		case O_MIN:
			if (stprof_parse_size(optarg, &o.min_size) < 0)
				return bad("--min-size", "a size (e.g. 0, 4k, 1M)");
			break;
		case O_ITER:
			if (!strcmp(optarg, "auto")) o.iter_mode = STP_DET_ITER_AUTO;
			else if (!strcmp(optarg, "markers")) o.iter_mode = STP_DET_ITER_MARKERS;
			else if (!strcmp(optarg, "detect")) o.iter_mode = STP_DET_ITER_DETECT;
			else if (!strcmp(optarg, "none")) o.iter_mode = STP_DET_ITER_NONE;
			else return bad("--iterations", "auto, markers, detect or none");
			break;
		case O_WIN:
			if (stprof_parse_uint(optarg, UINT32_MAX, &v) < 0 || v < 8)
				return bad("--detect-window", "a number from 8 to 4294967295");
			o.detect_max_allocs = (uint32_t)v;
			break;
		case O_VOBJ:
			if (stprof_parse_uint(optarg, 100000000, &v) < 0)
				return bad("--viewer-objects", "a number from 0 to 100000000");
			ro.viewer_objects = v;
			break;
		case O_NOVIEW: ro.viewer_objects = 0; break;
		case O_PARTIAL: partial = 1; break;
		case O_NORANKS: no_ranks = 1; break;
		case O_CHECK: check_only = 1; break;
		case O_NOLIFETIMES: lifetimes = 0; break;
		case O_SPACE:
			if (stp_det_space_parse(optarg, &o.space) < 0)
				return bad("--space", "auto, host, tensors or device (see --help)");
			break;
		case O_DEPTH:
			if (stprof_parse_uint(optarg, 256, &v) < 0 || v < 1)
				return bad("--site-depth", "a number from 1 to 256");
			o.site_depth = (uint32_t)v;
			break;
		case O_EARLY:
		case O_LATE:
		case O_IDLE:
		case O_LFS:
		case O_LFP:
			if (stprof_parse_uint(optarg, UINT32_MAX, &v) < 0)
				return bad(c == O_EARLY ? "--early-apis" : c == O_LATE ? "--late-apis" : c == O_IDLE ? "--idle-apis"
				           : c == O_LFS ? "--late-free-segments" : "--late-free-peers",
				           "a number from 0 to 4294967295");
			*(c == O_EARLY ? &o.early_min_apis : c == O_LATE ? &o.late_min_apis : c == O_IDLE ? &o.idle_min_apis
			  : c == O_LFS ? &o.late_free_min_segments : &o.late_free_min_peers) = (uint32_t)v;
			break;
		case O_RED:
			if (parse_double(optarg, 0, 1000, &x) < 0)
				return bad("--redundant-pct", "a percentage from 0 to 1000");
			o.redundant_pct = x;
			break;
		case O_LFQ:
			if (parse_double(optarg, 0, 1, &x) < 0)
				return bad("--late-free-quantile", "a fraction from 0 to 1");
			o.late_free_quantile = x;
			break;
		case O_MODELS:
			if (stp_det_sim_models_parse(optarg, &o.sim_models) < 0) {
				stprof_err("report: --models wants a list of pytorch, expandable, bfc, raw (or all, none), "
				           "not '%s'", optarg);
				return 2;
			}
			break;
		case O_NOMODELS: o.sim_models = 0; break;
		case O_CAP:
			if (stprof_parse_size(optarg, &o.sim_capacity) < 0)
				return bad("--capacity", "a size (e.g. 80G)");
			break;
		case O_CONF: {
			allocsim_config cfg;
			char e[256];
			allocsim_config_default(&cfg, ALLOCSIM_PYTORCH);
			if (allocsim_config_parse(&cfg, optarg, e, sizeof e) < 0 || allocsim_config_check(&cfg, e, sizeof e) < 0) {
				stprof_err("report: --alloc-conf: %s", e);
				return 2;
			}
			o.sim_alloc_conf = optarg;
			break;
		}
		case O_NOREC: o.sim_no_recommend = 1; break;
		case O_SIMMIN:
			if (stprof_parse_size(optarg, &o.sim_host_min_size) < 0)
				return bad("--sim-min-size", "a size (e.g. 512, 4k)");
			break;
		case O_PROG: want_progress = 1; break;
		case O_NOPROG: want_progress = 0; break;
		case 'h': usage(stdout); return 0;
		default: return stprof_usage_hint("report", argv, "f:o:n:h", opts);
		}
	}
	if (optind >= argc)
		return stprof_usage_error("report", "wants a TRACE");
	int (*writer)(stp_det *, const stp_report_options *, FILE *) = NULL;
	int (*rwriter)(stp_det *const *, size_t, const stp_report_options *, FILE *) = NULL;
	const stp_outkind *kind;
	if (!strcmp(format, "text"))
		writer = stp_report_text, rwriter = stp_report_ranks_text, kind = &stp_outkind_report_text;
	else if (!strcmp(format, "json"))
		writer = stp_report_json, rwriter = stp_report_ranks_json, kind = &stp_outkind_report_json;
	else if (!strcmp(format, "html")) {
		writer = stp_report_html, rwriter = stp_report_ranks_html, kind = &stp_outkind_report_html;
		if (ro.viewer_objects) { /* the viewer's objects: lifetimes, modules, accesses */
			o.keep_objects = 2;
			o.keep_accesses = ro.viewer_accesses;
		}
	}
	else {
		stprof_err("report: unknown format '%s' (text, json or html)", format);
		return 2;
	}
	if (stprof_refuse_same("report", out, (const char *const *)argv + optind, (size_t)(argc - optind)))
		return 2;
	char oerr[1024];
	if (out && stp_outfile_check(out, kind, oerr, sizeof oerr) < 0) { /* before the work */
		stprof_err("report: %s", oerr);
		return 1;
	}
	if (stprof_inputs("report", argc, argv, optind, STPROF_IN_TRACE | (no_ranks ? 0 : STPROF_IN_DIR_OK))) /* pipes read once */
		return 1;
	if (want_progress) {
		o.progress = progress;
	}
	if (argc - optind > 1 || !no_ranks) {
		/* several traces, or one name standing for a run's ranks */
		traceset ts = {0};
		int found = argc - optind == 1 ? traceset_find(argv[optind], &ts) : 0;
		if (found < 0)
			return 1;
		if (found > 0 || argc - optind > 1) {
			if (iteration >= 0) {
				traceset_free(&ts);
				return stprof_usage_error("report", "--iteration takes one trace (--window applies to each)");
			}
			if (found > 0)
				stprof_err("report: %s stands for %d rank trace%s: reporting on %s (--no-ranks: on %s alone)",
				           argv[optind], found, found == 1 ? "" : "s", ts.n > ts.nranks ? "them and the launcher" : "them",
				           argv[optind]);
			int rc = report_several(found > 0 ? (const char *const *)ts.path : (const char *const *)argv + optind,
			                        found > 0 ? ts.n : (size_t)(argc - optind), &o, &ro, rwriter, out, kind, partial);
			traceset_free(&ts);
			return rc;
		}
	}
	if (iteration >= 0 && o.has_window)
		return stprof_usage_error("report", "--window and --iteration exclude each other");
	/* a wrapper's trace (env, a shim) stands for the program it became */
	char image[4096 + 64];
	program_trace("report", argv[optind], image, sizeof image, 0);
	if (iteration >= 0 && iteration_window(image, &o, iteration) < 0)
		return 1;
	int printed = 0;
	o.progress_ctx = &printed;
	char err[512];
	const char *trace = image;
	stprof_warn_cut(trace);
	if (stprof_pickle_input(&trace, 0)) /* a PyTorch snapshot: imported first */
		return 1;
	stp_det *d = selfcheck_det_run(trace, &o, err, sizeof err);
	if (printed)
		fprintf(stderr, "\r%40s\r", "");
	if (!d) {
		stprof_err("%s", err);
		return 1;
	}
	const stp_det_result *r = stp_det_result_of(d);
	if (r->error && !partial) {
		stprof_err("%s%s", r->error, PARTIAL_HINT);
		stp_det_free(d);
		return 1;
	}
	if (check_only) {
		int st = check_results(&d, &trace, 1) || r->error ? 1 : 0;
		stp_det_free(d);
		return st;
	}
	/* its child processes' traces beside it (DataLoader workers) */
	children ch;
	memset(&ch, 0, sizeof ch);
	if (writer == stp_report_text || writer == stp_report_json || writer == stp_report_html) {
		children_find(argv[optind], image, r, &ch);
		ro.children = ch.view.n ? &ch.view : NULL;
	}
	/* a program without iterations (a server, a pipeline): its lifetimes too */
	struct one one = {d, &ro, writer,
	                  !r->error && lifetimes && (writer == stp_report_text || writer == stp_report_json) &&
	                          !r->timeline.niterations ? trace : NULL};
	int rc = write_out(out, kind, write_one, &one);
	if (r->error)
		stprof_err("%s", r->error);
	int status = rc || r->error ? 1 : 0;
	children_free(&ch);
	stp_det_free(d);
	return status;
}
