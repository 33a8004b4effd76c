/*
 * lifetime_heap.c - the lifetime-aware heap (Llama §6): memory by predicted
 * lifetime class, in 2 MiB huge pages of 256 blocks of 8 KiB.
 *
 * Layout.  One reservation of virtual memory, 2 MiB aligned; huge page h
 * is [base + h*2MiB, +2MiB).  Pages opened for the long-lived classes
 * (>=1000 s and never freed: dense, they hold most of a server's heap) are
 * asked to be backed by transparent huge pages (MADV_HUGEPAGE); the
 * shorter classes' pages, whose occupancy moves, use small pages
 * (MADV_NOHUGEPAGE, so khugepaged does not refill what was given back).
 * STALLOC_HUGEPAGES=2 asks huge pages for every page, 0 for none.  Its metadata (live and residual
 * block bitmaps, class, deadline, the span of each block) lives in an
 * array of its own, so a pointer finds its span with two shifts; one byte a
 * block (blk_sc) gives a small object's size class, so malloc_usable_size
 * reads one byte and one word.
 *
 * Objects.  A request of at most 32 KiB goes to a span: 1 to 8 contiguous
 * blocks cut into slots of one size class (multiples of 16 up to 128, then
 * four classes a doubling), opened for one lifetime class; its freed slots
 * are its lines, reused by later requests of the same class and size
 * (Llama's recycling of partially free spans, at slot granularity).  A
 * request up to 2 MiB takes whole blocks; a larger one whole huge pages.
 *
 * Policy (Llama §6.2-6.4), under one lock (a futex word, inline):
 *   - Each class has one open huge page, filled with blocks of that class
 *     only (residual blocks); a full one becomes active with a deadline,
 *     now + 2 x the class's bound (classes 6 and 7 have none).
 *   - Blocks for a class are first recycled from active huge pages of a
 *     longer class (small spans: the longest class first; large objects:
 *     the next longer class first), non-residual: they are expected to die
 *     before the page's own objects.
 *   - An active page whose residual blocks are all freed is demoted one
 *     class (its live blocks become residual); one whose deadline passes
 *     with residual blocks still live was under-predicted and is promoted.
 *   - A huge page with no live block is returned to the OS at once
 *     (madvise MADV_DONTNEED) and its address reused later, after half a
 *     second in a small cache of dirty pages (a page emptied and needed again at
 *     once costs no fault); the open page and each class's current span
 *     are kept while in use.  The trim gives back what is empty and idle
 *     (and the free blocks of sparse idle pages): at most every 250 ms from
 *     the slow paths, and every 250 ms from a thread of its own (started at the first page emptied, like
 *     jemalloc's background thread) so an idle server gives back too.
 *
 * Invariants: a block is live iff it belongs to a span; blk_sc of a block
 * is its span's size class + 1 iff the span is small, else 0; a span's blocks lie
 * in one huge page; a slot is handed out at most once until freed; every
 * table is from mmap, never malloc (this code runs under the interposer).
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "lifetime.h"

#define NSC STP_LT_SIZE_CLASSES
#define SC_LARGE 255
#define NONE 0u
#define ST_UNUSED 0
#define ST_OPEN 1
#define ST_ACTIVE 2
#define ST_FREE 3
#define ST_HUGE 4      /* first page of a run of whole pages (one object) */
#define ST_HUGE_TAIL 5
#define TRIM_NS 1000000000ull   /* idle time before a page or span is trimmed */
#define DIRTY_NS 500000000ull   /* an empty page's time in the dirty cache */
#define TRIM_EVERY_NS 250000000ull
#define CHECK_NS 10000000ull

typedef struct lt_hp {
	uint64_t live[4], resid[4];
	uint64_t released[4];     /* free blocks given back to the OS (a sparse page) */
	uint64_t deadline; /* active: when its residual blocks should be dead; huge: the object's usable bytes */
	uint64_t used_at;  /* last time a block was taken from it */
	uint32_t span[LT_BLOCKS]; /* block -> span id (index + 1), 0 free */
	uint32_t prev, next;      /* active list of its class (index + 1) */
	uint32_t run;             /* huge: pages in the run */
	uint16_t nlive;
	uint8_t lc, state;
	uint8_t thp;              /* MADV_HUGEPAGE asked (1) or MADV_NOHUGEPAGE (2), 0 neither */
} lt_hp;

/* 40 bytes: the table of spans stays resident up to the most spans ever
 * open at once (15,000 in redis-server under redis-benchmark) */
typedef struct lt_span {
	uintptr_t start;
	void *free;              /* freed slots, linked through their first word */
	uint32_t slot;           /* bytes of a slot (a large object's blocks: up to 2 MiB) */
	uint16_t nslots, used, bump; /* at most 8 blocks of slots of 16 bytes or more: 4,096 */
	uint16_t nblocks;
	uint32_t prev, next;     /* partial list of (lc, sc) (id), or the free-id list */
	uint8_t sc, lc, listed, cur;
} lt_span;
_Static_assert(sizeof(lt_span) == 40, "lt_span grew");

/* The heap's one lock: a futex word (0 free, 1 held, 2 held and waited
 * for), taken and given inline: one locked instruction each way and no
 * call (pthread_mutex_lock and _unlock were 1.6% of redis-server's CPU
 * under redis-benchmark, more than the heap's own code). */
static int lock;

static void lock_wait(void)
{
	for (int i = 0; i < 64; i++) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		int c = 0;
		if (!__atomic_load_n(&lock, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&lock, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
	}
	while (__atomic_exchange_n(&lock, 2, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &lock, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

static inline void heap_lock(void)
{
	int c = 0;
	if (!__atomic_compare_exchange_n(&lock, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		lock_wait();
}

static inline void heap_unlock(void)
{
	if (__atomic_exchange_n(&lock, 0, __ATOMIC_RELEASE) == 2)
		syscall(SYS_futex, &lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
static uintptr_t base, end;
static size_t nhp;
static lt_hp *hp;
static uint8_t *blk_sc; /* block -> its small span's size class + 1; 0: free, large or huge */
static lt_span *spans;
static uint32_t nspans_cap, span_bump, span_free;
static uint32_t hp_bump, *hp_free, nhp_free;
static uint32_t open_hp[STP_LT_CLASSES];      /* index + 1 */
static uint32_t active[STP_LT_CLASSES];       /* list heads, index + 1 */
static uint32_t cur[STP_LT_CLASSES][NSC];     /* span ids */
static uint32_t partial[STP_LT_CLASSES][NSC]; /* list heads */
static uint32_t sc_size[NSC];
static uint8_t sc_blocks[NSC], nsc;
static uint8_t sc_by16[LT_SMALL_MAX / 16 + 1]; /* (n + 15) / 16 -> class, n <= 1024 */
static uint8_t sc_by128[LT_SMALL_MAX / 128 + 1];
static uint64_t next_check, next_trim;
static int use_thp;
static lt_heap_stats st;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t lifetime_bound(unsigned lc)
{
	uint64_t b = stp_lt_class_limit_ns(lc);
	return b == UINT64_MAX ? UINT64_MAX : 2 * b;
}

static inline uintptr_t hp_addr(uint32_t h) { return base + ((uintptr_t)h << LT_HP_SHIFT); }

/* ---------------------------------------------------------------- size classes */

static void classes_init(void)
{
	nsc = (uint8_t)allocpolicy_lt_size_classes(sc_size, sc_blocks);
	uint8_t c = 0;
	for (uint32_t i = 0; i <= LT_SMALL_MAX / 16; i++) {
		while (sc_size[c] < i * 16)
			c++;
		sc_by16[i] = c;
	}
	c = 0;
	for (uint32_t i = 0; i <= LT_SMALL_MAX / 128; i++) {
		while (sc_size[c] < i * 128)
			c++;
		sc_by128[i] = c;
	}
}

static inline unsigned class_of(size_t n)
{
	return n <= LT_SMALL_MAX / 32 ? sc_by16[(n + 15) >> 4] : sc_by128[(n + 127) >> 7];
}

size_t lt_heap_class_size(size_t n)
{
	if (n <= LT_SMALL_MAX)
		return sc_size[class_of(n ? n : 1)];
	if (n <= LT_LARGE_MAX)
		return (n + LT_BLOCK - 1) & ~(LT_BLOCK - 1);
	return (n + 4095) & ~(size_t)4095;
}

/* ---------------------------------------------------------------- set-up */

int lt_heap_init(size_t reserve, int huge_pages)
{
	classes_init();
	reserve = (reserve + LT_HP - 1) & ~(LT_HP - 1);
	void *m = mmap(NULL, reserve + LT_HP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	uintptr_t a = ((uintptr_t)m + LT_HP - 1) & ~(LT_HP - 1);
	nhp = reserve >> LT_HP_SHIFT;
	hp = st_map(nhp * sizeof *hp);
	hp_free = st_map(nhp * sizeof *hp_free);
	nspans_cap = (uint32_t)(nhp * LT_BLOCKS < (1u << 30) ? nhp * LT_BLOCKS : (1u << 30));
	spans = st_map((size_t)nspans_cap * sizeof *spans);
	blk_sc = st_map(nhp * LT_BLOCKS);
	if (!hp || !hp_free || !spans || !blk_sc) {
		munmap(m, reserve + LT_HP);
		return -1;
	}
	use_thp = huge_pages;
	base = a;
	end = a + reserve;
	return 0;
}

int lt_heap_owns(const void *p) { return (uintptr_t)p - base < end - base; }

void lt_heap_lock(void) { heap_lock(); }
void lt_heap_unlock(void) { heap_unlock(); }

static uint32_t dirty_pages;

void lt_heap_stats_get(lt_heap_stats *s)
{
	heap_lock();
	memset(st.pages, 0, sizeof st.pages);
	memset(st.blocks, 0, sizeof st.blocks);
	for (uint32_t h = 0; h < hp_bump; h++)
		if ((hp[h].state == ST_OPEN || hp[h].state == ST_ACTIVE) && hp[h].lc < STP_LT_CLASSES) {
			st.pages[hp[h].lc]++;
			st.blocks[hp[h].lc] += hp[h].nlive;
		}
	st.dirty_pages = dirty_pages;
	*s = st;
	heap_unlock();
}

/* ---------------------------------------------------------------- huge pages */

static void list_del(uint32_t h)
{
	lt_hp *x = &hp[h];
	if (x->prev)
		hp[x->prev - 1].next = x->next;
	else if (active[x->lc] == h + 1)
		active[x->lc] = x->next;
	if (x->next)
		hp[x->next - 1].prev = x->prev;
	x->prev = x->next = 0;
}

static void list_push(uint32_t h)
{
	lt_hp *x = &hp[h];
	x->prev = 0;
	x->next = active[x->lc];
	if (x->next)
		hp[x->next - 1].prev = h + 1;
	active[x->lc] = h + 1;
}

static void hp_count_in(uint32_t n)
{
	st.hp_in_use += n;
	if (st.hp_in_use > st.hp_peak)
		st.hp_peak = st.hp_in_use;
}

/* Pages emptied lately, not yet given back: a run freed and needed again
 * within a second costs no system call and no page fault (a 3 MiB buffer
 * made and freed in a loop would otherwise be unmapped and faulted in each
 * time).  The trim gives back runs older than a second; past DIRTY_MAX
 * pages, the oldest run is given back at once. */
#define DIRTY_RUNS 16
#define DIRTY_MAX 8
typedef struct dirty_run { uint32_t h, n; uint64_t at; } dirty_run;
static dirty_run dirty[DIRTY_RUNS];
static uint32_t ndirty;

static void hp_release(uint32_t h, uint32_t n)
{
	madvise((void *)hp_addr(h), (size_t)n << LT_HP_SHIFT, MADV_DONTNEED);
	for (uint32_t i = 0; i < n; i++)
		hp_free[nhp_free++] = h + i;
	st.hp_released += n;
}

static void dirty_drop(uint32_t i)
{
	dirty_pages -= dirty[i].n;
	dirty[i] = dirty[--ndirty];
}

/* A fresh huge page (or run of n): a dirty run of that length, else from
 * the free list when n == 1, else never-used address space.  UINT32_MAX
 * when the reservation is spent. */
static uint32_t hp_get(uint32_t n)
{
	uint32_t h;
	for (uint32_t i = ndirty; i-- > 0;)
		if (dirty[i].n == n) {
			h = dirty[i].h;
			dirty_drop(i);
			st.hp_reused += n;
			hp_count_in(n);
			return h;
		}
	if (n == 1 && nhp_free) {
		h = hp_free[--nhp_free];
		st.hp_reused++;
	} else {
		if (hp_bump + n > nhp)
			return UINT32_MAX;
		h = hp_bump;
		hp_bump += n;
	}
	hp_count_in(n);
	return h;
}

static void hp_put(uint32_t h, uint32_t n, uint64_t now)
{
	for (uint32_t i = 0; i < n; i++) {
		lt_hp *x = &hp[h + i];
		memset(x->live, 0, sizeof x->live);
		memset(x->resid, 0, sizeof x->resid);
		memset(x->released, 0, sizeof x->released);
		x->nlive = 0;
		x->state = ST_FREE;
		x->run = 0;
	}
	st.hp_in_use -= n;
	while (ndirty && (ndirty == DIRTY_RUNS || dirty_pages + n > DIRTY_MAX)) {
		uint32_t old = 0;
		for (uint32_t i = 1; i < ndirty; i++)
			if (dirty[i].at < dirty[old].at)
				old = i;
		hp_release(dirty[old].h, dirty[old].n);
		dirty_drop(old);
	}
	if (n > DIRTY_MAX) {
		hp_release(h, n);
		return;
	}
	dirty[ndirty++] = (dirty_run){h, n, now};
	dirty_pages += n;
}

/* Huge pages for a page of class lc (see the top); an open page of a
 * long-lived class gets them once full (closing): while it fills, a huge
 * page would be backed whole at its first touch. */
static void page_thp(uint32_t h, unsigned lc, int full)
{
	uint8_t want = use_thp == 2 || (use_thp == 1 && lc >= 6 && full) ? 1 : use_thp ? 2 : 0;
	if (hp[h].thp == want || !want)
		return;
	madvise((void *)hp_addr(h), LT_HP, want == 1 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	hp[h].thp = want;
}

static int bits_any(const uint64_t *b) { return (b[0] | b[1] | b[2] | b[3]) != 0; }

/* The first run of nb free blocks in a page; -1 when none. */
static int find_run(const lt_hp *x, unsigned nb)
{
	if (LT_BLOCKS - x->nlive < nb)
		return -1;
	unsigned run = 0;
	for (unsigned i = 0; i < LT_BLOCKS; i++) {
		uint64_t w = x->live[i >> 6];
		if (!(i & 63) && w == UINT64_MAX) {
			i += 63;
			run = 0;
			continue;
		}
		if (w >> (i & 63) & 1) {
			run = 0;
		} else if (++run == nb) {
			return (int)(i + 1 - nb);
		}
	}
	return -1;
}

static void mark(lt_hp *x, unsigned b, unsigned nb, int residual, uint32_t sid)
{
	for (unsigned i = b; i < b + nb; i++) {
		x->live[i >> 6] |= 1ull << (i & 63);
		x->released[i >> 6] &= ~(1ull << (i & 63));
		if (residual)
			x->resid[i >> 6] |= 1ull << (i & 63);
		x->span[i] = sid;
	}
	x->nlive = (uint16_t)(x->nlive + nb);
}

static void close_open(unsigned lc, uint64_t now)
{
	uint32_t h = open_hp[lc] - 1;
	lt_hp *x = &hp[h];
	x->state = ST_ACTIVE;
	uint64_t b = lifetime_bound(lc);
	x->deadline = b == UINT64_MAX ? UINT64_MAX : now + b;
	list_push(h);
	open_hp[lc] = 0;
	page_thp(h, lc, 1);
}

/* nb contiguous blocks for class lc: recycled from a longer class's active
 * page (non-residual), else from an active page of the class itself (its
 * residual blocks freed, refilled with the same class), else the class's
 * open page, else a new open page. */
static uintptr_t blocks_take(unsigned nb, unsigned lc, int small, uint32_t sid, uint64_t now)
{
	for (unsigned i = 0; i + lc < STP_LT_CLASSES; i++) {
		/* longer classes first (small spans: the longest first), then lc */
		unsigned L = i + lc + 1 == STP_LT_CLASSES ? lc : small ? STP_LT_CLASSES - 1 - i : lc + 1 + i;
		unsigned looked = 0;
		for (uint32_t h = active[L]; h && looked < 64; h = hp[h - 1].next, looked++) {
			lt_hp *x = &hp[h - 1];
			int b = find_run(x, nb);
			if (b < 0)
				continue;
			mark(x, (unsigned)b, nb, L == lc, sid);
			x->used_at = now;
			if (L == lc)
				st.residual_recycled++;
			else if (small)
				st.spans_recycled++;
			else
				st.large_recycled++;
			return hp_addr(h - 1) + ((uintptr_t)b << LT_BLOCK_SHIFT);
		}
	}
	if (open_hp[lc]) {
		lt_hp *x = &hp[open_hp[lc] - 1];
		int b = find_run(x, nb);
		if (b >= 0) {
			mark(x, (unsigned)b, nb, 1, sid);
			x->used_at = now;
			return hp_addr(open_hp[lc] - 1) + ((uintptr_t)b << LT_BLOCK_SHIFT);
		}
		close_open(lc, now);
	}
	uint32_t h = hp_get(1);
	if (h == UINT32_MAX)
		return 0;
	lt_hp *x = &hp[h];
	memset(x->span, 0, sizeof x->span);
	x->state = ST_OPEN;
	x->lc = (uint8_t)lc;
	x->prev = x->next = 0;
	page_thp(h, lc, 0);
	open_hp[lc] = h + 1;
	mark(x, 0, nb, 1, sid);
	x->used_at = now;
	return hp_addr(h);
}

static void blocks_put(uintptr_t a, unsigned nb, uint64_t now)
{
	uint32_t h = (uint32_t)((a - base) >> LT_HP_SHIFT);
	unsigned b = (unsigned)((a >> LT_BLOCK_SHIFT) & (LT_BLOCKS - 1));
	lt_hp *x = &hp[h];
	for (unsigned i = b; i < b + nb; i++) {
		x->live[i >> 6] &= ~(1ull << (i & 63));
		x->resid[i >> 6] &= ~(1ull << (i & 63));
		x->span[i] = 0;
	}
	if (blk_sc[((uintptr_t)h << (LT_HP_SHIFT - LT_BLOCK_SHIFT)) + b])
		memset(blk_sc + ((uintptr_t)h << (LT_HP_SHIFT - LT_BLOCK_SHIFT)) + b, 0, nb);
	x->nlive = (uint16_t)(x->nlive - nb);
	if (x->state != ST_ACTIVE)
		return; /* the open page stays until the trim */
	if (!x->nlive) {
		list_del(h);
		hp_put(h, 1, now);
		return;
	}
	/* freed blocks near the front of the class's list, for recycling */
	list_del(h);
	if (!bits_any(x->resid) && x->lc > 0) {
		/* only shorter-lived (recycled) blocks left: over-predicted */
		x->lc--;
		memcpy(x->resid, x->live, sizeof x->resid);
		uint64_t bd = lifetime_bound(x->lc);
		x->deadline = bd == UINT64_MAX ? UINT64_MAX : now + bd;
		st.demotions++;
	}
	list_push(h);
}

/* ---------------------------------------------------------------- spans */

static uint32_t span_id(void)
{
	if (span_free) {
		uint32_t id = span_free;
		span_free = spans[id - 1].next;
		return id;
	}
	return span_bump < nspans_cap ? ++span_bump : 0;
}

static void span_unlist(lt_span *s, uint32_t id)
{
	if (!s->listed)
		return;
	if (s->prev)
		spans[s->prev - 1].next = s->next;
	else
		partial[s->lc][s->sc] = s->next;
	if (s->next)
		spans[s->next - 1].prev = s->prev;
	s->prev = s->next = 0;
	s->listed = 0;
	(void)id;
}

static void span_list(lt_span *s, uint32_t id)
{
	s->prev = 0;
	s->next = partial[s->lc][s->sc];
	if (s->next)
		spans[s->next - 1].prev = id;
	partial[s->lc][s->sc] = id;
	s->listed = 1;
}

static void span_release(lt_span *s, uint32_t id, uint64_t now)
{
	blocks_put(s->start, s->nblocks, now);
	memset(s, 0, sizeof *s);
	s->next = span_free;
	span_free = id;
}

static inline void *slot_take(lt_span *s)
{
	void *p = s->free;
	if (p) {
		s->free = *(void **)p;
	} else if (s->bump < s->nslots) {
		p = (void *)(s->start + (uintptr_t)s->bump++ * s->slot);
	} else {
		return NULL;
	}
	s->used++;
	return p;
}

static void trim(uint64_t now);
static void trim_thread_start(void);

static void checks(uint64_t now)
{
	if (now < next_check)
		return;
	next_check = now + CHECK_NS;
	for (unsigned lc = 0; lc < STP_LT_CLASSES; lc++) {
		for (uint32_t h = active[lc], nx; h; h = nx) {
			lt_hp *x = &hp[h - 1];
			nx = x->next;
			if (x->deadline > now || x->lc != lc)
				continue;
			list_del(h - 1);
			if (bits_any(x->resid)) {
				/* residual blocks outlived the deadline: under-predicted */
				if (x->lc + 1 < STP_LT_CLASSES)
					x->lc++;
				st.promotions++;
			} else if (x->lc > 0) {
				x->lc--;
				memcpy(x->resid, x->live, sizeof x->resid);
				st.demotions++;
			}
			uint64_t b = lifetime_bound(x->lc);
			x->deadline = b == UINT64_MAX ? UINT64_MAX : now + b;
			list_push(h - 1);
		}
	}
	if (now >= next_trim)
		trim(now);
}

/* A page at most a quarter live and idle for a second gives its free
 * blocks back (MADV_DONTNEED on each free run; the kernel splits its huge
 * page): a few long-lived objects predicted short must not pin 2 MiB each
 * once the program stops allocating their class. */
static void release_sparse(uint32_t h)
{
	lt_hp *x = &hp[h];
	unsigned run = 0;
	if (x->thp == 1) {
		/* or khugepaged would make it whole again */
		madvise((void *)hp_addr(h), LT_HP, MADV_NOHUGEPAGE);
		x->thp = 2;
	}
	for (unsigned i = 0; i <= LT_BLOCKS; i++) {
		int take = i < LT_BLOCKS && !(x->live[i >> 6] >> (i & 63) & 1) && !(x->released[i >> 6] >> (i & 63) & 1);
		if (take) {
			run++;
			continue;
		}
		if (run) {
			unsigned b = i - run;
			madvise((void *)(hp_addr(h) + ((uintptr_t)b << LT_BLOCK_SHIFT)), (size_t)run << LT_BLOCK_SHIFT,
			        MADV_DONTNEED);
			for (unsigned k = b; k < i; k++)
				x->released[k >> 6] |= 1ull << (k & 63);
			st.blocks_released += run;
			run = 0;
		}
	}
}

/* Gives back the classes' current spans that are empty, open pages that
 * have nothing live and were not used for a second, and the free blocks of
 * sparse idle pages. */
static void trim(uint64_t now)
{
	next_trim = now + TRIM_EVERY_NS;
	for (unsigned lc = 0; lc < STP_LT_CLASSES; lc++)
		for (uint32_t h = active[lc]; h; h = hp[h - 1].next) {
			lt_hp *x = &hp[h - 1];
			if (now - x->used_at < TRIM_NS)
				continue;
			/* a huge page only when sparse; small pages whenever idle */
			if (x->thp == 1 ? x->nlive * 4 <= LT_BLOCKS
			                : (unsigned)x->nlive + (unsigned)__builtin_popcountll(x->released[0]) +
			                          (unsigned)__builtin_popcountll(x->released[1]) +
			                          (unsigned)__builtin_popcountll(x->released[2]) +
			                          (unsigned)__builtin_popcountll(x->released[3]) <
			                      LT_BLOCKS)
				release_sparse(h - 1);
		}
	for (unsigned lc = 0; lc < STP_LT_CLASSES; lc++) {
		for (unsigned c = 0; c < nsc; c++) {
			uint32_t id = cur[lc][c];
			if (!id || spans[id - 1].used)
				continue;
			cur[lc][c] = 0;
			span_release(&spans[id - 1], id, now);
		}
		uint32_t h = open_hp[lc];
		if (h && !hp[h - 1].nlive && now - hp[h - 1].used_at >= TRIM_NS) {
			open_hp[lc] = 0;
			hp_put(h - 1, 1, now);
		}
	}
	for (uint32_t i = ndirty; i-- > 0;)
		if (now - dirty[i].at >= DIRTY_NS) {
			hp_release(dirty[i].h, dirty[i].n);
			dirty_drop(i);
		}
}

/* ---------------------------------------------------------------- the trim thread */

static int trim_thread_state; /* 0 none, 1 starting or running */

static void *trim_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec ts = {0, (long)TRIM_EVERY_NS};
		nanosleep(&ts, NULL);
		heap_lock();
		trim(now_ns());
		heap_unlock();
	}
	return NULL;
}

/* Called without the lock (creating a thread allocates). */
static void trim_thread_start(void)
{
	if (__atomic_exchange_n(&trim_thread_state, 1, __ATOMIC_ACQ_REL))
		return;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 << 10);
	/* the program's signals stay with the program's threads */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	if (pthread_create(&t, &a, trim_main, NULL) == 0)
		pthread_setname_np(t, "stalloc-trim");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
}

/* After fork the child has no trim thread: its slow paths still trim. */
void lt_heap_forked_child(void) { trim_thread_state = 2; }

static void *small_alloc(unsigned sc, unsigned lc, uint64_t *now)
{
	uint32_t id = cur[lc][sc];
	if (id) {
		void *p = slot_take(&spans[id - 1]);
		if (p)
			return p;
		spans[id - 1].cur = 0; /* full: off every list until a free */
		cur[lc][sc] = 0;
	}
	*now = now_ns();
	checks(*now);
	id = partial[lc][sc];
	if (id) {
		lt_span *s = &spans[id - 1];
		span_unlist(s, id);
	} else {
		id = span_id();
		if (!id)
			return NULL;
		lt_span *s = &spans[id - 1];
		unsigned nb = sc_blocks[sc];
		uintptr_t a = blocks_take(nb, lc, 1, id, *now);
		if (!a) {
			s->next = span_free;
			span_free = id;
			return NULL;
		}
		*s = (lt_span){.start = a, .slot = sc_size[sc], .nslots = (uint16_t)(nb * LT_BLOCK / sc_size[sc]),
		               .nblocks = (uint16_t)nb, .sc = (uint8_t)sc, .lc = (uint8_t)lc};
		memset(blk_sc + ((a - base) >> LT_BLOCK_SHIFT), (int)sc + 1, nb);
		st.spans_opened++;
	}
	spans[id - 1].cur = 1;
	cur[lc][sc] = id;
	return slot_take(&spans[id - 1]);
}

static void *large_alloc(size_t n, unsigned lc, uint64_t now, size_t *usable)
{
	unsigned nb = (unsigned)((n + LT_BLOCK - 1) >> LT_BLOCK_SHIFT);
	uint32_t id = span_id();
	if (!id)
		return NULL;
	uintptr_t a = blocks_take(nb, lc, 0, id, now);
	if (!a) {
		spans[id - 1].next = span_free;
		span_free = id;
		return NULL;
	}
	spans[id - 1] = (lt_span){.start = a, .slot = (uint32_t)nb * LT_BLOCK, .nslots = 1, .used = 1, .bump = 1,
	                          .nblocks = (uint16_t)nb, .sc = SC_LARGE, .lc = (uint8_t)lc};
	*usable = (size_t)nb * LT_BLOCK;
	return (void *)a;
}

static void *huge_alloc(size_t n, size_t *out)
{
	size_t usable = (n + 4095) & ~(size_t)4095;
	uint32_t k = (uint32_t)((usable + LT_HP - 1) >> LT_HP_SHIFT);
	uint32_t h = hp_get(k);
	if (h == UINT32_MAX)
		return NULL;
	for (uint32_t i = 0; i < k; i++) {
		hp[h + i].state = i ? ST_HUGE_TAIL : ST_HUGE;
		hp[h + i].nlive = 0;
		hp[h + i].run = i ? 0 : k;
	}
	hp[h].deadline = usable;
	*out = usable;
	return (void *)hp_addr(h);
}

/* ---------------------------------------------------------------- the calls */

/* The usable bytes of a live object: one byte of blk_sc for a small one
 * (Redis asks on every allocation and free), the span or page otherwise. */
static inline size_t usable_of(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	unsigned sc = blk_sc[(a - base) >> LT_BLOCK_SHIFT];
	if (sc)
		return sc_size[sc - 1];
	const lt_hp *x = &hp[(a - base) >> LT_HP_SHIFT];
	if (x->state == ST_HUGE)
		return (size_t)x->deadline;
	uint32_t id = x->span[(a >> LT_BLOCK_SHIFT) & (LT_BLOCKS - 1)];
	return id ? spans[id - 1].slot : 0;
}

void *lt_heap_alloc(size_t n, size_t align, unsigned lc)
{
	if (!n)
		n = 1;
	if (lc >= STP_LT_CLASSES)
		lc = STP_LT_NEVER;
	void *p = NULL;
	size_t usable = 0;
	uint64_t now = 0;
	heap_lock();
	st.by_class[lc]++; /* every request, so that the predictor needs no counter of its own */
	if (align > LT_BLOCK) {
		if (align <= LT_HP)
			p = huge_alloc(n, &usable);
	} else if (n <= LT_SMALL_MAX) {
		unsigned sc = class_of(n);
		if (align > 16) {
			size_t want = (n + align - 1) & ~(align - 1);
			sc = want <= LT_SMALL_MAX ? class_of(want) : nsc;
			while (sc < nsc && sc_size[sc] % align)
				sc++;
		}
		if (sc < nsc) {
			p = small_alloc(sc, lc, &now);
			usable = sc_size[sc];
		} else {
			p = large_alloc(n, lc, now_ns(), &usable);
		}
	} else if (n <= LT_LARGE_MAX) {
		now = now_ns();
		checks(now);
		p = large_alloc(n, lc, now, &usable);
	} else {
		p = huge_alloc(n, &usable);
	}
	if (p) {
		st.live_bytes += usable;
		if (st.live_bytes > st.live_peak)
			st.live_peak = st.live_bytes;
	} else {
		st.failed++;
	}
	heap_unlock();
	if (!p)
		errno = ENOMEM;
	return p;
}

size_t lt_heap_usable(const void *p) { return usable_of(p); }

void lt_heap_free(void *p)
{
	uintptr_t a = (uintptr_t)p;
	uint32_t h = (uint32_t)((a - base) >> LT_HP_SHIFT);
	heap_lock();
	lt_hp *x = &hp[h];
	uint32_t id = x->span[(a >> LT_BLOCK_SHIFT) & (LT_BLOCKS - 1)];
	if (!id && x->state == ST_HUGE) { /* a huge page's span[] is all 0 */
		st.live_bytes -= x->deadline;
		uint64_t now = now_ns();
		hp_put(h, x->run, now);
		checks(now);
		heap_unlock();
		if (!trim_thread_state)
			trim_thread_start();
		return;
	}
	if (!id) {
		heap_unlock();
		return; /* not a live block: a double free, ignored */
	}
	lt_span *s = &spans[id - 1];
	st.live_bytes -= s->slot;
	if (s->sc == SC_LARGE) {
		span_release(s, id, now_ns());
		heap_unlock();
		if (!trim_thread_state)
			trim_thread_start();
		return;
	}
	*(void **)p = s->free;
	s->free = p;
	s->used--;
	if (!s->cur) {
		if (!s->used) {
			span_unlist(s, id);
			uint64_t now = now_ns();
			span_release(s, id, now);
			checks(now);
			heap_unlock();
			if (!trim_thread_state)
				trim_thread_start();
			return;
		}
		if (!s->listed)
			span_list(s, id);
	}
	heap_unlock();
}
