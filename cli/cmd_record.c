/*
 * cmd_record.c - `stprof record [OPTIONS] [--] PROGRAM [ARGS...]`: run a
 * program with the collector and write its trace.  The exit status is the
 * program's (or it dies of the same signal).
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>

#include "commands.h"
#include "record.h"
#include "guard.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: stprof record [OPTIONS] [--] PROGRAM [ARGS...]\n\n"
	           "Runs PROGRAM with the stprof collector preloaded and writes every heap\n"
	           "allocation and free (malloc, calloc, realloc, free, posix_memalign,\n"
	           "aligned_alloc, memalign, valloc, pvalloc; C++ new and delete), each with its\n"
	           "native call path, plus threads, loaded modules and the program's markers,\n"
	           "and, when the program uses CUDA, its device, managed and pinned memory,\n"
	           "kernels, copies, sets and syncs (--cuda), into a trace.  PROGRAM's output,\n"
	           "exit status and signals are its own; stprof adds one line on stderr at the\n"
	           "end (none with -q).\n\n"
	           "Options:\n%s  -h, --help           this help\n\n"
	           "Read the trace with `stprof report`, `stprof info`.\n",
	        record_help);
}

int cmd_record(int argc, char **argv)
{
	record_opts o = {.depth = -1, .host_depth = -1, .flush_ms = -1, .heap_sample = -1};
	int c;
	while ((c = getopt_long(argc, argv, record_optstring, record_longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		int rc = record_apply_option(&o, c, optarg);
		if (rc) {
			if (rc > 0)
				return stprof_usage_hint("record", argv, record_optstring, record_longopts);
			return 2;
		}
	}
	if (optind >= argc) {
		return stprof_usage_error("record", "no program to run");
	}
	char trace[PATH_MAX];
	int status = record_program(&o, argv + optind, trace, sizeof trace);
	if (status < 0)
		return 1; /* stprof itself failed (said why): not the shell's 127, "not found" */
	record_summary(trace, argv[optind], status, o.quiet);
	exit_like(status);
}
