/*
 * outfile.c - writing an output file without clobbering anything (see
 * stprof/outfile.h for the rules).
 *
 * Invariants: nothing is written through a path that was not created here
 * with O_EXCL | O_NOFOLLOW, except a FIFO or character device that fstat()
 * confirms after opening; the only files renamed or removed are the
 * temporary ones made here and, when an output is committed, the earlier
 * file of the same kind at its path (to PATH.old).  rename() never follows a
 * link, so what was checked and what is replaced cannot be made to differ
 * by a link planted in between.  Temporary names live in a fixed table too
 * (stp_outfile_remove_temps() runs in signal handlers).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stprof/outfile.h"
#include "stprof/trace_codec.h"

const stp_outkind stp_outkind_trace = {"stprof trace", STP_FILE_MAGIC, 8, NULL};

/* ------------------------------------------------ temporary names, for signals */

#define TEMP_SLOTS 8
#define TEMP_MAX 4096
static char temp_name[TEMP_SLOTS][TEMP_MAX];
static volatile sig_atomic_t temp_used[TEMP_SLOTS];

static void temp_track(const char *tmp)
{
	if (strlen(tmp) >= TEMP_MAX)
		return;
	for (int i = 0; i < TEMP_SLOTS; i++)
		if (!temp_used[i]) {
			memcpy(temp_name[i], tmp, strlen(tmp) + 1);
			temp_used[i] = 1;
			return;
		}
}

static void temp_untrack(const char *tmp)
{
	for (int i = 0; i < TEMP_SLOTS; i++)
		if (temp_used[i] && !strcmp(temp_name[i], tmp))
			temp_used[i] = 0;
}

void stp_outfile_remove_temps(void)
{
	for (int i = 0; i < TEMP_SLOTS; i++)
		if (temp_used[i]) {
			unlink(temp_name[i]);
			temp_used[i] = 0;
		}
}

/* ------------------------------------------------------------ checks */

int stp_outfile_is_kind(const char *path, const stp_outkind *kind)
{
	char buf[4096 + 1];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat sb;
	ssize_t n = 0;
	if (!fstat(fd, &sb) && S_ISREG(sb.st_mode)) {
		while (n < 4096) {
			ssize_t k = read(fd, buf + n, (size_t)(4096 - n));
			if (k <= 0)
				break;
			n += k;
		}
	}
	close(fd);
	if (n < (ssize_t)kind->magic_len || memcmp(buf, kind->magic, kind->magic_len))
		return 0;
	if (!kind->mark)
		return 1;
	buf[n] = 0;
	size_t ml = strlen(kind->mark);
	for (ssize_t i = 0; i + (ssize_t)ml <= n; i++)
		if (!memcmp(buf + i, kind->mark, ml))
			return 1;
	return 0;
}

enum { AT_NOTHING, AT_REPLACE, AT_KEEP_OLD, AT_IN_PLACE };

/* What is at PATH and what writing it means (AT_*), or -1 with err. */
static int judge(const char *path, const stp_outkind *kind, char *err, size_t errlen)
{
	struct stat sb, tb;
	if (lstat(path, &sb) != 0) {
		if (errno == ENOENT)
			return AT_NOTHING;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISLNK(sb.st_mode)) {
		if (stat(path, &tb) == 0 && (S_ISFIFO(tb.st_mode) || S_ISCHR(tb.st_mode)))
			return AT_IN_PLACE; /* /dev/stdout and the like */
		snprintf(err, errlen, "%s: is a symbolic link; not following it (remove it or choose another output)",
		         path);
		return -1;
	}
	if (S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode))
		return AT_IN_PLACE;
	if (S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "%s: is a directory", path);
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s: exists and is not a regular file; leaving it alone", path);
		return -1;
	}
	if (sb.st_size == 0)
		return AT_REPLACE;
	if (stp_outfile_is_kind(path, kind))
		return AT_KEEP_OLD;
	snprintf(err, errlen, "%s: exists and is not an %s; not overwriting it (remove it or choose another output)",
	         path, kind->what);
	return -1;
}

int stp_outfile_check(const char *path, const stp_outkind *kind, char *err, size_t errlen)
{
	return judge(path, kind, err, errlen) < 0 ? -1 : 0;
}

int stp_outfile_keep_old(const char *path, const stp_outkind *kind, char *err, size_t errlen)
{
	struct stat sb;
	if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0 || !stp_outfile_is_kind(path, kind))
		return 0;
	size_t n = strlen(path);
	char *old = malloc(n + 5);
	if (!old) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	memcpy(old, path, n);
	memcpy(old + n, ".old", 5);
	char why[512];
	int rc = -1, at = judge(old, kind, why, sizeof why);
	if (at < 0 || at == AT_IN_PLACE)
		snprintf(err, errlen, "cannot keep %s as %s: %s", path, old, at < 0 ? why : "it is not a regular file");
	else if (rename(path, old) != 0)
		snprintf(err, errlen, "cannot keep %s as %s: %s", path, old, strerror(errno));
	else
		rc = 0;
	free(old);
	return rc;
}

/* ------------------------------------------------------------ writing */

/* Creates DIR/.BASE.<pid>.<n>.tmp beside path, exclusively (.stprof for
 * BASE when BASE is too long to take the suffix within NAME_MAX). */
static int make_temp(stp_outfile *o, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
	const char *base = slash ? slash + 1 : path;
	if (strlen(base) > 200)
		base = "stprof";
	size_t need = strlen(path) + 64;
	o->tmp = malloc(need);
	if (!o->tmp)
		return -1;
	static unsigned counter;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	for (int tries = 0; tries < 100; tries++) {
		unsigned r = (unsigned)ts.tv_nsec ^ (unsigned)(++counter * 2654435761u) ^ (unsigned)tries;
		snprintf(o->tmp, need, "%.*s.%s.%d.%08x.tmp", (int)dlen, path, base, (int)getpid(), r);
		int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			break;
	}
	free(o->tmp);
	o->tmp = NULL;
	return -1;
}

FILE *stp_outfile_open(stp_outfile *o, const char *path, const stp_outkind *kind, char *err, size_t errlen)
{
	memset(o, 0, sizeof *o);
	int at = judge(path, kind, err, errlen);
	if (at < 0)
		return NULL;
	o->kind = kind;
	o->path = strdup(path);
	if (!o->path) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	int fd;
	if (at == AT_IN_PLACE) {
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		struct stat sb;
		if (fd >= 0 && (fstat(fd, &sb) || !(S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode)))) {
			close(fd);
			fd = -1;
			errno = EEXIST; /* it changed under us */
		}
	} else {
		fd = make_temp(o, path);
	}
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot create it: %s", path, strerror(errno));
		free(o->path);
		o->path = NULL;
		return NULL;
	}
	if (o->tmp)
		temp_track(o->tmp);
	o->f = fdopen(fd, "wb");
	if (!o->f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		stp_outfile_abort(o);
		return NULL;
	}
	return o->f;
}

static void outfile_free(stp_outfile *o)
{
	if (o->tmp)
		temp_untrack(o->tmp);
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	o->f = NULL;
}

void stp_outfile_abort(stp_outfile *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	outfile_free(o);
}

int stp_outfile_commit(stp_outfile *o, char *err, size_t errlen)
{
	int bad = ferror(o->f);
	int e = errno;
	if (fflush(o->f) != 0) {
		bad = 1;
		e = errno;
	}
	if (fclose(o->f) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	o->f = NULL;
	if (bad) {
		snprintf(err, errlen, "%s: write failed: %s", o->path, strerror(e ? e : EIO));
		stp_outfile_abort(o);
		return -1;
	}
	if (!o->tmp) { /* written in place */
		outfile_free(o);
		return 0;
	}
	/* the path may have changed while the file was written: judge again */
	int at = judge(o->path, o->kind, err, errlen);
	if (at == AT_IN_PLACE) {
		snprintf(err, errlen, "%s: became a FIFO or device while it was written; leaving it alone", o->path);
		at = -1;
	}
	if (at == AT_KEEP_OLD && stp_outfile_keep_old(o->path, o->kind, err, errlen) < 0)
		at = -1;
	if (at >= 0 && rename(o->tmp, o->path) != 0) {
		snprintf(err, errlen, "%s: %s", o->path, strerror(errno));
		at = -1;
	}
	if (at < 0) {
		stp_outfile_abort(o);
		return -1;
	}
	outfile_free(o);
	return 0;
}
