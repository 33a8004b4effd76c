/*
 * enforce.c - `stprof run --plan FILE [--] PROGRAM [ARGS...]`: runs PROGRAM
 * with libstalloc.so preloaded and the plan enforced on its allocations
 * (allocator/, stprof/stalloc.h).  The plan is checked here first, so a bad
 * file is one line naming it and its offset, and the program is never
 * started with a plan that cannot be read.  stprof then execs PROGRAM in
 * its own place: same pid, same signals, same exit status; libstalloc
 * enforces the plan in that process only (STALLOC_PID), not in programs it
 * executes, and prints its statistics on stderr at exit unless quiet.
 * Where PROGRAM does not run the plan's program itself (the plan keeps
 * which it is: stprof/programkey.h) and is a shell, a wrapper script, or
 * the plan is of a worker started with `python -c` (a launcher's, as
 * torch.multiprocessing.spawn starts them), the processes of its tree that
 * run that program enforce it, the first of each line of descent
 * (STALLOC_PROGRAM, allocator/program.c).
 *
 * A set of rank plans (rank_plans.h: FILE names no file and
 * STEM.rank<R>.plan exist beside it, or FILE is one of them), for a
 * torchrun job: every one is checked, and libstalloc gets the set
 * (STALLOC_RANK_PLANS=STEM, no STALLOC_PID): each process that is rank R's
 * enforces STEM.rank<R>.plan, the launcher and the ranks' descendants
 * nothing (allocator/rank.c); with --stalloc-stats FILE each rank writes
 * FILE.rank<R>.  Lifetime models are enforced per process only.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "enforce.h"
#include "guard.h"
#include "programtrace.h"
#include "rank_plans.h"
#include "record.h"
#include "stprof/lifetimes.h"
#include "stprof/plan.h"
#include "stprof/programkey.h"
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

/* Reads PATH as a plan (or, lifetimes, a lifetime model): 0, or -1 after
 * the one-line error naming it and the offset.  A plan's program key
 * (stprof/programkey.h; "" when it keeps none) into key, unless NULL. */
static int check_plan(const char *path, int lifetimes, char *key, size_t keylen)
{
	if (key)
		key[0] = 0;
	char err[1024];
	if (lifetimes) {
		stp_lt_model m;
		if (stp_lt_read(path, &m, err, sizeof err) < 0) {
			stprof_err("%s", err);
			return -1;
		}
		stp_lt_model_free(&m);
		return 0;
	}
	stp_reqs r;
	stp_plan p;
	stp_reqs_init(&r);
	memset(&p, 0, sizeof p);
	int rc = stp_plan_read(path, &r, &p, err, sizeof err);
	if (rc < 0)
		stprof_err("%s", err);
	else if (r.program && key)
		snprintf(key, keylen, "%s", stp_reqs_str(&r, r.program));
	stp_reqs_free(&r);
	stp_plan_free(&p);
	return rc < 0 ? -1 : 0;
}

/* Checks every plan of the set and says which process enforces which. */
static int check_rank_plans(const char *plan, const rank_plans *rp, int quiet)
{
	char path[PATH_MAX + 32];
	for (size_t i = 0; i < rp->n; i++) {
		rank_plans_path(rp, i, path, sizeof path);
		if (stp_lt_is_model(path)) {
			stprof_err("%s: a lifetime model: a set of rank plans takes plans (`stprof plan`); a lifetime model "
			           "is enforced by one process (--plan MODEL)", path);
			return -1;
		}
		if (check_plan(path, 0, NULL, 0) < 0)
			return -1;
	}
	if (quiet)
		return 0;
	char list[256];
	rank_plans_list(rp, list, sizeof list);
	if (rp->sibling)
		stprof_err("%s is rank %ld's plan of a set: each process with RANK=R in its environment enforces "
		           "%s.rank<R>.plan (%zu plans: ranks %s); the launcher and the ranks' children run without a plan",
		           plan, rp->given, rp->stem, rp->n, list);
	else
		stprof_err("%s: no such file, but %zu rank plans beside it: each process with RANK=R in its environment "
		           "enforces %s.rank<R>.plan (ranks %s); the launcher and the ranks' children run without a plan",
		           plan, rp->n, rp->stem, list);
	return 0;
}

/* Whether argv runs an interpreter that is_it accepts: one named (bash
 * run.sh, python3 launch.py), or a script whose #! line names one,
 * directly or through env (./run.sh, a console script such as
 * accelerate). */
static int runs_interpreter(char **argv, int (*is_it)(const char *name))
{
	const char *b0 = strrchr(argv[0], '/');
	if (is_it(b0 ? b0 + 1 : argv[0]))
		return 1;
	char path[PATH_MAX];
	FILE *f = stprof_find_on_path(argv[0], path, sizeof path) ? fopen(path, "r") : NULL;
	if (!f)
		return 0;
	char line[512] = "";
	int got = fgets(line, sizeof line, f) != NULL;
	fclose(f);
	if (!got || strncmp(line, "#!", 2))
		return 0;
	char *w = line + 2, *save = NULL;
	char *interp = strtok_r(w, " \t\r\n", &save), *arg = strtok_r(NULL, " \t\r\n", &save);
	if (!interp)
		return 0;
	const char *b = strrchr(interp, '/');
	if (arg && !strcmp(b ? b + 1 : interp, "env"))
		interp = arg, b = strrchr(interp, '/'); /* #!/usr/bin/env bash */
	return is_it(b ? b + 1 : interp);
}

static int python_name(const char *name) { return stp_is_interpreter(name) && !is_shell(name); }

/* Whether argv runs the plan's program itself (key: its program key), as
 * far as its command line tells: the same script, or program, or the
 * script run by its #! line.  When it does not and runs a shell (a wrapper
 * script), or the plan is an interpreter's script and argv runs an
 * interpreter too (a launcher: accelerate, torch.multiprocessing.spawn's
 * parent), the process of its tree that runs the program enforces the
 * plan; any other command enforces it itself, as before (a plan tried on
 * another program). */
static int runs_planned(const char *key, char **argv)
{
	char cmd[4096] = "", have[PATH_MAX + 4200];
	for (int i = 0; argv[i] && strlen(cmd) + strlen(argv[i]) + 2 < sizeof cmd; i++)
		strcat(strcat(cmd, i ? " " : ""), argv[i]);
	if (stp_program_key(argv[0], cmd, have, sizeof have) < 0 || stp_program_same(key, have))
		return 1;
	const char *nl = strchr(key, '\n'), *b = strrchr(argv[0], '/');
	return nl && nl[1] && !strcmp(nl + 1, b ? b + 1 : argv[0]);
}

int run_with_plan(const char *plan, char **argv, int quiet, const char *stats)
{
	char key[PATH_MAX + 4200];
	char err[1024];
	rank_plans rp;
	int ranks = rank_plans_find(plan, &rp, err, sizeof err);
	if (ranks < 0) {
		stprof_err("%s", err);
		return 2;
	}
	/* a lifetime model (`stprof plan --lifetimes`, docs/lifetimes.md) or a plan */
	int lifetimes = ranks ? 0 : stp_lt_is_model(plan);
	if (ranks ? check_rank_plans(plan, &rp, quiet) < 0 : check_plan(plan, lifetimes, key, sizeof key) < 0) {
		rank_plans_free(&rp);
		return 2;
	}
	const char *lib = stalloc_path();
	if (!lib) {
		stprof_err("cannot find libstalloc.so beside %s (set STALLOC_LIB to its path)", stprof_self_dir());
		rank_plans_free(&rp);
		return 2;
	}
	char abs[PATH_MAX];
	if (!ranks && !realpath(plan, abs)) {
		stprof_err("%s: %s", plan, strerror(errno));
		return 2;
	}
	char buf[PATH_MAX * 2];
	const char *old = getenv("LD_PRELOAD");
	snprintf(buf, sizeof buf, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", buf, 1);
	if (ranks) {
		/* libstalloc picks each rank's plan; no process is pinned, and no
		 * claim of an outer run's rank is inherited */
		setenv("STALLOC_RANK_PLANS", rp.stem, 1);
		unsetenv("STALLOC_PLAN");
		unsetenv("STALLOC_PID");
		unsetenv("STALLOC_RANK_PID");
	} else {
		unsetenv("STALLOC_RANK_PLANS");
		setenv("STALLOC_PLAN", abs, 1);
	}
	/* a Python program gets the shim's markers (optimizer steps start the
	 * plan's iterations), as when it was recorded */
	const char *shim_lib = lifetimes ? NULL : stprof_collector_path();
	if (shim_lib)
		record_python_shim(shim_lib, argv);
	unsetenv("STALLOC_PROGRAM");
	unsetenv("STALLOC_PROGRAM_PID");
	/* a plan of a python -c worker: torch.multiprocessing.spawn's, which
	 * its launcher starts so (programtrace.c reads such a worker's trace
	 * for a launcher's) */
	int spawned = stp_program_runs_code(key);
	const char *nl = strchr(key, '\n');
	int scripted = nl && nl[1]; /* the plan is of what an interpreter ran */
	if (!ranks && !lifetimes && key[0] && !runs_planned(key, argv) &&
	    (runs_interpreter(argv, is_shell) || (scripted && runs_interpreter(argv, python_name)))) {
		/* a wrapper, or a launcher: the processes of its tree that run
		 * the program (the first of each line of descent) */
		unsetenv("STALLOC_PID");
		setenv("STALLOC_PROGRAM", key, 1);
		if (!quiet && spawned)
			stprof_err("%s is the plan of a worker started with python -c (torch.multiprocessing.spawn's): "
			           "enforced in each such process %s starts (their children run without a plan)",
			           plan, argv[0]);
		else if (!quiet) {
			size_t n;
			const char *shown = stp_program_shown(key, &n);
			stprof_err("%s is the plan of %.*s: enforced in the process %s starts that runs it (the others run "
			           "without a plan)",
			           plan, (int)n, shown, argv[0]);
		}
	} else if (!ranks) {
		snprintf(buf, sizeof buf, "%ld", (long)getpid());
		setenv("STALLOC_PID", buf, 1);
	}
	if (stats) {
		/* checked now, not when the program ends; absolute, so that a
		 * program that changes directory still writes it here */
		for (size_t i = 0; i < (ranks ? rp.n : 1); i++) {
			char each[PATH_MAX + 32];
			if (ranks)
				snprintf(each, sizeof each, "%s.rank%ld", stats, rp.rank[i]);
			if (stp_outfile_check(ranks ? each : stats, &stp_outkind_stalloc_stats, err, sizeof err) < 0) {
				stprof_err("run: --stalloc-stats: %s", err);
				rank_plans_free(&rp);
				return 2;
			}
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
	rank_plans_free(&rp);
	fflush(NULL);
	execvp(argv[0], argv);
	int e = errno;
	stprof_err("%s: %s", argv[0], strerror(e));
	return e == ENOENT ? 127 : 126;
}
