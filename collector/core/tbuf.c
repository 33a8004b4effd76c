/*
 * tbuf.c - per-thread event buffers, handed to the flusher thread when full,
 * and the process's sequence numbers.
 *
 * Each thread encodes its events into its current buffer (256 KiB) under the
 * thread's spinlock, which only the flusher ever contends for.  A full
 * buffer is queued for the flusher and the thread goes on with a fresh one
 * from a shared pool, so writing, checksums and the building of call-path
 * definitions happen on the flusher's thread, not the program's.  When the
 * pool is exhausted (the flusher cannot keep up) the thread writes its buffer
 * itself: that is the back-pressure.
 *
 * Watermarks: an event's seq is taken under its thread's lock and the event
 * is in a buffer before the lock is released; a full buffer is queued under
 * that lock.  A flush round reads the counter G, takes every thread's
 * current buffer (under its lock), then writes those and every queued one,
 * then WATERMARK(G).  So every event with seq < G is in the file before it.
 *
 * Call paths first seen by a thread get their id at once (defs.c) and wait
 * in the thread's pending list (pending.c); every chunk write first turns
 * all pending paths of all threads into definitions (stc_defs_flush_locked),
 * so no events chunk precedes the definition of an id it uses.
 *
 * Only one flush runs at a time (flush_mu): a flush that took buffers from
 * the queue must have written them before any later flush writes a
 * watermark past their events (the flusher thread and the one that exits
 * both flush).
 *
 * Recording an event (emit.c) puts it here with stc_tbuf_put (internal.h),
 * inline: the path of every event is the thread's lock, the encoder, and a
 * rotation when the buffer is full.
 *
 * Lock order: flush -> thread lock -> pool -> output -> defs -> pending.
 */
#include <linux/futex.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fold.h"
#include "tbuf.h"

#define POOL_MAX 64 /* buffers: 16 MiB */

static stc_slot *_Atomic registry;
STC_TLS stc_tbuf *t_buf;
static pthread_key_t exit_key;

/* the pool of buffers: free ones and full ones queued for the flusher */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static stc_buf *free_list, *ready_head, *ready_tail;
static unsigned pool_count;
static atomic_int flusher_wake;
static pthread_mutex_t flush_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- pool */

static void buf_reset(stc_buf *x, uint32_t tid)
{
	x->next = NULL;
	x->tid = tid;
	x->len = 0;
	stp_enc_reset(&x->st, tid);
}

/* A fresh buffer, or NULL when the pool is at its limit. */
static stc_buf *pool_get(uint32_t tid)
{
	pthread_mutex_lock(&pool_mu);
	stc_buf *x = free_list;
	if (x)
		free_list = x->next;
	else if (pool_count < POOL_MAX && (x = stc_mem_alloc(sizeof *x)))
		pool_count++;
	pthread_mutex_unlock(&pool_mu);
	if (x)
		buf_reset(x, tid);
	return x;
}

static void pool_put(stc_buf *x)
{
	pthread_mutex_lock(&pool_mu);
	x->next = free_list;
	free_list = x;
	pthread_mutex_unlock(&pool_mu);
}

static void wake_flusher(void)
{
	atomic_fetch_add(&flusher_wake, 1);
	syscall(SYS_futex, &flusher_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void stc_tbuf_wake(void) { wake_flusher(); }

static void pool_enqueue(stc_buf *x)
{
	pthread_mutex_lock(&pool_mu);
	x->next = NULL;
	if (ready_tail)
		ready_tail->next = x;
	else
		ready_head = x;
	ready_tail = x;
	pthread_mutex_unlock(&pool_mu);
}

/* Takes every queued buffer, oldest first. */
static stc_buf *pool_take_ready(void)
{
	pthread_mutex_lock(&pool_mu);
	stc_buf *x = ready_head;
	ready_head = ready_tail = NULL;
	pthread_mutex_unlock(&pool_mu);
	return x;
}

/* Writes a buffer as one chunk (definitions first). */
static void write_buf(stc_buf *x)
{
	if (x->len)
		stc_out_chunk(STP_CHUNK_EVENTS, x->tid, x->data, x->len);
	x->len = 0;
	stp_enc_reset(&x->st, x->tid);
}

/* Called by the flusher: sleeps until woken or ms elapse. */
void stc_tbuf_wait(unsigned ms)
{
	int seen = atomic_load(&flusher_wake);
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	pthread_mutex_lock(&pool_mu);
	int have = ready_head != NULL;
	pthread_mutex_unlock(&pool_mu);
	if (!have)
		syscall(SYS_futex, &flusher_wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

static void write_ready_locked(void)
{
	for (stc_buf *x = pool_take_ready(), *next; x; x = next) {
		next = x->next;
		write_buf(x);
		pool_put(x);
	}
}

/* Writes the queued buffers (the flusher, between rounds). */
void stc_tbuf_write_ready(void)
{
	pthread_mutex_lock(&flush_mu);
	write_ready_locked();
	pthread_mutex_unlock(&flush_mu);
}

/* ---------------------------------------------------------------- threads */

static void emit_thread(uint32_t tid)
{
	char name[32] = "";
	prctl(PR_GET_NAME, name, 0, 0, 0);
	stp_event ev = {.type = STP_EV_THREAD};
	ev.u.thread.tid = tid;
	ev.u.thread.name = name[0] ? stc_intern_string(name, strlen(name)) : 0;
	stc_emit_def_event(&ev);
}

/* The thread is exiting: queue its buffer and give the slot back. */
static void on_thread_exit(void *arg)
{
	stc_tbuf *b = arg;
	int was_busy = t_busy;
	t_busy = 1;
	stc_spin_lock(&b->slot.lock);
	stc_buf *x = b->cur;
	b->cur = NULL;
	stc_spin_unlock(&b->slot.lock);
	if (x && x->len && atomic_load(&g_state) == STC_ON) {
		pool_enqueue(x);
		wake_flusher();
	} else if (x) {
		pool_put(x);
	}
	if (stc_gettid() == (uint32_t)g_pid)
		atomic_store(&g_main_exited, 1); /* pthread_exit in main */
	stc_unwind_thread_exit();
	stc_altstack_thread_exit();
	stc_defs_thread_exit();
	atomic_store(&b->slot.owned, 0);
	t_buf = NULL;
	t_busy = was_busy;
}

void stc_tbuf_init(void) { pthread_key_create(&exit_key, on_thread_exit); }

/* The first call on a thread (stc_tbuf_self, internal.h, is the fast path). */
stc_tbuf *stc_tbuf_self_slow(void)
{
	/* the slot of an exited thread, else a new one */
	stc_tbuf *b = (stc_tbuf *)stc_slot_claim(&registry, sizeof(stc_tbuf));
	if (!b)
		return NULL;
	uint32_t tid = stc_gettid();
	stc_buf *x = pool_get(tid);
	if (!x && (x = stc_mem_alloc(sizeof *x))) /* beyond the pool: this thread's own */
		buf_reset(x, tid);
	if (!x) {
		atomic_store(&b->slot.owned, 0);
		return NULL;
	}
	stc_spin_lock(&b->slot.lock);
	b->tid = tid;
	b->cur = x;
	stc_spin_unlock(&b->slot.lock);
	t_buf = b;
	pthread_setspecific(exit_key, b);
	stc_unwind_thread_init();
	stc_altstack_thread_init();
	emit_thread(b->tid);
	return b;
}

/* The thread's buffer is full: queue it and take a fresh one, or, when the
 * pool is exhausted, write it here.  Caller holds b->slot.lock. */
void stc_tbuf_rotate_locked(stc_tbuf *b)
{
	stc_buf *fresh = pool_get(b->tid);
	if (fresh) {
		pool_enqueue(b->cur);
		b->cur = fresh;
		wake_flusher();
	} else {
		write_buf(b->cur);
	}
}

/* ---------------------------------------------------------------- flushing */

static void flush_all(int try_only)
{
	if (try_only ? pthread_mutex_trylock(&flush_mu) != 0 : pthread_mutex_lock(&flush_mu) != 0) {
		/* a signal handler while a flush is under way: the buffers being
		 * written are lost with the process; write what we can, no mark */
		try_only = 2;
	}
	uint64_t mark = atomic_load(&g_seq);
	int complete = 1;
	stc_buf *taken = NULL;
	/* every thread's current buffer, swapped for a fresh one */
	for (stc_tbuf *b = (stc_tbuf *)atomic_load(&registry); b; b = (stc_tbuf *)b->slot.next) {
		if (try_only ? !stc_spin_trylock(&b->slot.lock) : (stc_spin_lock(&b->slot.lock), 0)) {
			complete = 0;
			continue;
		}
		stc_buf *x = b->cur;
		if (x && x->len) {
			stc_buf *fresh = try_only ? NULL : pool_get(b->tid);
			if (fresh) {
				b->cur = fresh;
				x->next = taken;
				taken = x;
			} else if (!try_only) {
				write_buf(x); /* pool exhausted: write in place */
			} else if (stc_out_trylock()) {
				stc_defs_flush_try();
				stc_out_chunk_locked(STP_CHUNK_EVENTS, x->tid, x->data, x->len);
				stc_out_unlock();
				x->len = 0;
				stp_enc_reset(&x->st, x->tid);
			} else {
				complete = 0;
			}
		}
		stc_spin_unlock(&b->slot.lock);
	}
	if (try_only) {
		/* a signal handler: queued buffers only if nobody holds the pool */
		if (pthread_mutex_trylock(&pool_mu) == 0) {
			stc_buf *x = ready_head;
			ready_head = ready_tail = NULL;
			pthread_mutex_unlock(&pool_mu);
			for (; x; x = x->next)
				if (x->len && stc_out_trylock()) {
					stc_defs_flush_try();
					stc_out_chunk_locked(STP_CHUNK_EVENTS, x->tid, x->data, x->len);
					stc_out_unlock();
				}
		} else {
			complete = 0;
		}
		mark = stc_backends_mark(mark, 1);
		if (stc_out_trylock()) {
			stc_defs_flush_try();
			stc_fold_emergency_locked(); /* what folding held, as it is */
			if (complete && try_only == 1)
				stc_out_watermark_locked(mark);
			stc_out_unlock();
		}
		if (try_only == 1)
			pthread_mutex_unlock(&flush_mu);
		return;
	}
	/* queued ones first (older), then the ones just taken */
	write_ready_locked();
	for (stc_buf *x = taken, *next; x; x = next) {
		next = x->next;
		write_buf(x);
		pool_put(x);
	}
	/* events a backend held (the CUDA backend's, for their device time):
	 * those that are ready are written now, the others keep the mark
	 * below them */
	mark = stc_backends_mark(mark, 0);
	stc_out_lock();
	stc_defs_flush_locked();
	/* steady-state folding holds iterations: the mark stays below them */
	mark = stc_fold_round_locked(mark);
	stc_out_watermark_locked(mark);
	stc_out_unlock();
	pthread_mutex_unlock(&flush_mu);
}

void stc_tbuf_flush_all(void) { flush_all(0); }
void stc_tbuf_flush_all_try(void) { flush_all(1); }

/* ---------------------------------------------------------------- fork */

/* In a fork child: this thread is the only one.  Its buffer holds the
 * parent's unwritten events (the parent writes them); the other threads and
 * the queue belong to the parent. */
void stc_tbuf_atfork_child(void)
{
	atomic_store(&g_seq, 0);
	pthread_mutex_init(&pool_mu, NULL);
	pthread_mutex_init(&flush_mu, NULL);
	for (stc_buf *x = ready_head, *next; x; x = next) {
		next = x->next;
		x->next = free_list;
		free_list = x;
	}
	ready_head = ready_tail = NULL;
	for (stc_tbuf *b = (stc_tbuf *)atomic_load(&registry); b; b = (stc_tbuf *)b->slot.next) {
		atomic_store(&b->slot.lock, 0);
		if (b != t_buf) {
			if (b->cur) {
				b->cur->next = free_list;
				free_list = b->cur;
				b->cur = NULL;
			}
			atomic_store(&b->slot.owned, 0);
		}
	}
	if (t_buf) {
		t_buf->tid = stc_gettid();
		if (t_buf->cur)
			buf_reset(t_buf->cur, t_buf->tid);
	}
	/* the THREAD event of this thread is re-emitted when the output opens */
}

/* Records the THREAD event of the calling thread again (a fork child's new
 * trace must name its thread). */
void stc_tbuf_announce(void)
{
	if (t_buf)
		emit_thread(t_buf->tid);
}
