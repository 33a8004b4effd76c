/*
 * lastimage.c - the trace of the program a recorded command became.
 *
 * A command often reaches the program through images that replace
 * themselves by execve: a script's `#!/usr/bin/env python3` line runs env
 * first, pyenv's shims run bash, then pyenv's bash, then the interpreter.
 * The collector writes each image's trace (collector/core/output.c): the
 * first, FILE, is the wrapper's and ends with END(EXEC); the process's
 * next image writes FILE.<pid>, the ones after FILE.<pid>.<n>, n = 1, 2...
 * (pid: the process's, the same across execs).  report, export, plan and
 * the one-shot mode read the last image's trace: the program as it ran
 * (a wrapper's trace has a few hundred allocations of its own).  A file
 * there that is not a trace of the same pid ends the chain; so does a
 * trace not ended by execve (exit, a signal, cut short).  info and dump
 * read the file named.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "guard.h"
#include "lastimage.h"
#include "stprof/trace.h"
#include "util.h"

/* pid and executable of the trace at path (its PROCESS event); 0 when it
 * has none (not a trace, damaged, an imported snapshot). */
static uint32_t process_of(const char *path, char *exe, size_t len)
{
	char err[256];
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	if (!r)
		return 0;
	stp_event ev;
	uint32_t pid = 0;
	if (stp_reader_next(r, &ev) > 0 && ev.type == STP_EV_PROCESS) {
		pid = ev.u.process.pid;
		if (exe)
			snprintf(exe, len, "%s", stp_reader_string(r, ev.u.process.exe));
	}
	stp_reader_close(r);
	return pid;
}

int last_image(const char *path, char *out, size_t len)
{
	snprintf(out, len, "%s", path);
	uint32_t reason = 0;
	if (!stp_trace_end_reason(path, &reason) || reason != STP_END_EXEC)
		return 0;
	uint32_t pid = process_of(path, NULL, 0);
	if (!pid)
		return 0;
	int hops = 0;
	char next[4096 + 64];
	/* out ends with END(EXEC): the next image is the first of FILE.<pid>,
	 * FILE.<pid>.1, ... after out's */
	for (long n = 0; n < 100000; n++) {
		if (n == 0)
			snprintf(next, sizeof next, "%s.%" PRIu32, path, pid);
		else
			snprintf(next, sizeof next, "%s.%" PRIu32 ".%ld", path, pid, n);
		if (!stprof_is_trace(next) || process_of(next, NULL, 0) != pid)
			break;
		if (strlen(next) >= len)
			break;
		snprintf(out, len, "%s", next);
		hops++;
		if (!stp_trace_end_reason(next, &reason) || reason != STP_END_EXEC)
			break;
	}
	return hops;
}

int last_image_said(const char *cmd, const char *path, char *out, size_t len)
{
	int hops = last_image(path, out, len);
	if (hops > 0) {
		char from[512] = "", to[512] = "";
		process_of(path, from, sizeof from);
		process_of(out, to, sizeof to);
		stprof_err("%s%s%s is the trace of %s, which execve replaced%s: reading %s (%s), the last image of "
		           "its process", cmd ? cmd : "", cmd ? ": " : "", path, from[0] ? from : "the command's first image",
		           hops > 1 ? " more than once" : "", out, to[0] ? to : "?");
	}
	return hops;
}
