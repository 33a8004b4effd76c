/*
 * cmd_run.c - `stprof [OPTIONS] PROGRAM [ARGS...]`: the one-shot mode.
 * Records PROGRAM, then reports on the trace and prints the summary of the
 * allocation plan of its last iteration (on stderr, so the program's stdout
 * stays as it was), and writes the plan (NAME.plan) and the Perfetto
 * timeline beside the trace.  The exit status is the program's.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "children.h"
#include "analysis.h"
#include "commands.h"
#include "enforce.h"
#include "stprof/outfile.h"
#include "stprof/programkey.h"
#include "stprof/report.h"
#include "outname.h"
#include "record.h"
#include "traceset.h"
#include "programtrace.h"
#include "guard.h"
#include "selfcheck.h"
#include "input.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: stprof [OPTIONS] [--] PROGRAM [ARGS...]\n"
	           "       stprof run [OPTIONS] [--] PROGRAM [ARGS...]\n"
	           "       stprof run --plan FILE [--] PROGRAM [ARGS...]\n\n"
	           "Records PROGRAM (as `stprof record` does), then prints the report of\n"
	           "`stprof report` and the plan summary of `stprof plan` on stderr, and\n"
	           "writes the allocation plan (TRACE.plan), the HTML report with its\n"
	           "interactive memory viewer (TRACE.html: open it in a browser, nothing is\n"
	           "fetched) and the Perfetto timeline of `stprof export` beside the trace\n"
	           "(TRACE.pftrace: open it at https://ui.perfetto.dev).  PROGRAM's stdout,\n"
	           "exit status and signals are unchanged.\n\n"
	           "Options:\n%s"
	           "      --no-report      no report\n"
	           "      --no-plan        no allocation plan\n"
	           "      --plan FILE      do not record: run PROGRAM with libstalloc enforcing\n"
	           "                       the plan FILE (`stprof plan`) on its allocations;\n"
	           "                       its statistics print on stderr at exit.  A torchrun\n"
	           "                       job's plans (STEM.rank<R>.plan, as this mode writes\n"
	           "                       them): FILE is STEM.plan (no such file) or one of\n"
	           "                       them; every one is checked, and the process with\n"
	           "                       RANK=R enforces STEM.rank<R>.plan (the launcher and\n"
	           "                       the ranks' children none); each rank's statistics\n"
	           "                       print as one block headed `stalloc: rank R`\n"
	           "      --stalloc-stats FILE  with --plan: write the statistics to FILE (with\n"
	           "                       rank plans: FILE.rank<R>, one per rank)\n"
	           "      --no-export      no timeline\n"
	           "      --no-html        no HTML report\n"
	           "      --full-timeline  draw every object and every counter point; by default\n"
	           "                       the timeline of a large run is kept to about 100 MB\n"
	           "                       (what the Perfetto UI loads comfortably): the largest\n"
	           "                       objects by bytes x lifetime are drawn, counters keep\n"
	           "                       every peak; `stprof export TRACE` writes all of it later\n"
	           "  -h, --help           this help\n",
	        record_help);
}

static void det_progress(void *ctx, int pass, uint64_t done, uint64_t total)
{
	if (total)
		fprintf(stderr, "\rstprof: analysing, pass %d/2, %3.0f%%", pass, 100.0 * (double)done / (double)total);
	*(int *)ctx = 1;
}

/* May the one-shot mode write PATH?  Not over a file stprof did not write
 * (with -o the names follow the trace's); an earlier run's is kept as .old
 * when the output is written (stprof/outfile.h). */
static int sidecar_ok(const char *path, outname_kind kind, const char *what)
{
	if (outname_foreign(path, kind)) {
		stprof_err("%s exists and was not written by stprof; no %s written (leaving it alone)", path, what);
		return 0;
	}
	return 1;
}

/* The one-shot timeline's bound: about 100 MB, what the Perfetto UI loads
 * comfortably.  Measured on this exporter: a drawn object costs about 130
 * bytes (instants, slice, flow), a counter point about 30. */
#define TL_MAX_OBJECTS 300000u
#define TL_MAX_POINTS 600000u
/* A PyTorch run analyzed in its tensor space: the timeline draws its
 * tensors (and device objects) only, the interpreter's heap as counters
 * (cmd_export.c); the bound ranks what is drawn. */
static int draws_tensors(const stp_det_result *r) { return r->primary >= 0 && r->spaces[r->primary].tensors; }

static void timeline_bound(const stp_det_result *r, const char *trace, stp_export_opts *eo, char *note, size_t len)
{
	uint64_t allocs = r->by_type[STP_EV_ALLOC], points = r->by_type[STP_EV_ALLOC] + r->by_type[STP_EV_FREE];
	int tensors = draws_tensors(r);
	if (tensors) {
		allocs = 0;
		for (uint32_t i = 0; i < r->nspaces; i++)
			if (r->spaces[i].tensors || r->spaces[i].kind != STP_MEM_HOST)
				allocs += r->spaces[i].allocs;
	}
	int n = 0;
	if (allocs > TL_MAX_OBJECTS) {
		eo->top_n = TL_MAX_OBJECTS;
		n = snprintf(note, len, ";\n  kept to about 100 MB: the %u largest of %" PRIu64 " %s (bytes x lifetime) are "
		             "drawn", TL_MAX_OBJECTS, allocs, tensors ? "tensors" : "objects");
	}
	if (points > TL_MAX_POINTS && r->duration_ns) {
		/* at most 3 points a gap (first, highest, last) */
		eo->counter_gap_ns = 3 * r->duration_ns / TL_MAX_POINTS;
		if (!eo->counter_gap_ns)
			eo->counter_gap_ns = 1;
		char t[32];
		n += snprintf(note + (n < (int)len ? n : (int)len), n < (int)len ? len - (size_t)n : 0,
		              "%s counters get a point per %s, peaks kept", n ? ";" : ";\n  kept to about 100 MB:",
		              stprof_fmt_ns(eo->counter_gap_ns, t, sizeof t));
	}
	if (n > 0 && n < (int)len)
		snprintf(note + n, len - (size_t)n, ";\n  all of it: stprof export %s (or stprof --full-timeline)", trace);
}

/* The HTML report (stp_report_html, with the program's child processes
 * ch when not NULL, or the ranks' when n > 1) in out. */
static int write_html(stp_det *const *det, size_t n, const char *out, int quiet, const stp_report_children *ch)
{
	char err[PATH_MAX * 2 + 64];
	stp_outfile o;
	if (!stp_outfile_open(&o, out, &stp_outkind_report_html, err, sizeof err)) {
		stprof_err("%s", err);
		return -1;
	}
	stp_report_options ro;
	stp_report_options_default(&ro);
	ro.children = ch;
	int rc = n > 1 ? stp_report_ranks_html(det, n, NULL, o.f) : stp_report_html(det[0], &ro, o.f);
	if (rc < 0) {
		stprof_err("%s: write failed: %s", out, strerror(errno));
		stp_outfile_abort(&o);
	} else if ((rc = stp_outfile_commit(&o, err, sizeof err)) < 0)
		stprof_err("%s", err);
	else if (!quiet)
		stprof_err("report with its memory viewer written to %s (open it in a browser; docs/report.md)", out);
	return rc;
}

/* The allocation plan of trace's steady iteration in out (`stprof plan`'s
 * choice: the one with the most bytes live, the last of those), its
 * summary on stderr (after the heading when asked); cmd_plan's status (0:
 * written). */
static int write_plan(const char *trace, const char *out, int quiet, int heading)
{
	char *pargv[6];
	int pc = 0;
	pargv[pc++] = "plan";
	if (quiet)
		pargv[pc++] = "-q";
	pargv[pc++] = "-o";
	pargv[pc++] = (char *)out;
	pargv[pc++] = (char *)trace;
	pargv[pc] = NULL;
	fflush(stdout);
	int saved = dup(1), saved2 = -1;
	dup2(2, 1);
	if (quiet) { /* -q: not even "no allocations to plan" */
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null >= 0) {
			fflush(stderr);
			saved2 = dup(2);
			dup2(null, 2);
			dup2(null, 1);
			close(null);
		}
	}
	optind = 1;
	if (!quiet && heading)
		fputs("\nAllocation plan (stprof plan; docs/planner.md): a fixed offset in one pool for\n"
		      "every allocation of an iteration that repeats; layout / bound near 1 means the\n"
		      "plan wastes nothing beyond the peak of live bytes, and \"at run time\" is what\n"
		      "`stprof run --plan` will hold, replayed through its allocator\n",
		      stdout);
	fflush(stdout);
	int rc = cmd_plan(pc, pargv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved, 1);
	close(saved);
	if (saved2 >= 0) {
		dup2(saved2, 2);
		close(saved2);
	}
	return rc;
}

/* The command that enforces the plan(s) just written, on stderr:
 * `enforce:  stprof run --plan PLAN -- PROGRAM ARGS`, each word quoted for
 * a POSIX shell where it needs to be. */
/* The plan's path as the enforce line names it: absolute. */
static void plan_abs(const char *plan, char *abs, size_t len)
{
	char cwd[PATH_MAX];
	if (plan[0] != '/' && getcwd(cwd, sizeof cwd))
		snprintf(abs, len, "%s/%s", cwd, plan);
	else
		snprintf(abs, len, "%s", plan);
}

static void say_enforce(const char *plan, char *const *argv)
{
	char abs[PATH_MAX * 2 + 64];
	plan_abs(plan, abs, sizeof abs);
	fflush(stdout);
	fputs("enforce:        stprof run --plan ", stderr);
	for (int i = -1; i < 0 || argv[i]; i++) {
		const char *w = i < 0 ? abs : argv[i];
		if (i == 0)
			fputs(" --", stderr);
		if (i >= 0)
			fputc(' ', stderr);
		if (*w && !w[strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=./:,@%")]) {
			fputs(w, stderr);
			continue;
		}
		fputc('\'', stderr);
		for (const char *c = w; *c; c++)
			fputs(*c == '\'' ? "'\\''" : (char[2]){*c, 0}, stderr);
		fputc('\'', stderr);
	}
	fputc('\n', stderr);
}

/* The plan of a program a shell script ran, or of a launcher's worker
 * (programtrace.c; kind 2 or 3): the plan keeps which program it is of
 * (stprof/programkey.h), and libstalloc enforces it in the process of the
 * command's tree that runs that program (allocator/program.c: the first
 * of each line of descent), so the line runs the command itself. */
static void say_enforce_child(const char *plan, const char *trace, char *const *argv, int kind)
{
	say_enforce(plan, argv);
	char exe[4096] = "", cmd[4096] = "", key[4096 + 8];
	trace_process(trace, NULL, exe, sizeof exe);
	trace_cmdline(trace, cmd, sizeof cmd);
	if (!exe[0] || stp_program_key(exe, cmd, key, sizeof key) < 0)
		return;
	size_t n;
	const char *shown = stp_program_shown(key, &n);
	if (kind == 3 && stp_program_runs_code(key)) /* each worker claims it */
		fprintf(stderr, "                (in each worker %s starts with python -c, as torch.multiprocessing.spawn "
		                "does; their children run without the plan)\n",
		        argv[0]);
	else
		fprintf(stderr, "                (in the process %s starts that runs %.*s; the others run without the plan)\n",
		        argv[0], (int)n, shown);
}

/* The peak of a trace's space analyzed in depth (0 when none). */
static uint64_t rank_peak(stp_det *d)
{
	const stp_det_result *r = stp_det_result_of(d);
	return r->primary >= 0 ? r->spaces[r->primary].peak_bytes : 0;
}

/* The one-shot mode's outputs for a run with rank traces (a torchrun job):
 * the report on every rank (the launcher listed, not compared), a plan per
 * rank (NAME.rank<R>.plan), one timeline of the ranks (NAME.pftrace). */
static void outputs_of_ranks(const traceset *ts, const char *trace, const record_opts *o, int report, int timeline,
                             int plan, int full, int html, char *const *argv)
{
	stp_det **det = calloc(ts->n, sizeof *det);
	if (!det)
		return;
	size_t ok = 0;
	for (size_t i = 0; i < ts->n && (report || timeline || html); i++) {
		stp_det_options dopt;
		stp_det_options_default(&dopt);
		dopt.keep_objects = i >= ts->nranks ? 0 : html ? 2 : timeline;
		dopt.keep_accesses = html && i < ts->nranks ? 32 : 0;
		char err[512];
		if (!o->quiet && isatty(2))
			fprintf(stderr, "\rstprof: analysing %zu of %zu traces", i + 1, ts->n);
		det[i] = selfcheck_det_run(ts->path[i], &dopt, err, sizeof err);
		if (!det[i])
			stprof_err("%s", err);
		else if (stp_det_result_of(det[i])->error)
			stprof_err("%s", stp_det_result_of(det[i])->error);
		ok += det[i] != NULL;
	}
	if (!o->quiet && isatty(2))
		fprintf(stderr, "\r%40s\r", "");
	if (report && ok == ts->n) {
		fflush(stdout);
		stp_report_ranks_text(det, ts->n, NULL, stderr);
	}
	size_t tl = strlen(trace);
	int stem = (int)(tl > 4 && !strcmp(trace + tl - 4, ".stp") ? tl - 4 : tl);
	char out[PATH_MAX + 48], first[PATH_MAX + 48] = "";
	/* ranks learnt late (torch.multiprocessing.spawn's workers) start with
	 * no RANK to pick a rank's plan by: one plan, the largest rank's, that
	 * each worker enforces as the program it runs */
	size_t late = SIZE_MAX;
	for (size_t i = 0; i < ts->nranks && ok == ts->n; i++)
		if (stp_det_result_of(det[i])->rank_late && (late == SIZE_MAX || rank_peak(det[i]) > rank_peak(det[late])))
			late = i;
	if (plan && late != SIZE_MAX) {
		snprintf(out, sizeof out, "%.*s.plan", stem, trace);
		if (!o->quiet)
			fprintf(stderr, "\nAllocation plan (stprof plan; docs/planner.md): the ranks learnt their rank in\n"
			                "init_process_group (torch.multiprocessing.spawn), after they started, so one plan\n"
			                "serves them all: the one of the rank that needs the most, %s\n",
			        ts->path[late]);
		if (sidecar_ok(out, OUTNAME_PLAN, "plan") && write_plan(ts->path[late], out, o->quiet, 0) == 0 && !o->quiet)
			say_enforce_child(out, ts->path[late], argv, 3);
		plan = 0;
	}
	if (plan && !o->quiet)
		fputs("\nAllocation plans (stprof plan; docs/planner.md), one per rank: a fixed offset in one\n"
		      "pool for every allocation of the last iteration that repeats; pool / bound near 1\n"
		      "means the plan wastes nothing beyond the peak of live bytes\n",
		      stderr);
	for (size_t i = 0; i < ts->nranks && plan; i++) {
		const char *rk = strrchr(ts->path[i], '.');
		while (rk > ts->path[i] && strncmp(rk, ".rank", 5))
			rk--;
		snprintf(out, sizeof out, "%.*s%s.plan", stem, trace, rk);
		if (!o->quiet)
			fprintf(stderr, "%s:\n", ts->path[i]);
		if (sidecar_ok(out, OUTNAME_PLAN, "plan") && write_plan(ts->path[i], out, o->quiet, 0) == 0 && !*first)
			snprintf(first, sizeof first, "%s", out);
	}
	/* `stprof run --plan STEM.plan` finds the ranks' plans beside it
	 * (cli/rank_plans.c); while an earlier run's STEM.plan is there, that
	 * name would be a plain plan: one of the ranks' then names the set */
	snprintf(out, sizeof out, "%.*s.plan", stem, trace);
	if (*first && !o->quiet)
		say_enforce(access(out, F_OK) == 0 ? first : out, argv);
	snprintf(out, sizeof out, "%.*s.html", stem, trace);
	if (html && ok == ts->n && sidecar_ok(out, OUTNAME_HTML, "HTML report"))
		write_html(det, ts->nranks, out, o->quiet, NULL);
	snprintf(out, sizeof out, "%.*s.pftrace", stem, trace);
	if (timeline && sidecar_ok(out, OUTNAME_TIMELINE, "timeline")) {
		stp_export_opts eo = {0};
		char bound[512] = "";
		int all = ok == ts->n;
		size_t big = 0; /* the bound of the largest rank, for each */
		for (size_t i = 0; all && i < ts->nranks; i++)
			if (stp_det_result_of(det[i])->by_type[STP_EV_ALLOC] > stp_det_result_of(det[big])->by_type[STP_EV_ALLOC])
				big = i;
		if (all && !full)
			timeline_bound(stp_det_result_of(det[big]), trace, &eo, bound, sizeof bound);
		stp_det_options dopt;
		stp_det_options_default(&dopt);
		dopt.keep_objects = 1;
		dopt.sim_no_recommend = 1;
		if (export_run((const char *const *)ts->path, ts->nranks, out, &eo, all ? NULL : &dopt, all ? det : NULL, 1,
		               NULL) == 0 &&
		    !o->quiet)
			stprof_err("timeline of the %zu ranks written to %s (one process each; open it at "
			           "https://ui.perfetto.dev)%s", ts->nranks, out, bound);
	}
	for (size_t i = 0; i < ts->n; i++)
		stp_det_free(det[i]);
	free(det);
}

int cmd_run(int argc, char **argv)
{
	static struct option longopts[40]; /* record's options and these */
	size_t n = 0;
	for (; record_longopts[n].name; n++)
		longopts[n] = record_longopts[n];
	/* run's own options take codes above any character, so none can
	 * shadow one of record's ('S' once made --sample-launches N the name of
	 * a statistics file) */
	enum { RUN_NO_REPORT = 0x100, RUN_NO_EXPORT, RUN_NO_PLAN, RUN_FULL_TIMELINE, RUN_NO_HTML, RUN_PLAN,
	       RUN_STALLOC_STATS };
	longopts[n++] = (struct option){"no-report", no_argument, 0, RUN_NO_REPORT};
	longopts[n++] = (struct option){"no-export", no_argument, 0, RUN_NO_EXPORT};
	longopts[n++] = (struct option){"no-plan", no_argument, 0, RUN_NO_PLAN};
	longopts[n++] = (struct option){"full-timeline", no_argument, 0, RUN_FULL_TIMELINE};
	longopts[n++] = (struct option){"no-html", no_argument, 0, RUN_NO_HTML};
	longopts[n++] = (struct option){"plan", required_argument, 0, RUN_PLAN};
	longopts[n++] = (struct option){"stalloc-stats", required_argument, 0, RUN_STALLOC_STATS};
	longopts[n] = (struct option){0, 0, 0, 0};

	record_opts o = {.depth = -1, .host_depth = -1, .flush_ms = -1, .heap_sample = -1, .sidecars = 1};
	const char *enforce = NULL, *enforce_stats = NULL;
	int report = 1, timeline = 1, plan = 1, full = 0, html = 1, c;
	while ((c = getopt_long(argc, argv, record_optstring, longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == RUN_NO_REPORT) {
			report = 0;
			continue;
		}
		if (c == RUN_NO_EXPORT) {
			timeline = 0;
			continue;
		}
		if (c == RUN_NO_PLAN) {
			plan = 0;
			continue;
		}
		if (c == RUN_PLAN || c == RUN_STALLOC_STATS) {
			*(c == RUN_PLAN ? &enforce : &enforce_stats) = optarg;
			continue;
		}
		if (c == RUN_FULL_TIMELINE) {
			full = 1;
			continue;
		}
		if (c == RUN_NO_HTML) {
			html = 0;
			continue;
		}
		int rc = record_apply_option(&o, c, optarg);
		if (rc) {
			if (rc > 0)
				return stprof_usage_hint("run", argv, record_optstring, longopts);
			return 2;
		}
	}
	if (optind >= argc)
		return stprof_usage_error("run", "no program to run");
	char *const *prog = argv + optind; /* write_plan's cmd_plan resets optind */
	if (enforce)
		return run_with_plan(enforce, argv + optind, o.quiet, enforce_stats);
	if (o.quiet)
		report = 0; /* -q: nothing of stprof's own on the terminal; the files are still written */
	/* `stprof python3 missing.py`: the interpreter will only say it cannot
	 * open the script; a report, plan and timeline of its start-up would be
	 * noise.  It runs as it would without stprof, unrecorded. */
	const char *script = outname_script(argv + optind);
	if (script && access(script, F_OK) != 0) {
		stprof_err("%s: %s: nothing to profile; running %s without recording", script, strerror(errno), argv[optind]);
		fflush(NULL);
		execvp(argv[optind], argv + optind);
		stprof_err("%s: %s", argv[optind], strerror(errno));
		return errno == ENOENT ? 127 : 126;
	}
	char trace[PATH_MAX];
	int status = record_program(&o, argv + optind, trace, sizeof trace);
	if (status < 0)
		return 1; /* stprof itself failed (said why): not the shell's 127, "not found" */
	int traces = record_summary(trace, argv[optind], status, o.quiet);
	traceset ts = {0};
	if (traces > 1 && traceset_find(trace, &ts) > 0) { /* a job's ranks */
		for (size_t i = 0; i < ts.n && !o.quiet; i++)
			stprof_warn_cut(ts.path[i]);
		outputs_of_ranks(&ts, trace, &o, report, timeline, plan, full, html, prog);
		traceset_free(&ts);
		exit_like(status);
	}
	if (traces > 0 && !o.quiet)
		stprof_warn_cut(trace);
	/* a wrapper's trace (a script's `#!/usr/bin/env python3`, a pyenv
	 * shim) stands for the program it became: its last image's trace is
	 * read; the files keep the command's names */
	char image[PATH_MAX + 64];
	snprintf(image, sizeof image, "%s", trace);
	int child = traces > 1 ? program_trace(NULL, trace, image, sizeof image, o.quiet) : 0;
	if (child < 2)
		child = 0;
	/* one detector run for the report and the timeline */
	stp_det *det = NULL;
	if (traces > 0 && (report || timeline || html) && access(image, R_OK) == 0) {
		stp_det_options dopt;
		stp_det_options_default(&dopt);
		dopt.keep_objects = html ? 2 : timeline; /* the viewer's and the timeline's per-object records */
		dopt.keep_accesses = html ? 32 : 0;
		char err[512];
		int printed = 0;
		if (!o.quiet && isatty(2)) {
			dopt.progress = det_progress;
			dopt.progress_ctx = &printed;
		}
		det = selfcheck_det_run(image, &dopt, err, sizeof err);
		if (printed)
			fprintf(stderr, "\r%40s\r", "");
		if (!det)
			stprof_err("%s", err);
	}
	/* the program's child processes (DataLoader workers), in the reports */
	children ch;
	memset(&ch, 0, sizeof ch);
	if (det && (report || html) && !stp_det_result_of(det)->error)
		children_find(trace, image, stp_det_result_of(det), &ch);
	if (det && report) {
		fflush(stdout);
		const stp_det_result *r = stp_det_result_of(det);
		if (r->error)
			stprof_err("%s", r->error);
		else {
			stp_report_options ro;
			stp_report_options_default(&ro);
			ro.children = ch.view.n ? &ch.view : NULL;
			stp_report_text(det, &ro, stderr);
		}
	}
	char out[PATH_MAX + 16];
	size_t tl = strlen(trace);
	snprintf(out, sizeof out, "%.*s.plan", (int)(tl > 4 && !strcmp(trace + tl - 4, ".stp") ? tl - 4 : tl), trace);
	if (traces > 0 && plan && access(image, R_OK) == 0 && sidecar_ok(out, OUTNAME_PLAN, "plan")) {
		if (write_plan(image, out, o.quiet, 1) == 0 && !o.quiet)
			child ? say_enforce_child(out, image, prog, child) : say_enforce(out, prog);
	}
	snprintf(out, sizeof out, "%.*s.html", (int)(tl > 4 && !strcmp(trace + tl - 4, ".stp") ? tl - 4 : tl), trace);
	if (det && html && !stp_det_result_of(det)->error && sidecar_ok(out, OUTNAME_HTML, "HTML report"))
		write_html(&det, 1, out, o.quiet, ch.view.n ? &ch.view : NULL);
	children_free(&ch);
	snprintf(out, sizeof out, "%.*s.pftrace", (int)(tl > 4 && !strcmp(trace + tl - 4, ".stp") ? tl - 4 : tl), trace);
	if (traces > 0 && timeline && access(image, R_OK) == 0 && sidecar_ok(out, OUTNAME_TIMELINE, "timeline")) {
		stp_export_opts eo = {0};
		const char *one[1] = {image};
		char bound[512] = "";
		if (det && !full)
			timeline_bound(stp_det_result_of(det), trace, &eo, bound, sizeof bound);
		stp_det_options dopt;
		stp_det_options_default(&dopt);
		dopt.keep_objects = 1;
		dopt.sim_no_recommend = 1;
		/* the report's detector run when there was one (no second pass over
		 * the trace), else the export's own */
		stp_export_stats st = {0};
		char drawn[160];
		if (export_run(one, 1, out, &eo, det ? NULL : &dopt, det ? &det : NULL, 1, &st) == 0 && !o.quiet) {
			snprintf(drawn, sizeof drawn, "%" PRIu64 " %s drawn%s", st.objects_drawn,
			         det && draws_tensors(stp_det_result_of(det)) ? "tensors" : "objects",
			         det && draws_tensors(stp_det_result_of(det)) ? ", the interpreter's heap as counters" : "");
			stprof_err("timeline written to %s (%s; open it at https://ui.perfetto.dev; see docs/perfetto.md)%s", out,
			           drawn, bound);
		}
	}
	stp_det_free(det);
	exit_like(status);
}
