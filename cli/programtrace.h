/*
 * programtrace.h - which trace of a recording is the program's, when the
 * command reached it through wrappers (see programtrace.c).
 */
#ifndef STPROF_CLI_PROGRAMTRACE_H
#define STPROF_CLI_PROGRAMTRACE_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The program's trace for the recording whose main trace is path, into
 * out: the last image of the command's process, or, when that image is a
 * shell or did no work (no iteration, no tensor: a launcher such as
 * torch.multiprocessing.spawn's parent), the largest trace of the
 * processes it ran that are not shells (that did work).  Returns 0 (out is
 * path), 1 (execs followed), 2 (a shell's child) or 3 (a launcher's); when
 * not 0 and not quiet, one line on stderr, headed "cmd: " unless cmd is
 * NULL, says which trace is read and why. */
int program_trace(const char *cmd, const char *path, char *out, size_t len, int quiet);
/* The pid of the process a trace (a regular file) recorded, its parent's
 * in *ppid (when not NULL) and its executable in exe (when not NULL); 0
 * when it has none. */
uint32_t trace_process(const char *path, uint32_t *ppid, char *exe, size_t len);
/* The same; when it has none, why into why (whylen bytes): the reader's
 * error, naming the file and the offset, or that its first event is
 * missing. */
uint32_t trace_process_why(const char *path, uint32_t *ppid, char *exe, size_t len, char *why, size_t whylen);
/* Calls fn for each trace beside path named path.<pid>[.<n>] (the
 * collector's names for child processes and exec'd images) that did not
 * end by execve (the last image of each process), with its size, until fn
 * returns non-zero; returns how many it was called for. */
int traces_beside(const char *path, int (*fn)(const char *trace, off_t size, void *arg), void *arg);
/* The command line a trace recorded (argv joined by spaces): 0, or -1
 * (out empty) when it has none. */
int trace_cmdline(const char *path, char *out, size_t len);
/* Whether exe (a path or a name) is a shell: sh, bash, dash, zsh, ... */
int is_shell(const char *exe);
#endif
