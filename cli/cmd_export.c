/*
 * cmd_export.c - `stprof export TRACE... -o FILE.pftrace`: writes a Perfetto
 * timeline of one or more traces (one process each, e.g. one per rank).
 * docs/perfetto.md describes the tracks.  Exit 0 on success, 1 when a trace
 * cannot be read or the file cannot be written, 2 on usage errors.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "stprof/allocsim.h"
#include "stprof/detector.h"
#include "stprof/perfetto.h"
#include "stprof/snapshot.h"
#include "guard.h"
#include "outname.h"
#include "input.h"
#include "snapshot_cli.h"
#include "traceset.h"
#include "programtrace.h"
#include "selfcheck.h"
#include "util.h"
#include "analysis.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: stprof export [OPTIONS] TRACE... [-o FILE.pftrace]\n"
	        "       stprof export [OPTIONS] DIR [-o FILE.pftrace]           (a run's ranks)\n"
	        "       stprof export --format torch-snapshot TRACE [-o FILE.pickle]\n\n"
	        "Writes a Perfetto timeline of the traces (one process per trace, e.g. one per\n"
	        "rank) that https://ui.perfetto.dev opens (\"Open trace file\").  It shows, per\n"
	        "process: memory counters (requested, allocated, reserved; reserved under each\n"
	        "simulated allocator and its fragmentation), iterations and\n"
	        "phases, module slices per thread, API calls per stream with the allocations\n"
	        "and frees made on it, object lifetimes on lanes, arrows from each allocation\n"
	        "to its first access and its free, and the allocation call stacks weighted by\n"
	        "bytes: select a time range over the stream tracks and open the \"Track Event\n"
	        "Callstacks\" tab for a flamegraph of bytes by call site.  The detector of\n"
	        "`stprof report` runs first: lifetime lanes are grouped by class (persistent,\n"
	        "scoped, transient, init-only, leaked), each object carries its patterns, each\n"
	        "finding is an instant with its suggestion, frames are named.  See\n"
	        "docs/perfetto.md.\n\n"
	        "A trace with rank traces beside it (FILE.rank<R>, from a torchrun job), or a\n"
	        "directory of them, stands for the ranks: one process per rank, named \"rank R:\n"
	        "PROGRAM\" and ordered by rank (the launcher's trace is left out: name it to\n"
	        "draw it too).\n\n"
	        "With --format torch-snapshot it writes the trace as a PyTorch memory snapshot\n"
	        "that https://pytorch.org/memory_viz and torch.cuda._memory_viz open: the\n"
	        "segments and blocks live at the end, a trace entry per allocation, free and\n"
	        "segment event, call paths as frames (see docs/snapshot.md).  A TRACE may\n"
	        "also be a PyTorch snapshot (.pickle), imported first.\n\n"
	        "Options:\n"
	        "  -o, --output FILE    the file to write (default: the first TRACE with its\n"
	        "                       .stp suffix replaced by .pftrace or .pickle)\n"
	        "  -f, --format FMT     pftrace (the default: a Perfetto timeline) or\n"
	        "                       torch-snapshot (a PyTorch memory snapshot pickle)\n"
	        "      --torch-layout L the snapshot layout: 2 (PyTorch 2.x, a dict with\n"
	        "                       segments and device_traces; the default) or 1.13 (a\n"
	        "                       list of segments whose blocks have a history, what\n"
	        "                       PyTorch 1.13's torch.cuda._memory_viz reads)\n"
	        "      --top N          draw only the N largest objects of each trace (lifetime\n"
	        "                       slices, instants, flows, call stacks); counters still\n"
	        "                       count every object\n"
	        "      --top-by WHAT    what \"largest\" means: area (bytes x lifetime, the\n"
	        "                       default) or size (bytes)\n"
	        "      --window T0:T1   export only the time from T0 to T1, counted from the\n"
	        "                       first event of the earliest trace; a time is a number\n"
	        "                       with a unit ns, us, ms or s (no unit: ns), e.g.\n"
	        "                       1.5s:2s; T0 or T1 may be left empty (start, end)\n"
	        "      --counter-gap T  memory counters of objects not drawn get at most one\n"
	        "                       point per T (e.g. 100us) plus the highest and the last\n"
	        "                       value in between (peaks are kept); default: a point\n"
	        "                       per allocation and free\n"
	        "      --max-lanes N    at most N lifetime lanes per group (default 10000);\n"
	        "                       objects beyond are counted but not drawn\n"
	        "      --no-analysis    do not run the detector (stprof report) first: no\n"
	        "                       classes (lanes are then \"unclassified\"), patterns,\n"
	        "                       findings, simulated allocators or function names\n"
	        "      --all-frames     call stacks and call paths as recorded (by default the\n"
	        "                       framework's frames are left out and a path starts at\n"
	        "                       the user's own line, as in stprof report)\n"
	        "      --no-models      run the detector without the allocator models (no\n"
	        "                       simulated reserved or fragmentation counters)\n"
	        "      --space SPACE    the space whose objects are drawn: auto (default: on a\n"
	        "                       PyTorch CPU run its tensors, else every object), host,\n"
	        "                       tensors, device (counters show every space)\n"
	        "      --alloc-conf STR, --capacity SIZE\n"
	        "                       the allocator models' settings, as in stprof report\n"
	        "      --no-ranks       export TRACE alone even when rank traces are beside it\n"
	        "  -q, --quiet          print nothing but errors\n"
	        "  -h, --help           this help\n\n"
	        "Exit status: 0 written, 1 a trace could not be read or the file written,\n"
	        "2 usage error.\n");
}

static void progress(void *ctx, uint32_t trace, uint64_t done, uint64_t total)
{
	const char *const *names = ctx;
	if (total)
		fprintf(stderr, "\rstprof: exporting %s: %3.0f%%", names[trace], 100.0 * (double)done / (double)total);
}

int cmd_export(int argc, char **argv)
{
	enum { OPT_LAYOUT = 250, OPT_TOP = 256, OPT_TOP_BY, OPT_WINDOW, OPT_MAX_LANES, OPT_NOANA, OPT_NOMODELS, OPT_CONF, OPT_CAP,
	       OPT_GAP, OPT_SPACE, OPT_NORANKS, OPT_ALLFRAMES };
	static const struct option opts[] = {
		{"output", required_argument, 0, 'o'}, {"top", required_argument, 0, OPT_TOP},
		{"top-by", required_argument, 0, OPT_TOP_BY}, {"window", required_argument, 0, OPT_WINDOW},
		{"max-lanes", required_argument, 0, OPT_MAX_LANES}, {"quiet", no_argument, 0, 'q'},
		{"counter-gap", required_argument, 0, OPT_GAP},
		{"no-analysis", no_argument, 0, OPT_NOANA}, {"no-models", no_argument, 0, OPT_NOMODELS},
		{"alloc-conf", required_argument, 0, OPT_CONF}, {"capacity", required_argument, 0, OPT_CAP},
		{"format", required_argument, 0, 'f'}, {"torch-layout", required_argument, 0, OPT_LAYOUT},
		{"space", required_argument, 0, OPT_SPACE}, {"no-ranks", no_argument, 0, OPT_NORANKS},
		{"all-frames", no_argument, 0, OPT_ALLFRAMES}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	stp_export_opts eo = {0};
	int snapshot = 0, layout = 2;
	const char *out = NULL;
	int quiet = 0, analysis = 1, no_ranks = 0, c;
	stp_det_options dopt;
	stp_det_options_default(&dopt);
	dopt.keep_objects = 1;
	dopt.sim_no_recommend = 1; /* the timeline shows the models, not advice */
	uint64_t v;
	while ((c = getopt_long(argc, argv, "o:f:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'f':
			if (!strcmp(optarg, "torch-snapshot"))
				snapshot = 1;
			else if (!strcmp(optarg, "pftrace") || !strcmp(optarg, "perfetto"))
				snapshot = 0;
			else {
				stprof_err("export: --format wants pftrace or torch-snapshot, not '%s'", optarg);
				return 2;
			}
			break;
		case OPT_LAYOUT:
			if (!strcmp(optarg, "2") || !strcmp(optarg, "2.x"))
				layout = 2;
			else if (!strcmp(optarg, "1.13"))
				layout = 113;
			else {
				stprof_err("export: --torch-layout wants 2 or 1.13, not '%s'", optarg);
				return 2;
			}
			break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		case OPT_TOP:
			if (stprof_parse_uint(optarg, UINT64_MAX, &v) < 0 || !v) {
				stprof_err("export: --top wants a positive number, not '%s'", optarg);
				return 2;
			}
			eo.top_n = v;
			break;
		case OPT_TOP_BY:
			if (!strcmp(optarg, "area"))
				eo.top_by = STP_TOP_BY_AREA;
			else if (!strcmp(optarg, "size"))
				eo.top_by = STP_TOP_BY_SIZE;
			else {
				stprof_err("export: --top-by wants area or size, not '%s'", optarg);
				return 2;
			}
			break;
		case OPT_WINDOW:
			if (stprof_parse_window(optarg, &eo.window_begin_ns, &eo.window_end_ns) < 0) {
				stprof_err("export: --window wants T0:T1 with T0 <= T1 (e.g. 1.5s:2s), not '%s'", optarg);
				return 2;
			}
			eo.has_window = 1;
			break;
		case OPT_GAP:
			if (stprof_parse_time(optarg, &eo.counter_gap_ns) < 0)
				return stprof_usage_error("export", "--counter-gap wants a time (e.g. 100us, 1ms), not '%s'",
				                          optarg);
			break;
		case OPT_MAX_LANES:
			if (stprof_parse_uint(optarg, UINT32_MAX - 1, &v) < 0 || !v) {
				stprof_err("export: --max-lanes wants a positive number, not '%s'", optarg);
				return 2;
			}
			eo.max_lanes = (uint32_t)v;
			break;
		case OPT_NOANA: analysis = 0; break;
		case OPT_NORANKS: no_ranks = 1; break;
		case OPT_ALLFRAMES: dopt.all_frames = 1; break;
		case OPT_NOMODELS: dopt.sim_models = 0; break;
		case OPT_SPACE:
			if (stp_det_space_parse(optarg, &dopt.space) < 0) {
				stprof_err("export: --space wants auto, host, tensors or device, not '%s'", optarg);
				return 2;
			}
			break;
		case OPT_CONF: {
			allocsim_config cfg;
			char e[256];
			allocsim_config_default(&cfg, ALLOCSIM_PYTORCH);
			if (allocsim_config_parse(&cfg, optarg, e, sizeof e) < 0 || allocsim_config_check(&cfg, e, sizeof e) < 0) {
				stprof_err("export: --alloc-conf: %s", e);
				return 2;
			}
			dopt.sim_alloc_conf = optarg;
			break;
		}
		case OPT_CAP:
			if (stprof_parse_size(optarg, &dopt.sim_capacity) < 0) {
				stprof_err("export: --capacity wants a size (e.g. 80G), not '%s'", optarg);
				return 2;
			}
			break;
		default: return stprof_usage_hint("export", argv, "o:f:qh", opts);
		}
	}
	if (optind >= argc)
		return stprof_usage_error("export", "no TRACE given");
	const char *const *traces = (const char *const *)argv + optind;
	size_t ntraces = (size_t)(argc - optind);
	if (stprof_refuse_same("export", out, traces, ntraces))
		return 2;
	if (snapshot && ntraces != 1) {
		stprof_err("export: --format torch-snapshot takes one trace");
		return 2;
	}
	/* one name for a run's ranks: their traces, the launcher's left out */
	traceset ts = {0};
	const char *name = traces[0];
	int found = !snapshot && !no_ranks && ntraces == 1 ? traceset_find(traces[0], &ts) : 0;
	if (found < 0)
		return 1;
	if (found > 0) {
		if (!quiet)
			stprof_err("export: %s stands for %d rank trace%s: one process each (--no-ranks: %s alone)", traces[0], found,
			           found == 1 ? "" : "s", traces[0]);
		if (ts.n > ts.nranks)
			name = ts.path[ts.nranks]; /* the main trace names the timeline */
		traces = (const char *const *)ts.path;
		ntraces = ts.nranks;
		if (stprof_refuse_same("export", out, traces, ntraces)) {
			traceset_free(&ts);
			return 2;
		}
	}
	/* a wrapper's trace (env, a shim) stands for the program it became */
	char image[4096 + 64];
	const char *one[1];
	if (found == 0 && ntraces == 1 && !snapshot && program_trace("export", traces[0], image, sizeof image, quiet) > 0) {
		one[0] = image;
		traces = one;
	}
	char *def = NULL;
	if (!out) {
		size_t n = strlen(name);
		def = malloc(n + 16);
		if (!def) {
			traceset_free(&ts);
			return 1;
		}
		memcpy(def, name, n + 1);
		char *rk = found > 0 && name == ts.path[0] ? strstr(def, ".rank") : NULL;
		for (char *x = rk; x; x = strstr(x + 1, ".rank"))
			rk = x;
		if (rk) /* DIR without its main trace: t.stp.rank0 -> t.pftrace */
			*rk = 0;
		n = strlen(def);
		if (n > 4 && !strcmp(def + n - 4, ".stp"))
			def[n - 4] = 0;
		else if (!snapshot && n > 7 && !strcmp(def + n - 7, ".pickle"))
			def[n - 7] = 0;
		strcat(def, snapshot ? ".pickle" : ".pftrace");
		out = def;
		if (stprof_refuse_same("export", out, traces, ntraces)) {
			free(def);
			traceset_free(&ts);
			return 2;
		}
	}
	/* refused before the work when it may not be written (a file stprof did
	 * not write is left alone); an earlier output is kept as FILE.old, as
	 * the one-shot keeps its sidecars */
	outname_kind kind = snapshot ? OUTNAME_SNAPSHOT : OUTNAME_TIMELINE;
	char oerr[1024];
	if (stp_outfile_check(out, snapshot ? &stp_outkind_snapshot : &stp_outkind_timeline, oerr, sizeof oerr) < 0) {
		stprof_err("export: %s", oerr);
		free(def);
		traceset_free(&ts);
		return 1;
	}
	if (outname_keep_old(out, kind) < 0) {
		free(def);
		traceset_free(&ts);
		return 1;
	}
	/* streams read once; every trace cut short said so before it is read */
	if (!found && stprof_inputs("export", argc, argv, optind, STPROF_IN_TRACE)) {
		free(def);
		traceset_free(&ts);
		return 1;
	}
	for (size_t i = 0; i < ntraces; i++)
		stprof_warn_cut(traces[i]);
	/* PyTorch snapshots given as traces are imported first */
	if (!found && stprof_pickle_inputs(argc, argv, optind, quiet)) {
		free(def);
		return 1;
	}
	int rc = snapshot ? snapshot_export_run(traces[0], out, layout, dopt.space, quiet)
	                  : export_run(traces, ntraces, out, &eo, analysis ? &dopt : NULL, NULL, quiet, NULL);
	free(def);
	traceset_free(&ts);
	return rc;
}


int export_run(const char *const *traces, size_t ntraces, const char *out, stp_export_opts *eo,
               const stp_det_options *dopt, stp_det *const *given, int quiet, stp_export_stats *stats)
{
	int analysis = dopt || given;
	int tty = !quiet && isatty(2);
	if (tty) {
		eo->progress = progress;
		eo->ctx = (void *)traces;
	}
	stp_export_stats st;
	char err[1024];
	/* the detector first: classes, patterns, findings, models, symbols */
	stp_det **dets = calloc(ntraces, sizeof *dets);
	stp_export_detector *bridge = NULL;
	if (!dets)
		return 1;
	for (size_t i = 0; i < ntraces && analysis; i++) {
		if (given) {
			dets[i] = given[i];
			continue;
		}
		if (tty)
			fprintf(stderr, "\rstprof: analysing %s ...", traces[i]);
		/* an unreadable trace is the export's error to report; a damaged
		 * one is analysed up to the damage */
		dets[i] = selfcheck_det_run(traces[i], dopt, err, sizeof err);
		if (dets[i] && stp_det_result_of(dets[i])->sim_error && !quiet)
			stprof_err("export: %s: allocator models not run: %s", traces[i],
			           stp_det_result_of(dets[i])->sim_error);
	}
	/* a PyTorch run analyzed in its tensor space: draw the tensors only
	 * (the interpreter's heap keeps its counters) */
	for (size_t i = 0; i < ntraces && analysis; i++) {
		const stp_det_result *r = dets[i] ? stp_det_result_of(dets[i]) : NULL;
		if (r && r->primary >= 0 && r->spaces[r->primary].tensors)
			eo->tensors_only = 1;
	}
	int rc = -1;
	if (analysis && !(bridge = stp_export_detector_attach((stp_det *const *)dets, ntraces, eo)))
		snprintf(err, sizeof err, "out of memory");
	else
		rc = stp_export_perfetto(traces, ntraces, out, eo, &st, err, sizeof err);
	if (tty)
		fprintf(stderr, "\r\033[K");
	stp_export_detector_free(bridge);
	for (size_t i = 0; i < ntraces && !given; i++)
		stp_det_free(dets[i]);
	free(dets);
	if (rc < 0) {
		stprof_err("export: %s", err);
		return 1;
	}
	if (stats)
		*stats = st;
	if (!quiet) {
		char b[64];
		printf("wrote %s: %s, %" PRIu64 " packets\n", out, stprof_fmt_bytes(st.bytes, b, sizeof b), st.packets);
		printf("  %zu process%s, %" PRIu64 " events read\n", ntraces, ntraces == 1 ? "" : "es", st.events);
		printf("  %" PRIu64 " objects, %" PRIu64 " drawn on %" PRIu64 " lanes", st.objects, st.objects_drawn,
		       st.lanes);
		if (st.objects_no_lane)
			printf(" (%" PRIu64 " not drawn: more than --max-lanes live at once)", st.objects_no_lane);
		printf("\n  %" PRIu64 " API slices, %" PRIu64 " flows, %" PRIu64 " call stacks (%" PRIu64 " frames)\n",
		       st.api_slices, st.flows, st.callstacks, st.frames);
		if (analysis)
			printf("  %" PRIu64 " findings, %" PRIu64 " points of simulated allocator counters\n", st.findings,
			       st.series_points);
		if (st.counter_points_held)
			printf("  %" PRIu64 " counter points merged (--counter-gap; peaks kept)\n", st.counter_points_held);
		if (st.unmatched_frees)
			printf("  %" PRIu64 " frees of addresses not allocated in the trace were skipped\n", st.unmatched_frees);
		if (st.unmatched_markers)
			printf("  %" PRIu64 " end markers without a begin were skipped\n", st.unmatched_markers);
		printf("open it at https://ui.perfetto.dev (Open trace file); see docs/perfetto.md\n");
	}
	return 0;
}
