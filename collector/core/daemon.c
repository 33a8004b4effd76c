/*
 * daemon.c - daemon(3), as glibc does it, but through our fork() and
 * _exit(): glibc's own daemon() ends the parent with an internal _exit that
 * no interposer sees, leaving the parent's trace without its end record.
 * Same steps and errors as glibc: fork, the parent exits 0; the child calls
 * setsid, chdir("/") unless nochdir, and points 0, 1 and 2 at /dev/null
 * unless noclose (ENODEV when /dev/null is not the null device).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"

STC_EXPORT int daemon(int nochdir, int noclose)
{
	switch (fork()) {
	case -1:
		return -1;
	case 0:
		break;
	default:
		_exit(0); /* ours: the trace gets its end record */
	}
	if (setsid() == -1)
		return -1;
	if (!nochdir)
		(void)chdir("/");
	if (!noclose) {
		struct stat st;
		int fd = open("/dev/null", O_RDWR);
		if (fd == -1)
			return -1;
		if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)) {
			close(fd);
			errno = ENODEV;
			return -1;
		}
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > 2)
			close(fd);
	}
	return 0;
}
