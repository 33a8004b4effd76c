/*
 * main.c - the stprof command: dispatches to a subcommand (cli/cmd_*.c).
 *
 *   stprof SUBCOMMAND [ARGS]     a subcommand from the table below
 *   stprof [OPTIONS] CMD ARGS    anything else is a program to profile: record,
 *                                then report (cmd_run)
 *
 * A word is a subcommand only if it is in the table; `stprof ./train` and
 * `stprof python3 x.py` run programs.  `stprof -- report` runs a program
 * called report.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "util.h"

const struct stprof_cmd stprof_commands[] = {
	{"record", cmd_record, "run a program and record its memory events into a trace"},
	{"report", cmd_report, "summarize a trace: objects, peak, top call sites"},
	{"info", cmd_info, "show a trace's header, counts and whether it is whole"},
	{"dump", cmd_dump, "print every event of a trace, one line each"},
	{"export", cmd_export, "write a Perfetto timeline (.pftrace) of one or more traces"},
	{"lint-perfetto", cmd_lint_perfetto, "check a Perfetto trace for what the UI drops silently"},
	{"plan", cmd_plan, "build an STAlloc allocation plan from a trace; show or verify one"},
	{"import", cmd_import, "turn a PyTorch memory snapshot (.pickle) into a trace"},
	{0, 0, 0},
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: stprof [RUN OPTIONS] PROGRAM [ARGS...]   record, report, timeline, plan\n"
	        "       stprof SUBCOMMAND [ARGS...]\n"
	        "       stprof --version | --help\n\n"
	        "stprof records every allocation of a program with its call path and tells\n"
	        "where the memory goes: peaks, lifetimes, fragmentation and how to plan it.\n\n"
	        "Subcommands:\n");
	for (const struct stprof_cmd *c = stprof_commands; c->name; c++)
		fprintf(f, "  %-14s %s\n", c->name, c->summary);
	fprintf(f, "\nRun `stprof SUBCOMMAND --help` for a subcommand's options, and\n"
	           "`stprof run --help` for the options of `stprof PROGRAM`.\n");
}

int main(int argc, char **argv)
{
	stprof_cli_init(argv[0]);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *w = argv[1];
	if (!strcmp(w, "-h") || !strcmp(w, "--help") || !strcmp(w, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(w, "--version") || !strcmp(w, "version")) {
		printf("stprof %s (trace format %d.%d)\n", STPROF_VERSION, STP_FORMAT_MAJOR, STP_FORMAT_MINOR);
		return 0;
	}
	if (!strcmp(w, "run"))
		return cmd_run(argc - 1, argv + 1);
	for (const struct stprof_cmd *c = stprof_commands; c->name; c++)
		if (!strcmp(w, c->name))
			return c->fn(argc - 1, argv + 1);
	/* Not a subcommand: a program to profile. */
	return cmd_run(argc, argv);
}
