/*
 * programtrace.h - which trace of a recording is the program's, when the
 * command reached it through wrappers (see programtrace.c).
 */
#ifndef STPROF_CLI_PROGRAMTRACE_H
#define STPROF_CLI_PROGRAMTRACE_H
#include <stddef.h>

/* The program's trace for the recording whose main trace is path, into
 * out: the last image of the command's process, or, when that image is a
 * shell, the largest trace of the processes it ran that are not shells.
 * Returns 0 (out is path), 1 (execs followed) or 2 (a shell's child); when
 * not 0 and not quiet, one line on stderr, headed "cmd: " unless cmd is
 * NULL, says which trace is read and why. */
int program_trace(const char *cmd, const char *path, char *out, size_t len, int quiet);
/* The command line a trace recorded (argv joined by spaces): 0, or -1
 * (out empty) when it has none. */
int trace_cmdline(const char *path, char *out, size_t len);
#endif
