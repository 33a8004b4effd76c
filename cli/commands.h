/*
 * commands.h - the stprof subcommands.  Each lives in cli/cmd_<name>.c and
 * has the signature of a main(): argv[0] is the subcommand's name.  A
 * subcommand prints its own --help and returns the process exit code.
 */
#ifndef STPROF_CLI_COMMANDS_H
#define STPROF_CLI_COMMANDS_H

typedef int (*stprof_cmd_fn)(int argc, char **argv);

struct stprof_cmd {
	const char *name;
	stprof_cmd_fn fn;
	const char *summary;
};

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_lint_perfetto(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_plan_lifetimes(int argc, char **argv); /* plan --lifetimes (plan_lifetimes.c) */
int cmd_import(int argc, char **argv);
int cmd_run(int argc, char **argv); /* `stprof CMD ARGS...` */

extern const struct stprof_cmd stprof_commands[];
#endif
