/*
 * defs.c - interning of call paths and strings, and the DEFS buffer.
 *
 * A call path gets a stack id the first time it is seen: the hot path is a
 * lock-free lookup of the whole path by hash in an open-addressed table (a
 * slot is published by a release store of its fingerprint); a miss takes
 * a small lock (stk_mu), numbers the path and puts its frames on the
 * thread's pending list (pending.c).  Turning pending paths into definitions
 * is left to whoever next writes a chunk, normally the flusher thread:
 * stc_defs_flush_locked() drains every pending list, interning each path
 * into the trie of nodes (below) and emitting STACK(id -> node), then writes
 * the DEFS buffer.  As every chunk write starts with that, no events chunk
 * precedes the definition of an id it uses.
 * When the table fills past 70% it is copied into one twice the size and
 * the pointer swapped; old tables stay mapped (readers may still be in them)
 * and a reader that misses in one retries under the lock.  Two different call
 * paths are taken as one only if their 64-bit hashes agree and so does a
 * 32-bit check of their depths and innermost and outermost frames: at most
 * n^2/2^65 for n distinct paths (3e-8 for a million).  Table slots are 16
 * bytes (and a 2-byte fingerprint each in the call-path table): on `import
 * torch` (600,000 paths, 2.8 million trie nodes) these tables are most of
 * the collector's memory.
 */
#include <string.h>

#include "fold.h"

static pthread_mutex_t defs_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- the DEFS buffer: [chunk header space][payload] */
static uint8_t *dbuf;
static size_t dcap, dlen;
static stp_enc_state dstate;

void stc_defs_lock(void) { pthread_mutex_lock(&defs_mu); }
void stc_defs_unlock(void) { pthread_mutex_unlock(&defs_mu); }

/* Room for n more payload bytes (defs lock held). */
static uint8_t *dreserve(size_t n)
{
	if (STP_CHUNK_HEADER_SIZE + dlen + n > dcap) {
		size_t nc = dcap ? dcap : (64u << 10);
		while (STP_CHUNK_HEADER_SIZE + dlen + n > nc)
			nc *= 2;
		uint8_t *nb = stc_mem_alloc(nc);
		if (!nb)
			return NULL;
		if (dbuf) {
			memcpy(nb, dbuf, STP_CHUNK_HEADER_SIZE + dlen);
			stc_mem_free(dbuf, dcap);
		}
		dbuf = nb;
		dcap = nc;
	}
	return dbuf + STP_CHUNK_HEADER_SIZE + dlen;
}

static void define_stack(uint32_t id, const uint64_t *ips, uint32_t n);

static void write_defs_locked(void)
{
	if (dlen) {
		stc_out_chunk_locked(STP_CHUNK_DEFS, 0, dbuf, dlen);
		dlen = 0;
		stp_enc_reset(&dstate, 0);
	}
}

static void stk_prepare_next(void);

void stc_defs_flush_locked(void)
{
	stc_defs_lock();
	stk_prepare_next();
	stc_pending_drain(0, define_stack);
	write_defs_locked();
	stc_defs_unlock();
}

/* Every chunk goes out after the definitions it may need. */
void stc_out_chunk(unsigned type, uint32_t tid, uint8_t *buf, size_t len)
{
	stc_out_lock();
	stc_defs_flush_locked();
	if (type == STP_CHUNK_EVENTS && __atomic_load_n(&g_fold_on, __ATOMIC_ACQUIRE))
		stc_fold_chunk_locked(tid, buf + STP_CHUNK_HEADER_SIZE, len); /* steady iterations: fold.c */
	else
		stc_out_chunk_locked(type, tid, buf, len);
	stc_out_unlock();
}

void stc_defs_flush_try(void)
{
	if (pthread_mutex_trylock(&defs_mu))
		return;
	stc_pending_drain(1, define_stack);
	write_defs_locked();
	stc_defs_unlock();
}

void stc_emit_def_event(stp_event *ev)
{
	uint32_t tid = stc_gettid();
	stc_defs_lock();
	ev->tid = tid;
	ev->seq = atomic_fetch_add(&g_seq, 1);
	ev->time_ns = stc_now();
	size_t bound = stp_enc_event_bound(ev);
	uint8_t *p = dreserve(bound);
	if (p)
		dlen += stp_enc_event(p, bound, &dstate, ev);
	stc_defs_unlock();
}

/* ---- strings (defs lock held for every access) */
typedef struct str_slot { uint64_t hash; uint32_t id, len; const char *text; } str_slot;
static str_slot *stab;
static size_t stab_cap, nstr;
static char *sarena;
static size_t sarena_left;

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h ^ (h >> 31);
}

static const char *sarena_copy(const char *s, size_t n)
{
	if (n + 1 > sarena_left) {
		size_t sz = n + 1 > (64u << 10) ? n + 1 : (64u << 10);
		sarena = stc_mem_alloc(sz);
		if (!sarena) {
			sarena_left = 0;
			return NULL;
		}
		sarena_left = sz;
	}
	char *d = sarena;
	memcpy(d, s, n);
	d[n] = 0;
	sarena += n + 1;
	sarena_left -= n + 1;
	return d;
}

static int stab_grow(void)
{
	size_t nc = stab_cap ? stab_cap * 2 : 1024;
	str_slot *nt = stc_mem_alloc(nc * sizeof *nt);
	if (!nt)
		return -1;
	for (size_t i = 0; i < stab_cap; i++) {
		if (!stab[i].id)
			continue;
		size_t j = stab[i].hash & (nc - 1);
		while (nt[j].id)
			j = (j + 1) & (nc - 1);
		nt[j] = stab[i];
	}
	stc_mem_free(stab, stab_cap * sizeof *stab);
	stab = nt;
	stab_cap = nc;
	return 0;
}

uint32_t stc_intern_string(const char *s, size_t len)
{
	uint64_t h = hash_bytes(s, len);
	uint32_t id = 0;
	stc_defs_lock();
	if ((nstr + 1) * 2 > stab_cap && stab_grow())
		goto out;
	size_t j = h & (stab_cap - 1);
	for (; stab[j].id; j = (j + 1) & (stab_cap - 1))
		if (stab[j].hash == h && stab[j].len == len && !memcmp(stab[j].text, s, len)) {
			id = stab[j].id;
			goto out;
		}
	const char *copy = sarena_copy(s, len);
	uint8_t *p = dreserve(len + 32);
	if (!copy || !p)
		goto out;
	id = (uint32_t)++nstr;
	dlen += stp_enc_string(p, len + 32, id, s, len);
	stab[j] = (str_slot){h, id, (uint32_t)len, copy};
out:
	stc_defs_unlock();
	return id;
}

/* A 64-bit value's 32-bit check: both halves folded. */
static inline uint32_t fold32(uint64_t x) { return (uint32_t)(x ^ (x >> 32)); }

/* ---- stack trie nodes (defs lock held)
 * A node stands for an outer suffix of a call path (the trie is rooted at the
 * outermost frame) and is keyed by a rolling hash of that suffix, so the
 * deepest known node of a new call path is found by binary search over the
 * depth: a few probes of a large table instead of one per frame.  A hit must
 * also agree on a 32-bit check of the frame, so a 64-bit collision cannot
 * splice paths unless that agrees too.  The parent is not kept: the key
 * already stands for the whole suffix.  Every depth's first slot is
 * prefetched before the search, so the cache misses of a large table
 * overlap. */
typedef struct node_slot { uint64_t key; uint32_t ipx, id; } node_slot; /* 16 bytes */
static node_slot *ntab;
static uint16_t *nfp; /* a fingerprint per slot (0: empty), read before it */
static size_t ntab_cap, nnode;
static inline uint16_t node_fp(uint64_t key) { return (uint16_t)((key >> 48) | 1); }

static inline uint64_t suffix_step(uint64_t h, uint64_t ip)
{
	__uint128_t p = (__uint128_t)(h ^ ip) * 0x9E3779B97F4A7C15ull;
	uint64_t r = (uint64_t)p ^ (uint64_t)(p >> 64);
	return r ? r : 1;
}

/* The slots and the fingerprints after them, in one mapping. */
static inline size_t ntab_bytes(size_t cap) { return cap * (sizeof(node_slot) + sizeof(uint16_t)); }

static int ntab_grow(void)
{
	size_t nc = ntab_cap ? ntab_cap * 2 : 4096;
	node_slot *nt = stc_mem_alloc(ntab_bytes(nc));
	if (!nt)
		return -1;
	uint16_t *nf = (uint16_t *)(void *)&nt[nc];
	for (size_t i = 0; i < ntab_cap; i++) {
		if (!nfp[i])
			continue;
		size_t j = ntab[i].key & (nc - 1);
		while (nf[j])
			j = (j + 1) & (nc - 1);
		nt[j] = ntab[i];
		nf[j] = nfp[i];
	}
	if (ntab)
		stc_mem_free(ntab, ntab_bytes(ntab_cap));
	ntab = nt;
	nfp = nf;
	ntab_cap = nc;
	return 0;
}

/* The node of the suffix with hash key, depth and outermost-inward frame ip;
 * *slot gets the free slot where it would go (node_put fills it).  Only the
 * fingerprints are read until one agrees: a new node's slot, tens of MiB
 * into the table, is written without being read. */
static uint32_t node_find(uint64_t key, uint64_t ip, size_t *slot)
{
	size_t j = key & (ntab_cap - 1);
	uint32_t ipx = fold32(ip);
	uint16_t want = node_fp(key);
	for (; nfp[j]; j = (j + 1) & (ntab_cap - 1))
		if (nfp[j] == want && ntab[j].key == key && ntab[j].ipx == ipx)
			return ntab[j].id;
	*slot = j;
	return 0;
}

static inline void node_put(size_t slot, uint64_t key, uint64_t ip, uint32_t id)
{
	ntab[slot] = (node_slot){key, fold32(ip), id};
	nfp[slot] = node_fp(key);
}

/* Paths wait in a short queue before they are defined: when one is queued,
 * the table slots its new nodes will probe are prefetched, so the cache
 * misses of the next few paths overlap (the node table is tens of MiB on
 * `import torch`, and each new node probes it at random).  A queued path
 * keeps its keys (see intern_path) and its frames in the pending block,
 * which the drain keeps until it calls define_stack(0, NULL, 0). */
#define DQUEUE 8
typedef struct dpath {
	uint32_t id, n, same;
	const uint64_t *ips;
	uint64_t key[STC_DEPTH_MAX + 1];
} dpath;
static dpath dq[DQUEUE];
static uint32_t dq_head, dq_len;
/* the path queued last, outermost frame first, and its keys */
static uint64_t q_ip[STC_DEPTH_MAX + 1], q_key[STC_DEPTH_MAX + 1];
static uint32_t q_n;

static uint32_t intern_path(const dpath *e);

static void define_one(dpath *e)
{
	uint32_t node = intern_path(e);
	uint8_t *p = dreserve(24);
	if (node && p)
		dlen += stp_enc_stack(p, 24, e->id, node);
}

/* A pending call path becomes nodes and a STACK definition (defs lock held);
 * n == 0: define every queued path now. */
static void define_stack(uint32_t id, const uint64_t *ips, uint32_t n)
{
	if (n > STC_DEPTH_MAX)
		n = STC_DEPTH_MAX; /* cannot happen: no walk is longer */
	if (!n) {
		for (; dq_len; dq_len--, dq_head = (dq_head + 1) % DQUEUE)
			define_one(&dq[dq_head]);
		return;
	}
	if (dq_len == DQUEUE) {
		define_one(&dq[dq_head]);
		dq_head = (dq_head + 1) % DQUEUE;
		dq_len--;
	}
	dpath *e = &dq[(dq_head + dq_len++) % DQUEUE];
	uint32_t same = 0;
	while (same < n && same < q_n && q_ip[same + 1] == ips[n - same - 1])
		same++;
	e->id = id;
	e->n = n;
	e->ips = ips;
	e->same = same;
	q_key[0] = 0x243F6A8885A308D3ull;
	for (uint32_t d = same + 1; d <= n; d++) {
		q_key[d] = suffix_step(q_key[d - 1], ips[n - d]);
		q_ip[d] = ips[n - d];
		if (ntab)
			__builtin_prefetch(&nfp[q_key[d] & (ntab_cap - 1)]);
	}
	q_n = n;
	memcpy(e->key, q_key, (n + 1) * sizeof *q_key);
}

/* The nodes of the path defined last, by depth from the outermost frame
 * (defs lock held): paths defined one after the other mostly share their
 * outer frames (the allocations of one caller, or of one import), whose
 * nodes are taken from here instead of being looked up again. */
static uint32_t last_node[STC_DEPTH_MAX + 1], last_n;

/* Interns the queued call path e (its frames innermost first, its keys by
 * depth; its first e->same depths are those of the path before it);
 * returns the node of its innermost frame, 0 on failure. */
static uint32_t intern_path(const dpath *e)
{
	const uint64_t *ips = e->ips, *key = e->key;
	uint32_t n = e->n, same = e->same < last_n ? e->same : last_n;
	last_n = 0; /* until the nodes below are all known */
	if ((nnode + n) * 10 > ntab_cap * 7 && ntab_grow())
		return 0;
	/* deepest known suffix: known suffixes form a prefix of depths, and
	 * depth same is known; a new path mostly diverges right after it */
	uint32_t lo = same, hi = n, node = same ? last_node[same] : 0;
	size_t slot = 0;
	if (lo < hi) {
		uint32_t id = node_find(key[lo + 1], ips[n - lo - 1], &slot);
		if (id)
			node = last_node[++lo] = id;
		else
			hi = lo;
	}
	while (lo < hi) {
		uint32_t mid = (lo + hi + 1) / 2;
		uint32_t id = node_find(key[mid], ips[n - mid], &slot);
		if (id) {
			lo = mid;
			node = id;
		} else {
			hi = mid - 1;
		}
	}
	/* the nodes of depths (same, lo) the search skipped */
	for (uint32_t d = same + 1; d < lo; d++) {
		uint32_t id = node_find(key[d], ips[n - d], &slot);
		if (!id)
			return 0; /* cannot happen: known depths are a prefix */
		last_node[d] = id;
	}
	if (lo > same)
		last_node[lo] = node;
	for (uint32_t d = lo + 1; d <= n; d++) {
		uint32_t id = node_find(key[d], ips[n - d], &slot);
		if (!id) {
			uint8_t *p = dreserve(40);
			if (!p)
				return 0;
			id = (uint32_t)++nnode;
			dlen += stp_enc_node(p, 40, &dstate, id, node, ips[n - d]);
			node_put(slot, key[d], ips[n - d], id);
		}
		last_node[d] = node = id;
	}
	last_n = n;
	return node;
}

/* ---- whole call paths: lock-free lookup
 * Beside the slots, a 16-bit fingerprint per slot (0: empty) is what a probe
 * reads first, and the slot only when it agrees: most lookups that reach
 * this table are for new paths, and the fingerprints (an eighth of the
 * slots' size) mostly stay in the CPU caches where the slots do not; the
 * new slot is then written without being read.  A slot is published by a
 * release store of its fingerprint after the slot is written. */
typedef struct stk_slot {
	uint64_t h1;
	uint32_t h2, id;
} stk_slot; /* 16 bytes */
typedef struct stk_table {
	size_t mask, used;
	_Atomic uint16_t *fp; /* cap fingerprints, after the slots */
	stk_slot slots[];
} stk_table;
static stk_table *_Atomic stk_tab;

static inline size_t stk_bytes(size_t cap) { return sizeof(stk_table) + cap * (sizeof(stk_slot) + sizeof(uint16_t)); }
static inline uint16_t stk_fp(uint64_t h1) { return (uint16_t)((h1 >> 48) | 1); }

static stk_table *stk_new(size_t cap)
{
	stk_table *t = stc_mem_alloc(stk_bytes(cap));
	if (t) {
		t->mask = cap - 1;
		t->fp = (_Atomic uint16_t *)(void *)&t->slots[cap];
	}
	return t;
}

/* The table the next growth will use, made ahead by the thread that writes
 * the definitions (normally the flusher) once the current one is 40% full,
 * with its pages already faulted in: zeroing tens of MiB on first touch
 * would otherwise fall on the program's thread that grows the table. */
static stk_table *_Atomic stk_next;

static void stk_prepare_next(void)
{
	stk_table *t = atomic_load_explicit(&stk_tab, memory_order_acquire);
	if (!t || atomic_load_explicit(&stk_next, memory_order_relaxed) || __atomic_load_n(&t->used, __ATOMIC_RELAXED) * 10 < (t->mask + 1) * 4)
		return;
	size_t cap = (t->mask + 1) * 2, bytes = stk_bytes(cap);
	stk_table *nt = stk_new(cap);
	if (!nt)
		return;
	for (size_t at = 4096; at < bytes; at += 4096) /* the first page holds mask */
		((volatile uint8_t *)nt)[at] = 0;
	stk_table *none = NULL;
	if (!atomic_compare_exchange_strong(&stk_next, &none, nt))
		stc_mem_free(nt, bytes);
}

/* A table of cap slots for a growth (stk_mu held): the one made ahead when
 * it has that size. */
static stk_table *stk_grown(size_t cap)
{
	stk_table *nt = atomic_exchange(&stk_next, NULL);
	if (nt && nt->mask + 1 == cap)
		return nt;
	if (nt)
		stc_mem_free(nt, stk_bytes(nt->mask + 1));
	return stk_new(cap);
}

/* 64x64->128 multiply, folded: the mixing step of wyhash-like hashes. */
static inline uint64_t mum(uint64_t a, uint64_t b)
{
	__uint128_t p = (__uint128_t)a * b;
	return (uint64_t)p ^ (uint64_t)(p >> 64);
}

/* Each frame is mixed with a key of its position, independently of the
 * others, so the multiplies run in parallel; h1 sums them.  h2 adds the exact
 * depth and outermost/innermost frames, so a collision also needs those
 * equal.  (A serial chain of multiplies cost ~50 ns at depth 32.) */
static inline void path_hash(const uint64_t *ips, uint32_t n, uint64_t *h1, uint32_t *h2)
{
	uint64_t a = 0, b = 0;
	uint32_t i = 0;
	for (; i + 1 < n; i += 2) {
		uint64_t k = 0x9E3779B97F4A7C15ull * (i + 1);
		a += mum(ips[i] ^ k, 0xA0761D6478BD642Full ^ k);
		b += mum(ips[i + 1] ^ (k + 0x5851F42D4C957F2Dull), 0xE7037ED1A0B428DBull ^ k);
	}
	if (i < n)
		a += mum(ips[i] ^ (0x9E3779B97F4A7C15ull * (i + 1)), 0x8EBC6AF09C88C6E3ull);
	a = mum(a ^ b, 0x589965CC75374CC3ull) ^ n;
	*h1 = a ? a : 1; /* 0 marks an empty slot */
	*h2 = fold32(ips[0] ^ (ips[n - 1] << 1) ^ ((uint64_t)n << 56));
}

static inline uint32_t stk_find(const stk_table *t, uint64_t h1, uint32_t h2, size_t *slot)
{
	uint16_t want = stk_fp(h1);
	for (size_t i = h1 & t->mask;; i = (i + 1) & t->mask) {
		uint16_t f = atomic_load_explicit(&t->fp[i], memory_order_acquire);
		if (!f) {
			*slot = i;
			return 0;
		}
		if (f == want && t->slots[i].h1 == h1 && t->slots[i].h2 == h2)
			return t->slots[i].id;
	}
}

static void stk_put(stk_table *t, size_t i, uint64_t h1, uint32_t h2, uint32_t id)
{
	t->slots[i] = (stk_slot){h1, h2, id};
	atomic_store_explicit(&t->fp[i], stk_fp(h1), memory_order_release);
	__atomic_store_n(&t->used, t->used + 1, __ATOMIC_RELAXED); /* read by stk_prepare_next */
}

static pthread_mutex_t stk_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t nstack; /* stack ids handed out (stk_mu) */

/* A small per-thread cache of recent call paths in front of the global
 * table: a training loop allocates from the same few hundred paths over and
 * over, and the global table is too big to stay in cache.  It starts at
 * TCACHE_SMALL entries and grows to TCACHE after TCACHE_BUSY lookups: a
 * thread that allocates a little (one of 2,000 live threads, each cost
 * 64 KiB with a full cache cleared at its start) keeps to a page.  Entries
 * name global ids, so a cache given back keeps them for the next thread;
 * only a new epoch (a fork child) clears one, and a fresh one is zero from
 * mmap: only the pages a thread touches cost memory. */
#define TCACHE 4096
#define TCACHE_SMALL 256
#define TCACHE_BUSY 4096
typedef struct tcache_ent { uint64_t h1, h2id; } tcache_ent; /* h2 << 32 | id */
typedef struct tcache {
	struct tcache *next; /* on a free list */
	uint32_t mask, uses;
	int epoch;
	tcache_ent e[];
} tcache;
static STC_TLS tcache *t_tc;
static atomic_int cache_epoch; /* bumped in a fork child: ids restart */

/* Caches of exited threads, for the next threads, by size: a program that
 * creates threads without end keeps as many caches as it had threads alive
 * at once, not one per thread. */
static pthread_mutex_t tcache_mu = PTHREAD_MUTEX_INITIALIZER;
static tcache *tcache_free[2]; /* small, full */

static void tcache_put(tcache *c)
{
	pthread_mutex_lock(&tcache_mu);
	tcache **l = &tcache_free[c->mask == TCACHE - 1];
	c->next = *l;
	*l = c;
	pthread_mutex_unlock(&tcache_mu);
}

static tcache *tcache_get(int full)
{
	pthread_mutex_lock(&tcache_mu);
	tcache *c = tcache_free[full];
	if (c)
		tcache_free[full] = c->next;
	pthread_mutex_unlock(&tcache_mu);
	size_t n = full ? TCACHE : TCACHE_SMALL;
	if (!c && (c = stc_mem_alloc(sizeof *c + n * sizeof(tcache_ent))))
		c->mask = (uint32_t)n - 1;
	return c;
}

void stc_defs_thread_exit(void)
{
	stc_pending_thread_exit();
	if (t_tc)
		tcache_put(t_tc);
	t_tc = NULL;
}

static inline tcache_ent *tcache_slot(uint64_t h1)
{
	tcache *c = t_tc;
	if (STC_UNLIKELY(!c || c->mask != TCACHE - 1)) {
		if (!c && !(c = t_tc = tcache_get(0)))
			return NULL;
		if (c->mask != TCACHE - 1 && ++c->uses >= TCACHE_BUSY) {
			tcache *full = tcache_get(1);
			if (full) { /* a busy thread: the full cache, from now on */
				tcache_put(c);
				c = t_tc = full;
			}
		}
	}
	int epoch = atomic_load_explicit(&cache_epoch, memory_order_relaxed);
	if (STC_UNLIKELY(c->epoch != epoch)) {
		memset(c->e, 0, (c->mask + 1) * sizeof(tcache_ent));
		c->epoch = epoch;
	}
	return &c->e[(h1 ^ (h1 >> 29)) & c->mask];
}

uint32_t stc_intern_stack(const uint64_t *ips, uint32_t n)
{
	uint64_t h1;
	uint32_t h2;
	size_t slot = 0;
	if (!n)
		return 0;
	path_hash(ips, n, &h1, &h2);
	/* both probes' lines are fetched at once: on a new path (most of
	 * `import torch`) both miss the CPU caches */
	stk_table *t = atomic_load_explicit(&stk_tab, memory_order_acquire);
	if (t)
		__builtin_prefetch((const void *)&t->fp[h1 & t->mask]);
	tcache_ent *tc = tcache_slot(h1);
	uint64_t h2k = (uint64_t)h2 << 32;
	if (tc && tc->h1 == h1 && (tc->h2id & 0xffffffff00000000ull) == h2k)
		return (uint32_t)tc->h2id;
	uint32_t id = t ? stk_find(t, h1, h2, &slot) : 0;
	if (STC_LIKELY(id)) {
		if (tc)
			*tc = (tcache_ent){h1, h2k | id};
		return id;
	}

	pthread_mutex_lock(&stk_mu);
	t = atomic_load_explicit(&stk_tab, memory_order_relaxed);
	if (!t || (t->used + 1) * 10 > (t->mask + 1) * 7) {
		stk_table *nt = stk_grown(t ? (t->mask + 1) * 2 : 1u << 14);
		if (!nt)
			goto out;
		for (size_t i = 0; t && i <= t->mask; i++) {
			uint64_t k = t->slots[i].h1;
			if (atomic_load_explicit(&t->fp[i], memory_order_relaxed)) {
				size_t s = 0;
				stk_find(nt, k, t->slots[i].h2, &s);
				stk_put(nt, s, k, t->slots[i].h2, t->slots[i].id);
			}
		}
		atomic_store_explicit(&stk_tab, nt, memory_order_release);
		t = nt;
	}
	id = stk_find(t, h1, h2, &slot);
	if (!id && stc_pending_add(nstack + 1, ips, n) == 0) {
		id = ++nstack;
		stk_put(t, slot, h1, h2, id); /* published after it is pending */
	}
out:
	pthread_mutex_unlock(&stk_mu);
	if (id && tc)
		*tc = (tcache_ent){h1, h2k | id};
	return id;
}

void stc_defs_init(void)
{
	stp_enc_reset(&dstate, 0);
}

/* In a fork child: the new trace starts with no definitions.  The tables are
 * this process's private copies; dropping them is enough. */
void stc_defs_atfork_child(void)
{
	pthread_mutex_init(&defs_mu, NULL);
	pthread_mutex_init(&stk_mu, NULL);
	pthread_mutex_init(&tcache_mu, NULL);
	stc_pending_atfork_child();
	nstack = 0;
	atomic_fetch_add(&cache_epoch, 1);
	dlen = 0;
	stp_enc_reset(&dstate, 0);
	if (stab)
		memset(stab, 0, stab_cap * sizeof *stab);
	nstr = 0;
	if (ntab)
		memset(ntab, 0, ntab_bytes(ntab_cap));
	nnode = 0;
	last_n = q_n = dq_len = 0;
	stk_table *t = atomic_load(&stk_tab);
	if (t) {
		memset(t->slots, 0, stk_bytes(t->mask + 1) - sizeof *t);
		t->used = 0;
	}
}
