/*
 * isolate.c - calls that need a single-threaded process: unshare() with
 * CLONE_NEWUSER (or CLONE_THREAD, CLONE_SIGHAND, CLONE_VM) and setns() into
 * a user namespace fail with EINVAL in a multi-threaded one.  If our flusher
 * is the only reason the process has threads, it is stopped (joined) for the
 * call and starts again lazily afterwards (flusher.c); a program that has
 * threads of its own gets the kernel's answer, as without stprof.
 */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "internal.h"

#define NEEDS_ONE_THREAD (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)

/* A joined thread leaves the thread group a moment after join returns:
 * the kernel may still count it; try a few times (up to ~20 ms). */
static int retry_einval(int (*fn)(int, int), int a, int b, int rc)
{
	for (int i = 0; rc < 0 && errno == EINVAL && i < 20; i++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
		rc = fn(a, b);
	}
	return rc;
}

static int call_unshare(int flags, int unused)
{
	(void)unused;
	return g_real.unshare(flags);
}

STC_EXPORT int unshare(int flags)
{
	if (!stc_real_resolved())
		stc_real_resolve();
	int stopped = (flags & NEEDS_ONE_THREAD) && stc_flusher_stop();
	int rc = g_real.unshare(flags);
	if (stopped)
		rc = retry_einval(call_unshare, flags, 0, rc);
	return rc;
}

STC_EXPORT int setns(int fd, int nstype)
{
	if (!stc_real_resolved())
		stc_real_resolve();
	int stopped = (nstype == 0 || (nstype & CLONE_NEWUSER)) && stc_flusher_stop();
	int rc = g_real.setns(fd, nstype);
	if (stopped)
		rc = retry_einval(g_real.setns, fd, nstype, rc);
	return rc;
}
