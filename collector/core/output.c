/*
 * output.c - the trace file of this process image.
 *
 * Naming: the configured path if it does not exist yet (stprof record removes
 * an old one), else <path>.<pid>, else <path>.<pid>.<n>: so a fork child or an
 * exec'd image never overwrites another image's trace.
 *
 * Ranks: a process started with RANK=R in its environment (torchrun and
 * torch.distributed's launchers set it for each worker) is a rank's process
 * unless an ancestor already is one: it writes <path>.rank<R> (then
 * <path>.rank<R>.<n>, e.g. a worker restarted by torchelastic, or the next
 * image when the rank's process calls execve) when the configured path is
 * taken, and claims the rank for its descendants by setting
 * STPROF_RANK_PID=R:<pid> in its environment.  A descendant with another pid
 * (a DataLoader worker, a compiler run by the rank) inherits both variables
 * and keeps the <pid> naming above, so it is never taken for the rank.  A
 * process that learns its rank later (torch.multiprocessing.spawn's worker:
 * init_process_group(rank=R), the shim tells us) renames its <path>.<pid>
 * to <path>.rank<R> then (stc_out_take_rank: link, never over another
 * file, then unlink) and claims the rank the same way.  Every write goes
 * through one lock; chunks are written whole with write(2), so a SIGKILL
 * leaves the file ending at a chunk boundary.
 *
 * The program may close or dup2 over our descriptor (daemons close every
 * fd): before each write we check that the fd still refers to our file, and
 * reopen it by path when it does not.
 *
 * Our descriptor sits at STC_FD_BASE or above, out of the program's range.
 * When RLIMIT_NOFILE is too low for that (out_low), holding any descriptor
 * would take one the program counts on: the file is then opened by path for
 * each write and closed when the output lock is released.
 *
 * The file is created 0600: it holds the command line, which may carry
 * secrets (as perf and heaptrack do with their data files).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "stprof/rankclaim.h"

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = -1;
static dev_t out_dev;
static ino_t out_ino;
static char out_path[4096 + 32];
static atomic_int out_ready;
static int out_failed;
static long long out_offset;
static int out_low; /* opened for each write: see above */
static long out_rank = -1; /* the rank the file was opened as (rank_process), or taken as later */

static int out_have(void) { return out_fd >= 0 || out_low; }

/* In out_low mode, give the descriptor back between writes. */
static void out_release(void)
{
	if (out_low && out_fd >= 0) {
		close(out_fd);
		out_fd = -1;
	}
}

void stc_out_lock(void) { pthread_mutex_lock(&out_mu); }
int stc_out_trylock(void) { return pthread_mutex_trylock(&out_mu) == 0; }
void stc_out_unlock(void)
{
	out_release();
	pthread_mutex_unlock(&out_mu);
}
int stc_out_ready(void) { return atomic_load_explicit(&out_ready, memory_order_acquire); }

/* The program's RLIMIT_FSIZE is for its own files (Python ignores SIGXFSZ,
 * and its writes past the limit fail with EFBIG): a write of ours that
 * would pass the soft limit raises it to the hard one for the write
 * (returns 1, *saved to put back); one that would pass the hard limit is
 * not made (-1: a chunk is written whole or not at all, and no SIGXFSZ of
 * ours reaches the program), said once on stderr unless quiet. */
static int fsize_room(long long end, struct rlimit *saved)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY || (rlim_t)end <= rl.rlim_cur)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && (rlim_t)end > rl.rlim_max) {
		static atomic_int said;
		if (!atomic_exchange(&said, 1) && !stc_quiet()) {
			char line[4300];
			int k = snprintf(line, sizeof line,
			                 "stprof: the program limits its files to %llu bytes (RLIMIT_FSIZE): the trace %s "
			                 "stops at %lld bytes, cut short\n",
			                 (unsigned long long)rl.rlim_max, out_path, out_offset);
			if (k > 0 && write(2, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1) < 0)
				k = 0;
		}
		return -1;
	}
	*saved = rl;
	struct rlimit up = {rl.rlim_max, rl.rlim_max};
	return setrlimit(RLIMIT_FSIZE, &up) == 0 ? 1 : -1;
}

static int write_all(const void *p, size_t n)
{
	struct rlimit saved;
	int raised = fsize_room(out_offset + (long long)n, &saved);
	if (raised < 0)
		return -1;
	const uint8_t *b = p;
	int rc = 0;
	while (n) {
		ssize_t w = write(out_fd, b, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -1;
			break;
		}
		b += w;
		n -= (size_t)w;
		out_offset += w;
	}
	if (raised > 0) /* the program's limit again (saved.rlim_max is unchanged) */
		setrlimit(RLIMIT_FSIZE, &saved);
	return rc;
}

/* Makes sure out_fd is still our file. */
static int check_fd(void)
{
	struct stat sb;
	if (out_fd >= 0 && fstat(out_fd, &sb) == 0 && sb.st_dev == out_dev && sb.st_ino == out_ino)
		return 0;
	int fd = open(out_path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) || sb.st_dev != out_dev || sb.st_ino != out_ino || lseek(fd, out_offset, SEEK_SET) < 0) {
		close(fd);
		return -1;
	}
	/* keep the number the program gave away out of its low range */
	int hi = out_low ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, STC_FD_BASE);
	if (hi >= 0) {
		close(fd);
		fd = hi;
	}
	out_fd = fd;
	return 0;
}

static int try_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, STC_FD_BASE);
	if (hi >= 0) {
		close(fd);
		fd = hi;
	}
	return fd;
}

/* This image's rank when it is a rank's process (see the top), else -1. */
static long rank_process(int pid)
{
	return stp_rank_of_process(getenv("RANK"), getenv("STPROF_RANK_PID"), pid);
}

/* Marks the rank as claimed for this process's descendants. */
static void claim_rank(long rank, int pid)
{
	char v[48];
	snprintf(v, sizeof v, "%ld:%d", rank, pid);
	const char *old = getenv("STPROF_RANK_PID");
	if (old && !strcmp(old, v))
		return;
	int was = t_busy;
	t_busy = 1; /* setenv allocates */
	setenv("STPROF_RANK_PID", v, 1);
	t_busy = was;
}

int stc_out_open(void)
{
	const char *base = g_cfg.output;
	int pid = (int)getpid();
	long rank = rank_process(pid);
	int fd = try_open(base);
	if (fd >= 0)
		snprintf(out_path, sizeof out_path, "%s", base);
	for (int n = 0; rank >= 0 && fd < 0 && errno == EEXIST && n < 1000; n++) {
		if (n == 0)
			snprintf(out_path, sizeof out_path, "%s.rank%ld", base, rank);
		else
			snprintf(out_path, sizeof out_path, "%s.rank%ld.%d", base, rank, n);
		fd = try_open(out_path);
	}
	for (int n = 0; fd < 0 && errno == EEXIST && n < 1000; n++) {
		if (n == 0)
			snprintf(out_path, sizeof out_path, "%s.%d", base, pid);
		else
			snprintf(out_path, sizeof out_path, "%s.%d.%d", base, pid, n);
		fd = try_open(out_path);
	}
	if (fd < 0) {
		out_failed = 1;
		return -1;
	}
	if (rank >= 0)
		claim_rank(rank, pid);
	out_rank = rank;
	struct stat sb;
	fstat(fd, &sb);
	out_fd = fd;
	out_dev = sb.st_dev;
	out_ino = sb.st_ino;
	out_offset = 0;
	out_failed = 0;
	out_low = fd < STC_FD_BASE;
	uint8_t h[STP_FILE_HEADER_SIZE];
	stp_file_header(h);
	if (write_all(h, sizeof h))
		out_failed = 1;
	out_release();
	atomic_store_explicit(&out_ready, 1, memory_order_release);
	return 0;
}

void stc_out_chunk_locked(unsigned type, uint32_t tid, uint8_t *buf, size_t len)
{
	if (out_failed || !out_have())
		return;
	if (check_fd()) {
		out_failed = 1;
		return;
	}
	stp_chunk_header(buf, type, tid, buf + STP_CHUNK_HEADER_SIZE, (uint32_t)len);
	if (write_all(buf, STP_CHUNK_HEADER_SIZE + len))
		out_failed = 1;
}

void stc_out_watermark_locked(uint64_t next_seq)
{
	uint8_t c[64];
	size_t n = stp_chunk_watermark(c, next_seq);
	if (!out_failed && out_have() && !check_fd() && write_all(c, n))
		out_failed = 1;
}

long long stc_out_end_locked(uint32_t reason, int32_t value)
{
	if (out_failed || !out_have() || check_fd())
		return -1;
	uint8_t c[64];
	long long at = out_offset;
	size_t n = stp_chunk_end(c, reason, value, atomic_load(&g_seq));
	if (write_all(c, n)) {
		out_failed = 1;
		return -1;
	}
	return at;
}

void stc_out_undo_end(long long offset)
{
	if (offset < 0 || !out_have() || check_fd())
		return;
	if (ftruncate(out_fd, offset) == 0 && lseek(out_fd, offset, SEEK_SET) == offset)
		out_offset = offset;
	else
		out_failed = 1;
}

int stc_out_take_rank(long rank)
{
	int pid = (int)getpid(), rc = -1;
	const char *base = g_cfg.output;
	/* a rank's trace already (torchrun's RANK at start; RANK the program
	 * set itself before init_process_group does not count: the file was
	 * named without it) */
	if (rank < 0 || out_rank >= 0)
		return -1;
	char cand[sizeof out_path];
	stc_out_lock();
	/* a process started by another (torch.multiprocessing.spawn's worker,
	 * named <path>.<pid>), not the one holding the configured path */
	for (int n = 0; out_have() && !out_failed && strcmp(out_path, base) && n < 1000; n++) {
		if (n == 0)
			snprintf(cand, sizeof cand, "%s.rank%ld", base, rank);
		else
			snprintf(cand, sizeof cand, "%s.rank%ld.%d", base, rank, n);
		if (link(out_path, cand) == 0) { /* never over another trace */
			unlink(out_path);
			snprintf(out_path, sizeof out_path, "%s", cand);
			claim_rank(rank, pid);
			out_rank = rank;
			rc = 0;
			break;
		}
		if (errno != EEXIST)
			break;
	}
	stc_out_unlock();
	return rc;
}

void stc_out_atfork_child(void)
{
	pthread_mutex_init(&out_mu, NULL);
	if (out_fd >= 0)
		close(out_fd); /* the parent's file: it keeps writing it */
	out_fd = -1;
	out_low = 0;
	out_failed = 0;
	out_rank = -1;
	atomic_store(&out_ready, 0);
}
