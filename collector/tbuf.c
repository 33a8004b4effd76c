/*
 * tbuf.c - per-thread event buffers and the process's sequence numbers.
 *
 * Each thread encodes its events into its own 64 KiB buffer under the
 * buffer's spinlock, which only the flusher ever contends for.  An event's
 * seq is taken while that lock is held and the event is appended before it is
 * released; the flusher reads the counter G, then takes every buffer's lock in
 * turn and writes what it holds, then writes WATERMARK(G).  So every event
 * with seq < G is in the file before the watermark, which lets readers merge
 * the threads' chunks in constant memory.
 *
 * A full buffer is written by its own thread, still holding its lock (lock
 * order: buffer -> output -> defs).  Buffers are never freed: when a thread
 * exits its buffer is flushed and handed to the next new thread.
 */
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

atomic_uint_fast64_t g_seq;
static stc_tbuf *_Atomic registry;
static STC_TLS stc_tbuf *t_buf;
static pthread_key_t exit_key;

uint64_t stc_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t stc_gettid(void) { return (uint32_t)syscall(SYS_gettid); }

static inline void spin_lock(atomic_int *l)
{
	for (unsigned n = 0;; n++) {
		int expect = 0;
		if (atomic_compare_exchange_weak_explicit(l, &expect, 1, memory_order_acquire, memory_order_relaxed))
			return;
		if (n > 64)
			sched_yield();
	}
}

static inline int spin_trylock(atomic_int *l)
{
	int expect = 0;
	return atomic_compare_exchange_strong_explicit(l, &expect, 1, memory_order_acquire, memory_order_relaxed);
}

static inline void spin_unlock(atomic_int *l) { atomic_store_explicit(l, 0, memory_order_release); }

/* Writes the buffer's events as one chunk; caller holds b->lock. */
static void flush_locked(stc_tbuf *b)
{
	if (!b->len)
		return;
	stc_out_chunk(STP_CHUNK_EVENTS, b->tid, b->data, b->len);
	b->len = 0;
	stp_enc_reset(&b->st, b->tid);
}

static void emit_thread(uint32_t tid)
{
	char name[32] = "";
	prctl(PR_GET_NAME, name, 0, 0, 0);
	stp_event ev = {.type = STP_EV_THREAD};
	ev.u.thread.tid = tid;
	ev.u.thread.name = name[0] ? stc_intern_string(name, strlen(name)) : 0;
	stc_emit_def_event(&ev);
}

/* The thread is exiting: flush its buffer and give it back. */
static void on_thread_exit(void *arg)
{
	stc_tbuf *b = arg;
	int was_busy = t_busy;
	t_busy = 1;
	spin_lock(&b->lock);
	if (atomic_load(&g_state) == STC_ON)
		flush_locked(b);
	b->len = 0;
	spin_unlock(&b->lock);
	atomic_store(&b->owned, 0);
	t_buf = NULL;
	t_busy = was_busy;
}

void stc_tbuf_init(void) { pthread_key_create(&exit_key, on_thread_exit); }

stc_tbuf *stc_tbuf_self(void)
{
	stc_tbuf *b = t_buf;
	if (STC_LIKELY(b))
		return b;
	/* reuse a buffer of an exited thread, else make one */
	for (b = atomic_load(&registry); b; b = b->next) {
		int expect = 0;
		if (!atomic_load_explicit(&b->owned, memory_order_relaxed) &&
		    atomic_compare_exchange_strong(&b->owned, &expect, 1))
			break;
	}
	if (!b) {
		b = stc_mem_alloc(sizeof *b);
		if (!b)
			return NULL;
		atomic_store(&b->owned, 1);
		stc_tbuf *head = atomic_load(&registry);
		do
			b->next = head;
		while (!atomic_compare_exchange_weak(&registry, &head, b));
	}
	spin_lock(&b->lock);
	b->tid = stc_gettid();
	b->len = 0;
	stp_enc_reset(&b->st, b->tid);
	spin_unlock(&b->lock);
	t_buf = b;
	pthread_setspecific(exit_key, b);
	stc_unwind_thread_init();
	emit_thread(b->tid);
	return b;
}

void stc_emit(stp_event *ev)
{
	stc_tbuf *b = stc_tbuf_self();
	if (STC_UNLIKELY(!b) || STC_UNLIKELY(!stc_ensure_output()))
		return;
	uint8_t *dst;
	size_t cap, n;
	spin_lock(&b->lock);
	ev->tid = b->tid;
	ev->seq = atomic_fetch_add_explicit(&g_seq, 1, memory_order_relaxed);
	ev->time_ns = stc_now();
	dst = b->data + STP_CHUNK_HEADER_SIZE + b->len;
	cap = STC_TBUF_SIZE - STP_CHUNK_HEADER_SIZE - b->len;
	n = stp_enc_event(dst, cap, &b->st, ev);
	if (STC_UNLIKELY(!n)) {
		flush_locked(b);
		n = stp_enc_event(b->data + STP_CHUNK_HEADER_SIZE, STC_TBUF_SIZE - STP_CHUNK_HEADER_SIZE, &b->st, ev);
	}
	b->len += n; /* an event larger than a whole buffer is dropped (n == 0) */
	spin_unlock(&b->lock);
}

static void flush_all(int try_only)
{
	uint64_t mark = atomic_load(&g_seq);
	int complete = 1;
	for (stc_tbuf *b = atomic_load(&registry); b; b = b->next) {
		if (try_only) {
			if (!spin_trylock(&b->lock)) {
				complete = 0;
				continue;
			}
			if (b->len && stc_out_trylock()) {
				stc_out_chunk_locked(STP_CHUNK_EVENTS, b->tid, b->data, b->len);
				stc_out_unlock();
				b->len = 0;
				stp_enc_reset(&b->st, b->tid);
			}
			spin_unlock(&b->lock);
			continue;
		}
		spin_lock(&b->lock);
		flush_locked(b);
		spin_unlock(&b->lock);
	}
	if (try_only) {
		if (stc_out_trylock()) {
			stc_defs_flush_locked();
			if (complete)
				stc_out_watermark_locked(mark);
			stc_out_unlock();
		}
		return;
	}
	stc_out_lock();
	stc_defs_flush_locked();
	stc_out_watermark_locked(mark);
	stc_out_unlock();
}

void stc_tbuf_flush_all(void) { flush_all(0); }
void stc_tbuf_flush_all_try(void) { flush_all(1); }

/* In a fork child: this thread is the only one; its buffer holds the
 * parent's unwritten events (the parent writes them), the others belong to
 * threads that do not exist here. */
void stc_tbuf_atfork_child(void)
{
	atomic_store(&g_seq, 0);
	for (stc_tbuf *b = atomic_load(&registry); b; b = b->next) {
		atomic_store(&b->lock, 0);
		b->len = 0;
		if (b != t_buf)
			atomic_store(&b->owned, 0);
	}
	if (t_buf) {
		t_buf->tid = stc_gettid();
		stp_enc_reset(&t_buf->st, t_buf->tid);
	}
	/* the THREAD event of this thread is re-emitted when the output opens */
}

/* Records the THREAD event of the calling thread's buffer again (a fork
 * child's new trace must name its thread). */
void stc_tbuf_announce(void)
{
	if (t_buf)
		emit_thread(t_buf->tid);
}
