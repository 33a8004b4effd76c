/*
 * signals.c - writing the trace when a fatal signal ends the program, without
 * changing what the program sees.
 *
 * At start, every signal whose default action ends the process and whose
 * disposition is still SIG_DFL gets our handler.  The handler writes what it
 * can (try-locks only), an END(SIGNAL) record, restores SIG_DFL and raises the
 * signal again, so the process dies of the same signal (core dump included).
 *
 * sigaction() and signal() are interposed to hide this: asking for the
 * disposition of such a signal answers SIG_DFL, setting SIG_DFL keeps ours,
 * setting anything else replaces ours (the program's handler then decides,
 * and our destructor or _exit still write the END record).  Python, for one,
 * installs its SIGINT handler only when it finds SIG_DFL.
 *
 * A vfork child (posix_spawn, Python's subprocess) runs in our memory until
 * it execs and resets the program's handlers to SIG_DFL there: its calls
 * pass straight through, so that the table of ours stays the parent's.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "tbuf.h"

static const int fatal[] = {SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE,
                            SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGXCPU,
                            SIGXFSZ, SIGVTALRM, SIGSYS};
static atomic_int ours[_NSIG];

static int is_fatal(int sig)
{
	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
		if (fatal[i] == sig)
			return 1;
	return 0;
}

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!g_real.sigaction)
		stc_real_resolve();
	return g_real.sigaction(sig, act, old);
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	stc_emergency_finish(sig);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	real_sigaction(sig, &dfl, NULL);
	atomic_store(&ours[sig], 0);
	raise(sig); /* blocked until we return, then the default action */
	errno = saved;
}

static int install(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fatal;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK; /* a stack overflow too (altstack.c) */
	sigemptyset(&sa.sa_mask);
	if (real_sigaction(sig, &sa, NULL))
		return -1;
	atomic_store(&ours[sig], 1);
	return 0;
}

void stc_signals_install(void)
{
	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
		struct sigaction old;
		if (real_sigaction(fatal[i], NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL)
			install(fatal[i]);
	}
}

void stc_emergency_finish(int sig)
{
	int expect = STC_ON;
	if (getpid() != g_pid || !atomic_compare_exchange_strong(&g_state, &expect, STC_FINISHED))
		return;
	t_busy = 1;
	if (stc_out_ready()) {
		stc_tbuf_flush_all_try();
		if (stc_out_trylock()) {
			stc_out_end_locked(STP_END_SIGNAL, sig);
			stc_out_unlock();
		}
	}
}

STC_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (getpid() != g_pid) /* a vfork child, or before our start */
		return real_sigaction(sig, act, old);
	if (sig <= 0 || sig >= _NSIG || !atomic_load(&ours[sig])) {
		int rc = real_sigaction(sig, act, old);
		/* the program put back the default: keep writing the trace on it */
		if (rc == 0 && act && !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL &&
		    is_fatal(sig) && atomic_load(&g_state) == STC_ON)
			install(sig);
		return rc;
	}
	if (old) {
		memset(old, 0, sizeof *old);
		old->sa_handler = SIG_DFL;
	}
	if (!act || (!(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL))
		return 0;
	int rc = real_sigaction(sig, act, NULL);
	if (rc == 0)
		atomic_store(&ours[sig], 0);
	return rc;
}

/* signal() as glibc defines it: BSD semantics (SA_RESTART). */
STC_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

sighandler_t bsd_signal(int sig, sighandler_t handler);
STC_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler) { return signal(sig, handler); }
