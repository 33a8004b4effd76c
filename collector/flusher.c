/*
 * flusher.c - the background thread that writes the trace: every full
 * buffer as soon as a thread queues it (and the call-path definitions it
 * needs), and every flush period (STPROF_FLUSH_MS, default 50 ms) all
 * buffers and a watermark, so a trace reads up to at most one period before
 * a SIGKILL.  It also notices modules
 * loaded since the last round.  It blocks every signal, so the program's
 * signals keep going to the program's own threads, and records nothing.
 */
#include <signal.h>
#include <sys/prctl.h>

#include "internal.h"

static atomic_int started;

static void *flusher_main(void *arg)
{
	t_busy = 1;
	prctl(PR_SET_NAME, "stprof-flush", 0, 0, 0);
	uint64_t period = (uint64_t)g_cfg.flush_ms * 1000000ull, last = stc_now();
	for (;;) {
		uint64_t now = stc_now(), due = last + period;
		stc_tbuf_wait(due > now ? (unsigned)((due - now) / 1000000ull) + 1 : 1);
		if (atomic_load(&g_state) != STC_ON || !stc_out_ready())
			continue;
		stc_tbuf_write_ready(); /* full buffers, as soon as they are queued */
		if (stc_now() >= last + period) {
			last = stc_now();
			stc_modules_scan();
			stc_tbuf_flush_all(); /* everything, and a watermark */
		}
	}
	return arg;
}

void stc_flusher_start(void)
{
	if (atomic_load_explicit(&started, memory_order_relaxed) || atomic_exchange(&started, 1))
		return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t th;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64u << 10);
	if (pthread_create(&th, &attr, flusher_main, NULL))
		atomic_store(&started, 0);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void stc_flusher_atfork_child(void) { atomic_store(&started, 0); }
