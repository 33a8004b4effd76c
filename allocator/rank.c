/*
 * rank.c - the rank plan of this process, when `stprof run --plan` was given
 * a set of plans, one per rank of a torchrun job (STALLOC_RANK_PLANS=STEM:
 * the plans are STEM.rank<R>.plan, docs/stalloc.md "Ranks").
 *
 * A process image started with RANK=R in its environment (torchrun and
 * torch.distributed's launchers set it for each worker) is rank R's process
 * unless an ancestor already is one, as the collector decides it
 * (collector/core/output.c, docs/record.md "Ranks"); it claims the rank for
 * its descendants by setting STALLOC_RANK_PID=R:<pid> in its environment.
 * So:
 *   - the launcher (no RANK) enforces nothing;
 *   - a descendant of the rank's process with another pid (a DataLoader
 *     worker spawned, a compiler the rank runs) inherits RANK and the claim
 *     and enforces nothing;
 *   - an image the rank's process runs with execve (same pid: the claim is
 *     its own) is the rank's process again.
 * A child forked without exec runs no constructor: it keeps its parent's
 * allocator, as after any fork (preload.c).
 *
 * Runs in libstalloc's constructor, before any plan is loaded: setenv's
 * allocation goes to glibc.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rank.h"

/* A decimal number of at most 8 digits at s; -1 when there is none. */
static long decimal(const char *s, const char **end)
{
	long v = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9' && p - s < 9; p++)
		v = v * 10 + (*p - '0');
	if (p == s || p - s > 8)
		return -1;
	*end = p;
	return v;
}

/* This image's rank when it is a rank's process, else -1. */
static long rank_of_process(long pid)
{
	const char *v = getenv("RANK"), *e = NULL;
	long rank = v ? decimal(v, &e) : -1;
	if (rank < 0 || *e)
		return -1;
	const char *claim = getenv("STALLOC_RANK_PID");
	if (!claim || !*claim)
		return rank;
	long r = decimal(claim, &e), p = -1;
	if (r >= 0 && *e == ':')
		p = decimal(e + 1, &e);
	if (r != rank || p < 0 || *e)
		return rank; /* another rank's claim, or none we understand */
	return p == pid ? rank : -1; /* our own claim (an exec'd image), or an ancestor's */
}

int st_rank_plan(char *path, size_t len, long *rank)
{
	const char *stem = getenv("STALLOC_RANK_PLANS");
	if (!stem || !*stem)
		return -1;
	long pid = (long)getpid();
	long r = rank_of_process(pid);
	if (r < 0)
		return 0;
	char v[48];
	snprintf(v, sizeof v, "%ld:%ld", r, pid);
	setenv("STALLOC_RANK_PID", v, 1);
	int n = snprintf(path, len, "%s.rank%ld.plan", stem, r);
	if (n < 0 || (size_t)n >= len)
		return 0;
	*rank = r;
	return 1;
}
