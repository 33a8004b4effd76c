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
 * in the thread's pending list; every chunk write first turns all pending
 * paths of all threads into definitions (stc_defs_flush_locked), so no
 * events chunk precedes the definition of an id it uses.
 *
 * Only one flush runs at a time (flush_mu): a flush that took buffers from
 * the queue must have written them before any later flush writes a
 * watermark past their events (the flusher thread and the one that exits
 * both flush).
 *
 * Lock order: flush -> thread lock -> pool -> output -> defs -> pending.
 */
#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define POOL_MAX 64 /* buffers: 16 MiB */

atomic_uint_fast64_t g_seq;
static stc_tbuf *_Atomic registry;
static STC_TLS stc_tbuf *t_buf;
static pthread_key_t exit_key;

/* the pool of buffers: free ones and full ones queued for the flusher */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static stc_buf *free_list, *ready_head, *ready_tail;
static unsigned pool_count;
static atomic_int flusher_wake;
static pthread_mutex_t flush_mu = PTHREAD_MUTEX_INITIALIZER;

uint64_t stc_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t stc_gettid(void) { return (uint32_t)syscall(SYS_gettid); }

void stc_spin_lock(atomic_int *l)
{
	for (unsigned n = 0;; n++) {
		int expect = 0;
		if (atomic_compare_exchange_weak_explicit(l, &expect, 1, memory_order_acquire, memory_order_relaxed))
			return;
		if (n > 64)
			sched_yield();
	}
}

int stc_spin_trylock(atomic_int *l)
{
	int expect = 0;
	return atomic_compare_exchange_strong_explicit(l, &expect, 1, memory_order_acquire, memory_order_relaxed);
}

void stc_spin_unlock(atomic_int *l) { atomic_store_explicit(l, 0, memory_order_release); }

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
	stc_spin_lock(&b->lock);
	stc_buf *x = b->cur;
	b->cur = NULL;
	stc_spin_unlock(&b->lock);
	if (x && x->len && atomic_load(&g_state) == STC_ON) {
		pool_enqueue(x);
		wake_flusher();
	} else if (x) {
		pool_put(x);
	}
	if (stc_gettid() == (uint32_t)g_pid)
		atomic_store(&g_main_exited, 1); /* pthread_exit in main */
	stc_unwind_thread_exit();
	stc_defs_thread_exit();
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
	/* reuse the slot of an exited thread, else make one */
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
	uint32_t tid = stc_gettid();
	stc_buf *x = pool_get(tid);
	if (!x && (x = stc_mem_alloc(sizeof *x))) /* beyond the pool: this thread's own */
		buf_reset(x, tid);
	if (!x) {
		atomic_store(&b->owned, 0);
		return NULL;
	}
	stc_spin_lock(&b->lock);
	b->tid = tid;
	b->cur = x;
	stc_spin_unlock(&b->lock);
	t_buf = b;
	pthread_setspecific(exit_key, b);
	stc_unwind_thread_init(b);
	emit_thread(b->tid);
	return b;
}

/* The thread's buffer is full: queue it and take a fresh one, or, when the
 * pool is exhausted, write it here.  Caller holds b->lock. */
static void rotate_locked(stc_tbuf *b)
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

void stc_emit(stp_event *ev)
{
	stc_tbuf *b = stc_tbuf_self();
	if (STC_UNLIKELY(!b) || STC_UNLIKELY(!stc_ensure_output()))
		return;
	stc_spin_lock(&b->lock);
	stc_buf *x = b->cur;
	if (STC_UNLIKELY(!x)) { /* after this thread's exit handler ran */
		stc_spin_unlock(&b->lock);
		return;
	}
	ev->tid = b->tid;
	ev->seq = atomic_fetch_add_explicit(&g_seq, 1, memory_order_relaxed);
	ev->time_ns = stc_now();
	size_t n = stp_enc_event(x->data + STP_CHUNK_HEADER_SIZE + x->len,
	                         STC_BUF_SIZE - STP_CHUNK_HEADER_SIZE - x->len, &x->st, ev);
	if (STC_UNLIKELY(!n)) {
		rotate_locked(b);
		x = b->cur;
		n = stp_enc_event(x->data + STP_CHUNK_HEADER_SIZE + x->len,
		                  STC_BUF_SIZE - STP_CHUNK_HEADER_SIZE - x->len, &x->st, ev);
	}
	x->len += n; /* an event larger than a whole buffer is dropped (n == 0) */
	stc_spin_unlock(&b->lock);
	if (STC_UNLIKELY(!atomic_load_explicit(&g_flusher_on, memory_order_relaxed)))
		stc_flusher_lazy(ev->time_ns);
}

/* An API call that took from begin_ns until now: the event's time is
 * begin_ns (not before the thread's previous event in this buffer). */
void stc_emit_span(stp_event *ev, uint64_t begin_ns)
{
	stc_tbuf *b = stc_tbuf_self();
	if (STC_UNLIKELY(!b) || STC_UNLIKELY(!stc_ensure_output()))
		return;
	stc_spin_lock(&b->lock);
	stc_buf *x = b->cur;
	if (STC_UNLIKELY(!x)) {
		stc_spin_unlock(&b->lock);
		return;
	}
	uint64_t now = stc_now();
	ev->tid = b->tid;
	ev->seq = atomic_fetch_add_explicit(&g_seq, 1, memory_order_relaxed);
	ev->time_ns = begin_ns < x->st.prev_time ? x->st.prev_time : begin_ns > now ? now : begin_ns;
	if (ev->type == STP_EV_API)
		ev->u.api.end_ns = now;
	size_t n = stp_enc_event(x->data + STP_CHUNK_HEADER_SIZE + x->len,
	                         STC_BUF_SIZE - STP_CHUNK_HEADER_SIZE - x->len, &x->st, ev);
	if (STC_UNLIKELY(!n)) {
		rotate_locked(b);
		x = b->cur;
		n = stp_enc_event(x->data + STP_CHUNK_HEADER_SIZE + x->len,
		                  STC_BUF_SIZE - STP_CHUNK_HEADER_SIZE - x->len, &x->st, ev);
	}
	x->len += n;
	stc_spin_unlock(&b->lock);
	if (STC_UNLIKELY(!atomic_load_explicit(&g_flusher_on, memory_order_relaxed)))
		stc_flusher_lazy(now);
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
	for (stc_tbuf *b = atomic_load(&registry); b; b = b->next) {
		if (try_only ? !stc_spin_trylock(&b->lock) : (stc_spin_lock(&b->lock), 0)) {
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
		stc_spin_unlock(&b->lock);
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
		uint64_t (*hook)(uint64_t, int) = atomic_load(&g_cuda_mark_hook);
		if (hook)
			mark = hook(mark, 1);
		if (stc_out_trylock()) {
			stc_defs_flush_try();
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
	/* the CUDA backend's events held for their device time: those that
	 * are ready are written now, the others keep the mark below them */
	uint64_t (*hook)(uint64_t, int) = atomic_load(&g_cuda_mark_hook);
	if (hook)
		mark = hook(mark, 0);
	stc_out_lock();
	stc_defs_flush_locked();
	stc_out_watermark_locked(mark);
	stc_out_unlock();
	pthread_mutex_unlock(&flush_mu);
}

void stc_tbuf_flush_all(void) { flush_all(0); }
void stc_tbuf_flush_all_try(void) { flush_all(1); }

/* ---------------------------------------------------------------- pending call paths */

/* Pending call paths live in a chain of blocks: appending never copies, and
 * drained blocks go back to a free list (pool_mu) for any thread. */
static stc_pblock *pblock_free;

static stc_pblock *pblock_get(void)
{
	pthread_mutex_lock(&pool_mu);
	stc_pblock *k = pblock_free;
	if (k)
		pblock_free = k->next;
	pthread_mutex_unlock(&pool_mu);
	if (!k)
		k = stc_mem_alloc(sizeof *k);
	if (k) {
		k->next = NULL;
		k->len = 0;
	}
	return k;
}

static void pblock_put_chain(stc_pblock *k)
{
	if (!k)
		return;
	stc_pblock *last = k;
	while (last->next)
		last = last->next;
	pthread_mutex_lock(&pool_mu);
	last->next = pblock_free;
	pblock_free = k;
	pthread_mutex_unlock(&pool_mu);
}

int stc_pending_add(uint32_t id, const uint64_t *ips, uint32_t n)
{
	stc_tbuf *b = stc_tbuf_self();
	size_t need = 8 + (size_t)n * 8;
	if (!b || need > sizeof b->ptail->data)
		return -1;
	stc_spin_lock(&b->plock);
	stc_pblock *k = b->ptail;
	if (!k || k->len + need > sizeof k->data) {
		stc_spin_unlock(&b->plock); /* pblock_get takes the pool lock */
		stc_pblock *fresh = pblock_get();
		if (!fresh)
			return -1;
		stc_spin_lock(&b->plock);
		if (b->ptail)
			b->ptail->next = fresh;
		else
			b->phead = fresh;
		b->ptail = k = fresh;
	}
	memcpy(k->data + k->len, &id, 4);
	memcpy(k->data + k->len + 4, &n, 4);
	memcpy(k->data + k->len + 8, ips, (size_t)n * 8);
	k->len += need;
	stc_spin_unlock(&b->plock);
	return 0;
}

/* The chain is taken under the lock and worked on outside it, so the
 * thread never waits for the definitions of a long backlog. */
void stc_pending_drain(int try_only, void (*fn)(uint32_t id, const uint64_t *ips, uint32_t n))
{
	for (stc_tbuf *b = atomic_load(&registry); b; b = b->next) {
		if (try_only ? !stc_spin_trylock(&b->plock) : (stc_spin_lock(&b->plock), 0))
			continue;
		stc_pblock *chain = b->phead;
		b->phead = b->ptail = NULL;
		stc_spin_unlock(&b->plock);
		for (stc_pblock *k = chain; k; k = k->next)
			for (size_t at = 0; at + 8 <= k->len;) {
				uint32_t id, n;
				memcpy(&id, k->data + at, 4);
				memcpy(&n, k->data + at + 4, 4);
				fn(id, (const uint64_t *)(const void *)(k->data + at + 8), n);
				at += 8 + (size_t)n * 8;
			}
		fn(0, NULL, 0); /* the chain's frames are given back below */
		if (!try_only)
			pblock_put_chain(chain); /* a signal handler leaves them */
	}
}

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
	for (stc_tbuf *b = atomic_load(&registry); b; b = b->next) {
		atomic_store(&b->lock, 0);
		atomic_store(&b->plock, 0);
		b->phead = b->ptail = NULL; /* the parent defines its own pending paths */
		if (b != t_buf) {
			if (b->cur) {
				b->cur->next = free_list;
				free_list = b->cur;
				b->cur = NULL;
			}
			atomic_store(&b->owned, 0);
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
