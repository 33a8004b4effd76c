/*
 * internal.h - what the files of the collector's core share (libstprof.so);
 * internal to collector/core/.  The backends see face.h only, which this
 * header includes.
 *
 * Two more headers, for the few files that need them: tbuf.h (the thread
 * buffers and the inline path of an event into them) and spin.h.
 *
 * The core's files call one another one way (tests/layout checks it), from
 * the entry points down:
 *     lifecycle, daemon, isolate, signals, preload, marker, api_entry
 *       -> emit (stc_emit: the output opened first, the flusher started)
 *       -> process (stc_ensure_output: the trace and what it announces)
 *       -> flusher -> tbuf (thread buffers, flush rounds) -> modules
 *       -> defs (strings, call paths) -> pending, output, unwind
 *       -> state, config, mem, realfn, cfi, phdr, hooks, devobj
 * and, beside them, the Python frames the backends add to call paths:
 *     pypath -> pyframes -> pylayout -> pylines -> defs
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

#include "face.h"

/* ---------------------------------------------------------------- Python frames (face.h; pyframes.c ...) */
/* pylines.c: the string id cached for (code, pos, k1, k2), 0 when none;
 * put caches id and returns the id cached (an earlier one wins). */
STC_HIDDEN uint32_t stc_py_lines_get(const void *code, long pos, uintptr_t k1, uintptr_t k2);
STC_HIDDEN uint32_t stc_py_lines_put(const void *code, long pos, uintptr_t k1, uintptr_t k2, uint32_t id);
/* pylayout.c: finds and checks the layout (the GIL held): 1 when usable;
 * its state (0 not probed yet, 1 usable, 2 not usable: the GIL path); the
 * calling thread's frames read in place. */
STC_HIDDEN int stc_py_layout_probe(void);
STC_HIDDEN int stc_py_layout_state(void);
STC_HIDDEN uint32_t stc_py_layout_walk(uint64_t *ips, uint32_t max);
/* pylayout.c: the frames stc_py_layout_walk would name (at most max), read
 * in place but not named: *key a hash of each one's (code object, offset,
 * file and name objects), for lean iterations (pypath.c); the count. */
STC_HIDDEN uint32_t stc_py_layout_key(uint32_t max, uint64_t *key);
/* The lean key's hash (pypath.c, pylayout.c): from STC_HASH_SEED, one
 * step per frame. */
#define STC_HASH_SEED 0x9e3779b97f4a7c15ull
static inline uint64_t stc_hash_step(uint64_t h, uint64_t v)
{
	h ^= v + STC_HASH_SEED + (h << 6) + (h >> 2);
	return h * 0xbf58476d1ce4e5b9ull;
}
/* pybackward.c: while a backward pass runs, the Python frames it was
 * started from after a "<backward>" frame; 0 otherwise.  The site of the
 * module whose backward the calling thread runs (its forward line after a
 * "<backward>:0 in MODULE" frame); 0 when none. */
STC_HIDDEN uint32_t stc_py_backward_origin(uint64_t *ips, uint32_t max);
STC_HIDDEN uint32_t stc_py_backward_site(uint64_t *ips, uint32_t max);
STC_HIDDEN void stc_py_backward_atfork_child(void);
/* In a forked child: the locks a thread that is gone may have held
 * (pybackward.c's and pylines.c's, through stc_py_atfork_child). */
STC_HIDDEN void stc_py_atfork_child(void);
STC_HIDDEN void stc_py_lines_atfork_child(void);

/* ---------------------------------------------------------------- config (config.c) */
/* The process-dependent defaults: the host-heap depth when
 * STPROF_HOST_DEPTH is not given (STPROF_DEPTH's, or in a Python process
 * (python != 0) without STPROF_DEPTH, 8), and the host-heap sampling when
 * STPROF_HEAP_SAMPLE is not given (none, or in a Python process 64 KiB;
 * none at all under STPROF_FULL=1). */
STC_HIDDEN void stc_config_host_depth(stc_config *c, int python);
/* Parses one option (name without the STPROF_ prefix); returns 0 if the
 * value was accepted, -1 if rejected (the option keeps its default). */
STC_HIDDEN int stc_config_set(stc_config *c, const char *name, const char *value);
STC_HIDDEN void stc_config_defaults(stc_config *c);
STC_HIDDEN void stc_config_from_env(stc_config *c);

/* ---------------------------------------------------------------- skipped images (skipexec.c) */
/* The toolchain programs a program runs (JIT compilers' drivers,
 * compilers, assemblers, linkers, build tools), and the shells and
 * utilities that wrapper scripts (pyenv's shims, launch scripts) and
 * libraries (ctypes.util's ldconfig, a git hash for the logs) run: not
 * recorded unless they are the recorded command itself. */
#define STC_SKIP_EXEC_DEFAULT \
	"cc,c++,cpp,*gcc,*g++,*gcc-[0-9]*,*g++-[0-9]*,cc1*,collect2,lto1,lto-wrapper,as,*-as,ld,ld.*,*-ld,*-ld.*," \
	"clang,clang++,clang-[0-9]*,clang++-[0-9]*,nvcc,ptxas,cicc,fatbinary,nvlink,cudafe++,ninja,make," \
	"sh,bash,dash,zsh,ksh,mksh,ash,busybox,env,cat,sed,awk,gawk,mawk,grep,egrep,fgrep,head,tail,cut,tr," \
	"sort,uniq,wc,readlink,realpath,dirname,basename,uname,mkdir,rm,ls,cp,mv,ln,touch,chmod,date,id," \
	"tput,which,hostname,nproc,sleep,tee,xargs,find,stat,expr,seq,getconf,ldconfig,ldconfig.real,objdump," \
	"git,ps,lscpu,nvidia-smi"
/* 1 when name matches one of the comma-separated fnmatch(3) patterns of
 * list (empty patterns, and patterns of 256 bytes or more, match nothing). */
STC_HIDDEN int stc_skip_exec_match(const char *list, const char *name);
/* 1 when this image is not to be recorded (see skipexec.c); claims the
 * recorded command's pid for descendants when no image has yet. */
STC_HIDDEN int stc_skip_exec_image(void);

/* ---------------------------------------------------------------- state (state.c) */
/* The main thread called pthread_exit: the flusher ends the process when it
 * is the last thread left, as glibc does for the last program thread. */
STC_HIDDEN extern atomic_int g_main_exited;

/* ---------------------------------------------------------------- real functions (realfn.c) */
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
	int (*sigaltstack)(const void *, void *);
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
STC_HIDDEN extern atomic_int g_real_state; /* 2 once g_real is set */
static inline int stc_real_resolved(void)
{
	return atomic_load_explicit(&g_real_state, memory_order_acquire) == 2;
}
STC_HIDDEN void *stc_boot_alloc(size_t n, size_t align);
/* Inline: every free and realloc asks (a range test of the static arena). */
#define STC_BOOT_SIZE (256u << 10)
STC_HIDDEN extern uint8_t g_boot_arena[STC_BOOT_SIZE];
static inline int stc_boot_owns(const void *p)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)g_boot_arena;
	return a - b < STC_BOOT_SIZE;
}

/* ---------------------------------------------------------------- skipped Python code (pyskip.c) */
#define STC_PY_SKIP_MAX 16
STC_HIDDEN extern _Atomic(uintptr_t) g_py_skip[STC_PY_SKIP_MAX];
STC_HIDDEN extern atomic_uint g_py_nskip;
/* Whether frames of this code object are left out of Python call paths. */
static inline int stc_py_skip_code(uintptr_t code)
{
	unsigned n = atomic_load_explicit(&g_py_nskip, memory_order_acquire);
	for (unsigned i = 0; i < n; i++)
		if (atomic_load_explicit(&g_py_skip[i], memory_order_relaxed) == code)
			return 1;
	return 0;
}

/* ---------------------------------------------------------------- backends' hooks (hooks.c) */
/* Each runs the hook of every registered backend that has one, in link
 * order (face.h); mark returns the watermark lowered by every backend. */
STC_HIDDEN void stc_backends_start(void);
STC_HIDDEN void stc_backends_finish(void);
STC_HIDDEN void stc_backends_fork_prepare(void);
STC_HIDDEN void stc_backends_fork_parent(void);
STC_HIDDEN void stc_backends_fork_child(void);
STC_HIDDEN void stc_backends_flush(int final);
STC_HIDDEN uint64_t stc_backends_mark(uint64_t mark, int try_only);

/* ---------------------------------------------------------------- device objects (devobj.c) */
/* In a forked child: the mutex may have been held by a thread that is gone. */
STC_HIDDEN void stc_devobj_atfork_child(void);

/* ---------------------------------------------------------------- per-thread records (slots.c) */
/* The head of a record that lives in an append-only registry (its first
 * member): the record's spinlock (spin.h: its thread takes it, only a flush
 * round or a drain contends), whether a live thread owns it, the link. */
typedef struct stc_slot {
	atomic_int lock;
	atomic_int owned;
	struct stc_slot *next;      /* the registry, append-only */
} stc_slot;
/* A record of *head no live thread owns, else a new one of size bytes
 * (zeroed), linked; owned by the caller now.  NULL when out of memory. */
STC_HIDDEN stc_slot *stc_slot_claim(stc_slot *_Atomic *head, size_t size);

/* ---------------------------------------------------------------- pending call paths (pending.c) */
/* Call paths that have an id and wait for their definition: added by the
 * thread that saw them first, drained (turned into definitions) by whoever
 * writes the next chunk.  The drain calls fn(0, NULL, 0) before the frames
 * it passed may be reused: fn may keep the pointers until then. */
STC_HIDDEN int stc_pending_add(uint32_t id, const uint64_t *ips, uint32_t n);
STC_HIDDEN void stc_pending_drain(int try_only, void (*fn)(uint32_t id, const uint64_t *ips, uint32_t n));
/* The exiting thread's list is kept for the drain and given to the next. */
STC_HIDDEN void stc_pending_thread_exit(void);
STC_HIDDEN void stc_pending_atfork_child(void);

/* ---------------------------------------------------------------- output (output.c) */
STC_HIDDEN int stc_out_open(void);            /* opens the trace file, writes header */
STC_HIDDEN int stc_out_ready(void);
/* Writes a chunk whose payload sits at buf+STP_CHUNK_HEADER_SIZE (header
 * filled here), with the output lock already held by the caller (stc_out_lock).
 * stc_out_chunk (face.h, defs.c) also writes the definitions first. */
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
/* This process is rank R, learnt after it started (rank_late.c): its trace
 * is renamed <output>.rank<R>[.<n>] unless it is a launcher's rank already
 * or holds the configured path.  0 when renamed. */
STC_HIDDEN int stc_out_take_rank(long rank);

/* ---------------------------------------------------------------- defs (defs.c) */
STC_HIDDEN void stc_defs_init(void);
/* Records a definition-carried event (process, thread, module) into the
 * DEFS buffer with a fresh seq. */
STC_HIDDEN void stc_emit_def_event(stp_event *ev);
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
/* The calling thread's stack bounds and step cache (made on first use, and
 * by the thread's first walk); _exit: the thread gives the cache back. */
STC_HIDDEN void stc_unwind_thread_init(void);
STC_HIDDEN void stc_unwind_thread_exit(void);
STC_HIDDEN void stc_unwind_atfork_child(void);
/* altstack.c: each recorded thread's alternate signal stack */
STC_HIDDEN void stc_altstack_thread_init(void);
STC_HIDDEN void stc_altstack_thread_exit(void);
STC_HIDDEN void stc_altstack_atfork_child(void);
/* Set while this thread is inside libunwind (fds.c moves the pipe it opens). */
STC_HIDDEN extern STC_TLS int t_in_libunwind;
/* The lowest descriptor the collector keeps for itself (above the program's). */
#define STC_FD_BASE 512
STC_HIDDEN void stc_unwind_invalidate(void);
/* With STPROF_UNWIND=check: call paths compared with libunwind's, mismatches. */
STC_HIDDEN void stc_unwind_check_counts(uint64_t *checked, uint64_t *mismatched);
STC_HIDDEN void stc_modules_scan(void);
STC_HIDDEN void stc_modules_atfork_child(void);

/* ---------------------------------------------------------------- process image (process.c, lifecycle.c) */
/* What a trace says of its process first: PROCESS (seq 0), its modules; and
 * the options a reader should know of (after the thread's THREAD). */
STC_HIDDEN void stc_announce_process(void);
STC_HIDDEN void stc_announce_options(void);
STC_HIDDEN void stc_process_atfork_child(void);
STC_HIDDEN void stc_init(void);
/* The flusher thread starts lazily (flusher.c): when the program creates a
 * thread, or at its first event one flush period after start.  Until then a
 * single-threaded program stays single-threaded. */
STC_HIDDEN void stc_flusher_start(void);
STC_HIDDEN void stc_flusher_arm(void);            /* start of a process image */
STC_HIDDEN int stc_flusher_stop(void);            /* joins it; 1 if it was running */
STC_HIDDEN void stc_flusher_atfork_child(void);
STC_HIDDEN void stc_signals_install(void);
STC_HIDDEN void stc_finish(uint32_t reason, int32_t value);
STC_HIDDEN void stc_emergency_finish(int sig);

/* ---------------------------------------------------------------- recording (preload.c) */
STC_HIDDEN void stc_record_alloc(void *p, size_t size);
STC_HIDDEN void stc_record_free(void *p);
#endif
