/*
 * input.c - see input.h.  Every reader under the commands opens its file
 * by name, some more than once (the detector's passes, the exporter after
 * the detector, the planner's two conversions) and some sniff it first
 * (a snapshot or a trace?): a stream would be drained by the first look.
 * So a file that is not a regular one is copied once, in full, and the
 * commands read the copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input.h"
#include "scratch.h"
#include "stprof/trace.h"
#include "stprof/trace_codec.h"
#include "util.h"

void stprof_warn_cut(const char *path)
{
	/* once per path and run: the one-shot mode reads its trace in several
	 * subcommands, report and export look at their inputs twice */
	static char warned[16][PATH_MAX];
	static unsigned nwarned;
	for (unsigned i = 0; i < nwarned && i < 16; i++)
		if (!strcmp(path, warned[i]))
			return;
	uint64_t off, bytes;
	if (stp_trace_cut(path, &off, &bytes)) {
		snprintf(warned[nwarned++ % 16], PATH_MAX, "%s", path);
		stprof_err("warning: %s ends inside the chunk at offset %" PRIu64 " (its last %" PRIu64
		           " bytes are not a whole chunk: the recording was cut short); reading what is whole",
		           path, off, bytes);
	}
}

/* What a stream for flags may start with: a trace or a snapshot, a
 * snapshot; anything (0) for the rest. */
static int starts_right(unsigned flags, const char *b, size_t n)
{
	if (flags & STPROF_IN_TRACE)
		return (n >= 8 && !memcmp(b, STP_FILE_MAGIC, 8)) || (n >= 1 && (uint8_t)b[0] == 0x80);
	if (flags & STPROF_IN_PICKLE)
		return n >= 1 && (uint8_t)b[0] == 0x80;
	return 1;
}

/* Copies the stream at path into a scratch file; its path, or NULL after
 * the error.  One that does not start as the command's input must stops
 * there (an endless one, `yes |`, would fill the disk). */
static const char *spool(const char *cmd, const char *path, unsigned flags)
{
	char nb[PATH_MAX];
	snprintf(nb, sizeof nb, "%s", path);
	const char *copy = stprof_scratch_path(basename(nb));
	if (!copy)
		return NULL;
	int in = open(path, O_RDONLY | O_CLOEXEC), out = -1;
	if (in < 0) {
		stprof_err("%s: %s: %s", cmd, path, strerror(errno));
		return NULL;
	}
	out = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		stprof_err("%s: %s: cannot make a copy of it (%s): %s", cmd, path, copy, strerror(errno));
		close(in);
		return NULL;
	}
	char buf[1 << 16];
	ssize_t n;
	const char *rc = copy;
	size_t got = 0;
	while (got < 8 && (n = read(in, buf + got, 8 - got)) != 0) /* the first bytes, whole */
		if (n > 0)
			got += (size_t)n;
		else if (errno != EINTR)
			break;
	if (!starts_right(flags, buf, got)) {
		stprof_err("%s: %s: offset 0: not %s (bad magic)", cmd, path,
		           flags & STPROF_IN_TRACE ? "an stprof trace nor a PyTorch snapshot" : "a pickle");
		close(in);
		close(out);
		return NULL;
	}
	n = (ssize_t)got;
	if (n && write(out, buf, (size_t)n) != n) {
		stprof_err("%s: %s: cannot copy it to %s: %s", cmd, path, copy, strerror(errno));
		close(in);
		close(out);
		return NULL;
	}
	while ((n = read(in, buf, sizeof buf)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			stprof_err("%s: %s: %s", cmd, path, strerror(errno));
			rc = NULL;
			break;
		}
		for (ssize_t w = 0, k; w < n; w += k)
			if ((k = write(out, buf + w, (size_t)(n - w))) < 0) {
				if (errno == EINTR) {
					k = 0;
					continue;
				}
				stprof_err("%s: %s: cannot copy it to %s: %s", cmd, path, copy, strerror(errno));
				rc = NULL;
				break;
			}
		if (!rc)
			break;
	}
	close(in);
	close(out);
	return rc;
}

int stprof_input(const char *cmd, const char **path, unsigned flags)
{
	struct stat sb;
	if (stat(*path, &sb) != 0)
		return 0; /* the reader's error, with its own words */
	if (S_ISDIR(sb.st_mode)) {
		if (flags & STPROF_IN_DIR_OK)
			return 0;
		stprof_err("%s: %s is a directory; %s reads one file%s", cmd, *path, cmd,
		           flags & STPROF_IN_TRACE ? " (stprof report DIR and stprof export DIR read a run's rank traces)"
		                                   : "");
		return 1;
	}
	if (S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode)) { /* character devices are read as they are */
		const char *copy = spool(cmd, *path, flags);
		if (!copy)
			return 1;
		*path = copy;
	}
	if (flags & STPROF_IN_TRACE)
		stprof_warn_cut(*path);
	return 0;
}

int stprof_inputs(const char *cmd, int argc, char **argv, int from, unsigned flags)
{
	for (int i = from; i < argc; i++) {
		const char *p = argv[i];
		if (stprof_input(cmd, &p, flags))
			return 1;
		argv[i] = (char *)p;
	}
	return 0;
}
