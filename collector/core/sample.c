/*
 * sample.c - the host heap's sampling: which heap allocations get an event,
 * and so which frees.  Tensors, device memory, segments and API events
 * never pass here (their backends record every one).
 *
 * Policy (g_cfg.heap_sample = R bytes; 0: every allocation, the default
 * outside Python processes and under --full):
 *   - an allocation of R bytes or more is always recorded;
 *   - a smaller one is recorded when a point of a Poisson process of rate
 *     1/R over the bytes its thread allocates (allocations below R only)
 *     falls in it: with probability p = 1 - exp(-size/R), independently of
 *     every other allocation (the gaps between points are exponential, so
 *     memoryless), as tcmalloc, heapprofd and memray's aggregated mode
 *     sample.  A reader weighs such an event by 1/p (stp_heap_weight):
 *     sums of sizes and counts are unbiased;
 *   - during the first g_cfg.heap_full_iters iterations of a marked loop
 *     (from the first ITER_BEGIN to the ITER_END of that many) every
 *     allocation is recorded: one iteration in full detail, with its
 *     temporaries, for the report and the plan.
 *   The trace says which rule is in force: the annotation
 *   "stprof.heap_sample_bytes" (value R, or 0 for every allocation) at the
 *   start and at each change (docs/trace-format.md).
 *
 * The frees: with R set, a free is recorded only when its block was
 * (stc_heap_forget).  The live recorded blocks are in a set: a counting
 * filter of 2^18 one-byte counters (256 KiB, indexed by a hash of the
 * address) answers "not recorded" to almost every free with one load, and
 * behind it 64 striped open-addressing tables (each its own spinlock) hold
 * the exact addresses.  A counter that reaches 255 stays there (a free that
 * finds it goes to the table).  Insertion happens before the block is
 * handed to the program, removal before it is given back (the FREE is
 * recorded then), so a free always sees the insertion of its block.
 *
 * Leaf of the core: it calls state, config, mem and nothing above.
 */
#include <string.h>

#include "sample.h"
#include "spin.h"

int g_heap_sampling;   /* sampling in force now (R set, not in the full iterations) */
int g_heap_set;        /* R set: frees look the set up */
uint32_t g_heap_annotation_id;
STC_TLS int64_t t_sample_left;
static STC_TLS uint64_t t_rng;

/* ---------------------------------------------------------------- the draw */

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: every seed is good, 2^64 period per thread is plenty */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* -ln(u) for u in (0, 1], without libm (the collector links none: a
 * library more would be a module more in every trace): u = m * 2^e with m
 * in [1, 2), ln m = 2 atanh(z), z = (m - 1) / (m + 1) <= 1/3, whose series
 * to z^21 is exact to 1e-11. */
static double neg_log(double u)
{
	union { double d; uint64_t b; } x = {.d = u};
	int e = (int)((x.b >> 52) & 0x7ff) - 1023;
	x.b = (x.b & ((1ull << 52) - 1)) | (1023ull << 52);
	double z = (x.d - 1.0) / (x.d + 1.0), z2 = z * z, t = z, sum = 0;
	for (int k = 1; k <= 21; k += 2, t *= z2)
		sum += t / k;
	return -(e * 0.69314718055994530942 + 2.0 * sum);
}

/* An exponential gap of mean R bytes (at least 1). */
static int64_t draw_gap(void)
{
	/* u in (0, 1]: 53 random bits */
	double u = ((double)(rng_next(&t_rng) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
	double g = neg_log(u) * (double)g_cfg.heap_sample;
	return g < 1.0 ? 1 : g > 4e18 ? (int64_t)4e18 : (int64_t)g;
}

int stc_sample_take_slow(size_t n)
{
	if (n >= g_cfg.heap_sample)
		return 1; /* large: always, and not part of the sampled stream */
	if (STC_UNLIKELY(!t_rng)) { /* the thread's first: its own seed, its first gap */
		t_rng = ((uint64_t)stc_gettid() << 32 ^ stc_now()) | 1;
		t_sample_left = draw_gap();
		if ((t_sample_left -= (int64_t)n) > 0)
			return 0;
	}
	while (t_sample_left <= 0)
		t_sample_left += draw_gap();
	return 1;
}

/* ---------------------------------------------------------------- the set */

#define STRIPES 64
#define STRIPE_FIRST 1024

typedef struct stripe {
	atomic_int lock;
	uint32_t n;      /* addresses held */
	size_t cap;      /* slots, a power of two; 0 until the first */
	uint64_t *keys;  /* 0: empty */
} stripe;

_Atomic uint8_t *g_heap_filter;
static stripe stripes[STRIPES];

static inline stripe *stripe_of(uint64_t h) { return &stripes[(h >> 20) & (STRIPES - 1)]; }
static inline size_t slot_of(const stripe *s, uint64_t h) { return (size_t)(h * 0xff51afd7ed558ccdull >> 7) & (s->cap - 1); }

static void stc_heap_set_init(void)
{
	if (!g_heap_filter)
		g_heap_filter = stc_mem_alloc((size_t)1 << STC_HEAP_FILTER_BITS);
}

static int stripe_grow(stripe *s)
{
	size_t nc = s->cap ? s->cap * 2 : STRIPE_FIRST;
	uint64_t *nk = stc_mem_alloc(nc * sizeof *nk);
	if (!nk)
		return -1;
	uint64_t *ok = s->keys;
	size_t oc = s->cap;
	s->keys = nk;
	s->cap = nc;
	for (size_t i = 0; i < oc; i++)
		if (ok[i]) {
			size_t j = slot_of(s, stc_heap_hash(ok[i]));
			while (nk[j])
				j = (j + 1) & (nc - 1);
			nk[j] = ok[i];
		}
	stc_mem_free(ok, oc * sizeof *ok);
	return 0;
}

void stc_heap_remember(void *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p, h = stc_heap_hash(a);
	if (!g_heap_filter)
		return;
	stripe *s = stripe_of(h);
	stc_spin_lock(&s->lock);
	if ((s->n + 1) * 2 > s->cap && stripe_grow(s) < 0) {
		stc_spin_unlock(&s->lock);
		return; /* no memory: its free will not be recorded (a leak to readers) */
	}
	size_t j = slot_of(s, h);
	while (s->keys[j] && s->keys[j] != a)
		j = (j + 1) & (s->cap - 1);
	if (!s->keys[j]) {
		s->keys[j] = a;
		s->n++;
		_Atomic uint8_t *c = &g_heap_filter[stc_heap_filter_index(a)];
		uint8_t v = atomic_load_explicit(c, memory_order_relaxed);
		while (v != 255 && !atomic_compare_exchange_weak_explicit(c, &v, (uint8_t)(v + 1), memory_order_relaxed,
		                                                          memory_order_relaxed))
			;
	}
	stc_spin_unlock(&s->lock);
}

int stc_heap_forget_slow(void *p, uint64_t h)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	stripe *s = stripe_of(h);
	stc_spin_lock(&s->lock);
	int found = 0;
	if (s->cap) {
		size_t m = s->cap - 1, j = slot_of(s, h);
		while (s->keys[j] && s->keys[j] != a)
			j = (j + 1) & m;
		if (s->keys[j]) {
			found = 1;
			s->n--;
			/* backward-shift deletion: no tombstones */
			size_t hole = j;
			for (size_t k = (j + 1) & m; s->keys[k]; k = (k + 1) & m) {
				size_t home = slot_of(s, stc_heap_hash(s->keys[k]));
				/* k's entry may fill the hole when its home is not in (hole, k] */
				if (((k - home) & m) >= ((k - hole) & m)) {
					s->keys[hole] = s->keys[k];
					hole = k;
				}
			}
			s->keys[hole] = 0;
			_Atomic uint8_t *c = &g_heap_filter[stc_heap_filter_index(a)];
			uint8_t v = atomic_load_explicit(c, memory_order_relaxed);
			while (v != 255 && v != 0 &&
			       !atomic_compare_exchange_weak_explicit(c, &v, (uint8_t)(v - 1), memory_order_relaxed,
			                                              memory_order_relaxed))
				;
		}
	}
	stc_spin_unlock(&s->lock);
	return found;
}

/* ---------------------------------------------------------------- the loop's first iterations */

static unsigned iters_begun, iters_ended;

int64_t stc_sample_marker(int kind)
{
	if (!g_heap_set || !g_cfg.heap_full_iters)
		return -1;
	if (kind == STP_MARK_ITER_BEGIN && iters_begun++ == 0) {
		__atomic_store_n(&g_heap_sampling, 0, __ATOMIC_RELAXED);
		return 0;
	}
	if (kind == STP_MARK_ITER_END && iters_begun && ++iters_ended == g_cfg.heap_full_iters) {
		__atomic_store_n(&g_heap_sampling, 1, __ATOMIC_RELAXED);
		return (int64_t)g_cfg.heap_sample;
	}
	return -1;
}

void stc_sample_start(void)
{
	if (g_cfg.heap_sample)
		stc_heap_set_init();
	if (!g_heap_filter)
		g_cfg.heap_sample = 0; /* no memory for the set: record every allocation */
	g_heap_set = g_cfg.heap_sample != 0;
	g_heap_sampling = g_heap_set;
}

void stc_sample_atfork_child(void)
{
	t_rng = 0; /* the child draws its own points */
	for (unsigned i = 0; i < STRIPES; i++)
		atomic_store(&stripes[i].lock, 0);
}
