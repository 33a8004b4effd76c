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
#include "util.h"

void stprof_warn_cut(const char *path)
{
	/* once per path and run: the one-shot mode reads its trace in several
	 * subcommands */
	static char warned[PATH_MAX];
	uint64_t off, bytes;
	if (strcmp(path, warned) && stp_trace_cut(path, &off, &bytes)) {
		snprintf(warned, sizeof warned, "%s", path);
		stprof_err("warning: %s ends inside the chunk at offset %" PRIu64 " (its last %" PRIu64
		           " bytes are not a whole chunk: the recording was cut short); reading what is whole",
		           path, off, bytes);
	}
}

/* Copies the stream at path into a scratch file; its path, or NULL after
 * the error. */
static const char *spool(const char *cmd, const char *path)
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
	if (!S_ISREG(sb.st_mode)) {
		const char *copy = spool(cmd, *path);
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
