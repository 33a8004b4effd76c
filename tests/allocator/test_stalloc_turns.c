/*
 * test_stalloc_turns.c - which range libstalloc gives a request when more
 * than one could serve it, on plans made here by the real planner:
 *   - a request whose previous iteration's instance is still live when it
 *     comes (`loss = f(...)` in a loop): the planner's spare range
 *     (STP_REQ_SPARE) and the request's own range in turn, never a
 *     temporary's range of the same size and never the fallback;
 *   - the last gradient of the first backward pass, requested just before
 *     the optimizer's first state of its size: the gradient takes its
 *     iteration entry, the state its persistent slot (the state on the
 *     gradient's range pushed that entry's request elsewhere in every later
 *     iteration: seen on an H100 and on PyTorch CPU);
 *   - a start-up temporary of a persistent object's size made just before
 *     it (the `torch.ones` a causal mask is made from): with the plan's
 *     start-up sequence each persistent request takes its own slot (the
 *     mask, then the optimizer's state made in the first iteration) and the
 *     temporary none; before plans had one, the temporary took the mask's
 *     slot on a checkpointed GPT, the mask an AdamW state's, and the
 *     drift measured there let temporaries hold every state's slot
 *     (tests/allocator/test_stalloc_loops.sh);
 *   - a first step of another shape than the recorded one (the start-up
 *     sequence drifts): a persistent request met at a temporary's
 *     position of its size takes the persistent slot of its size just
 *     after, not an iteration entry's range for good;
 *   - a start-up temporary freed in the first iteration, just before the
 *     persistent objects that replace it are made (DDP's gradient bucket,
 *     rebuilt): the range the plan gives it over their slots (plan 1.4),
 *     not the fallback.
 */
#include "check.h"
#include "stprof/plan.h"
#include "stprof/stalloc.h"

static void add(stp_reqs *r, uint64_t size, uint64_t t0, uint64_t t1, uint32_t flags, uint32_t ordinal)
{
	stp_req q;
	memset(&q, 0, sizeof q);
	q.size = size;
	q.t_start = t0;
	q.t_end = t1;
	q.flags = flags;
	q.ordinal = ordinal;
	q.callsite = 0x1000 + ordinal;
	CHECK(stp_reqs_add(r, &q) >= 0);
}

static stalloc *open_plan(stp_reqs *r, stp_plan *p)
{
	char err[256];
	stp_plan_opts po;
	stp_plan_opts_init(&po);
	po.align = 64;
	po.budget = 0;
	if (stp_plan_build(r, &po, p, err, sizeof err) < 0 || stp_plan_verify(r, p, err, sizeof err) < 0) {
		fprintf(stderr, "plan: %s\n", err);
		CHECK(0);
		return NULL;
	}
	stalloc_backend b;
	stalloc_backend_host(&b);
	stalloc_opts o;
	stalloc_opts_init(&o);
	stalloc *a = stalloc_new(r, p, &b, &o, err, sizeof err);
	if (!a)
		fprintf(stderr, "stalloc: %s\n", err);
	CHECK(a != NULL);
	return a;
}

static int overlap(const void *x, const void *y, uint64_t size)
{
	const char *a = x, *b = y;
	return a < b + size && b < a + size;
}

/* X (4096) lives from tick 2 of one iteration to tick 3 of the next; T, a
 * temporary of the same size, [4, 8). */
static void test_spare(void)
{
	stp_reqs r;
	stp_reqs_init(&r);
	r.period = 10;
	r.iteration = 2;
	add(&r, 4096, 2, 2, 0, 0);             /* X: whole iteration */
	add(&r, 4096, 4, 8, 0, 1);             /* T */
	add(&r, 4096, 2, 2, STP_REQ_SPARE, 0); /* X's spare */
	stp_plan p;
	stalloc *a = open_plan(&r, &p);
	if (!a) {
		stp_reqs_free(&r);
		return;
	}
	uint64_t off_x = p.offset[0], off_spare = p.offset[2];
	CHECK(off_x != off_spare);
	void *base;
	uint64_t pool;
	stalloc_pool(a, &base, &pool);
	void *old = NULL;
	int at_own = 0, at_spare = 0;
	for (int it = 0; it < 10; it++) {
		stalloc_step(a);
		void *x = stalloc_alloc(a, 4096, 0);
		CHECK(x != NULL);
		if (old)
			CHECK(!overlap(x, old, 4096));
		at_own += (char *)x == (char *)base + off_x;
		at_spare += (char *)x == (char *)base + off_spare;
		if (old)
			stalloc_free(a, old);
		old = x;
		void *t = stalloc_alloc(a, 4096, 0);
		CHECK(t == (char *)base + p.offset[1]);
		stalloc_free(a, t);
	}
	stalloc_free(a, old);
	stalloc_stats s;
	stalloc_stats_get(a, &s);
	printf("spare: %d at the own range, %d at the spare; hits %llu, spare %llu, rehomed %llu, fallbacks %llu\n",
	       at_own, at_spare, (unsigned long long)s.hits, (unsigned long long)s.spare_hits,
	       (unsigned long long)s.rehomed, (unsigned long long)s.fallbacks);
	CHECK_EQ_U(at_own, 5);
	CHECK_EQ_U(at_spare, 5);
	CHECK_EQ_U(s.spare_hits, 5);
	CHECK_EQ_U(s.rehomed, 0);
	CHECK_EQ_U(s.fallbacks, 0);
	CHECK_EQ_U(s.occupied, 0);
	CHECK_EQ_U(s.entries, 3);
	stalloc_destroy(a);
	stp_plan_free(&p);
	stp_reqs_free(&r);
}

/* Iteration: T (4096) [3, 5), G (8192) allocated at 8, freed at 2 of the
 * next one.  Persistent: S (8192), the optimizer's state, whose ordinal
 * (2) is the request right after the first G in the profiled run (T 0,
 * G 1: ordinals count the requests from the program's start). */
static void test_gradient_before_state(void)
{
	stp_reqs r;
	stp_reqs_init(&r);
	r.period = 10;
	r.iteration = 2;
	add(&r, 4096, 3, 5, 0, 0);
	add(&r, 8192, 8, 2, 0, 1);
	add(&r, 8192, 0, 0, STP_REQ_PERSISTENT, 2);
	stp_plan p;
	stalloc *a = open_plan(&r, &p);
	if (!a) {
		stp_reqs_free(&r);
		return;
	}
	void *base;
	uint64_t pool;
	stalloc_pool(a, &base, &pool);
	char *slot = (char *)base + p.offset[2], *g_range = (char *)base + p.offset[1];
	/* the first iteration: T, the gradient, then the state */
	stalloc_step(a);
	void *t0 = stalloc_alloc(a, 4096, 0);
	CHECK(t0 == (char *)base + p.offset[0]);
	stalloc_free(a, t0);
	void *g = stalloc_alloc(a, 8192, 0);
	void *state = stalloc_alloc(a, 8192, 0);
	CHECK(g == g_range);
	CHECK(state == slot);
	for (int it = 1; it < 8; it++) {
		stalloc_step(a);
		stalloc_free(a, g); /* zero_grad(set_to_none=True) */
		void *t = stalloc_alloc(a, 4096, 0);
		CHECK(t == (char *)base + p.offset[0]);
		stalloc_free(a, t);
		g = stalloc_alloc(a, 8192, 0);
		CHECK(g == g_range);
	}
	stalloc_free(a, g);
	stalloc_free(a, state);
	stalloc_stats s;
	stalloc_stats_get(a, &s);
	printf("gradient before state: hits %llu, slots %llu, rehomed %llu, fallbacks %llu\n",
	       (unsigned long long)s.hits, (unsigned long long)s.slot_hits, (unsigned long long)s.rehomed,
	       (unsigned long long)s.fallbacks);
	CHECK_EQ_U(s.slot_hits, 1);
	CHECK_EQ_U(s.rehomed, 0);
	CHECK_EQ_U(s.fallbacks, 0);
	stalloc_destroy(a);
	stp_plan_free(&p);
	stp_reqs_free(&r);
}

/* open_plan, and the pool's base; on failure r is freed and NULL returned */
static stalloc *open_plan_base(stp_reqs *r, stp_plan *p, char **base)
{
	stalloc *a = open_plan(r, p);
	if (!a) {
		stp_reqs_free(r);
		return NULL;
	}
	void *b;
	uint64_t pool;
	stalloc_pool(a, &b, &pool);
	*base = b;
	return a;
}

static void close_plan(stalloc *a, stp_plan *p, stp_reqs *r)
{
	stalloc_destroy(a);
	stp_plan_free(p);
	stp_reqs_free(r);
}

/* the requests both start-up cases share: A (1024, the iteration's
 * temporary, ticks [2, 6) of 10) and W (65536, persistent, ordinal 0) */
static void startup_reqs(stp_reqs *r)
{
	stp_reqs_init(r);
	r->period = 10;
	r->iteration = 3;
	add(r, 1024, 2, 6, 0, 0);                   /* A */
	add(r, 65536, 0, 0, STP_REQ_PERSISTENT, 0); /* W */
}

/* Start-up: W (65536) persistent, T (1024) a temporary, M (1024)
 * persistent; the first iteration makes A (1024, the iteration's
 * temporary) and then S (1024, the optimizer's state, persistent).  The
 * start-up sequence is W T M A S (ordinals 0 to 4; with_sequence 0: none,
 * as in plans before 1.3).  Runs the program for 8 iterations; *slots gets
 * the slot hits, *astray what was not served at its own range. */
static void run_startup(int with_sequence, uint64_t *slots, uint64_t *astray)
{
	stp_reqs r;
	startup_reqs(&r);
	add(&r, 1024, 0, 0, STP_REQ_PERSISTENT, 2);  /* M */
	add(&r, 1024, 0, 0, STP_REQ_PERSISTENT, 4);  /* S */
	if (with_sequence) {
		uint64_t seq[] = {65536, 1024, 1024, 1024, 1024};
		for (int k = 0; k < 5; k++)
			CHECK(stp_reqs_add_startup(&r, seq[k] | (k == 1 ? 0 : STP_STARTUP_OUTLIVES)) == 0);
	}
	stp_plan p;
	char *base;
	stalloc *a = open_plan_base(&r, &p, &base);
	if (!a)
		return;
	void *w = stalloc_alloc(a, 65536, 0), *t = stalloc_alloc(a, 1024, 0), *m = stalloc_alloc(a, 1024, 0);
	stalloc_free(a, t);
	CHECK(w == base + p.offset[1]);
	if (with_sequence)
		CHECK(m == base + p.offset[2]);
	void *state = NULL;
	for (int it = 0; it < 8; it++) {
		stalloc_step(a);
		void *x = stalloc_alloc(a, 1024, 0);
		if (!it)
			state = stalloc_alloc(a, 1024, 0);
		if (with_sequence) {
			CHECK(x == base + p.offset[0]);
			CHECK(state == base + p.offset[3]);
		}
		stalloc_free(a, x);
	}
	stalloc_free(a, state);
	stalloc_free(a, m);
	stalloc_free(a, w);
	stalloc_stats s;
	stalloc_stats_get(a, &s);
	printf("start-up %s the sequence: slots %llu, hits %llu, start-up temporaries %llu, rehomed %llu, fallbacks %llu\n",
	       with_sequence ? "with" : "without", (unsigned long long)s.slot_hits, (unsigned long long)s.hits,
	       (unsigned long long)s.startup_hits, (unsigned long long)s.rehomed, (unsigned long long)s.fallbacks);
	*slots = s.slot_hits;
	*astray = s.rehomed + s.fallbacks + s.occupied;
	close_plan(a, &p, &r);
}

static void test_startup_sequence(void)
{
	uint64_t slots, astray;
	run_startup(1, &slots, &astray);
	CHECK_EQ_U(slots, 3);
	CHECK_EQ_U(astray, 0);
	/* a plan without the sequence still runs (the ordinal rule) */
	run_startup(0, &slots, &astray);
	CHECK(slots >= 3);
}

/* A first step of another shape than the recorded one (another sequence
 * length: fewer operations): the start-up sequence is W (65536,
 * persistent), T and U (4096, temporaries), G (1024, a temporary that
 * outlives start-up: a gradient), S (1024, the optimizer's state,
 * persistent) and P (65536, the next parameter's state); the run makes W,
 * S and P, without T, U nor G.  The matcher finds S's size at G's position
 * after skipping two: S takes its slot (the persistent position of its
 * size just after), not an iteration entry's range, which it would hold
 * for good: every later iteration's request planned there (A) went
 * elsewhere, and on the LSTM of test_stalloc_loops' other lengths, the
 * recurrence's largest tensors to the fallback (1.16x the pool before). */
static void test_startup_drift(void)
{
	stp_reqs r;
	startup_reqs(&r);
	add(&r, 1024, 0, 0, STP_REQ_PERSISTENT, 4);  /* S */
	add(&r, 65536, 0, 0, STP_REQ_PERSISTENT, 5); /* P */
	uint64_t seq[] = {65536 | STP_STARTUP_OUTLIVES, 4096, 4096, 1024 | STP_STARTUP_OUTLIVES,
	                  1024 | STP_STARTUP_OUTLIVES, 65536 | STP_STARTUP_OUTLIVES};
	for (int k = 0; k < 6; k++)
		CHECK(stp_reqs_add_startup(&r, seq[k]) == 0);
	stp_plan p;
	char *base;
	stalloc *a = open_plan_base(&r, &p, &base);
	if (!a)
		return;
	void *w = stalloc_alloc(a, 65536, 0), *state = stalloc_alloc(a, 1024, 0), *state2 = stalloc_alloc(a, 65536, 0);
	CHECK(w == base + p.offset[1]);
	CHECK(state == base + p.offset[2]);
	CHECK(state2 == base + p.offset[3]);
	for (int it = 0; it < 8; it++) {
		stalloc_step(a);
		void *x = stalloc_alloc(a, 1024, 0);
		CHECK(x == base + p.offset[0]);
		stalloc_free(a, x);
	}
	stalloc_free(a, state2);
	stalloc_free(a, state);
	stalloc_free(a, w);
	stalloc_stats s;
	stalloc_stats_get(a, &s);
	printf("start-up drift: slots %llu, hits %llu, rehomed %llu, fallbacks %llu\n", (unsigned long long)s.slot_hits,
	       (unsigned long long)s.hits, (unsigned long long)s.rehomed, (unsigned long long)s.fallbacks);
	CHECK_EQ_U(s.slot_hits, 3);
	CHECK_EQ_U(s.hits, 8);
	CHECK_EQ_U(s.rehomed + s.fallbacks + s.occupied, 0);
	close_plan(a, &p, &r);
}

/* DDP's first gradient bucket: made at start-up (B, 8192), live when the
 * first iteration begins, freed in it when DDP rebuilds its buckets, just
 * before the new bucket (N, 8192, persistent) is made; the optimizer's
 * state (S, 8192, persistent) comes at the first step.  The start-up
 * sequence is W B A N S (W a weight, A the iteration's temporary); B is
 * freed when W, B and A were made (startup_until 3).  The planner stacks the
 * slots by arrival (W, then N and S on top: both made after B is gone) and
 * places B over N's slot; libstalloc serves it there, and N and S their
 * slots: nothing reaches the fallback.  Without the placement (plans before
 * 1.4) B went to the fallback, which kept its bytes reserved on top of the
 * pool: 1.16x on a DDP rank (tests/allocator/test_stalloc_ranks.sh). */
static void run_bucket(int placed, uint64_t *fallbacks, uint64_t *over_pool)
{
	stp_reqs r;
	startup_reqs(&r);
	add(&r, 8192, 0, 0, STP_REQ_PERSISTENT, 3); /* N */
	add(&r, 8192, 0, 0, STP_REQ_PERSISTENT, 4); /* S */
	uint64_t seq[] = {65536 | STP_STARTUP_OUTLIVES, 8192 | STP_STARTUP_OUTLIVES, 4096 | STP_STARTUP_OUTLIVES,
	                  8192 | STP_STARTUP_OUTLIVES, 8192 | STP_STARTUP_OUTLIVES};
	for (int k = 0; k < 5; k++)
		CHECK(stp_reqs_add_startup(&r, seq[k]) == 0);
	r.startup_until = malloc(5 * sizeof *r.startup_until);
	CHECK(r.startup_until != NULL);
	for (int k = 0; k < 5; k++)
		r.startup_until[k] = k == 1 ? 3 : UINT32_MAX;
	r.req[0].size = 4096; /* A */
	stp_plan p;
	char err[256];
	stp_plan_opts po;
	stp_plan_opts_init(&po);
	po.align = 64;
	po.budget = 0;
	CHECK(stp_plan_build(&r, &po, &p, err, sizeof err) == 0);
	CHECK_EQ_U(p.nplaced, 1);
	CHECK(p.startup_offset && p.startup_offset[1] == p.offset[2]); /* over N's slot */
	CHECK(p.offset[2] > p.offset[1] && p.offset[3] > p.offset[1]); /* W below N and S */
	if (!placed) {
		free(p.startup_offset);
		p.startup_offset = NULL;
		p.nplaced = 0;
	}
	stalloc_backend be;
	stalloc_backend_host(&be);
	stalloc_opts o;
	stalloc_opts_init(&o);
	stalloc *a = stalloc_new(&r, &p, &be, &o, err, sizeof err);
	CHECK(a != NULL);
	if (!a)
		return;
	void *base;
	uint64_t pool;
	stalloc_pool(a, &base, &pool);
	void *w = stalloc_alloc(a, 65536, 0), *b = stalloc_alloc(a, 8192, 0);
	if (placed)
		CHECK(b == (char *)base + p.startup_offset[1]);
	void *n = NULL, *st = NULL;
	for (int it = 0; it < 6; it++) {
		stalloc_step(a);
		void *x = stalloc_alloc(a, 4096, 0);
		CHECK(x == (char *)base + p.offset[0]);
		stalloc_free(a, x);
		if (!it) {
			stalloc_free(a, b); /* the buckets rebuilt */
			n = stalloc_alloc(a, 8192, 0);
			st = stalloc_alloc(a, 8192, 0);
			CHECK(n == (char *)base + p.offset[2]);
			CHECK(st == (char *)base + p.offset[3]);
		}
	}
	stalloc_free(a, st);
	stalloc_free(a, n);
	stalloc_free(a, w);
	stalloc_stats s;
	stalloc_stats_get(a, &s);
	printf("a start-up bucket %s: slots %llu, start-up temporaries %llu, fallbacks %llu, peak reserved %llu (pool %llu)\n",
	       placed ? "placed" : "not placed", (unsigned long long)s.slot_hits, (unsigned long long)s.startup_hits,
	       (unsigned long long)s.fallbacks, (unsigned long long)s.peak_reserved, (unsigned long long)pool);
	*fallbacks = s.fallbacks;
	*over_pool = s.peak_reserved - pool;
	stalloc_destroy(a);
	stp_plan_free(&p);
	stp_reqs_free(&r);
}

static void test_startup_placed(void)
{
	uint64_t fb, over;
	run_bucket(1, &fb, &over);
	CHECK_EQ_U(fb, 0);
	CHECK_EQ_U(over, 0);
	run_bucket(0, &fb, &over);
	CHECK_EQ_U(fb, 1);
	CHECK(over >= 8192);
}

int main(void)
{
	test_spare();
	test_gradient_before_state();
	test_startup_sequence();
	test_startup_drift();
	test_startup_placed();
	return check_done();
}
