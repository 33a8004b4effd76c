/*
 * fds.c - keeps the collector's file descriptors out of the program's way.
 *
 * libunwind opens a pipe (to test whether an address is readable) on its
 * first use, and again whenever it finds the pipe closed.  A plain pipe2()
 * would take the program's lowest free numbers (0 when stdin is closed, 3
 * and 4 otherwise), so the program's own open() would get other numbers, a
 * read(0) could return libunwind's bytes, and at a low RLIMIT_NOFILE the
 * program would run out.  While a thread is inside libunwind (t_in_libunwind)
 * its pipe is moved to STC_FD_BASE or above; when that is not possible (the
 * limit is lower) the call fails, and libunwind only loses its readability
 * test.  Every other pipe2() is the program's and passes through untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "internal.h"

static int move_high(int fd)
{
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, STC_FD_BASE);
	close(fd);
	return hi;
}

STC_EXPORT int pipe2(int fds[2], int flags)
{
	if (!stc_real_resolved())
		stc_real_resolve();
	int rc = g_real.pipe2(fds, flags);
	if (rc != 0 || !t_in_libunwind)
		return rc;
	int a = move_high(fds[0]), b = move_high(fds[1]);
	if (a < 0 || b < 0) {
		if (a >= 0)
			close(a);
		if (b >= 0)
			close(b);
		errno = EMFILE;
		return -1;
	}
	fds[0] = a;
	fds[1] = b;
	return 0;
}
