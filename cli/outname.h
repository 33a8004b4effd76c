/*
 * outname.h - default output names (after the script an interpreter runs)
 * and never destroying a file stprof did not write.
 */
#ifndef STPROF_CLI_OUTNAME_H
#define STPROF_CLI_OUTNAME_H
#include <stddef.h>

typedef enum { OUTNAME_TRACE, OUTNAME_PLAN, OUTNAME_TIMELINE, OUTNAME_HTML, OUTNAME_SNAPSHOT } outname_kind;

/* The name outputs are called after, without directory or extension: the
 * program's, or for an interpreter (python3 x.py, bash run.sh) its script's;
 * `python3 -m pkg.mod` gives mod. */
void outname_base(char *const *argv, char *base, size_t len);
/* The script an interpreter in argv runs (python3 x.py: "x.py"), NULL
 * when argv runs no interpreter or runs a module or code (-m, -c). */
const char *outname_script(char *const *argv);
/* 1 when PATH looks written by stprof as KIND (its first bytes). */
int outname_ours(const char *path, outname_kind kind);
/* 1 when something is at PATH that an output of KIND may not replace
 * (stprof/outfile.h: not stprof's, a link, a directory). */
int outname_foreign(const char *path, outname_kind kind);
/* Renames an stprof-written PATH to PATH.old (an earlier run's); nothing
 * when absent or not stprof's.  0, or -1 after printing the error. */
int outname_keep_old(const char *path, outname_kind kind);
/* The base name of a recording's outputs: outname_base(), or BASE.<pid>
 * when BASE.stp (and with_sidecars, BASE.plan, BASE.pftrace or BASE.html)
 * exists and was not written by stprof. */
void outname_one_shot(char *const *argv, int with_sidecars, char *base, size_t len);
#endif
