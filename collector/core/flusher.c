/*
 * flusher.c - the background thread that writes the trace: every full
 * buffer as soon as a thread queues it (and the call-path definitions it
 * needs), and every flush period (STPROF_FLUSH_MS, default 50 ms) all
 * buffers and a watermark, so a trace reads up to at most one period before
 * a SIGKILL.  It also notices modules loaded since the last round.  It blocks
 * every signal, so the program's signals keep going to the program's own
 * threads, and records nothing.
 *
 * It starts lazily, so a program that is single-threaded stays so for its
 * first flush period (unshare(CLONE_NEWUSER) needs that; short commands
 * never see a second thread): when the program creates a thread (our
 * pthread_create), or at the first event a period after the image started.
 * Before then full buffers wait in the queue and every exit path writes them.
 * stc_flusher_stop() joins it (unshare and setns, isolate.c); it is started
 * again lazily.
 *
 * If the main thread called pthread_exit, the flusher watches for being the
 * last thread alive and then returns: glibc ends the process with exit(0)
 * when its last thread returns, just as it would have without us.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tbuf.h"

atomic_int g_flusher_on;   /* a flusher thread exists (or is being made) */
static atomic_int stop_req;
static pthread_t flusher_th;
static _Atomic uint64_t lazy_due;

/* 1 if no thread but the calling one is alive (zombies do not count). */
static int last_thread_alive(void)
{
	int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return 0;
	unsigned self = stc_gettid();
	int others = 0;
	char buf[4096];
	long n;
	while (!others && (n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
		for (long off = 0; off < n && !others;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(buf + off);
			off += d->d_reclen;
			unsigned tid = 0;
			if (d->d_name[0] < '1' || d->d_name[0] > '9' || sscanf(d->d_name, "%u", &tid) != 1 || tid == self)
				continue;
			char path[64], stat[512];
			snprintf(path, sizeof path, "/proc/self/task/%u/stat", tid);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue; /* gone */
			ssize_t r = read(fd, stat, sizeof stat - 1);
			close(fd);
			if (r <= 0)
				continue;
			stat[r] = 0;
			const char *p = strrchr(stat, ')');
			if (p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X')
				others = 1;
		}
	}
	close(dir);
	return n >= 0 && !others;
}

static void *flusher_main(void *arg)
{
	t_busy = 1;
	prctl(PR_SET_NAME, "stprof-flush", 0, 0, 0);
	uint64_t period = (uint64_t)g_cfg.flush_ms * 1000000ull, last = stc_now();
	while (!atomic_load(&stop_req)) {
		uint64_t now = stc_now(), due = last + period;
		stc_tbuf_wait(due > now ? (unsigned)((due - now) / 1000000ull) + 1 : 1);
		if (atomic_load(&stop_req))
			break;
		if (atomic_load(&g_state) != STC_ON || !stc_out_ready())
			continue;
		stc_tbuf_write_ready(); /* full buffers, as soon as they are queued */
		if (stc_now() >= last + period) {
			last = stc_now();
			stc_modules_scan();
			stc_backends_flush(0); /* e.g. CUPTI's activity buffers: device times */
			stc_tbuf_flush_all(); /* everything, and a watermark */
			if (atomic_load(&g_main_exited) && last_thread_alive())
				return arg; /* glibc: the last thread returned, exit(0) */
		}
	}
	return arg;
}

void stc_flusher_arm(void)
{
	atomic_store(&lazy_due, stc_now() + (uint64_t)g_cfg.flush_ms * 1000000ull);
}

void stc_flusher_lazy(uint64_t now)
{
	/* not from a vfork child (it shares our memory) */
	if (now >= atomic_load_explicit(&lazy_due, memory_order_relaxed) && getpid() == g_pid)
		stc_flusher_start();
}

void stc_flusher_start(void)
{
	if (atomic_load_explicit(&g_flusher_on, memory_order_relaxed) || atomic_exchange(&g_flusher_on, 1))
		return;
	if (atomic_load(&g_state) != STC_ON || !g_real.pthread_create) {
		atomic_store(&g_flusher_on, 0);
		return;
	}
	int was = t_busy;
	t_busy = 1;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64u << 10);
	atomic_store(&stop_req, 0);
	if (g_real.pthread_create(&flusher_th, &attr, flusher_main, NULL))
		atomic_store(&g_flusher_on, 0);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	t_busy = was;
}

int stc_flusher_stop(void)
{
	if (!atomic_load(&g_flusher_on))
		return 0;
	atomic_store(&stop_req, 1);
	stc_tbuf_wake();
	pthread_join(flusher_th, NULL);
	stc_flusher_arm(); /* lazily again, a period from now */
	atomic_store(&g_flusher_on, 0);
	return 1;
}

void stc_flusher_atfork_child(void)
{
	atomic_store(&g_flusher_on, 0);
	atomic_store(&stop_req, 0);
	stc_flusher_arm();
}

/* The program becomes multi-threaded: the flusher may start now. */
STC_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	if (!stc_real_resolved())
		stc_real_resolve();
	if (!atomic_load_explicit(&g_flusher_on, memory_order_relaxed) && !t_busy &&
	    atomic_load(&g_state) == STC_ON && getpid() == g_pid && stc_out_ready())
		stc_flusher_start();
	return g_real.pthread_create(th, attr, fn, arg);
}
