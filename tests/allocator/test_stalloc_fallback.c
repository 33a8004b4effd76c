/*
 * test_stalloc_fallback.c - libstalloc's fallback (the requests a plan does
 * not cover: another batch size, several request threads at once) on the
 * host backend, from four threads at once, mixed with the plan's own
 * requests:
 *   - no block handed out overlaps a live one (a shadow set of every live
 *     block, checked at each allocation), whatever the size (16 B to
 *     3 MiB: glibc's blocks and the fallback's own mappings) or the
 *     alignment asked (16 to 4096; a request the fallback cannot align
 *     says so with NULL, which the preload then gives to glibc);
 *   - a live block's contents stay as written until its free (words at
 *     its ends and every 4 KiB), so the allocator keeps no bookkeeping in
 *     handed-out memory and the cache never lends a live block;
 *   - realloc as the preload does it (stalloc_size, a new block, the
 *     bytes copied, the old one freed) keeps the contents;
 *   - pointers the allocator does not own (glibc's, the stack's, the
 *     middle of one of its blocks) are refused by stalloc_free and
 *     stalloc_owns, and leave its blocks alone;
 *   - the statistics add up at the end: every block freed, nothing live,
 *     and the threads that made requests counted; a request of 0 bytes
 *     (an empty tensor), the only kind below a plan's minimum of 0 B, is
 *     named as such in the printed statistics.
 */
#include <pthread.h>

#include "check.h"
#include "stprof/plan.h"
#include "stprof/stalloc.h"

#define THREADS 4
#define OPS 20000
#define HELD 48

static stalloc *A;
static pthread_mutex_t sh_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { char *p; uint64_t n; } live[THREADS * HELD];
static int nlive, overlaps, corrupt, misaligned, wrong_size, failed; /* the counts the threads add to */
#define BAD(c) __atomic_add_fetch(&(c), 1, __ATOMIC_RELAXED)

static void shadow_add(char *p, uint64_t n)
{
	pthread_mutex_lock(&sh_mu);
	for (int i = 0; i < nlive; i++)
		if (p < live[i].p + live[i].n && live[i].p < p + n)
			overlaps++;
	live[nlive].p = p;
	live[nlive].n = n;
	nlive++;
	pthread_mutex_unlock(&sh_mu);
}

static void shadow_del(char *p)
{
	pthread_mutex_lock(&sh_mu);
	for (int i = 0; i < nlive; i++)
		if (live[i].p == p) {
			live[i] = live[--nlive];
			break;
		}
	pthread_mutex_unlock(&sh_mu);
}

/* words at both ends and every 4 KiB: the block's own stamp */
static void stamp(char *p, uint64_t n, uint64_t v)
{
	for (uint64_t o = 0; o + 16 <= n; o += 4096) /* clear of the last word */
		memcpy(p + o, &v, 8);
	if (n >= 8)
		memcpy(p + n - 8, &v, 8);
	else
		memset(p, (int)(v & 0xff), n);
}

static int stamped(const char *p, uint64_t n, uint64_t v)
{
	uint64_t w;
	if (n < 8) {
		for (uint64_t i = 0; i < n; i++)
			if ((unsigned char)p[i] != (v & 0xff))
				return 0;
		return 1;
	}
	for (uint64_t o = 0; o + 16 <= n; o += 4096) { /* clear of the last word */
		memcpy(&w, p + o, 8);
		if (w != v)
			return 0;
	}
	memcpy(&w, p + n - 8, 8);
	return w == v;
}

typedef struct held { char *p; uint64_t n, v; } held;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void give_back(held *h)
{
	if (!stamped(h->p, h->n, h->v)) {
		uint64_t w;
		memcpy(&w, h->p, 8);
		fprintf(stderr, "block %p of %llu bytes: %llx, not %llx\n", (void *)h->p, (unsigned long long)h->n, (unsigned long long)w, (unsigned long long)h->v);
		BAD(corrupt);
	}
	shadow_del(h->p);
	if (stalloc_free(A, h->p) != 1)
		BAD(failed);
	h->p = NULL;
}

static void *worker(void *arg)
{
	uint64_t t = (uint64_t)(uintptr_t)arg, s = 0x9e3779b97f4a7c15ull * (t + 1), serial = 0;
	held h[HELD];
	memset(h, 0, sizeof h);
	for (int op = 0; op < OPS; op++) {
		held *x = &h[rnd(&s) % HELD];
		if (x->p) {
			if (rnd(&s) % 4 == 0) {
				/* realloc as preload.c does it */
				uint64_t old = stalloc_size(A, x->p), n = 16 + rnd(&s) % 200000;
				if (old != x->n)
					BAD(wrong_size);
				char *q = stalloc_alloc(A, n, 16);
				if (!q) {
					BAD(failed);
					continue;
				}
				shadow_add(q, n);
				memcpy(q, x->p, old < n ? old : n);
				uint64_t keep = old < n ? old : n;
				/* the copied words: the first 4 KiB grid points that fit */
				int same = keep < 8 || !memcmp(q, x->p, 8);
				if (!same)
					BAD(corrupt);
				give_back(x);
				x->p = q;
				x->n = n;
				x->v = t << 56 | ++serial;
				stamp(q, n, x->v);
				continue;
			}
			give_back(x);
			continue;
		}
		/* log-uniform sizes, 16 B to 3 MiB; now and then the plan's own size */
		uint64_t n = rnd(&s) % 8 == 0 ? 4096 : (uint64_t)16 << (rnd(&s) % 18);
		n += rnd(&s) % n;
		uint64_t align = (uint64_t)16 << (rnd(&s) % 9); /* 16 .. 4096 */
		char *p = stalloc_alloc(A, n, align);
		if (!p) {
			/* only an alignment the backend's blocks may lack */
			if (align <= 64)
				BAD(failed);
			continue;
		}
		if ((uintptr_t)p % align)
			BAD(misaligned);
		shadow_add(p, n);
		x->p = p;
		x->n = n;
		x->v = t << 56 | ++serial;
		stamp(p, n, x->v);
		if (op % 1000 == 0 && t == 0)
			stalloc_step(A); /* iterations go on meanwhile */
	}
	for (int i = 0; i < HELD; i++)
		if (h[i].p)
			give_back(&h[i]);
	return NULL;
}

static void test_foreign(void)
{
	char *mine = stalloc_alloc(A, 100000, 64);
	CHECK(mine != NULL);
	stamp(mine, 100000, 42);
	void *g = malloc(100000);
	int on_stack;
	CHECK(!stalloc_owns(A, g));
	CHECK(stalloc_free(A, g) == 0);
	CHECK(stalloc_free(A, &on_stack) == 0);
	CHECK(stalloc_free(A, mine + 64) == 0); /* inside one of its blocks: not a block */
	CHECK(stalloc_size(A, mine + 64) == 0);
	CHECK(stalloc_size(A, mine) == 100000);
	CHECK(stamped(mine, 100000, 42));
	CHECK(stalloc_free(A, mine) == 1);
	CHECK(stalloc_free(A, mine) == 0); /* twice: refused, the block is cached, not live */
	free(g);
}

int main(void)
{
	/* a plan of one 4 KiB request an iteration: everything else is the
	 * fallback's */
	stp_reqs r;
	stp_reqs_init(&r);
	r.period = 10;
	r.iteration = 0;
	stp_req q;
	memset(&q, 0, sizeof q);
	q.size = 4096;
	q.t_start = 2;
	q.t_end = 5;
	q.callsite = 0x1000;
	CHECK(stp_reqs_add(&r, &q) >= 0);
	stp_plan p;
	stp_plan_opts po;
	stp_plan_opts_init(&po);
	po.align = 64;
	po.budget = 0;
	char err[256];
	CHECK(stp_plan_build(&r, &po, &p, err, sizeof err) == 0);
	stalloc_backend b;
	stalloc_backend_host(&b);
	A = stalloc_new(&r, &p, &b, NULL, err, sizeof err);
	CHECK(A != NULL);
	if (!A)
		return check_done();

	test_foreign();
	pthread_t th[THREADS];
	for (uintptr_t t = 0; t < THREADS; t++)
		CHECK(pthread_create(&th[t], NULL, worker, (void *)t) == 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	CHECK(failed == 0);
	CHECK(overlaps == 0);
	CHECK(corrupt == 0);
	CHECK(misaligned == 0);
	CHECK(wrong_size == 0);
	CHECK(nlive == 0);

	stalloc_stats st;
	stalloc_stats_get(A, &st);
	CHECK(st.pool_live == 0);
	CHECK(st.fb_live == 0);
	CHECK(st.fallbacks > THREADS * OPS / 4);
	CHECK(st.foreign_frees >= 4);
	CHECK(st.peak_reserved >= st.peak_allocated);
	CHECK_EQ_U(st.threads, THREADS + 1); /* the workers and main's test_foreign */
	/* a zero-byte request: not planned, and called what it is */
	void *z = stalloc_alloc(A, 0, 16);
	if (z)
		CHECK(stalloc_free(A, z) == 1);
	stalloc_stats_get(A, &st);
	CHECK_EQ_U(st.min_size, 0);
	char *text = NULL;
	size_t tlen = 0;
	FILE *mf = open_memstream(&text, &tlen);
	CHECK(mf != NULL);
	if (mf) {
		stalloc_stats_print(mf, &st);
		fclose(mf);
		CHECK(strstr(text, "\nstalloc: zero-byte requests (empty tensors and the like): 1, not planned") != NULL);
		CHECK(strstr(text, "below the plan's min size") == NULL);
		free(text);
	}
	if (check_failures_)
		stalloc_stats_print(stderr, &st);
	stalloc_destroy(A);
	stp_plan_free(&p);
	stp_reqs_free(&r);
	return check_done();
}
