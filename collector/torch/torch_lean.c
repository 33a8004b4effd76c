/*
 * torch_lean.c - a tensor's call path in a lean iteration (core/fold.c,
 * "Lean iterations"), taken from the last iteration recorded in full
 * instead of walked.
 *
 * With lean recording configured (STPROF_LEAN=1), each thread that makes
 * tensors keeps the sequence of its tensor allocations in the iteration
 * under way while that iteration is recorded in full: per allocation its
 * size, a key (a hash of the thread's Python frames as read without a
 * backward site: the shim sets none in a lean iteration) and the stack id
 * its walked path was interned as.  When the thread sees the next
 * iteration begin (g_iter_gen moved), that sequence becomes its
 * reference.  In a lean iteration the thread's allocations follow the
 * reference with a cursor: the entry at the cursor, or the first of the
 * next LEAN_WINDOW - 1 entries, of the same size and key gives its stack
 * id (the cursor moves past it: the entries skipped are allocations this
 * iteration did not make); none (an allocation the reference lacks: a
 * tensor kept, another size) returns 0 and the caller walks the path as in
 * full detail, the cursor staying put.  Where lean recording is by shape
 * (STC_LEAN_SHAPE: iterations that differ from the reference in their
 * sizes only), the size is not compared: the key alone, in order.  So a
 * lean iteration's paths are the full ones', stack ids included, wherever
 * it repeats the reference,
 * for the price of the Python frames.  Two tensors of one size made by the
 * same Python frames in the other order than in the reference get each
 * other's paths (their Python lines are the same; their native frames may
 * not be).
 *
 * Memory: per thread two arrays that grow to the tensors of one iteration
 * (LEAN_MAX entries at most: past it the reference ends there), freed at
 * the thread's exit (a pthread key's destructor).  Lock-free: all of it is
 * the thread's own.
 */
#include <pthread.h>
#include <string.h>

#include "torch.h"

#define LEAN_WINDOW 64
#define LEAN_FIRST 1024
#define LEAN_MAX (1u << 17)

typedef struct lent {
	uint64_t size, key;
	uint32_t stack;
} lent;

typedef struct lseq {
	uint64_t gen;       /* the iteration this thread is in */
	int full;           /* it is recorded in full: cur is being written */
	int shape;          /* lean by shape (STC_LEAN_SHAPE): sizes may differ */
	lent *cur, *ref;
	uint32_t ncur, nref, cap_cur, cap_ref, at;
} lseq;

static pthread_key_t key_seq;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;
static STC_TLS lseq *t_seq;

static void seq_free(void *p)
{
	lseq *q = p;
	if (!q)
		return;
	t_seq = NULL; /* a later destructor's tensor starts a new one */
	if (q->cur)
		stc_mem_free(q->cur, q->cap_cur * sizeof(lent));
	if (q->ref)
		stc_mem_free(q->ref, q->cap_ref * sizeof(lent));
	stc_mem_free(q, sizeof *q);
}

static void make_key(void) { key_ok = pthread_key_create(&key_seq, seq_free) == 0; }

static lseq *seq(void)
{
	lseq *q = t_seq;
	if (STC_LIKELY(q != NULL))
		return q;
	pthread_once(&key_once, make_key);
	if (!key_ok || !(q = stc_mem_alloc(sizeof *q)))
		return NULL;
	pthread_setspecific(key_seq, q);
	t_seq = q;
	return q;
}

/* The thread meets its iteration: a new one makes the last full one the
 * reference. */
static void sync(lseq *q)
{
	uint64_t g = __atomic_load_n(&g_iter_gen, __ATOMIC_ACQUIRE);
	if (q->gen == g)
		return;
	if (q->full && q->ncur) {
		lent *t = q->ref;
		uint32_t c = q->cap_ref;
		q->ref = q->cur;
		q->cap_ref = q->cap_cur;
		q->nref = q->ncur;
		q->cur = t;
		q->cap_cur = c;
	}
	q->ncur = 0;
	q->at = 0;
	q->gen = g;
	int lean = __atomic_load_n(&g_lean_now, __ATOMIC_RELAXED);
	q->full = !lean;
	q->shape = lean == STC_LEAN_SHAPE;
}

uint32_t stc_lean_predict(uint64_t size, uint64_t key)
{
	lseq *q = seq();
	if (!q)
		return 0;
	sync(q);
	if (q->full)
		return 0;
	uint32_t end = q->nref - q->at < LEAN_WINDOW ? q->nref : q->at + LEAN_WINDOW;
	for (uint32_t i = q->at; i < end; i++)
		if (q->ref[i].key == key && (q->shape || q->ref[i].size == size)) {
			q->at = i + 1;
			return q->ref[i].stack;
		}
	return 0;
}

void stc_lean_note(uint64_t size, uint64_t key, uint32_t stack)
{
	lseq *q = seq();
	if (!q)
		return;
	sync(q);
	if (!q->full || !stack)
		return;
	if (q->ncur == q->cap_cur) {
		uint32_t n = q->cap_cur ? q->cap_cur * 2 : LEAN_FIRST;
		lent *a = n <= LEAN_MAX ? stc_mem_alloc(n * sizeof(lent)) : NULL;
		if (!a)
			return;
		if (q->cur) {
			memcpy(a, q->cur, q->ncur * sizeof(lent));
			stc_mem_free(q->cur, q->cap_cur * sizeof(lent));
		}
		q->cur = a;
		q->cap_cur = n;
	}
	q->cur[q->ncur++] = (lent){size, key, stack};
}
