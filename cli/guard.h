/*
 * guard.h - the CLI's forgiveness and safety checks: one-line usage errors,
 * "did you mean" for mistyped subcommands, and refusing to overwrite an input
 * or a file that stprof did not write.
 */
#ifndef STPROF_CLI_GUARD_H
#define STPROF_CLI_GUARD_H
#include <stddef.h>

/* "stprof CMD: <message>" and a pointer to --help on stderr; returns 2. */
int stprof_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* After getopt_long returned '?' (opterr is 0: main.c): "stprof CMD:
 * unknown option 'X'; did you mean '--Y'?" (the closest long option) or
 * "option 'X' needs a value", and the pointer to --help; returns 2. */
struct option;
int stprof_usage_hint(const char *cmd, char *const *argv, const char *shortopts, const struct option *longopts);
struct stprof_cmd;
/* The subcommand of cmds (ended by a NULL name; "run" and "help" too)
 * closest to word, or NULL.  The table is passed in so that this file
 * stays below main.c (calls run one way: tests/layout). */
const char *stprof_close_subcommand(const char *word, const struct stprof_cmd *cmds);
/* 1 when WORD runs something: a path that exists, or an executable on $PATH. */
int stprof_on_path(const char *word);
/* The same, and the file it runs into path (pathlen bytes; as execvp
 * finds it: the first executable on $PATH for a word without a slash). */
int stprof_find_on_path(const char *word, char *path, size_t pathlen);
/* 1 when both paths exist and are the same file. */
int stprof_same_file(const char *a, const char *b);
/* Prints an error and returns 1 when OUT is one of the inputs INS. */
int stprof_refuse_same(const char *cmd, const char *out, const char *const *ins, size_t nins);
/* 1 when PATH can be read and starts with the N bytes MAGIC. */
int stprof_file_starts_with(const char *path, const void *magic, size_t n);
/* An stprof trace, by its magic bytes. */
int stprof_is_trace(const char *path);
#endif
