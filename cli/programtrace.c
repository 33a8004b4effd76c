/*
 * programtrace.c - which trace of a recording is the program's.
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
 * trace not ended by execve (exit, a signal, cut short).
 *
 * A shell script (`stprof ./run.sh`) runs the program as a child: bash
 * execs the last command of `bash -c` only, not of a script.  When the
 * command's last image is a shell, the program is taken to be the largest
 * trace (in bytes) among those of the processes it ran, FILE.<pid> and
 * FILE.<pid>.<n>, that are not shells themselves nor ended by execve (an
 * earlier image of a chain): a script's preprocessing step and its
 * training are told apart by what they recorded, and the line that says
 * which was read names the way to the others (stprof record lists them).
 * A launcher whose processes did the work (torch.multiprocessing.spawn's
 * parent: no iteration, no tensor in its trace) stands for the largest of
 * them the same way, when that one did work.
 * info and dump read the file named; a FIFO or a pipe is never opened
 * here (the command reads it once).
 */
#include <dirent.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>

#include "guard.h"
#include "programtrace.h"
#include "stprof/trace.h"
#include "util.h"

/* pid, parent's pid and executable (or, with cmdline, command line) of the
 * trace at path (its PROCESS event); 0 when it has none (not a trace,
 * damaged, an imported snapshot). */
static uint32_t process_info_why(const char *path, uint32_t *ppid, char *exe, size_t len, int cmdline, char *why,
                                 size_t whylen)
{
	char err[512];
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	if (!r) {
		snprintf(why, whylen, "%s", err);
		return 0;
	}
	stp_event ev;
	uint32_t pid = 0;
	int got = stp_reader_next(r, &ev);
	if (got > 0 && ev.type == STP_EV_PROCESS) {
		pid = ev.u.process.pid;
		if (ppid)
			*ppid = ev.u.process.ppid;
		if (exe)
			snprintf(exe, len, "%s", stp_reader_string(r, cmdline ? ev.u.process.cmdline : ev.u.process.exe));
	} else if (got < 0)
		snprintf(why, whylen, "%s", stp_reader_error(r));
	else
		snprintf(why, whylen, "%s: %s", path,
		         got == 0 ? "holds no event (its process stopped before writing one)"
		                  : "does not begin with its process's event");
	stp_reader_close(r);
	return pid;
}

static uint32_t process_info(const char *path, uint32_t *ppid, char *exe, size_t len, int cmdline)
{
	char why[8];
	return process_info_why(path, ppid, exe, len, cmdline, why, sizeof why);
}

static uint32_t process_of(const char *path, char *exe, size_t len) { return process_info(path, NULL, exe, len, 0); }

int trace_cmdline(const char *path, char *out, size_t len)
{
	out[0] = 0;
	return process_info(path, NULL, out, len, 1) ? 0 : -1;
}

/* A regular file: a FIFO or a pipe (/dev/stdin) is read once, by the
 * command (input.c), never opened here. */
static int regular(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

uint32_t trace_process(const char *path, uint32_t *ppid, char *exe, size_t len)
{
	return regular(path) ? process_info(path, ppid, exe, len, 0) : 0;
}

uint32_t trace_process_why(const char *path, uint32_t *ppid, char *exe, size_t len, char *why, size_t whylen)
{
	snprintf(why, whylen, "%s: not a regular file", path);
	return regular(path) ? process_info_why(path, ppid, exe, len, 0, why, whylen) : 0;
}

/* From the trace at path (a regular file), while a trace ends with
 * END(EXEC), the trace of the image its process ran next; the last one's
 * path into out.  Returns how many execs were followed (0: out is path). */
static int last_image(const char *path, char *out, size_t len)
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
		if (!regular(next) || !stprof_is_trace(next) || process_of(next, NULL, 0) != pid)
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

int is_shell(const char *exe)
{
	static const char *const sh[] = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "tcsh", "csh", 0};
	const char *b = strrchr(exe, '/');
	b = b ? b + 1 : exe;
	for (int i = 0; sh[i]; i++)
		if (!strcmp(b, sh[i]))
			return 1;
	return 0;
}

int traces_beside(const char *path, int (*fn)(const char *trace, off_t size, void *arg), void *arg)
{
	char dirbuf[4096], basebuf[4096], cand[4096 + 256];
	snprintf(dirbuf, sizeof dirbuf, "%s", path);
	snprintf(basebuf, sizeof basebuf, "%s", path);
	const char *dir = dirname(dirbuf), *base = basename(basebuf);
	size_t blen = strlen(base);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *s = e->d_name;
		if (strncmp(s, base, blen) || s[blen] != '.' || !s[blen + 1] ||
		    strspn(s + blen + 1, "0123456789.") != strlen(s + blen + 1))
			continue; /* FILE.<pid>[.<n>] only: not ranks, not .old */
		if (strchr(path, '/'))
			snprintf(cand, sizeof cand, "%s/%s", dir, s);
		else /* named as path is: f.stp.<pid>, not ./f.stp.<pid> */
			snprintf(cand, sizeof cand, "%s", s);
		struct stat sb;
		uint32_t reason = 0;
		if (stat(cand, &sb) || !S_ISREG(sb.st_mode) || !stprof_is_trace(cand) ||
		    (stp_trace_end_reason(cand, &reason) && reason == STP_END_EXEC))
			continue;
		n++;
		if (fn(cand, sb.st_size, arg))
			break;
	}
	closedir(d);
	return n;
}

struct largest {
	off_t best;
	char *out;
	size_t len;
};

static int keep_largest(const char *trace, off_t size, void *arg)
{
	struct largest *l = arg;
	char exe[512] = "";
	if (size > l->best && process_of(trace, exe, sizeof exe) && !is_shell(exe) && strlen(trace) < l->len) {
		l->best = size;
		snprintf(l->out, l->len, "%s", trace);
	}
	return 0;
}

/* The largest trace beside path named path.<pid>[.<n>] whose image is not
 * a shell and did not call execve; 0 when there is none. */
static int largest_child(const char *path, char *out, size_t len)
{
	struct largest l = {-1, out, len};
	traces_beside(path, keep_largest, &l);
	return l.best >= 0;
}

/* Whether the trace at path did the work a report is about: an iteration
 * marker, or memory other than the host heap (tensors, device memory).
 * Reads until it finds one. */
static int did_work(const char *path)
{
	stp_reader *r = stp_reader_open(path, NULL, 0);
	if (!r)
		return 0;
	stp_event ev;
	int work = 0;
	while (!work && stp_reader_next(r, &ev) > 0)
		work = (ev.type == STP_EV_MARKER && ev.u.marker.kind == STP_MARK_ITER_BEGIN) ||
		       (ev.type == STP_EV_ALLOC && (ev.u.alloc.pool || ev.u.alloc.device >= 0));
	stp_reader_close(r);
	return work;
}

int program_trace(const char *cmd, const char *path, char *out, size_t len, int quiet)
{
	char from[512] = "", to[512] = "", img[4096 + 64];
	if (!regular(path)) {
		snprintf(out, len, "%s", path);
		return 0;
	}
	int hops = last_image(path, img, sizeof img);
	snprintf(out, len, "%s", img);
	int kind = hops > 0;
	int shell = process_of(img, to, sizeof to) && is_shell(to);
	if (largest_child(path, out, len) && (shell || (!did_work(img) && did_work(out))))
		kind = shell ? 2 : 3; /* 3: a launcher (torch.multiprocessing.spawn) whose workers trained */
	else
		snprintf(out, len, "%s", img);
	if (!kind || quiet)
		return kind;
	process_of(path, from, sizeof from);
	char what[512] = "";
	process_of(out, what, sizeof what);
	if (kind == 3) {
		stprof_err("%s%s%s is the trace of %s, which ran no iteration and made no tensor: reading %s (%s), the "
		           "largest trace of the processes it started (the others are beside it: %s.<pid>)",
		           cmd ? cmd : "", cmd ? ": " : "", img, to[0] ? to : "?", out, what[0] ? what : "?", path);
	} else if (kind == 2) {
		stprof_err("%s%s%s is the trace of %s, a shell: reading %s (%s), the largest trace of the processes it "
		           "ran (the others are beside it: %s.<pid>)", cmd ? cmd : "", cmd ? ": " : "", path, to, out,
		           what[0] ? what : "?", path);
	} else {
		stprof_err("%s%s%s is the trace of %s, which execve replaced%s: reading %s (%s), the last image of "
		           "its process", cmd ? cmd : "", cmd ? ": " : "", path, from[0] ? from : "the command's first image",
		           hops > 1 ? " more than once" : "", out, to[0] ? to : "?");
	}
	return kind;
}
