/*
 * stprof/rankclaim.h - which process of a data-parallel job is a rank's:
 * the rule the collector (trace names, collector/core/output.c) and
 * libstalloc (rank plans, allocator/rank.c) share, so that the process
 * whose trace is FILE.rank<R> is the one that enforces STEM.rank<R>.plan.
 *
 * A process image started with RANK=R in its environment (torchrun and
 * torch.distributed's launchers set it for each worker) is rank R's
 * process unless an ancestor already is one.  The rank's process claims
 * the rank for its descendants by setting a variable of its own tool's to
 * "R:<pid>" (STPROF_RANK_PID, STALLOC_RANK_PID); a descendant with another
 * pid inherits RANK and the claim and is not the rank's; an image the
 * rank's process runs with execve (same pid) is.  Header-only: both users
 * are preloaded libraries that share no other code.
 */
#ifndef STPROF_RANKCLAIM_H
#define STPROF_RANKCLAIM_H

/* A non-negative decimal number at s, ending at *end; -1 when none. */
static inline long stp_rank_num(const char *s, const char **end)
{
	long v = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9' && v < 100000000; p++)
		v = v * 10 + (*p - '0');
	if (p == s)
		return -1;
	*end = p;
	return v;
}

/* The rank of the process with this pid, given its RANK and the claim it
 * inherited (either may be NULL), when it is the rank's process; else -1. */
static inline long stp_rank_of_process(const char *rank_env, const char *claim, long pid)
{
	const char *e = 0;
	long rank = rank_env ? stp_rank_num(rank_env, &e) : -1;
	if (rank < 0 || *e)
		return -1;
	if (!claim)
		return rank;
	long r = stp_rank_num(claim, &e), p = -1;
	if (r >= 0 && *e == ':')
		p = stp_rank_num(e + 1, &e);
	if (r != rank || p < 0 || *e)
		return rank; /* another rank's claim, or none we understand */
	return p == pid ? rank : -1; /* our own claim (an exec'd image), or an ancestor's */
}

#endif
