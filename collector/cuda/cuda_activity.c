/*
 * cuda_activity.c - device time for kernels, copies and sets: CUPTI
 * activity records joined to the API events by correlation id.
 *
 * A launch (copy, set) is known at its API callback, its device time only
 * when CUPTI delivers the activity record, later.  The event keeps its place
 * among the thread's events: its seq is taken at the callback (so an object
 * freed after the launch is still live at the launch in seq order) and the
 * event is held here until its record comes; then it is written, with
 * time_ns = the device's start and end_ns = its end, converted to
 * CLOCK_MONOTONIC.  Held events are written by the flush rounds, in their own
 * EVENTS chunks (seq increasing inside each, every record naming its
 * thread); each round's watermark is kept below the lowest seq still held
 * (the backend's mark hook, face.h), so readers wait for them.
 *
 * Invariants:
 *   - An event is held at most STC_HOLD_NS (2 s); then, and at the end of
 *     the recording, it is written with its host times (the call's begin
 *     and end).  A killed program loses the held events with the last flush
 *     window (readers count them as lost: gaps in the seqs).
 *   - Held entries come from mmap'd blocks, never freed, reused through a
 *     free list; when none can be had the event is written at once with
 *     host times.
 *   - A record may come before the EXIT callback of its call has held the
 *     event (a short kernel or copy, buffers delivered by CUPTI's thread or
 *     a flush on another thread): it is kept as an orphan (the last
 *     ORPHANS, by both its ids) and joined when the event is held.
 *   - Clock: offset = CLOCK_MONOTONIC - cuptiGetTimestamp(), sampled at the
 *     start and at each flush with the tightest bracket kept per sample.
 *   - Lock order: flush (the core's) -> held_mu -> output -> defs.  The program's
 *     threads take held_mu alone, briefly.
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "cuda_internal.h"

#define STC_HOLD_NS 2000000000ull
#define BUCKETS 16384
#define BLOCK_ENTRIES 256
#define ACT_BUF_SIZE (1u << 20)

typedef struct held {
	struct held *prev, *next;   /* seq order */
	struct held *hnext[2];      /* hash chains: [0] by corr, [1] by alias */
	uint32_t corr, alias;
	int ready;
	uint64_t deadline, dev_begin, dev_end;
	stp_event ev;               /* seq, tid, host times; ranges below */
	stp_range ranges[STC_CU_RANGES_MAX];
} held;

static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static held *head, *tail, *free_list;
static held *buckets[2][BUCKETS];

/* Records that came before their event was held (under held_mu): a ring,
 * the oldest overwritten, found by either id through two hash chains. */
#define ORPHANS 4096
#define ORPHAN_BUCKETS 1024
typedef struct orphan {
	uint32_t id[2]; /* correlation id, and the record's other id (0: none) */
	int used;
	uint64_t dev_begin, dev_end;
	struct orphan *hnext[2];
} orphan;
static orphan orphans[ORPHANS];
static orphan *obuckets[2][ORPHAN_BUCKETS];
static unsigned orphan_next, orphan_count;
static _Atomic int64_t clock_offset;
/* Held events are written by the flush rounds' mark (holding: set once
 * activity records come; a fork child's are its parent's, it holds none);
 * CUPTI's buffers are drained by the flush rounds until CUDA is torn down
 * (flushing). */
static _Atomic int holding, flushing;
static STC_TLS uint32_t t_tid;
static uint8_t *wbuf; /* the writing buffer of flush rounds (under flush_mu) */

/* ---------------------------------------------------------------- clock */
static void sample_clock(void)
{
	uint64_t c, best = UINT64_MAX;
	int64_t off = 0;
	if (!g_cu.get_timestamp)
		return;
	for (int i = 0; i < 3; i++) {
		uint64_t t1 = stc_now();
		if (g_cu.get_timestamp(&c) != CUPTI_SUCCESS)
			return;
		uint64_t t2 = stc_now();
		if (t2 - t1 < best) {
			best = t2 - t1;
			off = (int64_t)(t1 + (t2 - t1) / 2) - (int64_t)c;
		}
	}
	atomic_store(&clock_offset, off);
}

uint64_t stc_cuda_to_monotonic(uint64_t t) { return (uint64_t)((int64_t)t + atomic_load(&clock_offset)); }

/* ---------------------------------------------------------------- table */
static void hash_put(int k, uint32_t id, held *h)
{
	held **b = &buckets[k][id % BUCKETS];
	h->hnext[k] = *b;
	*b = h;
}

static void hash_del(int k, uint32_t id, held *h)
{
	for (held **p = &buckets[k][id % BUCKETS]; *p; p = &(*p)->hnext[k])
		if (*p == h) {
			*p = h->hnext[k];
			return;
		}
}

static held *hash_get(uint32_t id)
{
	for (int k = 0; k < 2; k++)
		for (held *h = buckets[k][id % BUCKETS]; h; h = h->hnext[k])
			if ((k ? h->alias : h->corr) == id && !h->ready)
				return h;
	return NULL;
}

static void orphan_unlink(orphan *o)
{
	for (int k = 0; k < 2; k++) {
		if (!o->id[k])
			continue;
		for (orphan **p = &obuckets[k][o->id[k] % ORPHAN_BUCKETS]; *p; p = &(*p)->hnext[k])
			if (*p == o) {
				*p = o->hnext[k];
				break;
			}
	}
	o->used = 0;
	orphan_count--;
}

static void orphan_put(uint32_t id, uint32_t id2, uint64_t begin, uint64_t end)
{
	orphan *o = &orphans[orphan_next++ % ORPHANS];
	if (o->used)
		orphan_unlink(o);
	*o = (orphan){.id = {id, id2}, .used = 1, .dev_begin = begin, .dev_end = end};
	for (int k = 0; k < 2; k++)
		if (o->id[k]) {
			orphan **b = &obuckets[k][o->id[k] % ORPHAN_BUCKETS];
			o->hnext[k] = *b;
			*b = o;
		}
	orphan_count++;
}

/* The orphan record naming id (either of its ids), taken out; NULL if none. */
static orphan *orphan_take(uint32_t id)
{
	if (!id || !orphan_count)
		return NULL;
	for (int k = 0; k < 2; k++)
		for (orphan *o = obuckets[k][id % ORPHAN_BUCKETS]; o; o = o->hnext[k])
			if (o->id[k] == id) {
				orphan_unlink(o);
				return o;
			}
	return NULL;
}

static held *entry_get(void)
{
	if (!free_list) {
		held *blk = stc_mem_alloc(BLOCK_ENTRIES * sizeof *blk);
		if (!blk)
			return NULL;
		for (int i = 0; i < BLOCK_ENTRIES; i++) {
			blk[i].next = free_list;
			free_list = &blk[i];
		}
	}
	held *h = free_list;
	free_list = h->next;
	return h;
}

/* Takes h out of the table (caller holds held_mu). */
static void unlink_entry(held *h)
{
	if (h->prev)
		h->prev->next = h->next;
	else
		head = h->next;
	if (h->next)
		h->next->prev = h->prev;
	else
		tail = h->prev;
	hash_del(0, h->corr, h);
	if (h->alias)
		hash_del(1, h->alias, h);
}

void stc_cuda_activity_hold(uint32_t corr, uint32_t alias, stp_event *ev, uint64_t begin_ns)
{
	if (!stc_ensure_output())
		return;
	if (!t_tid)
		t_tid = stc_gettid();
	uint64_t now = stc_now();
	pthread_mutex_lock(&held_mu);
	held *h = entry_get();
	if (!h) {
		pthread_mutex_unlock(&held_mu);
		stc_emit_span(ev, begin_ns);
		return;
	}
	h->ev = *ev;
	h->ev.tid = t_tid;
	h->ev.time_ns = begin_ns;
	h->ev.u.api.end_ns = now;
	memcpy(h->ranges, ev->u.api.ranges, ev->u.api.nranges * sizeof(stp_range));
	h->ev.u.api.ranges = h->ranges;
	h->corr = corr;
	h->alias = alias;
	h->ready = 0;
	orphan *o = orphan_take(corr);
	if (!o && alias)
		o = orphan_take(alias);
	if (o) { /* its record came first */
		h->ready = 1;
		h->dev_begin = o->dev_begin;
		h->dev_end = o->dev_end;
	}
	h->deadline = now + STC_HOLD_NS;
	/* the seq under the lock: a flush that reads the counter after this
	 * sees the entry (the mark hook takes the lock after reading it) */
	h->ev.seq = atomic_fetch_add_explicit(&g_seq, 1, memory_order_relaxed);
	h->prev = tail;
	h->next = NULL;
	if (tail)
		tail->next = h;
	else
		head = h;
	tail = h;
	hash_put(0, corr, h);
	if (alias)
		hash_put(1, alias, h);
	pthread_mutex_unlock(&held_mu);
	if (!atomic_load_explicit(&g_flusher_on, memory_order_relaxed))
		stc_flusher_lazy(now);
}

/* ---------------------------------------------------------------- records */
static void complete(uint32_t corr, uint32_t corr2, uint64_t start, uint64_t end)
{
	if (!start || end < start)
		return;
	pthread_mutex_lock(&held_mu);
	held *h = hash_get(corr);
	if (!h && corr2)
		h = hash_get(corr2);
	if (h) {
		h->ready = 1;
		h->dev_begin = stc_cuda_to_monotonic(start);
		h->dev_end = stc_cuda_to_monotonic(end);
	} else {
		orphan_put(corr, corr2, stc_cuda_to_monotonic(start), stc_cuda_to_monotonic(end));
	}
	pthread_mutex_unlock(&held_mu);
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	*buf = stc_mem_alloc(ACT_BUF_SIZE);
	*size = *buf ? ACT_BUF_SIZE : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
	(void)ctx;
	(void)stream;
	(void)size;
	CUpti_Activity *rec = NULL;
	while (buf && g_cu.activity_next(buf, valid, &rec) == CUPTI_SUCCESS) {
		switch (rec->kind) {
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
			const CUpti_ActivityKernel10 *k = (const void *)rec;
			complete(k->correlationId, 0, k->start, k->end);
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMCPY: {
			const CUpti_ActivityMemcpy6 *m = (const void *)rec;
			complete(m->correlationId, m->runtimeCorrelationId, m->start, m->end);
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMSET: {
			const CUpti_ActivityMemset4 *m = (const void *)rec;
			complete(m->correlationId, 0, m->start, m->end);
			break;
		}
		default:
			break;
		}
	}
	if (buf)
		stc_mem_free(buf, ACT_BUF_SIZE);
}

/* ---------------------------------------------------------------- writing */
static void write_chunk(size_t *len, stp_enc_state *st)
{
	if (*len)
		stc_out_chunk(STP_CHUNK_EVENTS, st->tid, wbuf, *len);
	*len = 0;
	stp_enc_reset(st, st->tid);
}

/* Writes the ready (and, at the end, every) held event; returns the mark
 * lowered below the first one still held. */
static uint64_t mark_hook(uint64_t mark, int try_only)
{
	if (try_only) {
		if (pthread_mutex_trylock(&held_mu) != 0)
			return 0;
		uint64_t m = head && head->ev.seq < mark ? head->ev.seq : mark;
		pthread_mutex_unlock(&held_mu);
		return m;
	}
	int final = atomic_load(&g_state) != STC_ON;
	uint64_t now = stc_now();
	held *out = NULL, **out_tail = &out;
	pthread_mutex_lock(&held_mu);
	for (held *h = head, *next; h; h = next) {
		next = h->next;
		if (!h->ready && !final && now < h->deadline)
			continue;
		unlink_entry(h);
		if (h->ready) {
			h->ev.time_ns = h->dev_begin;
			h->ev.u.api.end_ns = h->dev_end;
		}
		h->next = NULL;
		*out_tail = h;
		out_tail = &h->next;
	}
	if (head && head->ev.seq < mark)
		mark = head->ev.seq;
	pthread_mutex_unlock(&held_mu);
	if (!out)
		return mark;
	if (!wbuf)
		wbuf = stc_mem_alloc(STC_BUF_SIZE);
	size_t len = 0;
	stp_enc_state st;
	stp_enc_reset(&st, out->ev.tid);
	for (held *h = out; h; h = h->next) {
		size_t cap = STC_BUF_SIZE - STP_CHUNK_HEADER_SIZE;
		size_t n = wbuf ? stp_enc_event(wbuf + STP_CHUNK_HEADER_SIZE + len, cap - len, &st, &h->ev) : 0;
		if (!n && wbuf) {
			write_chunk(&len, &st);
			n = stp_enc_event(wbuf + STP_CHUNK_HEADER_SIZE, cap, &st, &h->ev);
		}
		len += n;
	}
	if (wbuf)
		write_chunk(&len, &st);
	pthread_mutex_lock(&held_mu);
	while (out) {
		held *h = out;
		out = h->next;
		h->next = free_list;
		free_list = h;
	}
	pthread_mutex_unlock(&held_mu);
	return mark;
}

static void flush_hook(int final)
{
	if (g_cu.activity_flush_all)
		g_cu.activity_flush_all(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
	sample_clock();
}

int stc_cuda_activity_holds(void) { return atomic_load_explicit(&holding, memory_order_relaxed); }

uint64_t stc_cuda_activity_mark(uint64_t mark, int try_only)
{
	return atomic_load(&holding) ? mark_hook(mark, try_only) : mark;
}

void stc_cuda_activity_flush(int final)
{
	if (atomic_load(&flushing))
		flush_hook(final);
}

void stc_cuda_activity_flush_off(void) { atomic_store(&flushing, 0); }

void stc_cuda_activity_atfork_child(void)
{
	atomic_store(&holding, 0); /* the parent's held events stay its own */
	atomic_store(&flushing, 0);
}

/* The only fields read from a record (kind, start, end, correlationId,
 * runtimeCorrelationId) sit at the same offsets in every version of the
 * kernel, memcpy and memset records since CUDA 9 (CUpti_ActivityKernel4..10,
 * Memcpy..6, Memset..4 in cupti_activity.h and cupti_activity_deprecated.h;
 * records are stepped through by cuptiActivityGetNextRecord, which knows
 * their sizes).  So a libcupti of another release of the same major (the
 * pip wheel beside PyTorch's libcudart is rarely the toolkit's stprof was
 * built with) is read too; another major is not. */
#define FIELD_AT(T, f, off) _Static_assert(offsetof(T, f) == (off), #T "." #f " moved")
FIELD_AT(CUpti_ActivityKernel10, start, 16);
FIELD_AT(CUpti_ActivityKernel10, end, 24);
FIELD_AT(CUpti_ActivityKernel10, correlationId, 92);
FIELD_AT(CUpti_ActivityMemcpy6, start, 16);
FIELD_AT(CUpti_ActivityMemcpy6, end, 24);
FIELD_AT(CUpti_ActivityMemcpy6, correlationId, 44);
FIELD_AT(CUpti_ActivityMemcpy6, runtimeCorrelationId, 48);
FIELD_AT(CUpti_ActivityMemset4, start, 16);
FIELD_AT(CUpti_ActivityMemset4, end, 24);
FIELD_AT(CUpti_ActivityMemset4, correlationId, 44);

static int same_major(uint32_t v)
{
	/* CUDA 13 on: xxyyzz; before: small integers (28 = 12.9 Update 1) */
	return CUPTI_API_VERSION >= 130000 ? v / 10000 == CUPTI_API_VERSION / 10000 : v == CUPTI_API_VERSION;
}

int stc_cuda_activity_start(void)
{
	if (!g_cu.activity_register || !g_cu.activity_enable || !g_cu.activity_next || !g_cu.get_timestamp)
		return -1;
	uint32_t v = 0;
	if (!g_cu.get_version || g_cu.get_version(&v) != CUPTI_SUCCESS || !same_major(v))
		return -1;
	if (g_cu.activity_register(buffer_requested, buffer_completed) != CUPTI_SUCCESS)
		return -1;
	if (g_cu.activity_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
		return -1;
	g_cu.activity_enable(CUPTI_ACTIVITY_KIND_MEMCPY);
	g_cu.activity_enable(CUPTI_ACTIVITY_KIND_MEMSET);
	sample_clock();
	atomic_store(&holding, 1);
	atomic_store(&flushing, 1);
	return 0;
}
