/*
 * tbuf.h - the threads' event buffers (tbuf.c) as the files that record
 * into them or flush them see them: the structures, and the path of one
 * event into its thread's buffer (stc_tbuf_self, stc_tbuf_put), inline
 * because every event takes it.  Internal to collector/core/; included by
 * the files above tbuf.c only (emit, process, flusher, signals, lifecycle).
 */
#ifndef STPROF_COLLECTOR_TBUF_H
#define STPROF_COLLECTOR_TBUF_H

#include "internal.h"
#include "spin.h"

typedef struct stc_buf {        /* one chunk's worth of events */
	struct stc_buf *next;   /* in the pool's free list or ready queue */
	uint32_t tid;
	size_t len;             /* payload bytes after the header space */
	stp_enc_state st;
	uint8_t data[STC_BUF_SIZE];
} stc_buf;

typedef struct stc_tbuf {       /* one thread's recording state */
	stc_slot slot;          /* its lock, in the registry (slots.c) */
	uint32_t tid;
	stc_buf *cur;           /* the buffer being filled */
} stc_tbuf;

/* The flusher: sleep until a buffer is queued or ms pass; write the queue. */
STC_HIDDEN void stc_tbuf_wait(unsigned ms);
STC_HIDDEN void stc_tbuf_write_ready(void);
STC_HIDDEN void stc_tbuf_wake(void);

STC_HIDDEN void stc_tbuf_init(void);
/* The calling thread's slot, made (and its THREAD event recorded) on its
 * first call; NULL when no memory could be had. */
STC_HIDDEN extern STC_TLS stc_tbuf *t_buf;
STC_HIDDEN stc_tbuf *stc_tbuf_self_slow(void);
static inline stc_tbuf *stc_tbuf_self(void)
{
	stc_tbuf *b = t_buf;
	return STC_LIKELY(b) ? b : stc_tbuf_self_slow();
}
/* The thread's buffer is full: queue it and take a fresh one, or, when the
 * pool is exhausted, write it here.  Caller holds b->slot.lock. */
STC_HIDDEN void stc_tbuf_rotate_locked(stc_tbuf *b);
/* Encodes ev into the thread's buffer, under its lock: seq, tid and time
 * assigned here (time_ns = now; with span, begin_ns kept within [the
 * thread's previous event, now], an API event's end_ns = now, and *now_out
 * = now).  The output must be open.  Returns 0 when the thread has no
 * buffer left (after its exit handler ran). */
static inline int stc_tbuf_put(stc_tbuf *b, stp_event *ev, int span, uint64_t begin_ns, uint64_t *now_out)
{
	stc_spin_lock(&b->slot.lock);
	stc_buf *x = b->cur;
	if (STC_UNLIKELY(!x)) { /* after this thread's exit handler ran */
		stc_spin_unlock(&b->slot.lock);
		return 0;
	}
	uint64_t now;
	ev->tid = b->tid;
	if (span) {
		now = stc_now();
		ev->seq = atomic_fetch_add_explicit(&g_seq, 1, memory_order_relaxed);
		ev->time_ns = begin_ns < x->st.prev_time ? x->st.prev_time : begin_ns > now ? now : begin_ns;
		if (ev->type == STP_EV_API)
			ev->u.api.end_ns = now;
		*now_out = now;
	} else {
		ev->seq = atomic_fetch_add_explicit(&g_seq, 1, memory_order_relaxed);
		ev->time_ns = now = stc_now();
	}
	size_t n = stp_enc_event(x->data + STP_CHUNK_HEADER_SIZE + x->len,
	                         STC_BUF_SIZE - STP_CHUNK_HEADER_SIZE - x->len, &x->st, ev);
	if (STC_UNLIKELY(!n)) {
		stc_tbuf_rotate_locked(b);
		x = b->cur;
		n = stp_enc_event(x->data + STP_CHUNK_HEADER_SIZE + x->len,
		                  STC_BUF_SIZE - STP_CHUNK_HEADER_SIZE - x->len, &x->st, ev);
	}
	x->len += n; /* an event larger than a whole buffer is dropped (n == 0) */
	stc_spin_unlock(&b->slot.lock);
	return 1;
}
/* Writes every buffer (blocking on each one's lock) and a watermark. */
STC_HIDDEN void stc_tbuf_flush_all(void);
/* From a fatal-signal handler: only buffers whose lock is free. */
STC_HIDDEN void stc_tbuf_flush_all_try(void);
STC_HIDDEN void stc_tbuf_atfork_child(void);
STC_HIDDEN void stc_tbuf_announce(void);

#endif
