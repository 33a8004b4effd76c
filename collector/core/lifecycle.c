/*
 * lifecycle.c - start, fork, exec and exit of a recorded process image.
 *
 * Start: the constructor resolves the real functions, reads the options,
 * opens the trace and records the PROCESS event (seq 0), the loaded modules
 * and the main thread (process.c), then runs the backends' start hooks
 * (face.h).  Allocations made before it (by the loader and libc) are not
 * recorded; their frees are, and readers ignore frees of addresses they
 * never saw allocated.  An exit (the destructor, _exit) runs the backends'
 * finish hooks first, while events can still be recorded.
 *
 * fork: the child keeps no state of the parent's trace (the core's parts are
 * reset, then the backends' fork_child hooks run); its first event opens
 * <trace>.<pid> (see output.c).  exec: everything is written with an END
 * record before the image is replaced; if execve fails the END is taken back.
 * exit: on_exit() learns the status; our destructor (which runs late, as a
 * preloaded library is initialized early) writes it.  The on_exit handler is
 * registered when main starts (we wrap __libc_start_main): registered in our
 * constructor it would run after the loader's destructors, too late.  _exit/_Exit are
 * interposed; fatal signals are in signals.c.  Every exit path also survives
 * SIGKILL: the flusher writes at least every flush period.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fold.h"
#include "sample.h"
#include "tbuf.h"

void stprof_mark_v1(int kind, const char *name, int64_t value);
static int exit_status;

static void on_exit_status(int status, void *arg) { exit_status = status; }

void stc_finish(uint32_t reason, int32_t value)
{
	int expect = STC_ON;
	if (getpid() != g_pid)
		return;
	if (g_cfg.unwind == STC_UNWIND_CHECK && atomic_load(&g_state) == STC_ON && stc_out_ready()) {
		uint64_t checked, bad;
		stc_unwind_check_counts(&checked, &bad);
		stprof_mark_v1(STP_MARK_ANNOTATION, "stprof.unwind_checked", (int64_t)checked);
		stprof_mark_v1(STP_MARK_ANNOTATION, "stprof.unwind_mismatches", (int64_t)bad);
	}
	if (atomic_load(&g_state) == STC_ON && stc_out_ready())
		stc_backends_finish(); /* the last device times and accesses, while still recording */
	if (!atomic_compare_exchange_strong(&g_state, &expect, STC_FINISHED))
		return;
	int was = t_busy;
	t_busy = 1;
	if (stc_out_ready()) {
		stc_modules_scan();
		stc_tbuf_flush_all();
		stc_out_lock();
		stc_fold_finish_locked(); /* the iterations folding held, the last K in full */
		stc_out_end_locked(reason, value);
		stc_out_unlock();
	}
	t_busy = was;
}

/* ---- fork */
static void fork_prepare(void)
{
	stc_backends_fork_prepare();
	stc_out_lock();
	stc_defs_lock();
}

static void fork_parent(void)
{
	stc_defs_unlock();
	stc_out_unlock();
	stc_backends_fork_parent();
}

static void fork_child(void)
{
	stc_defs_unlock();
	stc_out_unlock();
	/* a forked shell (a wrapper script's subshell: $(...), a pipeline)
	 * is judged as an image is (skipexec.c): not recorded unless the
	 * command's; what it execs is judged for itself */
	int was = t_busy;
	t_busy = 1;
	int skip = atomic_load(&g_state) == STC_ON && stc_skip_exec_image();
	t_busy = was;
	if (skip) {
		atomic_store(&g_state, STC_FINISHED);
		return;
	}
	g_pid = getpid();
	stc_out_atfork_child();
	stc_defs_atfork_child();
	stc_tbuf_atfork_child();
	stc_modules_atfork_child();
	stc_unwind_atfork_child();
	stc_py_atfork_child();
	stc_altstack_atfork_child();
	stc_flusher_atfork_child();
	stc_devobj_atfork_child();
	stc_sample_atfork_child();
	stc_fold_atfork_child();
	stc_process_atfork_child();
	stc_backends_fork_child();
}

/* ---- start and end */
__attribute__((constructor(101))) static void stc_constructor(void) { stc_init(); }

void stc_init(void)
{
	int expect = STC_OFF;
	if (!atomic_compare_exchange_strong(&g_state, &expect, STC_INITIALIZING))
		return;
	t_busy = 1;
	stc_real_resolve();
	stc_config_from_env(&g_cfg);
	if (stc_skip_exec_image()) { /* the toolchain the program runs (skipexec.c) */
		atomic_store(&g_state, STC_FINISHED);
		t_busy = 0;
		return;
	}
	stc_config_host_depth(&g_cfg, dlsym(RTLD_DEFAULT, "Py_Initialize") != NULL);
	stc_sample_start();
	g_pid = getpid();
	stp_crc32c(0, "", 0); /* builds the CRC table outside any signal handler */
	stc_defs_init();
	stc_tbuf_init();
	stc_unwind_init();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	if (stc_out_open() == 0) {
		atomic_store(&g_state, STC_ON);
		stc_announce_process();
		stc_tbuf_self(); /* records the main thread */
		stc_announce_options();
		stc_signals_install();
		stc_flusher_arm(); /* started lazily: see flusher.c */
		stc_backends_start(); /* before the program's first CUDA call */
	} else {
		atomic_store(&g_state, STC_FINISHED); /* cannot write: stay out of the way */
	}
	t_busy = 0;
}

/* ---- main: learn the exit status */
typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
static main_fn real_main;

static int main_wrapper(int argc, char **argv, char **envp)
{
	on_exit(on_exit_status, NULL);
	return real_main(argc, argv, envp);
}

STC_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                                 void (*rtld_fini)(void), void *stack_end);
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end)
{
	start_main_fn next;
	void *sym = dlsym(RTLD_NEXT, "__libc_start_main");
	memcpy(&next, &sym, sizeof next);
	real_main = main;
	return next(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

__attribute__((destructor(101))) static void stc_destructor(void) { stc_finish(STP_END_EXIT, exit_status); }

STC_EXPORT void _exit(int status)
{
	stc_finish(STP_END_EXIT, status);
	if (!g_real._exit)
		stc_real_resolve();
	g_real._exit(status);
}

STC_EXPORT void _Exit(int status)
{
	stc_finish(STP_END_EXIT, status);
	if (!g_real._Exit)
		stc_real_resolve();
	g_real._Exit(status);
}

/* ---- exec: END(EXEC) first; taken back if the call fails */
static long long before_exec(void)
{
	if (atomic_load(&g_state) != STC_ON || getpid() != g_pid || !stc_out_ready())
		return -1; /* also a vfork child, which shares our memory */
	int was = t_busy;
	t_busy = 1;
	stc_tbuf_flush_all();
	stc_out_lock();
	stc_fold_finish_locked();
	long long at = stc_out_end_locked(STP_END_EXEC, 0);
	stc_out_unlock();
	t_busy = was;
	return at;
}

static void exec_failed(long long at)
{
	if (at < 0)
		return;
	int e = errno;
	stc_out_lock();
	stc_out_undo_end(at);
	stc_out_unlock();
	errno = e;
}

#define EXEC_WRAP(call) do { \
		if (!stc_real_resolved()) \
			stc_real_resolve(); \
		long long at_ = before_exec(); \
		int rc_ = (call); \
		exec_failed(at_); \
		return rc_; \
	} while (0)

STC_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	EXEC_WRAP(g_real.execve(path, argv, envp));
}

STC_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	EXEC_WRAP(g_real.execveat(dirfd, path, argv, envp, flags));
}

STC_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	EXEC_WRAP(g_real.fexecve(fd, argv, envp));
}

STC_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	EXEC_WRAP(g_real.execvpe(file, argv, envp));
}

STC_EXPORT int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }
STC_EXPORT int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

/* The variadic forms collect their arguments and go through the above. */
#define COLLECT_ARGS(first, last, argv) \
	size_t n_ = 1; \
	va_list ap_; \
	va_start(ap_, last); \
	while (va_arg(ap_, char *)) \
		n_++; \
	va_end(ap_); \
	char **argv = __builtin_alloca((n_ + 1) * sizeof(char *)); \
	argv[0] = (char *)(first); \
	va_start(ap_, last); \
	for (size_t i_ = 1; i_ <= n_; i_++) \
		argv[i_] = va_arg(ap_, char *);

STC_EXPORT int execl(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, arg, argv)
	va_end(ap_);
	return execve(path, argv, environ);
}

STC_EXPORT int execlp(const char *file, const char *arg, ...)
{
	COLLECT_ARGS(arg, arg, argv)
	va_end(ap_);
	return execvpe(file, argv, environ);
}

STC_EXPORT int execle(const char *path, const char *arg, ...)
{
	COLLECT_ARGS(arg, arg, argv)
	char *const *envp = va_arg(ap_, char *const *);
	va_end(ap_);
	return execve(path, argv, envp);
}
