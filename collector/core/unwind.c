/*
 * unwind.c - native call paths, fast.
 *
 * The walk reads each frame's return address at CFA-8 and, where the rule
 * says so, the saved RBP, with the CFA computed from RSP or RBP by the
 * frame's rule.  Rules come from the modules' .eh_frame (cfi.c) and are
 * cached per instruction address in a lock-free table, fronted by a small
 * per-thread direct-mapped cache, so a steady-state walk costs a probe of
 * that cache and one or two loads per frame.  Every load is checked
 * against the thread's stack bounds and the CFA must grow strictly; when a
 * frame has a rule we do not follow (signal frames, CFA expressions) or the
 * stack is not the thread's own (sigaltstack, coroutines), libunwind finishes
 * the walk from that frame.
 *
 * Frames inside libstprof.so (the interposer and this code) are dropped, so a
 * call path starts at the caller of malloc/free/new.
 *
 * Rule-table entries are published with a release store of the key after the
 * rule is written; a slot being filled (key 1) reads as a miss.  The table is
 * replaced (never freed: readers may be in it) when it fills past half; a
 * module unloaded (its addresses may be reused) starts a new generation of
 * keys instead, and the module table is rewritten in place: loading and
 * unloading libraries in a loop costs no memory.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <ucontext.h>

#include "internal.h"
#include "unwind_rule.h"

static uintptr_t self_lo, self_hi;
static STC_TLS uintptr_t t_stack_lo, t_stack_hi;
STC_TLS int t_in_libunwind;

/* One step of a walk: the frame's state, the caller's state it led to, and
 * the saved-RBP address it read (0: none).  Replaying a cached step needs
 * only the loads at nrsp-8 and rbp_addr, whose addresses are known: they run
 * in parallel where a real step is a chain of dependent loads.  RBP is part of
 * a step's input only when its CFA is computed from RBP (cfa_rbp); otherwise
 * the true RBP is carried through (a saved RBP often holds data, not a frame
 * pointer, and only matters to a later RBP-based step, which compares it). */
typedef struct ustep { uint64_t rip, rsp, rbp, nrip, nrsp, nrbp, rbp_addr, cfa_rbp; } ustep;
#define UCACHE (STC_DEPTH_MAX + 64)
/* Each thread also keeps the rules of the addresses it met last, direct
 * mapped: the shared rule table (hundreds of thousands of addresses under
 * `import torch`) misses the CPU caches on most probes, this one does not.
 * rgen is the rule generation the entries belong to (see rules_gen).  It
 * starts at one page (RCACHE_SMALL entries, in the ucache) and grows to
 * RCACHE after RCACHE_BUSY walks: a thread that allocates a little (one of
 * 2,000 live threads, each cost 160 KiB with a full cache from its start)
 * keeps to its page.  Only the pages a thread touches cost memory: the
 * caches come zeroed from mmap and are never cleared whole but for a new
 * rule generation. */
#define RCACHE 4096
#define RCACHE_SMALL 256
#define RCACHE_BUSY 4096
typedef struct rcache_ent { uint64_t ip; stc_rule rule; } rcache_ent;
typedef struct ucache {
	uint32_t len, rgen;
	uint32_t rmask;    /* entries in rc - 1 */
	uint32_t walks;    /* until RCACHE_BUSY */
	rcache_ent *rc;    /* small, or a grown one (kept with the cache) */
	rcache_ent *big;   /* the grown one, once made */
	rcache_ent small[RCACHE_SMALL];
	ustep s[UCACHE];
} ucache;
static STC_TLS ucache *t_cache;

/* ---- modules: a sorted array updated in place under a sequence lock
 *
 * Loading and unloading libraries change it (a dlopen/dlclose loop once
 * made a new table each time, never freed: 116 KiB a pair).  A writer builds
 * the new list aside, then copies it in between two bumps of mods_seq (odd
 * while it writes); a reader copies the module it finds out and keeps the
 * copy only when mods_seq was even and unchanged around the search.  The
 * array has a fixed room (MODS_MAX), so a torn read stays inside it. */
#define MODS_MAX 4096
typedef struct modset {
	size_t n;
	stc_module m[MODS_MAX];
} modset;
static modset *g_mods, *g_mods_next; /* the table, and where a rescan builds */
static _Atomic unsigned mods_seq;
static pthread_mutex_t mods_mu = PTHREAD_MUTEX_INITIALIZER;
static STC_TLS int t_rescanning;

struct collect { stc_module *out; size_t n, cap; };

static int collect_mod(struct dl_phdr_info *info, size_t size, void *data)
{
	struct collect *c = data;
	stc_module m = {0, 0, NULL, 0};
	if (!stc_phdr_span(info, &m.lo, &m.hi) || c->n >= c->cap)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_GNU_EH_FRAME) {
			m.eh_frame_hdr = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
			m.eh_frame_hdr_size = ph->p_memsz;
		}
	}
	c->out[c->n++] = m;
	return 0;
}

static int mod_cmp(const void *a, const void *b)
{
	const stc_module *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void rescan_modules(void);

/* The loader's count of objects loaded and unloaded so far. */
static int read_gen(struct dl_phdr_info *info, size_t size, void *data)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
		*(unsigned long long *)data = info->dlpi_adds * 1000003ull + info->dlpi_subs;
	return 1;
}

static _Atomic unsigned long long mods_gen = ~0ull;

/* A miss (an address in no module: a thread's outermost frame, JIT code) does
 * not rescan unless the loader's set changed. */
static void rescan_if_changed(void)
{
	unsigned long long gen = ~0ull;
	dl_iterate_phdr(read_gen, &gen);
	if (gen != ~0ull && gen == atomic_load(&mods_gen))
		return;
	atomic_store(&mods_gen, gen);
	rescan_modules();
}

static void rescan_modules(void)
{
	pthread_mutex_lock(&mods_mu);
	if (!g_mods)
		g_mods = stc_mem_alloc(sizeof *g_mods);
	if (!g_mods_next)
		g_mods_next = stc_mem_alloc(sizeof *g_mods_next);
	modset *ms = g_mods_next;
	if (!g_mods || !ms) {
		pthread_mutex_unlock(&mods_mu);
		return;
	}
	struct collect c = {ms->m, 0, MODS_MAX};
	dl_iterate_phdr(collect_mod, &c);
	ms->n = c.n;
	/* insertion sort keeps this free of libc's qsort (which may allocate) */
	for (size_t i = 1; i < ms->n; i++)
		for (size_t j = i; j > 0 && mod_cmp(&ms->m[j - 1], &ms->m[j]) > 0; j--) {
			stc_module t = ms->m[j];
			ms->m[j] = ms->m[j - 1];
			ms->m[j - 1] = t;
		}
	t_rescanning = 1; /* a signal handler here must not wait for us */
	atomic_fetch_add_explicit(&mods_seq, 1, memory_order_relaxed); /* odd: being written */
	atomic_thread_fence(memory_order_release);
	memcpy(g_mods->m, ms->m, ms->n * sizeof *ms->m);
	g_mods->n = ms->n;
	atomic_fetch_add_explicit(&mods_seq, 1, memory_order_release); /* even: done */
	t_rescanning = 0;
	pthread_mutex_unlock(&mods_mu);
}

/* The module holding ip, copied into *out; 0 when none. */
static int find_module(uint64_t ip, stc_module *out)
{
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned tries = 0; g_mods && !t_rescanning; tries++) {
			unsigned s1 = atomic_load_explicit(&mods_seq, memory_order_acquire);
			if (s1 & 1) {
				if (tries > 64)
					sched_yield();
				continue;
			}
			const modset *ms = g_mods;
			size_t n = ms->n < MODS_MAX ? ms->n : MODS_MAX, lo = 0, hi = n;
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				if (ms->m[mid].hi <= ip)
					lo = mid + 1;
				else
					hi = mid;
			}
			int found = lo < n && ms->m[lo].lo <= ip && ip < ms->m[lo].hi;
			if (found)
				*out = ms->m[lo];
			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&mods_seq, memory_order_relaxed) != s1)
				continue; /* written meanwhile: again */
			if (found)
				return 1;
			break;
		}
		if (pass == 0)
			rescan_if_changed();
	}
	return 0;
}

/* ---- rule cache
 *
 * Keys carry the generation of the code they were computed for in their top
 * 16 bits (user addresses fit in 48): unloading a library bumps it, and a
 * slot of an older generation is a miss that an insert may take over, so an
 * unload costs no new table.  A table is replaced only when it fills past
 * half (growth) and when the 15-bit generation wraps. */
typedef struct rslot { _Atomic uint64_t key; stc_rule rule; } rslot;
typedef struct rtable { size_t mask; _Atomic size_t used; rslot s[]; } rtable;
static rtable *_Atomic g_rules;
static _Atomic uint64_t code_gen = 1; /* 1 .. 0x7fff */

#define KEY_GEN_SHIFT 48
static inline uint64_t rule_key(uint64_t ip, uint64_t gen) { return (ip & ((1ull << KEY_GEN_SHIFT) - 1)) | gen << KEY_GEN_SHIFT; }
static inline int key_stale(uint64_t k, uint64_t gen) { return k > 1 && k >> KEY_GEN_SHIFT != gen; }

static rtable *rtable_new(size_t cap)
{
	rtable *t = stc_mem_alloc(sizeof *t + cap * sizeof(rslot));
	if (t)
		t->mask = cap - 1;
	return t;
}

static inline size_t ip_hash(uint64_t ip) { return (size_t)((ip * 0x9E3779B97F4A7C15ull) >> 20); }

static stc_rule rule_of(uint64_t ip)
{
	rtable *t = atomic_load_explicit(&g_rules, memory_order_acquire);
	uint64_t gen = atomic_load_explicit(&code_gen, memory_order_acquire), key = rule_key(ip, gen);
	size_t i = ip_hash(ip) & t->mask;
	for (size_t probes = 0; probes <= t->mask; probes++, i = (i + 1) & t->mask) {
		uint64_t k = atomic_load_explicit(&t->s[i].key, memory_order_acquire);
		if (k == key)
			return t->s[i].rule;
		if (k == 0)
			break;
	}
	/* miss: compute, then publish in the first free or stale slot */
	stc_module m;
	stc_rule r = find_module(ip, &m) ? stc_cfi_rule(&m, ip) : STC_RULE_NONE;
	if (atomic_load_explicit(&t->used, memory_order_relaxed) * 2 > t->mask) {
		rtable *nt = rtable_new((t->mask + 1) * 2);
		if (nt && atomic_compare_exchange_strong(&g_rules, &t, nt))
			t = nt;
		else
			t = atomic_load(&g_rules);
	}
	i = ip_hash(ip) & t->mask;
	for (size_t probes = 0; probes <= t->mask; probes++, i = (i + 1) & t->mask) {
		uint64_t expect = atomic_load_explicit(&t->s[i].key, memory_order_relaxed);
		if (expect == key)
			break;
		if ((expect == 0 || key_stale(expect, gen)) &&
		    atomic_compare_exchange_strong(&t->s[i].key, &expect, 1)) {
			t->s[i].rule = r;
			atomic_store_explicit(&t->s[i].key, key, memory_order_release);
			if (!expect)
				atomic_fetch_add_explicit(&t->used, 1, memory_order_relaxed);
			break;
		}
	}
	return r;
}

/* Bumped after the shared table is replaced: the threads' rule caches are
 * emptied at their next walk. */
static _Atomic uint32_t rules_gen;

/* rule_of through the calling thread's rule cache (C may be NULL). */
static inline stc_rule rule_cached(ucache *C, uint64_t ip)
{
	if (!C)
		return rule_of(ip);
	rcache_ent *e = &C->rc[(ip ^ (ip >> 12)) & C->rmask];
	if (e->ip == ip)
		return e->rule;
	stc_rule r = rule_of(ip);
	e->ip = ip;
	e->rule = r;
	return r;
}

void stc_unwind_invalidate(void)
{
	/* per-thread step caches hold only verified memory contents and are
	 * re-checked on every use; only the rules depend on the code: a new
	 * generation (a new table once the tag wraps) */
	uint64_t gen = atomic_load(&code_gen) + 1;
	if (gen > 0x7fff) {
		rtable *t = rtable_new(1u << 16);
		if (t)
			atomic_store(&g_rules, t);
		gen = 1;
	}
	atomic_store(&code_gen, gen);
	atomic_fetch_add(&rules_gen, 1);
	rescan_modules();
}

/* ---- setup */
static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t probe = (uintptr_t)data, lo, hi;
	if (stc_phdr_span(info, &lo, &hi) && probe >= lo && probe < hi) {
		self_lo = lo;
		self_hi = hi;
		return 1;
	}
	return 0;
}

void stc_unwind_init(void)
{
	t_in_libunwind = 1; /* its first call opens a pipe (fds.c moves it) */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	t_in_libunwind = 0;
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&stc_unwind_init);
	atomic_store(&g_rules, rtable_new(1u << 16));
	rescan_modules();
}

/* Each thread's step cache comes from a free list that exiting threads give
 * theirs back to (the first word of a free cache links the list): so a
 * program that creates threads without end keeps as many caches as it ever
 * had threads alive at once, not one per thread.  A thread gets its cache
 * and learns its stack at its first walk (or when it gets its slot, tbuf.c:
 * whichever comes first); one that gave its cache back walks without one. */
static pthread_mutex_t ucache_mu = PTHREAD_MUTEX_INITIALIZER;
static ucache *ucache_free;

void stc_unwind_thread_init(void)
{
	if (t_cache)
		return;
	pthread_mutex_lock(&ucache_mu);
	ucache *c = ucache_free;
	if (c)
		memcpy(&ucache_free, c, sizeof ucache_free);
	pthread_mutex_unlock(&ucache_mu);
	t_cache = c ? c : stc_mem_alloc(sizeof(ucache));
	if (t_cache) {
		/* a fresh one is zero (and its rules of generation 0, cleared at the
		 * first walk when that is not current); one given back keeps its rules,
		 * which are the process's, and its size */
		t_cache->len = 0;
		if (!t_cache->rc) {
			t_cache->rc = t_cache->small;
			t_cache->rmask = RCACHE_SMALL - 1;
		}
	}
	if (t_stack_hi)
		return;
	pthread_attr_t attr;
	void *addr;
	size_t size;
	t_stack_lo = t_stack_hi = 0;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
			t_stack_lo = (uintptr_t)addr;
			t_stack_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&attr);
	}
}

void stc_unwind_atfork_child(void)
{
	pthread_mutex_init(&ucache_mu, NULL);
	pthread_mutex_init(&mods_mu, NULL);
	t_rescanning = 0;
}

void stc_unwind_thread_exit(void)
{
	ucache *c = t_cache;
	if (!c)
		return;
	t_cache = NULL;
	pthread_mutex_lock(&ucache_mu);
	memcpy(c, &ucache_free, sizeof ucache_free);
	ucache_free = c;
	pthread_mutex_unlock(&ucache_mu);
}

static inline int is_self(uint64_t ip) { return ip >= self_lo && ip < self_hi; }

/* libunwind from a frame's registers to the end. */
static uint32_t slow_walk_in(uint64_t rip, uint64_t rsp, uint64_t rbp, uint64_t *ips, uint32_t n, uint32_t max)
{
	unw_context_t uc;
	unw_cursor_t c;
	memset(&uc, 0, sizeof uc);
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)rip;
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)rsp;
	uc.uc_mcontext.gregs[REG_RBP] = (greg_t)rbp;
	if (unw_init_local(&c, &uc) < 0)
		return n;
	for (unsigned steps = 0; n < max && steps < STC_DEPTH_MAX + 32; steps++) {
		unw_word_t ip;
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || !ip)
			break;
		if (!is_self(ip))
			ips[n++] = ip;
		if (unw_step(&c) <= 0)
			break;
	}
	return n;
}

static uint32_t slow_walk(uint64_t rip, uint64_t rsp, uint64_t rbp, uint64_t *ips, uint32_t n, uint32_t max)
{
	t_in_libunwind = 1;
	n = slow_walk_in(rip, rsp, rbp, ips, n, max);
	t_in_libunwind = 0;
	return n;
}

/* libunwind's own walk from here (STPROF_UNWIND=libunwind, and the fallback
 * when we are not on the thread's known stack). */
static uint32_t libunwind_walk(uint64_t *ips, uint32_t max)
{
	t_in_libunwind = 1;
	void *buf[STC_DEPTH_MAX + 16];
	uint32_t n = 0;
	int got = unw_backtrace(buf, (int)(max + 8 < STC_DEPTH_MAX + 16 ? max + 8 : STC_DEPTH_MAX + 16));
	for (int i = 0; i < got && n < max; i++)
		if (!is_self((uint64_t)(uintptr_t)buf[i]))
			ips[n++] = (uint64_t)(uintptr_t)buf[i];
	t_in_libunwind = 0;
	return n;
}

static uint32_t fast_walk(uint64_t *ips, uint32_t max);
static _Atomic uint64_t n_checked, n_mismatched;

uint32_t stc_unwind(uint64_t *ips, uint32_t max)
{
	if (STC_LIKELY(g_cfg.unwind == STC_UNWIND_FAST))
		return fast_walk(ips, max);
	if (g_cfg.unwind == STC_UNWIND_LIBUNWIND)
		return libunwind_walk(ips, max);
	uint64_t other[STC_DEPTH_MAX];
	uint32_t n = fast_walk(ips, max), m = libunwind_walk(other, max);
	atomic_fetch_add(&n_checked, 1);
	if (n != m || memcmp(ips, other, n * sizeof *ips))
		atomic_fetch_add(&n_mismatched, 1);
	return n;
}

void stc_unwind_check_counts(uint64_t *checked, uint64_t *mismatched)
{
	*checked = atomic_load(&n_checked);
	*mismatched = atomic_load(&n_mismatched);
}

__attribute__((noinline)) static uint32_t fast_walk(uint64_t *ips, uint32_t max)
{
	uint64_t rip, rsp, rbp;
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
	                 : "=r"(rip), "=r"(rsp), "=r"(rbp));
	uintptr_t lo = t_stack_lo, hi = t_stack_hi;
	uint32_t n = 0;
	if (!max)
		return 0;
	if (STC_UNLIKELY(!hi)) {
		/* a thread's first walk: learn its stack first, or libunwind would
		 * walk it and keep a per-thread cache (~64 KiB) that it never frees
		 * when the thread exits */
		stc_unwind_thread_init();
		lo = t_stack_lo;
		hi = t_stack_hi;
	}
	if (!hi || rsp < lo || rsp >= hi)
		return libunwind_walk(ips, max); /* not on the stack we know */
	ucache *C = t_cache;
	if (!C)
		return slow_walk(rip, rsp, rbp, ips, 0, max);
	uint32_t gen = atomic_load_explicit(&rules_gen, memory_order_acquire);
	if (STC_UNLIKELY(C->rgen != gen)) {
		memset(C->rc, 0, (C->rmask + 1) * sizeof *C->rc);
		C->rgen = gen;
	}
	if (STC_UNLIKELY(C->rc == C->small) && ++C->walks >= RCACHE_BUSY) {
		/* a busy thread: the full cache, from now on */
		if (!C->big)
			C->big = stc_mem_alloc(RCACHE * sizeof *C->big);
		if (C->big) {
			memset(C->big, 0, RCACHE * sizeof *C->big);
			C->rc = C->big;
			C->rmask = RCACHE - 1;
		}
	}
	/* Real steps go to tmp until a frame matches a cached step; then the
	 * cache is rebased (tmp in front of the match), the cached steps are
	 * replayed while memory still agrees, and any further real steps are
	 * appended to the cache directly. */
	ustep tmp[UCACHE];
	ustep *out = tmp;
	uint32_t m = 0, j = 0, L = C->len;
	int matched = 0, first = 1;
	for (unsigned steps = 0; steps < UCACHE - 1 && n < max; steps++) {
		if (!first && !matched) {
			while (j < L && C->s[j].rsp < rsp)
				j++;
			if (j < L && C->s[j].rsp == rsp && C->s[j].rip == rip && (!C->s[j].cfa_rbp || C->s[j].rbp == rbp)) {
				matched = 1;
				if (m != j)
					memmove(&C->s[m], &C->s[j], (L - j) * sizeof(ustep));
				memcpy(C->s, tmp, m * sizeof(ustep));
				L = m + (L - j);
				uint32_t k = m;
				for (; k < L && n < max; k++) {
					ustep *st = &C->s[k];
					if ((st->cfa_rbp && st->rbp != rbp) ||
					    *(const uint64_t *)(uintptr_t)(st->nrsp - 8) != st->nrip)
						break;
					/* the step's CFA, hence its loads' addresses, are as cached */
					st->rbp = rbp;
					if (st->rbp_addr)
						rbp = *(const uint64_t *)(uintptr_t)st->rbp_addr;
					st->nrbp = rbp;
					rip = st->nrip;
					rsp = st->nrsp;
					if (!is_self(rip))
						ips[n++] = rip;
				}
				m = k; /* C->s[0..k) is this walk; real steps go on from k */
				out = C->s;
				if (k < L || !rip || n == max) {
					if (k == L && rip) {
						C->len = k; /* replayed to the depth limit */
						return n;
					}
					if (k == L) {
						C->len = k;
						return n;
					}
				}
				L = k;
				if (n == max)
					break;
				continue;
			}
		}
		stc_rule r = rule_cached(C, first ? rip : rip - 1);
		if (r == STC_RULE_END)
			break;
		if (!(r & STC_RULE_VALID)) {
			if (!first)
				n = slow_walk(rip, rsp, rbp, ips, n, max);
			break;
		}
		uint64_t cfa = ((r & STC_RULE_CFA_RBP) ? rbp : rsp) + (uint64_t)(int64_t)stc_rule_cfa_off(r);
		if (cfa <= rsp || cfa - 8 < lo || cfa > hi)
			break;
		ustep st = {rip, rsp, rbp, 0, cfa, rbp, 0, (r & STC_RULE_CFA_RBP) != 0};
		st.nrip = *(const uint64_t *)(uintptr_t)(cfa - 8);
		if (r & STC_RULE_RBP_SAVED) {
			uint64_t at = cfa + (uint64_t)(int64_t)stc_rule_rbp_off(r);
			if (at < lo || at + 8 > hi)
				break;
			st.rbp_addr = at;
			st.nrbp = *(const uint64_t *)(uintptr_t)at;
		}
		out[m++] = st;
		rip = st.nrip;
		rsp = st.nrsp;
		rbp = st.nrbp;
		first = 0;
		if (!rip)
			break;
		if (!is_self(rip))
			ips[n++] = rip;
	}
	if (!matched)
		memcpy(C->s, tmp, m * sizeof(ustep));
	C->len = m;
	return n;
}
