/*
 * main.c - the stprof command: dispatches to a subcommand (cli/cmd_*.c).
 *
 *   stprof SUBCOMMAND [ARGS]     a subcommand from the table below
 *   stprof [OPTIONS] CMD ARGS    anything else is a program to profile: record,
 *                                then report (cmd_run)
 *
 * A word is a subcommand only if it is in the table; `stprof ./train` and
 * `stprof python3 x.py` run programs.  `stprof -- report` runs a program
 * called report.  A word that is no subcommand nor program but close to a
 * subcommand gets "did you mean"; a program on PATH given only stprof traces
 * (`stprof diff a.stp b.stp`) is refused with a pointer to `stprof run`.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "commands.h"
#include "guard.h"
#include "scratch.h"
#include "stprof/outfile.h"
#include "stprof/trace_codec.h"
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
	fprintf(f, "  %-14s %s\n", "run", "the one-shot mode: `stprof run PROGRAM` is `stprof PROGRAM`");
	fprintf(f, "  %-14s %s\n", "help", "`stprof help SUBCOMMAND` is `stprof SUBCOMMAND --help`");
	fprintf(f, "\nRun options (before PROGRAM; `stprof run --help` for all): -o FILE, -m SIZE,\n"
	           "-d N, -q, --no-report, --no-plan, --no-export.  `stprof -- PROGRAM` runs a\n"
	           "program named like a subcommand.\n"
	           "\nRun `stprof SUBCOMMAND --help` for a subcommand's options, and\n"
	           "`stprof run --help` for the options of `stprof PROGRAM`.\n");
}

/* 1 when ARG names an existing stprof trace (a file starting with its magic). */
static int is_trace_arg(const char *arg)
{
	return arg[0] != '-' && stprof_is_trace(arg);
}

/* `stprof help [SUBCOMMAND]` */
static int help(const char *what)
{
	if (!what || !strcmp(what, "-h") || !strcmp(what, "--help") || !strcmp(what, "help")) {
		usage(stdout);
		return 0;
	}
	char *hargv[] = {(char *)what, "--help", NULL};
	if (!strcmp(what, "run"))
		return cmd_run(2, hargv);
	for (const struct stprof_cmd *c = stprof_commands; c->name; c++)
		if (!strcmp(what, c->name))
			return c->fn(2, hargv);
	const char *close = stprof_close_subcommand(what, stprof_commands);
	stprof_err("help: no subcommand '%s'%s%s%s (see stprof --help)", what, close ? "; did you mean '" : "",
	           close ? close : "", close ? "'?" : "");
	return 2;
}

/* A word that is not a subcommand: a program to run, unless it looks like a
 * mistyped subcommand.  Returns -1 to run it, else the exit status. */
static int not_a_subcommand(int argc, char **argv)
{
	const char *w = argv[1];
	if (w[0] == '-')
		return -1; /* run options */
	const char *close = stprof_close_subcommand(w, stprof_commands);
	if (!stprof_on_path(w)) {
		if (close) {
			stprof_err("'%s' is not a subcommand nor a program; did you mean 'stprof %s'?", w, close);
			return 2;
		}
		return -1; /* the run reports "not found" with the shell's 127 */
	}
	/* a program on PATH given only stprof traces: a subcommand was meant */
	int traces = 0;
	for (int i = 2; i < argc; i++)
		if (is_trace_arg(argv[i]))
			traces++;
	if (traces && traces == argc - 2) {
		stprof_err("'%s' is not a subcommand (see stprof --help)%s%s%s; to profile the program %s on these "
		           "traces, run 'stprof run %s ...'",
		           w, close ? "; did you mean '" : "", close ? close : "", close ? "'?" : "", w, w);
		return 2;
	}
	return -1;
}

/* Interrupted (Ctrl-C, kill): no half-written output or scratch file stays
 * behind; then stprof dies of the signal, as it would have. */
static void die_clean(int sig)
{
	stp_outfile_remove_temps();
	stprof_scratch_remove();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void clean_on_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction old, sa = {.sa_handler = die_clean};
		sigemptyset(&sa.sa_mask);
		/* a signal ignored by whoever started stprof (nohup) stays so */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
			sigaction(sigs[i], &sa, NULL);
	}
}

int main(int argc, char **argv)
{
	stprof_cli_init(argv[0]);
	opterr = 0; /* the subcommands say what was wrong, as "stprof CMD: ..." (guard.c) */
	clean_on_signals();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *w = argv[1];
	if (!strcmp(w, "-h") || !strcmp(w, "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(w, "help"))
		return help(argc > 2 ? argv[2] : NULL);
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
	int rc = not_a_subcommand(argc, argv);
	return rc >= 0 ? rc : cmd_run(argc, argv);
}
