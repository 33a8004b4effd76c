/*
 * cmd_plan.c - `stprof plan`: synthesizes an allocation plan from a trace
 * (or a MiniMalloc CSV), verifies it, writes it, and says how good it is;
 * also shows and verifies plan files.  The planner itself is planner/
 * (include/stprof/plan.h).  A trace without iteration markers gets its
 * steady iteration and phases from the detector (stp_det_timeline_run, the
 * iterations-and-phases part of the analysis), passed to the converter as a
 * sequence window and phase cuts.
 * Exit: 0 done, 1 bad input or invalid plan, 2 usage.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "stprof/detector.h"
#include "stprof/plan.h"
#include "guard.h"
#include "input.h"
#include "plan_check.h"
#include "snapshot_cli.h"
#include "util.h"
#include "programtrace.h"

#define GREEDY_AUTO_MAX 200000
#define GREEDY_MIN_SECONDS 0.02 /* the greedy baseline's CPU limit is never below this */

/* CPU seconds of this process */
static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: stprof plan [OPTIONS] TRACE [-o PLAN]\n"
	        "       stprof plan --csv IN.csv -o OUT.csv [OPTIONS]\n"
	        "       stprof plan --show PLAN\n"
	        "       stprof plan --verify PLAN|OUT.csv\n"
	        "\n"
	        "Builds an STAlloc allocation plan for one steady-state iteration of a\n"
	        "recorded program: a fixed offset inside one memory pool for every request\n"
	        "whose size and lifetime repeat, and, for requests whose size varies (MoE),\n"
	        "the address ranges they may reuse per layer group.  The plan is proven\n"
	        "free of overlaps before it is written, and the pool is compared with the\n"
	        "lower bound (the most bytes ever live at once) and with greedy-by-size.\n"
	        "\n"
	        "The iteration is cut from the trace's iteration markers (the last complete\n"
	        "one unless --iteration); phases and layers come from phase and module\n"
	        "markers.  Without iteration markers, the steady iteration the detector\n"
	        "finds in the allocation sequence is planned (as `stprof report` shows it),\n"
	        "else the whole trace as one iteration.\n"
	        "\n"
	        "Modes:\n"
	        "  TRACE               plan a trace; writes TRACE's name with .plan unless -o\n"
	        "  --csv IN.csv        plan a MiniMalloc instance (id,lower,upper,size; half-open\n"
	        "                      lifetimes); -o writes it back with an offset column\n"
	        "  --show PLAN         print a plan file: pool, bounds, phases, every entry's\n"
	        "                      offset and signature, the dynamic reusable space\n"
	        "  --lifetimes TRACE... -o MODEL  learn the lifetime classes of the host\n"
	        "                      allocations by calling context (docs/lifetimes.md;\n"
	        "                      `stprof plan --lifetimes --help`)\n"
	        "  --verify FILE       prove a plan file, or a CSV with an offset column, free of\n"
	        "                      overlaps in time and address (exit 1 when not)\n"
	        "\n"
	        "Options:\n"
	        "  -o, --output FILE   where to write the plan (or the CSV)\n"
	        "  -i, --iteration N   plan iteration N (the ITER_BEGIN marker's value)\n"
	        "      --window B:E    plan trace events B <= seq < E as the iteration\n"
	        "      --detect        find the iteration and phases from the allocation\n"
	        "                      sequence even when the trace has markers (by default\n"
	        "                      only when it has none); --no-detect: never\n"
	        "  -a, --align N       round sizes and offsets to N bytes (default: 512 for\n"
	        "                      device allocations, 16 for host ones, 1 for CSV)\n"
	        "      --algo NAME     stalloc (default: STAlloc + improvement), stalloc-only,\n"
	        "                      or greedy (greedy by size, best fit)\n"
	        "      --budget SECONDS  time for the search for a smaller pool after the\n"
	        "                      STAlloc and greedy steps (default 2; 0 = none); it\n"
	        "                      stops early at the lower bound, keeps only verified\n"
	        "                      layouts better than the best so far, and proves\n"
	        "                      optimality exactly on sets of up to 5000 requests;\n"
	        "                      larger sets are searched by parts (the peak exactly,\n"
	        "                      the rest first fit; windows in time; re-placement\n"
	        "                      around the peak)\n"
	        "      --no-fusion     do not fuse HomoPhase groups\n"
	        "      --all-kinds     plan host and device allocations together (by default a\n"
	        "                      trace with device allocations plans those, a PyTorch CPU\n"
	        "                      run its tensors, anything else its host allocations)\n"
	        "      --min-size SIZE a trace without device allocations: plan its host\n"
	        "                      allocations of at least SIZE (default 512: the\n"
	        "                      interpreter's and libraries' small objects, which no\n"
	        "                      GPU allocator sees, would fill the plan; 0 plans all;\n"
	        "                      a trace with no allocation that large is planned whole);\n"
	        "                      the plan records it, and `stprof run --plan` sends\n"
	        "                      smaller requests to the program's own allocator\n"
	        "      --varying MODE  requests whose size changes from one iteration to the\n"
	        "                      next at the same place (sequence lengths, batch sizes):\n"
	        "                      max (default) plans each at the largest size seen,\n"
	        "                      dynamic gives them STAlloc's dynamic reusable space,\n"
	        "                      off plans the sizes of the planned iteration;\n"
	        "                      --no-varying is --varying off\n"

	        "      --greedy        always run the greedy baseline for the summary, to the\n"
	        "                      end (it is quadratic at worst: by default it is skipped\n"
	        "                      above %d requests and stopped after half the planning's\n"
	        "                      CPU time)\n"
	        "      --no-greedy     never run it\n"
	        "  -n, --entries N     --show: print at most N entries (default 50, 0 = all)\n"
	        "  -q, --quiet         print nothing but errors\n"
	        "  -v, --verbose       print the planner's steps\n"
	        "  -h, --help          this help\n"
	        "\n"
	        "The file format is docs/plan-format.md; the algorithm and where it departs\n"
	        "from the STAlloc paper, docs/planner.md.\n",
	        GREEDY_AUTO_MAX);
}

static int is_plan_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	char m[8] = {0};
	size_t got = fread(m, 1, 8, f);
	fclose(f);
	return got == 8 && !memcmp(m, "STPPLAN\0", 8);
}

static int verify_file(const char *path, int quiet)
{
	char err[1024];
	stp_reqs r;
	stp_plan p;
	if (is_plan_file(path)) {
		if (stp_plan_read(path, &r, &p, err, sizeof err) < 0) {
			stprof_err("%s", err);
			return 1;
		}
	} else {
		uint64_t *off = NULL;
		if (stp_reqs_read_csv(path, &r, &off, err, sizeof err) < 0) {
			stprof_err("%s", err);
			return 1;
		}
		if (!off) {
			stprof_err("%s: no offset column to verify", path);
			stp_reqs_free(&r);
			return 1;
		}
		memset(&p, 0, sizeof p);
		p.n = r.n;
		p.offset = off;
		p.align = 1;
		for (size_t i = 0; i < r.n; i++) {
			if (off[i] > UINT64_MAX - r.req[i].size) {
				stprof_err("%s: buffer %u: offset too large", path, r.req[i].ordinal);
				stp_reqs_free(&r);
				stp_plan_free(&p);
				return 1;
			}
			if (off[i] + r.req[i].size > p.pool)
				p.pool = off[i] + r.req[i].size;
		}
	}
	int rc = stp_plan_verify(&r, &p, err, sizeof err);
	if (rc < 0)
		stprof_err("%s: INVALID: %s", path, err);
	else if (!quiet)
		printf("%s: valid: %zu requests, pool %" PRIu64 " bytes, no two overlap in time and address%s\n", path,
		       r.n, p.pool,
		       p.nplaced ? "; its start-up placements lie over slots of persistent requests made after them" : "");
	stp_plan_free(&p);
	stp_reqs_free(&r);
	return rc < 0 ? 1 : 0;
}

static int show_file(const char *path, size_t max_entries)
{
	char err[1024];
	stp_reqs r;
	stp_plan p;
	if (stp_plan_read(path, &r, &p, err, sizeof err) < 0) {
		stprof_err("%s", err);
		return 1;
	}
	printf("plan file:      %s\n", path);
	stp_plan_show(stdout, &r, &p, max_entries);
	stp_plan_free(&p);
	stp_reqs_free(&r);
	return 0;
}

/* The detector's steady iteration, when it had to find the iterations from
 * the allocation sequence (no markers) or force says so: fills win with the
 * window and *cuts with its phases (names copied).  1 when it did. */
static int detected_window(const char *path, int force, stp_window *win, stp_phase_cut **cuts, char *why,
                           size_t len)
{
	stp_det_options o;
	stp_det_options_default(&o);
	o.iter_mode = force ? STP_DET_ITER_DETECT : STP_DET_ITER_AUTO;
	char err[512];
	stp_det *d = stp_det_timeline_run(path, &o, err, sizeof err);
	if (!d)
		return 0;
	const stp_det_timeline *tl = &stp_det_result_of(d)->timeline;
	int used = 0;
	if (tl->iter_source == STP_DET_SRC_DETECTED && tl->steady >= 0 && (uint32_t)tl->steady < tl->niterations) {
		const stp_det_iteration *it = &tl->iterations[tl->steady];
		win->use_seq = 1;
		win->begin_seq = it->begin_seq;
		win->end_seq = it->end_seq;
		uint32_t np = 0;
		if (tl->phase_source != STP_DET_SRC_NONE && it->nphases &&
		    (uint64_t)it->first_phase + it->nphases <= tl->nphases)
			*cuts = calloc(it->nphases, sizeof **cuts);
		for (uint32_t k = 0; *cuts && k < it->nphases; k++) {
			const stp_det_phase *ph = &tl->phases[it->first_phase + k];
			char *nm = strdup(ph->name ? ph->name : "phase");
			if (!nm)
				break;
			(*cuts)[np++] = (stp_phase_cut){ph->begin_seq, ph->end_seq, nm, ph->micro_batch};
		}
		win->cuts = *cuts;
		win->ncuts = np;
		snprintf(why, len, "iteration %" PRId64 " of %u detected from the allocation sequence (%s; confidence %.0f%%)",
		         it->index, tl->niterations, tl->method ? tl->method : "detected", 100 * tl->confidence);
		used = 1;
	}
	stp_det_free(d);
	return used;
}

static char *default_output(const char *in, const char *ext)
{
	size_t n = strlen(in);
	char *o = malloc(n + strlen(ext) + 1);
	if (!o)
		return NULL;
	memcpy(o, in, n + 1);
	char *dot = strrchr(o, '.'), *slash = strrchr(o, '/');
	if (dot && (!slash || dot > slash))
		*dot = 0;
	strcat(o, ext);
	return o;
}

static int plan_input(const char *in, const char *csv, const char *out, stp_plan_opts *po, stp_window *winp,
                      uint64_t align, int min_given, int chose_iteration, int detect, int greedy, int quiet);

int cmd_plan(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--lifetimes"))
			return cmd_plan_lifetimes(argc, argv); /* plan_lifetimes.c */
	enum { O_WINDOW = 256, O_ALGO, O_NOFUSION, O_ALLKINDS, O_NOVARY, O_GREEDY, O_NOGREEDY, O_CSV, O_SHOW, O_VERIFY,
	       O_DETECT, O_NODETECT, O_MINSIZE, O_BUDGET, O_VARYING };
	static const struct option opts[] = {
		{"output", required_argument, 0, 'o'},    {"iteration", required_argument, 0, 'i'},
		{"window", required_argument, 0, O_WINDOW}, {"align", required_argument, 0, 'a'},
		{"algo", required_argument, 0, O_ALGO},    {"no-fusion", no_argument, 0, O_NOFUSION},
		{"all-kinds", no_argument, 0, O_ALLKINDS}, {"no-varying", no_argument, 0, O_NOVARY},
		{"greedy", no_argument, 0, O_GREEDY},      {"no-greedy", no_argument, 0, O_NOGREEDY},
		{"csv", required_argument, 0, O_CSV},      {"show", required_argument, 0, O_SHOW},
		{"verify", required_argument, 0, O_VERIFY}, {"entries", required_argument, 0, 'n'},
		{"min-size", required_argument, 0, O_MINSIZE},
		{"budget", required_argument, 0, O_BUDGET}, {"varying", required_argument, 0, O_VARYING},
		{"detect", no_argument, 0, O_DETECT},      {"no-detect", no_argument, 0, O_NODETECT},
		{"quiet", no_argument, 0, 'q'},            {"verbose", no_argument, 0, 'v'},
		{"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
	const char *out = NULL, *csv = NULL, *show = NULL, *verify = NULL;
	stp_window win;
	stp_window_init(&win);
	win.host_min_size = 512;
	stp_plan_opts po;
	stp_plan_opts_init(&po);
	uint64_t align = 0, v, max_entries = 50;
	int greedy = -1, quiet = 0, detect = 0, c, chose_iteration = 0, min_given = 0;
	while ((c = getopt_long(argc, argv, "o:i:a:n:qvh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'i':
			if (stprof_parse_uint(optarg, INT64_MAX, &v) < 0) {
				stprof_err("plan: --iteration wants a number, not '%s'", optarg);
				return 2;
			}
			win.iteration = (int64_t)v;
			chose_iteration = 1;
			break;
		case O_WINDOW: {
			char *colon = strchr(optarg, ':');
			uint64_t b, e;
			if (!colon) {
				stprof_err("plan: --window wants BEGIN:END sequence numbers, not '%s'", optarg);
				return 2;
			}
			*colon = 0;
			int bad = stprof_parse_uint(optarg, UINT64_MAX, &b) < 0 || stprof_parse_uint(colon + 1, UINT64_MAX, &e) < 0 || e <= b;
			*colon = ':';
			if (bad) {
				stprof_err("plan: --window wants BEGIN:END with BEGIN < END, not '%s'", optarg);
				return 2;
			}
			win.use_seq = 1;
			win.begin_seq = b;
			win.end_seq = e;
			break;
		}
		case 'a':
			if (stprof_parse_size(optarg, &align) < 0 || !align || align > ((uint64_t)1 << 30)) {
				stprof_err("plan: --align wants a size from 1 to 1G, not '%s'", optarg);
				return 2;
			}
			break;
		case O_ALGO:
			if (!strcmp(optarg, "stalloc"))
				po.algo = STP_ALGO_STALLOC;
			else if (!strcmp(optarg, "stalloc-only"))
				po.algo = STP_ALGO_STALLOC_ONLY;
			else if (!strcmp(optarg, "greedy"))
				po.algo = STP_ALGO_GREEDY;
			else {
				stprof_err("plan: --algo is stalloc, stalloc-only or greedy, not '%s'", optarg);
				return 2;
			}
			break;
		case O_BUDGET: {
			char *end;
			double b = strtod(optarg, &end);
			if (end == optarg || *end || !(b >= 0 && b <= 86400)) {
				stprof_err("plan: --budget wants seconds from 0 to 86400, not '%s'", optarg);
				return 2;
			}
			po.budget = b;
			break;
		}
		case O_NOFUSION: po.no_fusion = 1; break;
		case O_MINSIZE:
			if (stprof_parse_size(optarg, &win.host_min_size) < 0)
				return stprof_usage_error("plan", "--min-size wants a size (e.g. 0, 512, 4k), not '%s'", optarg);
			min_given = 1;
			break;
		case O_DETECT: detect = 1; break;
		case O_NODETECT: detect = -1; break;
		case O_ALLKINDS: win.device_only = 0; break;
		case O_NOVARY: win.detect_varying = STP_VARYING_OFF; break;
		case O_VARYING:
			if (!strcmp(optarg, "max"))
				win.detect_varying = STP_VARYING_MAX;
			else if (!strcmp(optarg, "dynamic"))
				win.detect_varying = STP_VARYING_DYNAMIC;
			else if (!strcmp(optarg, "off"))
				win.detect_varying = STP_VARYING_OFF;
			else
				return stprof_usage_error("plan", "--varying is max, dynamic or off, not '%s'", optarg);
			break;
		case O_GREEDY: greedy = 1; break;
		case O_NOGREEDY: greedy = 0; break;
		case O_CSV: csv = optarg; break;
		case O_SHOW: show = optarg; break;
		case O_VERIFY: verify = optarg; break;
		case 'n':
			if (stprof_parse_uint(optarg, SIZE_MAX, &max_entries) < 0) {
				stprof_err("plan: --entries wants a number, not '%s'", optarg);
				return 2;
			}
			break;
		case 'q': quiet = 1; break;
		case 'v': po.verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: return stprof_usage_hint("plan", argv, "o:i:a:n:qvh", opts);
		}
	}
	int modes = !!csv + !!show + !!verify;
	if (modes > 1 || (modes && optind != argc) || (!modes && optind != argc - 1)) {
		return stprof_usage_error("plan", "wants one TRACE, or one of --csv, --show, --verify without "
		                                  "a TRACE (got %d options of those and %d arguments)",
		                          modes, argc - optind);
	}
	if (show)
		return stprof_input("plan", &show, 0) ? 1 : show_file(show, (size_t)max_entries);
	if (verify)
		return stprof_input("plan", &verify, 0) ? 1 : verify_file(verify, quiet);

	char err[1024];
	const char *in = csv ? csv : argv[optind];
	if (stprof_refuse_same("plan", out, &in, 1))
		return 2;
	/* TRACE's name with .plan (a snapshot's too, not its temporary
	 * import's); refused before the work when it may not be written */
	char *defout = NULL;
	if (!out && !csv && !(out = defout = default_output(in, ".plan")))
		return 1;
	if (defout && stprof_refuse_same("plan", out, &in, 1)) {
		free(defout);
		return 2;
	}
	if (out && strcmp(out, "-") &&
	    stp_outfile_check(out, csv ? &stp_outkind_csv : &stp_outkind_plan, err, sizeof err) < 0) {
		stprof_err("plan: %s", err);
		free(defout);
		return 1;
	}
	if (stprof_input("plan", &in, csv ? 0 : STPROF_IN_TRACE)) { /* streams read once */
		free(defout);
		return 1;
	}
	if (csv)
		csv = in;
	/* a wrapper's trace (env, a shim) stands for the program it became */
	char image[4096 + 64];
	if (!csv && program_trace("plan", in, image, sizeof image, quiet) > 0)
		in = image;
	int rc = plan_input(in, csv, out, &po, &win, align, min_given, chose_iteration, detect, greedy, quiet);
	free(defout);
	return rc;
}

/* Plans IN (a trace, a snapshot, or the CSV csv) and writes OUT. */
static int plan_input(const char *in, const char *csv, const char *out, stp_plan_opts *po, stp_window *winp,
                      uint64_t align, int min_given, int chose_iteration, int detect, int greedy, int quiet)
{
	char err[1024];
	stp_reqs r;
	stp_stream stream = {0};
	stalloc_replay_result rep;
	plan_min_choice minc = {0};
	int replayed = 0;
	uint64_t *given = NULL;
	stp_window win = *winp;
	if (!csv && stprof_pickle_input(&in, quiet)) /* a PyTorch snapshot: imported first */
		return 1;
	if (csv) {
		if (stp_reqs_read_csv(csv, &r, &given, err, sizeof err) < 0) {
			stprof_err("%s", err);
			return 1;
		}
		free(given);
		po->align = align ? align : 1;
	} else {
		if (po->verbose)
			fprintf(stderr, "stprof: plan: reading %s\n", in);
		stp_phase_cut *cuts = NULL;
		char why[512] = "";
		win.stream = &stream; /* for the replay of the plan (plan_check.c) */
		win.stream_min_size = win.host_min_size;
		int detected = 0, may_detect = !win.use_seq && !chose_iteration && detect >= 0;
		if (may_detect && detect == 1)
			detected = detected_window(in, 1, &win, &cuts, why, sizeof why);
		int crc = stp_reqs_from_trace(in, &win, &r, err, sizeof err);
		if (crc == 0 && may_detect && !detected && r.iteration < 0) {
			/* no iteration markers: ask the detector, convert again */
			detected = detected_window(in, 0, &win, &cuts, why, sizeof why);
			if (detected) {
				stp_reqs_free(&r);
				stp_stream_free(&stream);
				crc = stp_reqs_from_trace(in, &win, &r, err, sizeof err);
			}
		}
		if (crc == 0 && !r.n && !r.device && win.host_min_size && !min_given) {
			/* a program of small allocations only: plan them all */
			win.host_min_size = 0;
			stp_reqs_free(&r);
			stp_stream_free(&stream);
			crc = stp_reqs_from_trace(in, &win, &r, err, sizeof err);
		}
		for (uint32_t k = 0; cuts && k < win.ncuts; k++)
			free((char *)cuts[k].name);
		free(cuts);
		if (crc < 0) {
			stprof_err("%s", err);
			stp_stream_free(&stream);
			return 1;
		}
		if (detected) {
			char note[1024];
			snprintf(note, sizeof note, "%s; %s", why, stp_reqs_str(&r, r.notes));
			r.notes = stp_reqs_string(&r, note);
		}
		po->align = align ? align : (r.device ? 512 : r.tensors ? 64 : 16);
		if (po->align < stalloc_request_align(&r)) {
			/* the runtime asks for this alignment (c10's, cudaMalloc's): a
			 * plan below it would serve nothing */
			if (!quiet)
				fprintf(stderr, "stprof: plan: alignment raised from %" PRIu64 " to %" PRIu64 " (what %s asks)\n",
				        po->align, stalloc_request_align(&r), r.device ? "CUDA" : "c10::alloc_cpu");
			po->align = stalloc_request_align(&r);
		}
		if (!min_given && stream.n) {
			/* the small-request threshold, chosen from the trace */
			if (plan_check_choose_min(&r, &stream, po, &minc) < 0) {
				stp_reqs_free(&r);
				stp_stream_free(&stream);
				return 1;
			}
			stp_reqs raised;
			if (minc.chosen != r.min_size) {
				if (stp_reqs_raise_min(&r, minc.chosen, &raised) < 0) {
					stprof_err("plan: out of memory");
					stp_reqs_free(&r);
					stp_stream_free(&stream);
					return 1;
				}
				stp_reqs_free(&r);
				r = raised;
			}
		}
	}
	if (!r.n) {
		stprof_err("%s: no allocations to plan%s%s", in, r.notes ? " (" : "", r.notes ? stp_reqs_str(&r, r.notes) : "");
		if (r.notes)
			fputs(")\n", stderr);
		stp_reqs_free(&r);
		stp_stream_free(&stream);
		return 1;
	}
	/* the library completes greedy-by-size after the search when its
	 * improvement step dropped it (so the plan is never larger than the
	 * baseline printed); the same switches as the baseline's */
	if (greedy == 0 || (greedy == -1 && r.n > GREEDY_AUTO_MAX))
		po->no_greedy_check = 1;
	else if (greedy == 1)
		po->greedy_seconds = 1e12; /* to the end */
	stp_plan p;
	double cpu0 = cpu_seconds();
	if (stp_plan_build(&r, po, &p, err, sizeof err) < 0) {
		stprof_err("%s: %s", in, err);
		stp_reqs_free(&r);
		stp_stream_free(&stream);
		return 1;
	}
	int rc = 0;
	if (stp_plan_verify(&r, &p, err, sizeof err) < 0) {
		/* a planner bug: say so loudly, write nothing */
		stprof_err("%s: internal error, the plan does not verify: %s", in, err);
		rc = 1;
		goto done;
	}
	uint64_t gpool = 0, stalloc_pool = 0;
	double gsec = 0, glimit = 0;
	if (p.stats.pool_greedy_plain) { /* the planning computed it: not twice */
		gpool = p.stats.pool_greedy_plain;
		gsec = p.stats.greedy_seconds;
	} else if (p.stats.greedy_limit > 0) {
		gsec = -1; /* stopped: said in the summary */
		glimit = p.stats.greedy_limit;
	} else if (po->algo != STP_ALGO_GREEDY && (greedy == 1 || (greedy == -1 && r.n <= GREEDY_AUTO_MAX))) {
		stp_plan_opts go = *po;
		go.algo = STP_ALGO_GREEDY;
		go.verbose = 0;
		/* a comparison must not cost more than what it is compared with:
		 * half the planning's CPU time (at least 20 ms, so that a set
		 * planned in a blink still gets its comparison), unless asked; CPU
		 * time, so a busy machine does not stretch it */
		double plan_cpu = cpu_seconds() - cpu0;
		glimit = greedy == 1 ? 0 : plan_cpu / 2 > GREEDY_MIN_SECONDS ? plan_cpu / 2 : GREEDY_MIN_SECONDS;
		go.greedy_seconds = glimit;
		stp_plan g;
		int grc = stp_plan_build(&r, &go, &g, err, sizeof err);
		if (grc == 1)
			gsec = -1; /* stopped: said in the summary */
		if (grc == 0) {
			gpool = g.pool;
			gsec = g.stats.seconds;
			/* the plan written is the best layout found: greedy's when
			 * smaller (and valid), with STAlloc's figures kept for the
			 * summary */
			if (g.pool < p.pool && stp_plan_verify(&r, &g, err, sizeof err) == 0) {
				g.stats.pool_stalloc = p.stats.pool_stalloc ? p.stats.pool_stalloc : p.pool;
				g.stats.improved_requests = p.stats.improved_requests;
				g.stats.seconds += p.stats.seconds;
				stalloc_pool = p.pool;
				stp_plan_free(&p);
				p = g;
			} else {
				stp_plan_free(&g);
			}
		}
	}
	if (!csv && stream.n) {
		uint64_t added = plan_check_size_dynamic(&r, &p, &stream, &rep);
		if (added == (uint64_t)-1) {
			rc = 1;
			goto done;
		}
		p.stats.dynamic_space = added;
		replayed = 1;
		p.stats.runtime_checked = 1;
		p.stats.runtime_followed = plan_check_followed(&rep);
	}
	/* a snapshot was read from its temporary import: named after the pickle */
	const char *shown = stprof_input_name(in);
	if (out) {
		int wr = csv ? stp_reqs_write_csv(out, &r, p.offset, err, sizeof err)
		             : stp_plan_write(out, &r, &p, err, sizeof err);
		if (wr < 0) {
			stprof_err("%s", err);
			rc = 1;
		}
	}
	if (!quiet) {
		FILE *f = out && !strcmp(out, "-") ? stderr : stdout;
		if (r.notes)
			fprintf(f, "input:          %s (%s)\n", shown, stp_reqs_str(&r, r.notes));
		else
			fprintf(f, "input:          %s\n", shown);
		stp_plan_summary(f, &r, &p, gpool, gsec);
		if (stalloc_pool) {
			char b[64];
			fprintf(f, "written layout: greedy by size's, smaller than STAlloc's %s (the plan written is\n"
			           "                always the smallest layout found)\n",
			        stprof_fmt_bytes(stalloc_pool, b, sizeof b));
		}
		if (greedy == -1 && r.n > GREEDY_AUTO_MAX && po->algo != STP_ALGO_GREEDY)
			fprintf(f, "greedy by size: skipped above %d requests (--greedy runs it)\n", GREEDY_AUTO_MAX);
		if (gsec < 0)
			fprintf(f, "greedy by size: stopped at its limit, %.2f CPU s (half the planning's or, after\n"
			           "                the search, half the budget, at least %g; --greedy runs it\n"
			           "                to the end)\n",
			        glimit, GREEDY_MIN_SECONDS);
		fprintf(f, "verified:       no two requests overlap in time and address%s\n",
		        p.nplaced ? ";\n                each placed start-up temporary over slots idle while it lives" : "");
		if (replayed) {
			plan_check_print_min(f, &minc);
			plan_check_print(f, &r, &p, &rep);
		}
		if (out && !rc)
			fprintf(f, "written:        %s\n", out);
	}
done:
	stp_plan_free(&p);
	stp_reqs_free(&r);
	stp_stream_free(&stream);
	return rc;
}
