/*
 * lifetime_preload.c - the malloc family in lifetime mode: when
 * STALLOC_PLAN names a lifetime model (`stprof plan --lifetimes`),
 * libstalloc.so places every allocation of the program by the class its
 * calling context predicts (lifetime_predict.c) in the lifetime heap
 * (lifetime_heap.c), for any thread; preload.c's entry points come here
 * while lt_on is set.
 *
 * Blocks the C library handed out before the model was loaded (or when the
 * heap's reservation is spent) stay the C library's: free, realloc and
 * malloc_usable_size tell them apart by address (lt_heap_owns).  After a
 * fork the child keeps the heap (the locks are taken around fork).
 *
 * Environment: STALLOC_HUGEPAGES (1, the default: transparent huge pages
 * for the long-lived classes' pages; 2: for every page; 0: none),
 * STALLOC_RESERVE (bytes of address space, default 64 GiB).
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "lifetime.h"
#include "stprof/outfile.h"
#include "stprof/stalloc.h"

extern void *__libc_malloc(size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

int lt_on;
static size_t (*libc_usable)(void *);
static char model_path[4096];
static uint64_t model_entries;
static unsigned model_depth;

static void say(const char *a, const char *b)
{
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "stalloc: %s%s; running without the model\n", a, b ? b : "");
	ssize_t r = write(2, buf, n > 0 ? (size_t)n : 0);
	(void)r;
}

static void fork_prepare(void)
{
	lt_predict_lock();
	lt_heap_lock();
}

static void fork_release(void)
{
	lt_heap_unlock();
	lt_predict_unlock();
}

static void fork_child(void)
{
	lt_heap_forked_child();
	fork_release();
}

int lt_start(const char *path)
{
	char err[1024];
	stp_lt_model m;
	if (stp_lt_read(path, &m, err, sizeof err) < 0) {
		say(err, NULL);
		return -1;
	}
	const char *v = getenv("STALLOC_RESERVE");
	size_t reserve = v && *v ? (size_t)strtoull(v, NULL, 10) : ((size_t)64 << 30);
	if (reserve < LT_HP * 4)
		reserve = LT_HP * 4;
	v = getenv("STALLOC_HUGEPAGES");
	int thp = v && *v ? (int)strtol(v, NULL, 10) : 1;
	if (thp < 0 || thp > 2)
		thp = 1;
	if (lt_heap_init(reserve, thp) < 0 || lt_predict_init(&m) < 0) {
		say("cannot map the lifetime heap", NULL);
		stp_lt_model_free(&m);
		return -1;
	}
	/* the predictor keeps its own compact copy; the C library's block
	 * (a mapping of its own, 24 bytes an entry) goes back */
	uint64_t entries = m.n;
	uint32_t depth = m.depth;
	stp_lt_model_free(&m);
	m.n = entries;
	m.depth = depth;
	/* the C library's own malloc_usable_size, for its blocks (a program
	 * linked with another allocator, such as Redis with jemalloc, would
	 * give that one's at RTLD_NEXT) */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	if (libc)
		*(void **)&libc_usable = dlsym(libc, "malloc_usable_size");
	snprintf(model_path, sizeof model_path, "%s", path);
	model_entries = m.n;
	model_depth = m.depth;
	pthread_atfork(fork_prepare, fork_release, fork_child);
	__atomic_store_n(&lt_on, 1, __ATOMIC_RELEASE);
	return 0;
}

void *lt_malloc(size_t n, uintptr_t ret, uintptr_t sp)
{
	void *p = lt_heap_alloc(n, 16, lt_predict(ret, sp, n));
	return p ? p : __libc_malloc(n);
}

void *lt_calloc(size_t n, size_t m, uintptr_t ret, uintptr_t sp)
{
	size_t t;
	if (__builtin_mul_overflow(n, m, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = lt_malloc(t, ret, sp);
	if (p)
		memset(p, 0, t);
	return p;
}

void *lt_aligned(size_t align, size_t n, uintptr_t ret, uintptr_t sp)
{
	if (align <= 16)
		return lt_malloc(n, ret, sp);
	return lt_heap_alloc(n, align, lt_predict(ret, sp, n)); /* NULL: errno ENOMEM */
}

void *lt_realloc(void *p, size_t n, uintptr_t ret, uintptr_t sp)
{
	if (!p)
		return lt_malloc(n, ret, sp);
	if (!lt_heap_owns(p))
		return __libc_realloc(p, n); /* the C library's block stays its own */
	if (!n) {
		lt_heap_free(p);
		return NULL;
	}
	size_t old = lt_heap_usable(p);
	if (n <= old && lt_heap_class_size(n) == old)
		return p; /* same size class: in place */
	void *q = lt_malloc(n, ret, sp);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	lt_heap_free(p);
	return q;
}

int lt_free(void *p)
{
	if (!lt_heap_owns(p))
		return 0;
	lt_heap_free(p);
	return 1;
}

size_t lt_usable(void *p)
{
	if (!p)
		return 0;
	if (lt_heap_owns(p))
		return lt_heap_usable(p);
	return libc_usable ? libc_usable(p) : 0;
}

void lt_write_stats(const char *to)
{
	lt_heap_stats h;
	lt_predict_stats s;
	lt_heap_stats_get(&h);
	lt_predict_stats_get(&s);
	FILE *f = stderr;
	stp_outfile out;
	char err[512];
	if (strcmp(to, "1")) { /* as every output of stprof's (stprof/outfile.h) */
		f = stp_outfile_open(&out, to, &stp_outkind_stalloc_stats, err, sizeof err);
		if (!f) {
			fprintf(stderr, "stalloc: statistics not written: %s\n", err);
			return;
		}
	}
	uint64_t all = 0;
	for (unsigned c = 0; c < STP_LT_CLASSES; c++)
		all += h.by_class[c];
	/* every request asked lt_predict once: those not unwound nor asked
	 * from inside an unwind came from the cache */
	uint64_t hits = all - s.misses - s.busy, placed = all - h.failed;
	fprintf(f, "stalloc: lifetime model %s (%" PRIu64 " context prefixes, %u frames)\n", model_path, model_entries,
	        model_depth);
	fprintf(f, "stalloc: %" PRIu64 " allocations by predicted class:", placed);
	for (unsigned c = 0; c < STP_LT_CLASSES; c++)
		fprintf(f, " %s %.1f%%", stp_lt_class_name(c), all ? 100.0 * (double)h.by_class[c] / (double)all : 0.0);
	fprintf(f, "\nstalloc: predictions: %" PRIu64 " from the cache, %" PRIu64 " unwound (context in the model %" PRIu64
	           ", from shared frames %" PRIu64 ", fallback %" PRIu64 ")\n",
	        hits, s.misses, s.known, s.backoff, s.fallback);
	fprintf(f, "stalloc: huge pages: %" PRIu64 " in use (peak %" PRIu64 "), %" PRIu64 " returned to the OS, %" PRIu64
	           " reused; spans %" PRIu64 " opened, %" PRIu64 " recycled into longer-lived pages; %" PRIu64
	           " large objects recycled; %" PRIu64 " residual blocks refilled; %" PRIu64 " promotions, %" PRIu64
	           " demotions\n",
	        h.hp_in_use, h.hp_peak, h.hp_released, h.hp_reused, h.spans_opened, h.spans_recycled, h.large_recycled,
	        h.residual_recycled, h.promotions, h.demotions);
	fprintf(f, "stalloc: pages (live blocks) by class:");
	for (unsigned c = 0; c < STP_LT_CLASSES; c++)
		fprintf(f, " %s %" PRIu64 " (%" PRIu64 ")", stp_lt_class_name(c), h.pages[c], h.blocks[c]);
	fprintf(f, "; %" PRIu64 " empty, not yet given back; %" PRIu64 " free blocks of sparse pages given back\n",
	        h.dirty_pages, h.blocks_released);
	fprintf(f, "stalloc: live %.2f MiB at exit (peak %.2f MiB), huge pages %.2f MiB\n",
	        (double)h.live_bytes / 1048576.0, (double)h.live_peak / 1048576.0,
	        (double)(h.hp_in_use * LT_HP) / 1048576.0);
	if (f != stderr) {
		fprintf(f, "mode=lifetimes allocations=%" PRIu64 " cache_hits=%" PRIu64 " misses=%" PRIu64 " known=%" PRIu64
		           " backoff=%" PRIu64 " fallback=%" PRIu64 " hp_in_use=%" PRIu64 " hp_peak=%" PRIu64
		           " hp_released=%" PRIu64 " spans_recycled=%" PRIu64 " promotions=%" PRIu64 " demotions=%" PRIu64
		           " live=%" PRIu64 " live_peak=%" PRIu64 "\n",
		        placed, hits, s.misses, s.known, s.backoff, s.fallback, h.hp_in_use, h.hp_peak, h.hp_released,
		        h.spans_recycled, h.promotions, h.demotions, h.live_bytes, h.live_peak);
		if (stp_outfile_commit(&out, err, sizeof err) < 0)
			fprintf(stderr, "stalloc: statistics not written: %s\n", err);
	}
}
