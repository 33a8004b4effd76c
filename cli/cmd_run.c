/*
 * cmd_run.c - `stprof [OPTIONS] PROGRAM [ARGS...]`: the one-shot mode.
 * Records PROGRAM, then reports on the trace and plans its last iteration
 * (`stprof plan`, written beside the trace), all on stderr so the program's
 * stdout stays as it was.  The exit status is the program's.
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
	           "`stprof report` and the allocation plan summary of `stprof plan` (the plan\n"
	           "is written beside the trace as NAME.plan) on stderr.  PROGRAM's stdout,\n"
	           "exit status and signals are unchanged.\n\n"
	           "Options:\n%s"
	           "      --no-report      record only\n"
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
	longopts[n] = (struct option){0, 0, 0, 0};

	record_opts o = {.depth = -1, .flush_ms = -1};
	int report = 1, c;
	while ((c = getopt_long(argc, argv, record_optstring, longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 'N') {
			report = 0;
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
	int started;
	int status = record_run(&o, argv + optind, trace, sizeof trace, &started);
	if (status < 0)
		return 127;
	if (!started)
		exit_like(status);
	if (record_summary(trace, argv[optind], o.quiet) > 0 && report) {
		fflush(stdout);
		int saved = dup(1);
		dup2(2, 1);
		char *rargv[] = {"report", trace, NULL};
		optind = 1;
		cmd_report(2, rargv);
		/* then the allocation plan of its last iteration, beside the trace */
		char plan[PATH_MAX + 8];
		size_t tl = strlen(trace);
		snprintf(plan, sizeof plan, "%.*s.plan", (int)(tl > 4 && !strcmp(trace + tl - 4, ".stp") ? tl - 4 : tl), trace);
		char *pargv[] = {"plan", "-o", plan, trace, NULL};
		optind = 1;
		fputc('\n', stdout);
		cmd_plan(4, pargv);
		fflush(stdout);
		dup2(saved, 1);
		close(saved);
	}
	exit_like(status);
}
