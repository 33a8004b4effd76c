/*
 * scratch.c - see scratch.h.  The list is a fixed table, so that a signal
 * handler can walk it; at most SCRATCH_MAX files per run (inputs spooled
 * from pipes, snapshots imported), which no command line comes near.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scratch.h"
#include "util.h"

#define SCRATCH_MAX 64
static char dir[PATH_MAX];
static char files[SCRATCH_MAX][PATH_MAX];
static volatile sig_atomic_t nfiles;

void stprof_scratch_remove(void)
{
	for (int i = 0; i < nfiles; i++)
		unlink(files[i]);
	nfiles = 0;
	if (*dir)
		rmdir(dir);
	*dir = 0;
}

static void at_exit(void) { stprof_scratch_remove(); }

const char *stprof_scratch_path(const char *name)
{
	if (nfiles == SCRATCH_MAX) {
		stprof_err("%s: too many temporary files at once", name);
		return NULL;
	}
	if (!*dir) {
		const char *t = getenv("TMPDIR");
		snprintf(dir, sizeof dir, "%s/stprof-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(dir)) {
			stprof_err("cannot create a temporary directory %s", dir);
			*dir = 0;
			return NULL;
		}
		static int registered;
		if (!registered++)
			atexit(at_exit);
	}
	int n = snprintf(files[nfiles], PATH_MAX, "%s/%d-%s", dir, (int)nfiles, name);
	if (n < 0 || n >= PATH_MAX) {
		stprof_err("%s: name too long for a temporary file", name);
		return NULL;
	}
	return files[nfiles++];
}
