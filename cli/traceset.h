/*
 * traceset.h - the traces of one recorded run that a single name stands
 * for (report, export and the one-shot mode): a main trace with rank
 * traces beside it (FILE.rank<R>[.<n>], docs/record.md "Ranks"), or a
 * directory holding the rank traces of one recording.
 */
#ifndef STPROF_CLI_TRACESET_H
#define STPROF_CLI_TRACESET_H
#include <stddef.h>

typedef struct traceset {
	char **path;     /* the ranks' traces, by rank; then the main trace (the launcher) when it exists */
	size_t n;        /* paths */
	size_t nranks;   /* of them, rank traces (path[0 .. nranks-1]) */
} traceset;

/* Fills ts for ARG: a directory (the rank traces in it, which must all
 * belong to one recording) or a trace with rank traces beside it.  Of a
 * rank's several traces (FILE.rank<R>, FILE.rank<R>.<n>: later images, or
 * a restarted worker) the last is taken.  Returns the number of rank
 * traces (0: ARG stands for no set, ts empty), or -1 after printing why
 * (ARG names a directory without rank traces, or of several recordings). */
int traceset_find(const char *arg, traceset *ts);
void traceset_free(traceset *ts);
#endif
