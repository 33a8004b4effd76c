/*
 * stprof/outfile.h - how every file stprof writes is written: traces
 * (import), plans, Perfetto timelines, snapshots, reports, CSVs, statistics.
 *
 * An output is written under a temporary name beside its path, created with
 * O_CREAT | O_EXCL | O_NOFOLLOW and mode 0600 (an output may hold the
 * program's command line, which may carry secrets), and renamed over the
 * path only once it is complete: a failed or interrupted write leaves the
 * path as it was, and no link planted at the path or the temporary name is
 * ever followed.
 *
 * What may be at the path already:
 *   - nothing, or an empty regular file: written;
 *   - a regular file of the output's kind (its first bytes say so, see
 *     stp_outkind): an earlier run's, kept as PATH.old, as perf keeps
 *     perf.data.old (PATH.old in turn may be replaced only if it is absent,
 *     empty or of the kind);
 *   - a FIFO or a character device (/dev/null, /dev/stdout, a pipe), or a
 *     symbolic link to one: written in place, nothing to keep;
 *   - anything else (another file, a symbolic link to a file, a
 *     directory): left alone, and opening fails with a one-line reason.
 */
#ifndef STPROF_OUTFILE_H
#define STPROF_OUTFILE_H
#include <stddef.h>
#include <stdio.h>

/* What a file of a kind starts with: the magic bytes, then (when mark is
 * not NULL) the mark somewhere in its first 4 KiB. */
typedef struct stp_outkind {
	const char *what;   /* for messages: "trace", "plan", ... */
	const char *magic;
	size_t magic_len;
	const char *mark;
} stp_outkind;

extern const stp_outkind stp_outkind_trace;

typedef struct stp_outfile {
	FILE *f;            /* write here */
	char *path;         /* where it goes */
	char *tmp;          /* the temporary name; NULL when written in place */
	const stp_outkind *kind;
} stp_outfile;

/* Opens an output for PATH; its stream is o->f.  NULL (o->f NULL, nothing
 * created) with "PATH: reason" in err when PATH may not be written. */
FILE *stp_outfile_open(stp_outfile *o, const char *path, const stp_outkind *kind, char *err, size_t errlen);
/* Flushes and closes the stream, keeps what was at the path as PATH.old and
 * renames the file into place.  0, or -1 with err (the temporary file is
 * removed and the path left as it was).  o is closed either way. */
int stp_outfile_commit(stp_outfile *o, char *err, size_t errlen);
/* Closes and removes the unfinished file; the path is left as it was. */
void stp_outfile_abort(stp_outfile *o);

/* 0 when PATH may be written as KIND (see above), else -1 with err: what
 * stp_outfile_open() checks first, for callers that want to know before
 * they do the work. */
int stp_outfile_check(const char *path, const stp_outkind *kind, char *err, size_t errlen);
/* 1 when PATH is a regular file (not a link) of KIND. */
int stp_outfile_is_kind(const char *path, const stp_outkind *kind);
/* Renames a regular file of KIND at PATH to PATH.old (for outputs written
 * by someone else, the collector's trace).  0 when done or nothing to keep,
 * -1 with err. */
int stp_outfile_keep_old(const char *path, const stp_outkind *kind, char *err, size_t errlen);
/* Removes every temporary file still open (async-signal-safe: for a
 * handler of SIGINT or SIGTERM that then dies of the signal). */
void stp_outfile_remove_temps(void);
#endif
