/*
 * program.c - the process of a wrapper's tree that enforces the plan.
 * `stprof run --plan P -- ./run.sh`, where P was made from the trace of the
 * program run.sh runs (python3 train.py), sets STALLOC_PROGRAM to P's
 * program key (stprof/programkey.h: the executable and, for an interpreter,
 * its script) instead of pinning the process it starts (STALLOC_PID).
 * Each process image libstalloc is loaded into then compares its own key
 * (/proc/self/exe, /proc/self/cmdline) with it: the first that runs the
 * program enforces the plan and claims it for its descendants
 * (STALLOC_PROGRAM_PID=<pid>), so a DataLoader worker it spawns, or a
 * second copy of the program it starts, runs without; the shell and
 * everything else the script runs run without.  An image the claiming
 * process runs with execve (same pid) may claim again.
 *
 * Runs in libstalloc's constructor, before any plan is loaded: setenv's
 * allocation goes to glibc.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "program.h"
#include "stprof/programkey.h"

int st_program_planned(void)
{
	const char *want = getenv("STALLOC_PROGRAM");
	if (!want || !*want)
		return 1;
	long pid = (long)getpid();
	const char *claim = getenv("STALLOC_PROGRAM_PID");
	if (claim && *claim && strtol(claim, NULL, 10) != pid)
		return 0; /* an ancestor runs the program and enforces the plan */
	static char exe[4096], cmd[8192], key[4096 + 8];
	ssize_t e = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (e <= 0)
		return 0;
	exe[e] = 0;
	stp_read_cmdline(cmd, sizeof cmd);
	if (stp_program_key(exe, cmd, key, sizeof key) < 0 || !stp_program_same(want, key))
		return 0;
	char v[32];
	snprintf(v, sizeof v, "%ld", pid);
	setenv("STALLOC_PROGRAM_PID", v, 1);
	return 1;
}
