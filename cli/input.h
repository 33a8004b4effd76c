/*
 * input.h - the files subcommands read (traces, snapshots, plans, CSVs),
 * made readable as often as the command needs: a FIFO or a pipe
 * (/dev/stdin) is read once, into a scratch file, and the command reads
 * that (one that does not start as a trace or snapshot must is refused at
 * once); a directory is refused where one file is wanted; a trace cut
 * short inside a chunk gets its warning once, before it is read to its
 * last whole chunk.
 */
#ifndef STPROF_CLI_INPUT_H
#define STPROF_CLI_INPUT_H

enum {
	STPROF_IN_DIR_OK = 1, /* a directory stands for a run's ranks */
	STPROF_IN_TRACE = 2,  /* a trace (or a snapshot): warn when it is cut */
	STPROF_IN_PICKLE = 4, /* a snapshot */
};
/* Prepares *path for cmd (see above), pointing it at the copy when one was
 * made.  0, or 1 after printing the error. */
int stprof_input(const char *cmd, const char **path, unsigned flags);
/* The same for argv[from..argc). */
int stprof_inputs(const char *cmd, int argc, char **argv, int from, unsigned flags);
/* Prints the warning when the trace at path ends inside a chunk. */
void stprof_warn_cut(const char *path);
#endif
