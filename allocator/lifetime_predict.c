/*
 * lifetime_predict.c - the lifetime class of an allocation at run time
 * (Llama §7): a direct-mapped cache keyed by the return address into the
 * caller of malloc, the stack height at the call and the size class; on a
 * miss the call path is unwound (libunwind), each frame named by module
 * file name and ELF address as the learner names it (planner/
 * lifetime_learn.c), and the model predicts from the longest prefix it
 * knows (stp_lt_predict).  Stack height tells apart the paths that reach
 * one return address (a wrapper like zmalloc); aliasing is possible and is
 * what the heap's deadlines correct.
 *
 * Invariants: a cache entry is one 64-bit word (tag, class, valid bit)
 * written and read atomically, so lookups take no lock and count nothing
 * (a hit is a request of the heap's that was neither a miss nor busy);
 * misses are serialized by one lock (the module table and libunwind); a
 * thread inside a miss that allocates again (libunwind, the C library's
 * /proc reader) gets the model's fallback class without recursing; after
 * a miss the pages of the unwind tables it read are given back
 * (unwind_pages), only clean read-only file pages of modules mapped now.
 */

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "lifetime.h"

#define CACHE_BITS 14
#define MODS_MAX 1024

typedef struct lt_mod {
	uintptr_t lo, hi, bias;
	uintptr_t eh_lo, eh_hi; /* its unwind tables' pages to give back after a miss (none: equal) */
	uint64_t hash;
	int skip; /* libstalloc or libunwind: frames of the allocator itself */
} lt_mod;

static stp_lt_model model; /* depth and fallback; its entries are in keys[] and tags[] */
static uint64_t *keys;      /* the model's keys, sorted */
static uint8_t *tags;       /* level << 3 | label, of each key */
static uint64_t *cache;
static pthread_mutex_t miss_lock = PTHREAD_MUTEX_INITIALIZER;
static lt_mod *mods;
static size_t nmods;
static char exe_name[256];
static lt_predict_stats ps;
static __thread uintptr_t t_stack_hi __attribute__((tls_model("initial-exec")));
static __thread int t_busy __attribute__((tls_model("initial-exec")));


/* The pages of a module's unwind tables (.eh_frame_hdr to the end of its
 * read-only segment: .eh_frame, .gcc_except_table).  A miss reads a few
 * lines of them, and each read fault maps up to 64 KiB of the file around
 * it (the kernel's fault-around): 1.1 MiB of redis-server's RSS (libcrypto,
 * the program, libc) that the program itself never maps.  After a miss they
 * are given back (MADV_DONTNEED: the file's pages stay in the page cache; a
 * later read faults them in again).  Only for clean pages: a file-backed
 * segment without write permission, in a module without text relocations
 * (the loader writes those into read-only segments), named by path. */
static void unwind_pages(struct dl_phdr_info *info, lt_mod *m, int named)
{
	m->eh_lo = m->eh_hi = 0;
	if (!named)
		return; /* the vDSO */
	const ElfW(Phdr) *eh = NULL, *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			eh = &info->dlpi_phdr[i];
		else if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = &info->dlpi_phdr[i];
	}
	if (!eh)
		return;
	if (dyn)
		for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + dyn->p_vaddr); d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_TEXTREL || (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL)))
				return;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || eh->p_vaddr < ph->p_vaddr || eh->p_vaddr >= ph->p_vaddr + ph->p_filesz)
			continue;
		if (ph->p_flags & PF_W)
			return;
		uintptr_t lo = (info->dlpi_addr + eh->p_vaddr) & ~(pg - 1);
		uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_filesz) & ~(pg - 1);
		if (hi > lo) {
			m->eh_lo = lo;
			m->eh_hi = hi;
		}
		return;
	}
}

static int add_mod(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (nmods >= MODS_MAX)
		return 1;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (lo >= hi)
		return 0;
	const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : exe_name;
	const char *bn = strrchr(name, '/');
	bn = bn ? bn + 1 : name;
	lt_mod *m = &mods[nmods++];
	m->lo = lo;
	m->hi = hi;
	m->bias = info->dlpi_addr;
	m->hash = stp_lt_module_hash(bn);
	uintptr_t self = (uintptr_t)(void *)&add_mod;
	m->skip = (self >= lo && self < hi) || !strncmp(bn, "libunwind", 9);
	unwind_pages(info, m, nmods == 1 || (info->dlpi_name && info->dlpi_name[0] == '/'));
	return 0;
}

static void load_modules(void)
{
	nmods = 0;
	dl_iterate_phdr(add_mod, NULL);
}

static const lt_mod *mod_of(uintptr_t ip)
{
	for (size_t i = 0; i < nmods; i++)
		if (ip >= mods[i].lo && ip < mods[i].hi)
			return &mods[i];
	return NULL;
}

int lt_predict_init(const stp_lt_model *m)
{
	model = *m;
	cache = st_map(sizeof(uint64_t) << CACHE_BITS);
	mods = st_map(sizeof *mods * MODS_MAX);
	/* the entries as 9 bytes each, not 24 (the counts are the learner's):
	 * the model is resident for the program's life */
	keys = st_map(m->n ? m->n * sizeof *keys : 1);
	tags = st_map(m->n ? m->n : 1);
	if (!cache || !mods || !keys || !tags)
		return -1;
	for (uint64_t i = 0; i < m->n; i++) {
		keys[i] = m->e[i].key;
		tags[i] = (uint8_t)(m->e[i].level << 3 | (m->e[i].label & 7));
	}
	model.e = NULL;
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
	if (n > 0) {
		path[n] = 0;
		const char *bn = strrchr(path, '/');
		bn = bn ? bn + 1 : path;
		snprintf(exe_name, sizeof exe_name, "%.255s", bn);
	}
	load_modules();
	return 0;
}

static void learn_stack(void)
{
	pthread_attr_t a;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		void *lo;
		size_t sz;
		if (pthread_attr_getstack(&a, &lo, &sz) == 0)
			t_stack_hi = (uintptr_t)lo + sz;
		pthread_attr_destroy(&a);
	}
	if (!t_stack_hi)
		t_stack_hi = 1; /* unknown: heights are then addresses, still per path */
}

/* stp_lt_predict on keys[] and tags[]: the label of the longest prefix
 * the model knows; *level 0 when none (the fallback). */
static unsigned predict(const uint64_t *pre, uint32_t n, unsigned *level)
{
	if (n > model.depth)
		n = model.depth;
	for (uint32_t k = n; k >= 1; k--) {
		uint64_t key = stp_lt_key(k, pre[k - 1]), lo = 0, hi = model.n;
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			if (keys[mid] < key)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < model.n && keys[lo] == key && tags[lo] >> 3 == k) {
			*level = k;
			return tags[lo] & 7;
		}
	}
	*level = 0;
	return model.fallback;
}

/* The class from the call path: a cache miss. */
static unsigned from_model(void)
{
	/* unw_step rather than unw_backtrace: the latter's fast path keeps a
	 * frame cache of 256 KiB and more per thread that unwinds, resident
	 * for the process's life (a quarter of the RSS libstalloc adds to a
	 * server; misses are rare, the speed of each does not matter).  The
	 * walk stops at the model's depth: each frame further would read the
	 * unwind tables of outer functions, pages that stay resident. */
	uint64_t pre[STP_LT_DEPTH_MAX];
	const lt_mod *walked[STP_LT_DEPTH_MAX + 16];
	uint32_t nwalked = 0;
	uint32_t n = 0;
	uint64_t h = 0;
	int started = 0, seen = 0;
	/* the modules as they are now (dlopen, dlclose since): a few
	 * microseconds a miss, and the pages given back below are the
	 * tables of modules mapped now */
	load_modules();
	unw_context_t uc;
	unw_cursor_t cur;
	if (unw_getcontext(&uc) == 0 && unw_init_local(&cur, &uc) == 0) {
		do {
			unw_word_t word;
			if (unw_get_reg(&cur, UNW_REG_IP, &word) < 0 || !word)
				break;
			uintptr_t ip = (uintptr_t)word;
			const lt_mod *m = mod_of(ip);
			if (m && m->eh_hi) {
				uint32_t k = 0;
				while (k < nwalked && walked[k] != m)
					k++;
				if (k == nwalked && nwalked < sizeof walked / sizeof *walked)
					walked[nwalked++] = m;
			}
			if (!started && (!m || m->skip))
				continue; /* the allocator's own frames */
			started = 1;
			uint64_t mh = m ? m->hash : stp_lt_module_hash("?");
			h = stp_lt_extend(h, stp_lt_frame_hash(mh, m ? ip - m->bias : 0));
			pre[n++] = h;
		} while (n < model.depth && ++seen < (int)(model.depth + 16) && unw_step(&cur) > 0);
	}
	for (uint32_t k = 0; k < nwalked; k++)
		madvise((void *)walked[k]->eh_lo, walked[k]->eh_hi - walked[k]->eh_lo, MADV_DONTNEED);
	ps.unwound_frames += n;
	unsigned level;
	unsigned c = predict(pre, n, &level);
	if (!level)
		ps.fallback++;
	else if (level == (n < model.depth ? n : model.depth))
		ps.known++;
	else
		ps.backoff++;
	return c;
}

unsigned lt_predict(uintptr_t ret, uintptr_t sp, size_t n)
{
	if (t_busy) {
		__atomic_fetch_add(&ps.busy, 1, __ATOMIC_RELAXED);
		return model.fallback;
	}
	if (!t_stack_hi) {
		t_busy = 1;
		learn_stack();
		t_busy = 0;
	}
	uint64_t height = t_stack_hi - sp;
	uint64_t key = stp_lt_mix(ret ^ (height << 40) ^ ((uint64_t)lt_heap_class_size(n) * 0x9e3779b97f4a7c15ull));
	uint64_t *slot = &cache[key & ((1u << CACHE_BITS) - 1)];
	uint64_t e = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if ((e | 0xff) == (key | 0xff) && (e & 1))
		return (unsigned)(e >> 1) & 7; /* no counter here: a locked add a call (see lt_predict_stats) */
	t_busy = 1;
	pthread_mutex_lock(&miss_lock);
	ps.misses++;
	unsigned c = from_model();
	pthread_mutex_unlock(&miss_lock);
	t_busy = 0;
	__atomic_store_n(slot, (key & ~(uint64_t)0xff) | ((uint64_t)c << 1) | 1, __ATOMIC_RELAXED);
	return c;
}

void lt_predict_stats_get(lt_predict_stats *s)
{
	pthread_mutex_lock(&miss_lock);
	*s = ps;
	s->busy = __atomic_load_n(&ps.busy, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&miss_lock);
}

void lt_predict_lock(void) { pthread_mutex_lock(&miss_lock); }
void lt_predict_unlock(void) { pthread_mutex_unlock(&miss_lock); }
