/*
 * scratch.h - stprof's temporary files: one mkdtemp directory under $TMPDIR
 * (default /tmp) per run, made on first use and removed with what is in it
 * at exit (and by stprof_scratch_remove(), from a signal handler).
 */
#ifndef STPROF_CLI_SCRATCH_H
#define STPROF_CLI_SCRATCH_H

/* A new path in the scratch directory ending in NAME (made unique with a
 * number in front), owned by the scratch list; NULL after printing the
 * error. */
const char *stprof_scratch_path(const char *name);
/* Removes the scratch files and directory now (async-signal-safe enough
 * for a handler that then dies: unlink and rmdir only). */
void stprof_scratch_remove(void);
#endif
