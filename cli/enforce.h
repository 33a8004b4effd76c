/*
 * enforce.h - `stprof run --plan` (enforce.c): exec a program with
 * libstalloc.so enforcing a plan.
 */
#ifndef STPROF_CLI_ENFORCE_H
#define STPROF_CLI_ENFORCE_H

/* Checks the plan, sets up the environment and execs argv; returns only on
 * failure, with the exit code to use (2 bad plan or library, 126/127 exec).
 * stats: where libstalloc writes its statistics (NULL: stderr unless quiet). */
int run_with_plan(const char *plan, char **argv, int quiet, const char *stats);

#endif
