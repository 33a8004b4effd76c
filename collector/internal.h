/*
 * internal.h - the host collector's shared state (libstprof.so).  Internal to
 * collector/.
 *
 * Lock order, outermost first; no path takes them in another order:
 *     thread buffer (stc_tbuf.lock)  ->  output (g_out lock)  ->  defs (g_defs lock)
 * The module scanner's lock is only ever try-locked.  Nothing is held while
 * unwinding or while calling into the dynamic loader (dl_iterate_phdr): a
 * thread inside dlopen holds the loader lock and may call malloc.
 *
 * Memory for our own structures comes from mmap (stc_mem_*), never from the
 * heap we are recording.  Every interposed entry point sets a thread-local
 * "busy" flag so that allocations made by our own code, libunwind or libc
 * on our behalf are passed through unrecorded.
 */
#ifndef STPROF_COLLECTOR_INTERNAL_H
#define STPROF_COLLECTOR_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stprof/trace_codec.h"

#define STC_HIDDEN __attribute__((visibility("hidden")))
#define STC_EXPORT __attribute__((visibility("default")))
#define STC_TLS __attribute__((tls_model("initial-exec"))) __thread
#define STC_LIKELY(x) __builtin_expect(!!(x), 1)
#define STC_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---------------------------------------------------------------- config */
#define STC_DEPTH_DEFAULT 32
#define STC_DEPTH_MAX 256
#define STC_HOST_DEPTH_PYTHON 8 /* host-heap paths in a Python process (see config.c) */
#define STC_FLUSH_MS_DEFAULT 50

typedef struct stc_config {
	char output[4096];   /* STPROF_OUTPUT, or "stprof-<pid>.stp" */
	uint64_t min_size;   /* STPROF_MIN_SIZE: smaller allocations are not recorded */
	uint32_t depth;      /* STPROF_DEPTH: frames per call path, 0 = none */
	uint32_t host_depth; /* STPROF_HOST_DEPTH: frames per host-heap (malloc, new) path */
	uint8_t depth_set, host_depth_set; /* given by the environment */
	uint32_t flush_ms;   /* STPROF_FLUSH_MS: flush period, 1..100 */
	uint32_t unwind;     /* STPROF_UNWIND: STC_UNWIND_* */
	uint32_t accesses;   /* STPROF_ACCESSES: STC_ACCESSES_* */
	uint32_t sample_launches; /* STPROF_SAMPLE_LAUNCHES: exact accesses of every Nth launch, 0/1 = all */
} stc_config;
enum { STC_ACCESSES_NONE = 0, STC_ACCESSES_OPS = 1, STC_ACCESSES_EXACT = 2 };
enum { STC_UNWIND_FAST = 0, STC_UNWIND_LIBUNWIND = 1, STC_UNWIND_CHECK = 2 };

STC_HIDDEN extern stc_config g_cfg;
/* The host-heap depth when STPROF_HOST_DEPTH is not given: STPROF_DEPTH's,
 * or in a Python process (python != 0) without STPROF_DEPTH, 8. */
STC_HIDDEN void stc_config_host_depth(stc_config *c, int python);
/* Parses one option (name without the STPROF_ prefix); returns 0 if the
 * value was accepted, -1 if rejected (the option keeps its default). */
STC_HIDDEN int stc_config_set(stc_config *c, const char *name, const char *value);
STC_HIDDEN void stc_config_defaults(stc_config *c);
/* STPROF_QUIET is set (and not "0"): the collector's own stderr lines are
 * left out (stprof record -q). */
STC_HIDDEN int stc_quiet(void);
STC_HIDDEN void stc_config_from_env(stc_config *c);

/* ---------------------------------------------------------------- state */
enum { STC_OFF = 0, STC_INITIALIZING = 1, STC_ON = 2, STC_FINISHED = 3 };
STC_HIDDEN extern _Atomic int g_state;
STC_HIDDEN extern pid_t g_pid;           /* the process the state belongs to */
STC_HIDDEN extern STC_TLS int t_busy;    /* inside the collector on this thread */

/* ---------------------------------------------------------------- memory */
STC_HIDDEN void *stc_mem_alloc(size_t n); /* zeroed, page-granular, never fails silently: NULL */
STC_HIDDEN void stc_mem_free(void *p, size_t n);
/* The mmap'd array arr of *cap elements of elem bytes, doubled (first
 * elements when empty) with its first used ones kept: the new array (arr is
 * unmapped, *cap updated), or NULL with nothing changed. */
STC_HIDDEN void *stc_mem_grow(void *arr, size_t *cap, size_t used, size_t elem, size_t first);

/* ---------------------------------------------------------------- real functions */
typedef struct stc_real {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
	int (*sigaction)(int, const void *, void *);
	void (*_exit)(int) __attribute__((noreturn));
	void (*_Exit)(int) __attribute__((noreturn));
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execveat)(int, const char *, char *const[], char *const[], int);
	int (*fexecve)(int, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*pipe2)(int[2], int);
	int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	int (*unshare)(int);
	int (*setns)(int, int);
	int (*dlclose)(void *);
} stc_real;
STC_HIDDEN extern stc_real g_real;
/* Resolves g_real with dlsym(RTLD_NEXT); allocations made meanwhile come
 * from a static bootstrap arena. */
STC_HIDDEN void stc_real_resolve(void);
STC_HIDDEN int stc_real_resolved(void);
STC_HIDDEN void *stc_boot_alloc(size_t n, size_t align);
STC_HIDDEN int stc_boot_owns(const void *p);

/* ---------------------------------------------------------------- events */
/* Records an event from the calling thread: assigns seq and time, encodes it
 * into the thread's buffer.  ev->type and payload must be set. */
STC_HIDDEN void stc_emit(stp_event *ev);
/* Records a definition-carried event (process, thread, module) into the
 * DEFS buffer with a fresh seq. */
STC_HIDDEN void stc_emit_def_event(stp_event *ev);
/* Like stc_emit for an API call that began at begin_ns and ends now: the
 * event's time is begin_ns (never before the thread's previous event in its
 * buffer), end_ns is now. */
STC_HIDDEN void stc_emit_span(stp_event *ev, uint64_t begin_ns);
/* The CUDA backend (cuda_*.c), NULL while it is off.  flush: drains CUPTI's
 * activity buffers (the flusher each period, and at the end; final = the
 * last time).  mark: called by every flush round just before its watermark
 * (try = from a signal handler: write nothing, take no lock that may be
 * held); writes the held API events that got their device time and returns
 * the watermark lowered below the seq of any still held. */
STC_HIDDEN extern void (*_Atomic g_cuda_flush_hook)(int final);
STC_HIDDEN extern uint64_t (*_Atomic g_cuda_mark_hook)(uint64_t mark, int try_only);
/* The preload path of the CUDA backend (end of stc_init), and its last
 * activity flush (stc_finish).  No-ops when it is not built in. */
STC_HIDDEN void stc_cuda_preload_init(void);
STC_HIDDEN void stc_cuda_finish(void);
STC_HIDDEN uint64_t stc_now(void);
STC_HIDDEN uint32_t stc_gettid(void);

/* ---------------------------------------------------------------- thread buffers */
#define STC_BUF_SIZE (256u << 10)
typedef struct stc_buf {        /* one chunk's worth of events */
	struct stc_buf *next;   /* in the pool's free list or ready queue */
	uint32_t tid;
	size_t len;             /* payload bytes after the header space */
	stp_enc_state st;
	uint8_t data[STC_BUF_SIZE];
} stc_buf;

typedef struct stc_tbuf {       /* one thread's recording state */
	atomic_int lock;
	atomic_int owned;       /* a live thread uses it */
	uint32_t tid;
	stc_buf *cur;           /* the buffer being filled */
	struct stc_tbuf *next;  /* registry, append-only */
	atomic_int plock;       /* call paths waiting for definitions: */
	struct stc_pblock *phead, *ptail; /* a chain of blocks, appended at the tail */
	void *ucache;           /* the unwinder's step cache, kept with the slot */
} stc_tbuf;

/* A block of pending call paths: records u32 id, u32 n, u64 ips[n]. */
#define STC_PBLOCK_SIZE (256u << 10)
typedef struct stc_pblock {
	struct stc_pblock *next;
	size_t len;
	uint8_t data[STC_PBLOCK_SIZE - 16];
} stc_pblock;

STC_HIDDEN void stc_spin_lock(atomic_int *l);
STC_HIDDEN int stc_spin_trylock(atomic_int *l);
STC_HIDDEN void stc_spin_unlock(atomic_int *l);
/* The flusher: sleep until a buffer is queued or ms pass; write the queue. */
STC_HIDDEN void stc_tbuf_wait(unsigned ms);
STC_HIDDEN void stc_tbuf_write_ready(void);
/* Pending call paths: added by the thread that saw them first, drained
 * (turned into definitions) by whoever writes the next chunk.  The drain
 * calls fn(0, NULL, 0) before the frames it passed may be reused: fn may
 * keep the pointers until then. */
STC_HIDDEN int stc_pending_add(uint32_t id, const uint64_t *ips, uint32_t n);
STC_HIDDEN void stc_pending_drain(int try_only, void (*fn)(uint32_t id, const uint64_t *ips, uint32_t n));

STC_HIDDEN void stc_tbuf_init(void);
STC_HIDDEN stc_tbuf *stc_tbuf_self(void);
/* Writes every buffer (blocking on each one's lock) and a watermark. */
STC_HIDDEN void stc_tbuf_flush_all(void);
/* From a fatal-signal handler: only buffers whose lock is free. */
STC_HIDDEN void stc_tbuf_flush_all_try(void);
STC_HIDDEN void stc_tbuf_atfork_child(void);
STC_HIDDEN void stc_tbuf_announce(void);
STC_HIDDEN extern atomic_uint_fast64_t g_seq;

/* ---------------------------------------------------------------- output */
STC_HIDDEN int stc_out_open(void);            /* opens the trace file, writes header */
STC_HIDDEN int stc_out_ready(void);
/* Writes a chunk whose payload sits at buf+STP_CHUNK_HEADER_SIZE (header
 * filled here).  The DEFS buffer is written first. Caller holds no output lock. */
STC_HIDDEN void stc_out_chunk(unsigned type, uint32_t tid, uint8_t *buf, size_t payload_len);
/* Same, with the output lock already held by the caller (stc_out_lock). */
STC_HIDDEN void stc_out_chunk_locked(unsigned type, uint32_t tid, uint8_t *buf, size_t payload_len);
STC_HIDDEN void stc_out_lock(void);
STC_HIDDEN int stc_out_trylock(void);
STC_HIDDEN void stc_out_unlock(void);
STC_HIDDEN void stc_out_watermark_locked(uint64_t next_seq);
/* Writes the END chunk and closes. Returns the offset the END started at, or
 * -1 when nothing was written. */
STC_HIDDEN long long stc_out_end_locked(uint32_t reason, int32_t value);
/* Undoes an END written before an execve that failed. */
STC_HIDDEN void stc_out_undo_end(long long offset);
STC_HIDDEN void stc_out_atfork_child(void);

/* ---------------------------------------------------------------- defs */
STC_HIDDEN void stc_defs_init(void);
STC_HIDDEN uint32_t stc_intern_string(const char *s, size_t len);
/* Interns a call path (innermost first); returns its stack id, 0 on failure. */
STC_HIDDEN uint32_t stc_intern_stack(const uint64_t *ips, uint32_t n);
/* Defines every pending call path and writes the definitions; caller holds
 * the output lock.  The _try form only try-locks (signal handlers). */
STC_HIDDEN void stc_defs_flush_locked(void);
STC_HIDDEN void stc_defs_flush_try(void);
STC_HIDDEN void stc_defs_lock(void);
STC_HIDDEN void stc_defs_unlock(void);
STC_HIDDEN void stc_defs_atfork_child(void);
/* The exiting thread gives its call-path cache back for the next thread. */
STC_HIDDEN void stc_defs_thread_exit(void);

/* ---------------------------------------------------------------- unwind / modules */
STC_HIDDEN void stc_unwind_init(void);
/* Fills up to max return addresses of the calling thread, innermost first,
 * starting at the caller of the interposed function. */
STC_HIDDEN uint32_t stc_unwind(uint64_t *ips, uint32_t max);
/* Gives the calling thread the slot's step cache (made on first use);
 * _exit: the thread gave its slot back, it stops using the cache. */
STC_HIDDEN void stc_unwind_thread_init(stc_tbuf *slot);
STC_HIDDEN void stc_unwind_thread_exit(void);
/* Set while this thread is inside libunwind (fds.c moves the pipe it opens). */
STC_HIDDEN extern STC_TLS int t_in_libunwind;
/* The lowest descriptor the collector keeps for itself (above the program's). */
#define STC_FD_BASE 512
STC_HIDDEN void stc_unwind_invalidate(void);
/* With STPROF_UNWIND=check: call paths compared with libunwind's, mismatches. */
STC_HIDDEN void stc_unwind_check_counts(uint64_t *checked, uint64_t *mismatched);
STC_HIDDEN void stc_modules_scan(void);
struct dl_phdr_info;
/* The span [lo, hi) of an object's PT_LOAD segments; 0 when it has none. */
STC_HIDDEN int stc_phdr_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi);
STC_HIDDEN void stc_modules_atfork_child(void);

/* ---------------------------------------------------------------- python (pyframes.c) */
/* The process runs CPython (its C API could be found). */
STC_HIDDEN int stc_py_active(void);
/* ip lies in the object holding the interpreter's eval loop. */
STC_HIDDEN int stc_py_in_interpreter(uint64_t ip);
/* Up to max Python frames of the calling thread, innermost first, as
 * STP_PYFRAME_TAG | string id.  A Python thread that does not hold the GIL
 * takes it for the walk as take_gil says (STC_GIL_*), else gets none; 0
 * for a thread Python did not create. */
enum {
	STC_GIL_NEVER = 0,    /* only if the thread holds it already */
	STC_GIL_IF_ALONE = 1, /* also when it is the interpreter's only thread (nothing can hold it) */
	STC_GIL_WAIT = 2,     /* also by waiting: the caller holds no lock another thread may wait for with the GIL */
};
STC_HIDDEN uint32_t stc_py_frames(uint64_t *ips, uint32_t max, int take_gil);

/* ---------------------------------------------------------------- torch (torch_common.c) */
/* The call path of a tensor allocated now (native frames up to the
 * interpreter, then Python frames); take_gil as for stc_py_frames.
 * Returns its stack id, 0 for none. */
STC_HIDDEN uint32_t stc_tensor_stack(int take_gil);
/* libc10.so's own definition of name, NULL when there is none. */
STC_HIDDEN void *stc_c10_sym(const char *name);

/* ---------------------------------------------------------------- lifecycle */
STC_HIDDEN void stc_init(void);
/* The flusher thread starts lazily (flusher.c): when the program creates a
 * thread, or at its first event one flush period after start.  Until then a
 * single-threaded program stays single-threaded. */
STC_HIDDEN void stc_flusher_start(void);
STC_HIDDEN void stc_flusher_arm(void);            /* start of a process image */
STC_HIDDEN void stc_flusher_lazy(uint64_t now);   /* from stc_emit, while not running */
STC_HIDDEN int stc_flusher_stop(void);            /* joins it; 1 if it was running */
STC_HIDDEN void stc_flusher_atfork_child(void);
STC_HIDDEN extern atomic_int g_flusher_on;
/* The main thread called pthread_exit: the flusher ends the process when it
 * is the last thread left, as glibc does for the last program thread. */
STC_HIDDEN extern atomic_int g_main_exited;
STC_HIDDEN void stc_tbuf_wake(void);
/* First event in a process: opens the output (lazily in fork children). */
STC_HIDDEN int stc_ensure_output(void);
STC_HIDDEN void stc_signals_install(void);
STC_HIDDEN void stc_finish(uint32_t reason, int32_t value);
STC_HIDDEN void stc_emergency_finish(int sig);

/* ---------------------------------------------------------------- recording */
STC_HIDDEN void stc_record_alloc(void *p, size_t size);
STC_HIDDEN void stc_record_free(void *p);
#endif
