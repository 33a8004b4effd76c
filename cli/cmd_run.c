/*
 * cmd_run.c - `stprof [OPTIONS] PROGRAM [ARGS...]`: the one-shot mode.
 * Records PROGRAM, then reports on the trace and prints the summary of the
 * allocation plan of its last iteration (on stderr, so the program's stdout
 * stays as it was), and writes the plan (NAME.plan) and the Perfetto
 * timeline beside the trace.  The exit status is the program's.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "record.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: stprof [OPTIONS] [--] PROGRAM [ARGS...]\n"
	           "       stprof run [OPTIONS] [--] PROGRAM [ARGS...]\n\n"
	           "Records PROGRAM (as `stprof record` does), then prints the report of\n"
	           "`stprof report` and the plan summary of `stprof plan` on stderr, and\n"
	           "writes the allocation plan (TRACE.plan) and the Perfetto timeline of\n"
	           "`stprof export` beside the trace (TRACE.pftrace: open it at\n"
	           "https://ui.perfetto.dev).  PROGRAM's stdout, exit status and signals are\n"
	           "unchanged.\n\n"
	           "Options:\n%s"
	           "      --no-report      no report\n"
	           "      --no-plan        no allocation plan\n"
	           "      --no-export      no timeline\n"
	           "  -h, --help           this help\n",
	        record_help);
}

int cmd_run(int argc, char **argv)
{
	static struct option longopts[16];
	size_t n = 0;
	for (; record_longopts[n].name; n++)
		longopts[n] = record_longopts[n];
	longopts[n++] = (struct option){"no-report", no_argument, 0, 'N'};
	longopts[n++] = (struct option){"no-export", no_argument, 0, 'X'};
	longopts[n++] = (struct option){"no-plan", no_argument, 0, 'P'};
	longopts[n] = (struct option){0, 0, 0, 0};

	record_opts o = {.depth = -1, .flush_ms = -1};
	int report = 1, timeline = 1, plan = 1, c;
	while ((c = getopt_long(argc, argv, record_optstring, longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 'N') {
			report = 0;
			continue;
		}
		if (c == 'X') {
			timeline = 0;
			continue;
		}
		if (c == 'P') {
			plan = 0;
			continue;
		}
		int rc = record_apply_option(&o, c, optarg);
		if (rc) {
			if (rc > 0)
				usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	char trace[PATH_MAX];
	int status = record_program(&o, argv + optind, trace, sizeof trace);
	if (status < 0)
		return 127;
	int traces = record_summary(trace, argv[optind], o.quiet);
	if (traces > 0 && report) {
		fflush(stdout);
		int saved = dup(1);
		dup2(2, 1);
		char *rargv[] = {"report", trace, NULL};
		optind = 1;
		cmd_report(2, rargv);
		fflush(stdout);
		dup2(saved, 1);
		close(saved);
	}
	if (traces > 0 && plan && access(trace, R_OK) == 0) {
		/* the allocation plan of the last iteration, beside the trace; its
		 * summary on stderr */
		char out[PATH_MAX + 8];
		size_t tl = strlen(trace);
		snprintf(out, sizeof out, "%.*s.plan", (int)(tl > 4 && !strcmp(trace + tl - 4, ".stp") ? tl - 4 : tl),
		         trace);
		char *pargv[6];
		int pc = 0;
		pargv[pc++] = "plan";
		if (o.quiet)
			pargv[pc++] = "-q";
		pargv[pc++] = "-o";
		pargv[pc++] = out;
		pargv[pc++] = trace;
		pargv[pc] = NULL;
		fflush(stdout);
		int saved = dup(1);
		dup2(2, 1);
		optind = 1;
		if (!o.quiet)
			fputc('\n', stdout);
		cmd_plan(pc, pargv);
		fflush(stdout);
		dup2(saved, 1);
		close(saved);
	}
	if (traces > 0 && timeline && access(trace, R_OK) == 0) {
		char *eargv[] = {"export", "-q", trace, NULL};
		optind = 1;
		if (cmd_export(3, eargv) == 0 && !o.quiet) {
			size_t len = strlen(trace);
			if (len > 4 && !strcmp(trace + len - 4, ".stp"))
				len -= 4;
			stprof_err("timeline written to %.*s.pftrace (open it at https://ui.perfetto.dev; "
			           "see docs/perfetto.md)", (int)len, trace);
		}
	}
	exit_like(status);
}
