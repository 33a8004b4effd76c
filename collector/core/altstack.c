/*
 * altstack.c - an alternate signal stack for each thread the collector
 * records, so that a SIGSEGV from a stack overflow still runs the fatal
 * handler (signals.c: the buffers and an END record are written; without
 * a stack to run on, the kernel kills the process at once and a short
 * program kept no events at all).
 *
 * A thread that has no alternate stack of its own gets one at its first
 * event (ALT_SIZE bytes from mmap behind a guard page: only the pages a
 * handler touches cost memory), given back to a free list at its exit.
 * sigaltstack() is interposed to hide it: the program asking sees none
 * (SS_DISABLE), as it would without stprof; the program setting its own
 * replaces ours, and disabling keeps ours unseen.
 */
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define ALT_SIZE (64u << 10)

typedef struct altstack {
	struct altstack *next; /* on the free list */
	uint8_t *sp;           /* the usable stack, above the guard page */
} altstack;

static STC_TLS altstack *t_alt;
static pthread_mutex_t alt_mu = PTHREAD_MUTEX_INITIALIZER;
static altstack *alt_free;

static int real_sigaltstack(const stack_t *ss, stack_t *old)
{
	if (!g_real.sigaltstack)
		stc_real_resolve();
	return g_real.sigaltstack(ss, old);
}

/* 1 when the thread's current alternate stack is ours. */
static int ours(stack_t *cur)
{
	return t_alt && real_sigaltstack(NULL, cur) == 0 && !(cur->ss_flags & SS_DISABLE) &&
	       cur->ss_sp == t_alt->sp;
}

static altstack *alt_get(void)
{
	pthread_mutex_lock(&alt_mu);
	altstack *a = alt_free;
	if (a)
		alt_free = a->next;
	pthread_mutex_unlock(&alt_mu);
	if (a)
		return a;
	long page = sysconf(_SC_PAGESIZE);
	size_t pg = page > 0 ? (size_t)page : 4096;
	uint8_t *m = stc_mem_alloc(pg + ALT_SIZE);
	if (!m)
		return NULL;
	mprotect(m, pg, PROT_NONE); /* an overflow of this stack faults */
	/* the record lives at the top of its own stack, which a handler
	 * reaches last */
	a = (altstack *)(m + pg + ALT_SIZE - sizeof *a);
	a->sp = m + pg;
	return a;
}

static void alt_put(altstack *a)
{
	pthread_mutex_lock(&alt_mu);
	a->next = alt_free;
	alt_free = a;
	pthread_mutex_unlock(&alt_mu);
}

void stc_altstack_thread_init(void)
{
	stack_t cur;
	if (t_alt || real_sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
		return; /* ours already, or the program's own */
	altstack *a = alt_get();
	if (!a)
		return;
	stack_t ss = {.ss_sp = a->sp, .ss_size = ALT_SIZE - 64, .ss_flags = 0};
	if (real_sigaltstack(&ss, NULL) != 0) {
		alt_put(a);
		return;
	}
	t_alt = a;
}

void stc_altstack_thread_exit(void)
{
	stack_t cur;
	if (!ours(&cur)) {
		t_alt = NULL;
		return;
	}
	stack_t off = {.ss_flags = SS_DISABLE};
	if (!(cur.ss_flags & SS_ONSTACK) && real_sigaltstack(&off, NULL) == 0) {
		alt_put(t_alt);
		t_alt = NULL;
	}
}

void stc_altstack_atfork_child(void) { pthread_mutex_init(&alt_mu, NULL); }

STC_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	if (getpid() != g_pid) /* a vfork child: the thread's stack record is the parent's */
		return real_sigaltstack(ss, old);
	stack_t cur;
	if (!ours(&cur))
		return real_sigaltstack(ss, old);
	if (ss && !(ss->ss_flags & SS_DISABLE)) {
		int rc = real_sigaltstack(ss, NULL); /* the program's own replaces ours */
		if (rc != 0)
			return rc;
		if (!(cur.ss_flags & SS_ONSTACK))
			alt_put(t_alt);
		t_alt = NULL;
	}
	if (old) { /* what the program would see without us */
		memset(old, 0, sizeof *old);
		old->ss_flags = SS_DISABLE;
	}
	return 0;
}
