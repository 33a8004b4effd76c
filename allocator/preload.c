/*
 * preload.c - libstalloc.so's face to a host program: LD_PRELOAD it with
 * STALLOC_PLAN=FILE (`stprof run --plan FILE -- CMD` does) and the plan is
 * enforced on the program's allocations.
 *
 *   - A host plan: malloc, calloc, realloc, free, posix_memalign,
 *     aligned_alloc, memalign, valloc, malloc_usable_size.  Requests of at
 *     least the plan's min size go to the allocator (planned offset, or its
 *     fallback over glibc); smaller ones, and everything while no plan is
 *     loaded, go straight to glibc (__libc_*), with no lock.
 *   - A device plan: host calls pass through; preload_cuda.c takes
 *     cudaMalloc/cudaFree and PyTorch's pluggable-allocator calls.
 *   - A tensor plan (a PyTorch CPU run's tensor storages): the malloc
 *     family passes through; preload_torch.c takes c10::alloc_cpu/free_cpu.
 *   - A lifetime model (`stprof plan --lifetimes`): the whole malloc
 *     family goes to the lifetime heap (lifetime_preload.c), placed by the
 *     class each allocation's calling context predicts.
 *   - stprof_mark_v1 (the marker API of stprof/stprof.h): ITER_BEGIN starts
 *     an iteration of the plan.
 *
 * Environment: STALLOC_PLAN (the plan), STALLOC_PID (only that process
 * enforces it: programs it executes run as usual), STALLOC_PROGRAM
 * (instead of STALLOC_PID: the first process that runs this program
 * enforces it, as in a wrapper script's tree: program.c), STALLOC_RANK_PLANS
 * (instead of those two: a set of rank plans, STEM.rank<R>.plan, each
 * enforced by its rank's process alone: rank.c), STALLOC_STATS (1: the
 * statistics on stderr at exit, one write per block, so that the blocks of
 * ranks sharing stderr do not interleave; a path: written there, or to
 * PATH.rank<R> by a rank's process), STALLOC_MIN_SIZE
 * (overrides the plan's), STALLOC_LOOKAHEAD, STALLOC_LOG, STALLOC_HUGEPAGES
 * (backend_host.c).  A plan that cannot be read
 * is said once on stderr and the program runs on glibc alone.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "lifetime.h"
#include "program.h"
#include "rank.h"
#include "stprof/plan.h"

/* the caller of the malloc family: its return address and stack height
 * key the lifetime prediction */
#define LT_CALLER ((uintptr_t)__builtin_return_address(0)), ((uintptr_t)__builtin_frame_address(0))

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

#define EXPORT __attribute__((visibility("default")))

static stalloc *host;          /* the host plan's allocator, once ready */
static stalloc *tensors;       /* the same, when the plan is of PyTorch's tensors */
static uint64_t tensor_min;    /* smaller storages go to c10's own allocation */
static uint64_t tensor_small;  /* how many (atomic; stalloc_stats.small_passed) */
static uint64_t host_min = UINT64_MAX;
static stalloc *device;        /* the device plan's, made on first use */
static stp_reqs dev_r;         /* the device plan, kept until then */
static stp_plan dev_p;
static int dev_state;          /* 0 none, 1 plan read, 2 made, 3 failed */
static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static stalloc_opts opts;
static size_t (*real_usable_size)(void *);
static char stats_to[4096];
static long my_rank = -1;      /* with rank plans: the rank whose plan this process enforces */
static pid_t plan_pid;         /* the process that enforces the plan (its forked children print nothing) */
static char rank_plan[4096];

static void say(const char *msg)
{
	ssize_t r = write(2, msg, strlen(msg));
	(void)r;
}

static void fork_prepare(void)
{
	if (host)
		st_fork_prepare(host);
	if (device)
		st_fork_prepare(device);
}

static void fork_release(void)
{
	if (device)
		st_fork_release(device);
	if (host)
		st_fork_release(host);
}

/* A child the planned process forks (a DataLoader worker) is not the
 * planned process: its requests pass through (its recording was a trace of
 * its own, FILE.<pid>, not in the plan), while the blocks it inherited are
 * still freed to the pool; it writes no statistics (stalloc_fini).  It
 * kept the plan before: its requests, none of them planned, went to its
 * copy of the fallback, and its statistics, written at its exit, could
 * replace the planned process's. */
static void fork_child(void)
{
	fork_release();
	host_min = UINT64_MAX;
	tensor_min = UINT64_MAX;
}

/* Writes all of buf to fd (stderr: one write for a block, so that the
 * blocks of processes sharing it do not interleave line by line). */
static void write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		buf += w;
		n -= (size_t)w;
	}
}

static void write_stats(stalloc *a)
{
	stalloc_stats s;
	stalloc_stats_get(a, &s);
	if (a == tensors)
		s.small_passed = __atomic_load_n(&tensor_small, __ATOMIC_RELAXED);
	else if (a == host)
		s.small_uncounted = 1; /* planned(): straight to glibc, no counter on that path */
	int to_file = strcmp(stats_to, "1") != 0;
	/* the block is formatted whole, then written at once */
	static char block[16384];
	FILE *f = fmemopen(block, sizeof block, "w");
	if (!f)
		return;
	if (my_rank >= 0)
		fprintf(f, "stalloc: rank %ld (plan %s)\n", my_rank, rank_plan);
	stalloc_stats_print(f, &s);
	if (to_file) {
		/* machine-readable lines for tests and scripts */
		fprintf(f, "slot_hits=%llu pool=%llu hits=%llu dynamic_hits=%llu skipped=%llu reordered=%llu resyncs=%llu "
		           "occupied=%llu unmatched=%llu small=%llu fallbacks=%llu requests=%llu "
		           "peak_reserved=%llu peak_allocated=%llu pool_peak=%llu fb_peak=%llu "
		           "fb_reserved_peak=%llu iterations=%llu rehomed=%llu spare_hits=%llu startup_hits=%llu "
		           "free_hits=%llu small_passed=%llu threads=%llu\n",
		        (unsigned long long)s.slot_hits, (unsigned long long)s.pool, (unsigned long long)s.hits, (unsigned long long)s.dynamic_hits,
		        (unsigned long long)s.skipped, (unsigned long long)s.reordered, (unsigned long long)s.resyncs,
		        (unsigned long long)s.occupied, (unsigned long long)s.unmatched, (unsigned long long)s.small,
		        (unsigned long long)s.fallbacks, (unsigned long long)s.requests,
		        (unsigned long long)s.peak_reserved, (unsigned long long)s.peak_allocated,
		        (unsigned long long)s.pool_peak, (unsigned long long)s.fb_peak,
		        (unsigned long long)s.fb_reserved_peak, (unsigned long long)s.iterations,
		        (unsigned long long)s.rehomed, (unsigned long long)s.spare_hits,
		        (unsigned long long)s.startup_hits, (unsigned long long)s.free_hits,
		        (unsigned long long)s.small_passed, (unsigned long long)s.threads);
	}
	fflush(f);
	long n = ftell(f);
	fclose(f);
	if (n <= 0)
		return;
	if ((size_t)n >= sizeof block)
		n = (long)strlen(block);
	if (!to_file) {
		write_all(2, block, (size_t)n);
		return;
	}
	/* as every output of stprof's: beside the path, renamed into place;
	 * stprof run --plan checked the path before the program ran */
	stp_outfile out;
	char err[512];
	f = stp_outfile_open(&out, stats_to, &stp_outkind_stalloc_stats, err, sizeof err);
	if (!f) {
		fprintf(stderr, "stalloc: statistics not written: %s\n", err);
		return;
	}
	fwrite(block, 1, (size_t)n, f);
	if (stp_outfile_commit(&out, err, sizeof err) < 0)
		fprintf(stderr, "stalloc: statistics not written: %s\n", err);
}

__attribute__((constructor)) static void stalloc_init(void)
{
	/* the C library's malloc_usable_size, for the blocks it hands out: the
	 * next definition may be another allocator's (Redis links jemalloc) */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	if (libc)
		*(void **)&real_usable_size = dlsym(libc, "malloc_usable_size");
	const char *plan = getenv("STALLOC_PLAN");
	long rank = -1;
	int ranked = st_rank_plan(rank_plan, sizeof rank_plan, &rank);
	if (!ranked)
		return; /* the launcher, or a rank's descendant */
	if (ranked > 0) {
		if (access(rank_plan, F_OK) != 0) {
			char line[sizeof rank_plan + 96];
			snprintf(line, sizeof line, "stalloc: rank %ld: no plan %s; running without one\n", rank, rank_plan);
			say(line);
			return;
		}
		plan = rank_plan;
		my_rank = rank;
	} else {
		if (!plan || !*plan)
			return;
		const char *pid = getenv("STALLOC_PID");
		if (pid && *pid && strtol(pid, NULL, 10) != (long)getpid())
			return; /* a program the planned one executed */
		if (!st_program_planned())
			return; /* not the program the plan is of (a wrapper script's shell): program.c */
	}
	plan_pid = getpid();
	const char *st = getenv("STALLOC_STATS");
	if (st && *st && my_rank >= 0 && strcmp(st, "1")) {
		/* each rank's statistics in a file of its own */
		int n = snprintf(stats_to, sizeof stats_to, "%s.rank%ld", st, my_rank);
		if (n < 0 || (size_t)n >= sizeof stats_to)
			stats_to[0] = 0;
	} else if (st && *st && strlen(st) < sizeof stats_to)
		strcpy(stats_to, st);
	if (stp_lt_is_model(plan)) {
		lt_start(plan);
		return;
	}
	stalloc_opts_init(&opts);
	const char *v = getenv("STALLOC_MIN_SIZE");
	if (v && *v)
		opts.min_size = strtoull(v, NULL, 10);
	v = getenv("STALLOC_LOG");
	if (v && *v) {
		/* a debugging log, written as it goes: never through a link */
		int fd = open(v, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		opts.log = fd >= 0 ? fdopen(fd, "w") : NULL;
		/* a buffer of its own: stdio would malloc one at the first line,
		 * inside the allocator's lock */
		static char logbuf[1 << 16];
		if (opts.log)
			setvbuf(opts.log, logbuf, _IOFBF, sizeof logbuf);
	}
	v = getenv("STALLOC_LOOKAHEAD");
	if (v && *v)
		opts.lookahead = (uint32_t)strtoul(v, NULL, 10);
	char err[512];
	stp_reqs r;
	stp_plan p;
	stp_reqs_init(&r);
	memset(&p, 0, sizeof p);
	if (stp_plan_read(plan, &r, &p, err, sizeof err) < 0) {
		say("stalloc: ");
		say(err);
		say("; running without the plan\n");
		stp_reqs_free(&r);
		stp_plan_free(&p);
		return;
	}
	pthread_atfork(fork_prepare, fork_release, fork_child);
	if (r.device) {
		dev_r = r;
		dev_p = p;
		dev_state = 1;
		return;
	}
	static stalloc_backend b;
	stalloc_backend_host(&b);
	stalloc *a = stalloc_new(&r, &p, &b, &opts, err, sizeof err);
	host_min = opts.min_size == UINT64_MAX ? r.min_size : opts.min_size;
	int tensor_plan = r.tensors;
	stp_reqs_free(&r);
	stp_plan_free(&p);
	if (!a) {
		say("stalloc: ");
		say(err);
		say("; running without the plan\n");
		return;
	}
	if (!host_min)
		host_min = 1;
	if (tensor_plan) {
		/* c10::alloc_cpu's storages only (preload_torch.c); the malloc
		 * family stays glibc's, but frees still look at the pool */
		tensor_min = host_min;
		host_min = UINT64_MAX;
		__atomic_store_n(&tensors, a, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&host, a, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void stalloc_fini(void)
{
	/* the allocators stay: blocks may still be freed by later destructors */
	if (!stats_to[0])
		return;
	if (getpid() != plan_pid)
		return; /* a child the planned process forked: the statistics are its parent's */
	if (lt_on)
		lt_write_stats(stats_to);
	if (host)
		write_stats(host);
	if (device)
		write_stats(device);
}

stalloc *st_preload_tensors(uint64_t *min_size)
{
	*min_size = tensor_min;
	return __atomic_load_n(&tensors, __ATOMIC_ACQUIRE);
}

void st_preload_tensor_small(void) { __atomic_fetch_add(&tensor_small, 1, __ATOMIC_RELAXED); }

int st_preload_device_planned(void) { return __atomic_load_n(&dev_state, __ATOMIC_ACQUIRE) != 0; }

stalloc *st_preload_device(const stalloc_backend *b)
{
	if (__atomic_load_n(&dev_state, __ATOMIC_ACQUIRE) == 2)
		return device;
	if (!dev_state)
		return NULL;
	pthread_mutex_lock(&dev_lock);
	if (dev_state == 1) {
		char err[512];
		static stalloc_backend keep;
		keep = *b;
		stalloc *a = stalloc_new(&dev_r, &dev_p, &keep, &opts, err, sizeof err);
		stp_reqs_free(&dev_r);
		stp_plan_free(&dev_p);
		if (a) {
			device = a;
			__atomic_store_n(&dev_state, 2, __ATOMIC_RELEASE);
		} else {
			say("stalloc: ");
			say(err);
			say("; running without the plan\n");
			dev_state = 3;
		}
	}
	pthread_mutex_unlock(&dev_lock);
	return dev_state == 2 ? device : NULL;
}

/* ------------------------------------------------------------ markers */

EXPORT void stprof_mark_v1(int kind, const char *name, int64_t value)
{
	(void)name;
	(void)value;
	if (kind != 1 /* STPROF_ITER_BEGIN */)
		return;
	if (host)
		stalloc_step(host);
	if (device)
		stalloc_step(device);
}

/* ------------------------------------------------------------ malloc */

static inline stalloc *planned(size_t n)
{
	stalloc *a = __atomic_load_n(&host, __ATOMIC_ACQUIRE);
	return a && n >= host_min ? a : NULL;
}

/* 1 when p is ours (and then freed) */
static inline int our_free(void *p)
{
	stalloc *a = __atomic_load_n(&host, __ATOMIC_ACQUIRE);
	if (!a || !p || tensors)
		return 0; /* a tensor plan's blocks are freed by c10::free_cpu only */
	void *base;
	uint64_t size;
	stalloc_pool(a, &base, &size);
	int in_pool = (char *)p >= (char *)base && (char *)p < (char *)base + size;
	if (!in_pool && !st_maybe_fallback(a))
		return 0;
	return stalloc_free(a, p);
}

static inline uint64_t our_size(void *p)
{
	stalloc *a = __atomic_load_n(&host, __ATOMIC_ACQUIRE);
	return a && p && !tensors ? stalloc_size(a, p) : 0;
}

EXPORT void *malloc(size_t n)
{
	if (lt_on)
		return lt_malloc(n, LT_CALLER);
	stalloc *a = planned(n);
	if (a) {
		void *p = stalloc_alloc(a, n, ST_ALIGN_HOST);
		if (p)
			return p;
	}
	return __libc_malloc(n);
}

EXPORT void free(void *p)
{
	if (lt_on && lt_free(p))
		return;
	if (!our_free(p))
		__libc_free(p);
}

EXPORT void *calloc(size_t n, size_t m)
{
	if (lt_on)
		return lt_calloc(n, m, LT_CALLER);
	size_t t;
	if (__builtin_mul_overflow(n, m, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	stalloc *a = planned(t);
	if (a) {
		void *p = stalloc_alloc(a, t, ST_ALIGN_HOST);
		if (p) {
			memset(p, 0, t);
			return p;
		}
	}
	return __libc_calloc(n, m);
}

EXPORT void *realloc(void *p, size_t n)
{
	if (lt_on)
		return lt_realloc(p, n, LT_CALLER);
	if (!p)
		return malloc(n);
	uint64_t old = our_size(p);
	if (!old)
		return __libc_realloc(p, n); /* glibc's block stays glibc's */
	if (!n) {
		free(p);
		return NULL;
	}
	void *q = malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	free(p);
	return q;
}

static void *aligned(size_t align, size_t n, uintptr_t ret, uintptr_t sp)
{
	if (lt_on)
		return lt_aligned(align, n, ret, sp);
	stalloc *a = planned(n);
	if (a) {
		void *p = stalloc_alloc(a, n, align);
		if (p)
			return p;
	}
	return __libc_memalign(align, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	void *p = aligned(align, n, LT_CALLER);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (!align || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	return aligned(align, n, LT_CALLER);
}

EXPORT void *memalign(size_t align, size_t n)
{
	if (!align || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	return aligned(align, n, LT_CALLER);
}

EXPORT void *valloc(size_t n) { return aligned((size_t)sysconf(_SC_PAGESIZE), n, LT_CALLER); }

EXPORT void *pvalloc(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return aligned(pg, (n + pg - 1) / pg * pg, LT_CALLER);
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (lt_on)
		return lt_usable(p);
	uint64_t n = our_size(p);
	if (n)
		return (size_t)n;
	return p && real_usable_size ? real_usable_size(p) : 0;
}
