/*
 * skipexec.c - which process images are not recorded: the toolchain a
 * program runs is not the program.
 *
 * torch.compile's Inductor runs g++ for each graph it compiles on a cold
 * cache, and g++ runs cc1plus, as, collect2 and ld; torch.utils.
 * cpp_extension runs ninja and nvcc.  Each inherits LD_PRELOAD and, not
 * being Python, would record every heap allocation: one small model's
 * first compile wrote 72 traces, 95 MB of them cc1plus's (docs/record.md,
 * "Child processes and exec").  So an image whose name matches a pattern
 * of g_cfg.skip_exec (STPROF_SKIP_EXEC: shell patterns, fnmatch(3),
 * separated by commas, matched against the base names of argv[0] and of
 * the executable; default STC_SKIP_EXEC_DEFAULT; empty: none) records
 * nothing, unless it is the recorded command's own: the command's pid,
 * which the first image that loads the collector puts in its environment
 * (STPROF_COMMAND_PID, inherited by its descendants; `stprof record`
 * clears an inherited one).  So `stprof gcc x.c` records gcc, and
 * `stprof sh -c 'exec gcc x.c'` too (the same pid).
 *
 * The default list also has the shells and utilities wrapper scripts and
 * libraries run (pyenv's shims: 78 processes of bash, env, readlink for
 * one `python3 job.py`), and a forked process is judged the same way
 * (lifecycle.c's fork_child): a shell's subshell is not recorded unless it
 * is the command's own process.
 *
 * A skipped image keeps the collector loaded and out of the way, as when
 * it cannot write its trace (lifecycle.c): every interposer passes the
 * call through.  LD_PRELOAD stays in its environment, so an image it runs
 * in turn is judged for itself (a Python script a make recipe runs is
 * recorded).
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int stc_skip_exec_match(const char *list, const char *name)
{
	char pat[256];
	if (!list || !name || !*name)
		return 0;
	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n > 0 && n < sizeof pat) {
			memcpy(pat, p, n);
			pat[n] = 0;
			if (fnmatch(pat, name, 0) == 0)
				return 1;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* The recorded command's pid from the environment, or claims this image's
 * (returns it) when there is none. */
static long command_pid(int pid)
{
	const char *v = getenv("STPROF_COMMAND_PID");
	char *end;
	if (v && *v) {
		errno = 0;
		long p = strtol(v, &end, 10);
		if (!*end && !errno && p > 0)
			return p;
	}
	char buf[24];
	snprintf(buf, sizeof buf, "%d", pid);
	int was = t_busy;
	t_busy = 1; /* setenv allocates */
	setenv("STPROF_COMMAND_PID", buf, 1);
	t_busy = was;
	return pid;
}

int stc_skip_exec_image(void)
{
	int pid = (int)getpid();
	if (command_pid(pid) == pid || !g_cfg.skip_exec[0])
		return 0;
	if (stc_skip_exec_match(g_cfg.skip_exec, base_name(program_invocation_name)))
		return 1;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return 0;
	exe[n] = 0;
	return stc_skip_exec_match(g_cfg.skip_exec, base_name(exe));
}
