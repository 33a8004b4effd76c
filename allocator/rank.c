/*
 * rank.c - the rank plan of this process, when `stprof run --plan` was given
 * a set of plans, one per rank of a torchrun job (STALLOC_RANK_PLANS=STEM:
 * the plans are STEM.rank<R>.plan, docs/stalloc.md "Ranks").
 *
 * A process image started with RANK=R in its environment (torchrun and
 * torch.distributed's launchers set it for each worker) is rank R's process
 * unless an ancestor already is one, by the rule the collector names traces
 * by (stprof/rankclaim.h, docs/record.md "Ranks"); it claims the rank for
 * its descendants by setting STALLOC_RANK_PID=R:<pid> in its environment.
 * So:
 *   - the launcher (no RANK) enforces nothing;
 *   - a descendant of the rank's process with another pid (a DataLoader
 *     worker spawned, a compiler the rank runs) inherits RANK and the claim
 *     and enforces nothing;
 *   - an image the rank's process runs with execve (same pid: the claim is
 *     its own) is the rank's process again.
 * A child forked without exec runs no constructor: its requests pass
 * through, and it writes no statistics, as after any fork of a planned
 * process (preload.c, fork_child).
 *
 * Runs in libstalloc's constructor, before any plan is loaded: setenv's
 * allocation goes to glibc.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rank.h"
#include "stprof/rankclaim.h"

int st_rank_plan(char *path, size_t len, long *rank)
{
	const char *stem = getenv("STALLOC_RANK_PLANS");
	if (!stem || !*stem)
		return -1;
	long pid = (long)getpid();
	long r = stp_rank_of_process(getenv("RANK"), getenv("STALLOC_RANK_PID"), pid);
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
