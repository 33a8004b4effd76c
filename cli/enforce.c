/*
 * enforce.c - `stprof run --plan FILE [--] PROGRAM [ARGS...]`: runs PROGRAM
 * with libstalloc.so preloaded and the plan enforced on its allocations
 * (allocator/, stprof/stalloc.h).  The plan is checked here first, so a bad
 * file is one line naming it and its offset, and the program is never
 * started with a plan that cannot be read.  stprof then execs PROGRAM in
 * its own place: same pid, same signals, same exit status; libstalloc
 * enforces the plan in that process only (STALLOC_PID), not in programs it
 * executes, and prints its statistics on stderr at exit unless quiet.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "enforce.h"
#include "record.h"
#include "stprof/lifetimes.h"
#include "stprof/plan.h"
#include "stprof/stalloc.h"
#include "util.h"

static const char *stalloc_path(void)
{
	static char path[PATH_MAX];
	const char *env = getenv("STALLOC_LIB");
	if (env && *env)
		return access(env, R_OK) == 0 ? env : NULL;
	static const char *rel[] = {"/libstalloc.so", "/../lib/libstalloc.so", "/../lib/stprof/libstalloc.so"};
	for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
		char try[PATH_MAX];
		snprintf(try, sizeof try, "%s%s", stprof_self_dir(), rel[i]);
		if (access(try, R_OK) == 0 && realpath(try, path))
			return path;
	}
	return NULL;
}

int run_with_plan(const char *plan, char **argv, int quiet, const char *stats)
{
	char err[1024];
	/* a lifetime model (`stprof plan --lifetimes`, docs/lifetimes.md) or a plan */
	int lifetimes = stp_lt_is_model(plan);
	if (lifetimes) {
		stp_lt_model m;
		if (stp_lt_read(plan, &m, err, sizeof err) < 0) {
			stprof_err("%s", err);
			return 2;
		}
		stp_lt_model_free(&m);
	} else {
		stp_reqs r;
		stp_plan p;
		stp_reqs_init(&r);
		memset(&p, 0, sizeof p);
		if (stp_plan_read(plan, &r, &p, err, sizeof err) < 0) {
			stprof_err("%s", err);
			return 2;
		}
		stp_reqs_free(&r);
		stp_plan_free(&p);
	}
	const char *lib = stalloc_path();
	if (!lib) {
		stprof_err("cannot find libstalloc.so beside %s (set STALLOC_LIB to its path)", stprof_self_dir());
		return 2;
	}
	char abs[PATH_MAX];
	if (!realpath(plan, abs)) {
		stprof_err("%s: %s", plan, strerror(errno));
		return 2;
	}
	char buf[PATH_MAX * 2];
	const char *old = getenv("LD_PRELOAD");
	snprintf(buf, sizeof buf, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", buf, 1);
	setenv("STALLOC_PLAN", abs, 1);
	/* a Python program gets the shim's markers (optimizer steps start the
	 * plan's iterations), as when it was recorded */
	const char *shim_lib = lifetimes ? NULL : stprof_collector_path();
	if (shim_lib)
		record_python_shim(shim_lib, argv);
	snprintf(buf, sizeof buf, "%ld", (long)getpid());
	setenv("STALLOC_PID", buf, 1);
	if (stats) {
		/* checked now, not when the program ends; absolute, so that a
		 * program that changes directory still writes it here */
		if (stp_outfile_check(stats, &stp_outkind_stalloc_stats, err, sizeof err) < 0) {
			stprof_err("run: --stalloc-stats: %s", err);
			return 2;
		}
		char cwd[PATH_MAX];
		if (stats[0] != '/' && getcwd(cwd, sizeof cwd)) {
			snprintf(buf, sizeof buf, "%s/%s", cwd, stats);
			stats = buf;
		}
		setenv("STALLOC_STATS", stats, 1);
	}
	else if (!quiet)
		setenv("STALLOC_STATS", "1", 1);
	fflush(NULL);
	execvp(argv[0], argv);
	int e = errno;
	stprof_err("%s: %s", argv[0], strerror(e));
	return e == ENOENT ? 127 : 126;
}
