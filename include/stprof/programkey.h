/*
 * stprof/programkey.h - which program a process runs: the key a plan keeps
 * of the process it was made from (planner/requests_from_trace.c), by which
 * libstalloc finds that process among those a wrapper script starts
 * (`stprof run --plan P -- ./run.sh`: allocator/preload.c).
 *
 * The key is the executable (/proc/self/exe) and, for an interpreter, what
 * it runs: the base name of its script ("train.py"), "-m MODULE", "-c" or
 * "-"; nothing more for other programs.  The arguments after the script do
 * not count: a run with more steps is the same program; nor does which
 * interpreter runs the script (stp_program_same).  The command line
 * is given as the trace records it, argv joined by spaces (a script path
 * with a space in it is cut there, on both sides alike).  Header-only: the
 * planner and the preloaded libstalloc share no other code; the command's
 * output names (cli/outname.c) use the same list of interpreters.
 */
#ifndef STPROF_PROGRAMKEY_H
#define STPROF_PROGRAMKEY_H
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

/* This process's command line as the collector records it (the PROCESS
 * event) and as the key reads it: /proc/self/cmdline, its arguments joined
 * by spaces, into buf (cap > 0); its length (0 when it cannot be read). */
static inline size_t stp_read_cmdline(char *buf, size_t cap)
{
	size_t n = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t r;
		while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0)
			n += (size_t)r;
		close(fd);
	}
	while (n && buf[n - 1] == 0)
		n--;
	for (size_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = 0;
	return n;
}

/* Interpreters whose first non-option argument is the program they run:
 * the name, then nothing, digits and dots (python3.11, perl5.36), or "js"
 * (nodejs).  b is a base name. */
static inline int stp_is_interpreter(const char *b)
{
	static const char *const pre[] = {"python", "pypy", "perl", "ruby", "node", "lua", "julia", "Rscript",
	                                  "bash", "dash", "zsh", "ksh", "sh", "tclsh", "php"};
	for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++) {
		size_t n = strlen(pre[i]);
		if (!strncmp(b, pre[i], n) &&
		    (b[n] == 0 || strspn(b + n, "0123456789.") == strlen(b + n) || !strcmp(b + n, "js")))
			return 1;
	}
	return 0;
}

/* What of `python -c CODE`'s code the key keeps (its first statement's
 * head): "-c from multiprocessing.spawn import spawn_main" is
 * torch.multiprocessing.spawn's worker, "-c from
 * multiprocessing.resource_tracker import main" multiprocessing's
 * tracker. */
#define STP_PROGRAM_CODE_HEAD 96

/* Python's options that take the next word as their argument. */
static inline int stp_interp_takes_arg(const char *opt, size_t n)
{
	return n == 2 && opt[0] == '-' && (opt[1] == 'W' || opt[1] == 'X' || opt[1] == 'Q');
}

/* Writes "EXE\nWHAT" (WHAT empty for a program that is no interpreter)
 * into out; 0, or -1 when it does not fit (out is then ""). */
static inline int stp_program_key(const char *exe, const char *cmdline, char *out, size_t len)
{
	const char *b = strrchr(exe, '/');
	b = b ? b + 1 : exe;
	const char *what = "", *extra = "";
	size_t wn = 0, xn = 0;
	if (stp_is_interpreter(b)) {
		const char *p = cmdline;
		size_t n;
		int first = 1;
		for (;; p += n) {
			p += strspn(p, " ");
			n = strcspn(p, " ");
			if (!n)
				break;
			if (first) { /* argv[0] */
				first = 0;
				continue;
			}
			if (p[0] == '-' && n == 2 && p[1] == 'm') { /* -m MODULE */
				what = "-m ";
				wn = 3;
				extra = p + n + strspn(p + n, " ");
				xn = strcspn(extra, " ");
				break;
			}
			if (p[0] == '-' && ((n == 2 && (p[1] == 'c' || p[1] == 'e')) || n == 1)) {
				what = p; /* code on the command line */
				wn = n;
				if (n == 2) { /* and its head, up to its first ; ( or line: the statement */
					extra = p + n + strspn(p + n, " "); /* that tells a spawned worker */
					xn = strcspn(extra, ";(\n");    /* from a resource tracker */
					while (xn && extra[xn - 1] == ' ')
						xn--;
					if (xn > STP_PROGRAM_CODE_HEAD)
						xn = STP_PROGRAM_CODE_HEAD;
					if (xn)
						wn = 3; /* "-c " */
				}
				break;
			}
			if (p[0] == '-') {
				if (stp_interp_takes_arg(p, n)) {
					p += n;
					p += strspn(p, " ");
					n = strcspn(p, " ");
				}
				continue;
			}
			const char *s = p + n; /* the script: its base name */
			while (s > p && s[-1] != '/')
				s--;
			what = s;
			wn = (size_t)(p + n - s);
			break;
		}
	}
	size_t en = strlen(exe);
	if (en + 1 + wn + xn + 1 > len) {
		if (len)
			out[0] = 0;
		return -1;
	}
	memcpy(out, exe, en);
	out[en] = '\n';
	memcpy(out + en + 1, what, wn);
	memcpy(out + en + 1 + wn, extra, xn);
	out[en + 1 + wn + xn] = 0;
	return 0;
}
/* The program a key names, as its messages show it: the script (or -m
 * MODULE, -c), else the executable's base name; *len is its length (it is
 * not NUL-terminated inside key). */
static inline const char *stp_program_shown(const char *key, size_t *len)
{
	const char *nl = strchr(key, '\n');
	if (!nl) {
		*len = strlen(key);
		return key;
	}
	if (nl[1]) {
		*len = strlen(nl + 1);
		return nl + 1;
	}
	const char *b = nl;
	while (b > key && b[-1] != '/')
		b--;
	*len = (size_t)(nl - b);
	return b;
}

/* Whether a key is of code given on an interpreter's command line (-c,
 * with or without its head): a launcher's spawned worker, say. */
static inline int stp_program_runs_code(const char *key)
{
	const char *nl = strchr(key, '\n');
	return nl && !strncmp(nl + 1, "-c", 2) && (!nl[3] || nl[3] == ' ');
}

/* Whether the process whose key is have runs the program whose key is want:
 * for an interpreter, the same script (or -m module, or -c code's head; a
 * key of "-c" alone, an older plan's, any -c), whichever interpreter
 * runs it (a venv's python, python3 for python3.11); otherwise the same
 * executable's base name. */
static inline int stp_program_same(const char *want, const char *have)
{
	const char *wn = strchr(want, '\n'), *hn = strchr(have, '\n');
	if (!wn || !hn)
		return 0;
	if (!strcmp(wn + 1, "-c")) /* a plan of before 2026-11-29: any code */
		return stp_program_runs_code(have);
	if (wn[1] || hn[1])
		return !strcmp(wn + 1, hn + 1);
	const char *wb = wn, *hb = hn; /* the executables' base names */
	while (wb > want && wb[-1] != '/')
		wb--;
	while (hb > have && hb[-1] != '/')
		hb--;
	return wn - wb == hn - hb && !strncmp(wb, hb, (size_t)(wn - wb));
}
#endif
