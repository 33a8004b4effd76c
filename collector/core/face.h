/*
 * face.h - what the collector's core (collector/core/) shows its backends
 * (collector/cuda/, collector/sanitizer/, collector/torch/, collector/jax/):
 * the one header a backend includes from the core.  Everything else of the core is its own
 * (core/internal.h).
 *
 *   - recording an event: stc_emit (now), stc_emit_span (an API call that
 *     began earlier), the call path of the caller (stc_unwind) and its
 *     stack id (stc_intern_stack), strings (stc_intern_string), the
 *     libraries whose frames a path leaves out (stc_modset);
 *   - clock, thread id, the process's state and options (g_cfg);
 *   - memory that is not the recorded heap (stc_mem_*);
 *   - the live GPU-visible objects every device backend shares (stc_devobj_*);
 *   - the calling thread's Python frames (stc_py_*), which the PyTorch
 *     and CUDA backends both add to call paths;
 *   - who records what, so no byte and no launch is recorded twice
 *     (g_torch_cuda_mode and the claims beside it);
 *   - a backend's hooks (stc_backend): start, finish, fork, flush rounds.
 *
 * Rules: a backend calls the core and nothing else of the collector (never
 * another backend: what two backends must agree on lives in the core, as
 * the claims do); the core never calls a backend by name, only through the
 * hooks a backend registers (STC_BACKEND).  Hooks are for the life of the
 * process image and the flush rounds, never for an event's path: emitting
 * costs no indirect call.
 *
 * Lock order (outermost first): a backend's own lock -> thread buffer ->
 * output -> definitions.  A hook runs with none of the core's locks held,
 * except mark (flush lock; see below).
 */
#ifndef STPROF_COLLECTOR_FACE_H
#define STPROF_COLLECTOR_FACE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "stprof/trace_codec.h"

#define STC_HIDDEN __attribute__((visibility("hidden")))
#define STC_EXPORT __attribute__((visibility("default")))
#define STC_TLS __attribute__((tls_model("initial-exec"))) __thread
#define STC_LIKELY(x) __builtin_expect(!!(x), 1)
#define STC_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---------------------------------------------------------------- options (config.c) */
#define STC_DEPTH_DEFAULT 32
#define STC_DEPTH_MAX 256
#define STC_HOST_DEPTH_PYTHON 8 /* host-heap paths in a Python process (see config.c) */
#define STC_HEAP_SAMPLE_PYTHON (64u << 10) /* host-heap sampling interval in a Python process (sample.c) */
#define STC_HEAP_FULL_ITERS_DEFAULT 2
#define STC_FOLD_KEEP_DEFAULT 2 /* first and last iterations kept in full (fold.c) */
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
	uint64_t heap_sample;     /* STPROF_HEAP_SAMPLE: host-heap sampling interval, bytes; 0 = every allocation */
	uint32_t heap_full_iters; /* STPROF_HEAP_FULL_ITERS: the first N iterations record every heap allocation */
	uint8_t heap_sample_set;  /* given by the environment */
	uint8_t full;             /* STPROF_FULL: every event (no sampling, no folding) */
	uint32_t fold_keep;       /* STPROF_FOLD_KEEP: iterations kept in full at each end; 0 = no folding */
	uint8_t lean;             /* STPROF_LEAN: steady iterations of a Python loop recorded lean (fold.c; default 1) */
	char skip_exec[1024];     /* STPROF_SKIP_EXEC: images not recorded (skipexec.c); "" = none */
} stc_config;
enum { STC_ACCESSES_NONE = 0, STC_ACCESSES_OPS = 1, STC_ACCESSES_EXACT = 2 };
enum { STC_UNWIND_FAST = 0, STC_UNWIND_LIBUNWIND = 1, STC_UNWIND_CHECK = 2 };

STC_HIDDEN extern stc_config g_cfg;
/* STPROF_QUIET is set (and not "0"): the collector's own stderr lines are
 * left out (stprof record -q). */
STC_HIDDEN int stc_quiet(void);

/* ---------------------------------------------------------------- state (state.c) */
enum { STC_OFF = 0, STC_INITIALIZING = 1, STC_ON = 2, STC_FINISHED = 3 };
STC_HIDDEN extern _Atomic int g_state;
STC_HIDDEN extern pid_t g_pid;           /* the process the state belongs to */
/* Inside the collector on this thread: the allocations (and CUDA calls) it
 * makes are passed through unrecorded.  Every entry point sets it. */
STC_HIDDEN extern STC_TLS int t_busy;
/* t_busy's value while c10::alloc_cpu runs (torch_cpu.c): busy until the
 * aligned allocation under it returns, which clears it (and records a
 * refusal: preload.c).  c10 throws after a refused one, through the
 * interposed frame, which then cannot clear it. */
#define STC_BUSY_UNTIL_ALIGNED 2
/* The next event's sequence number; an event's seq is taken when it is
 * recorded (or held: the CUDA backend's launches). */
STC_HIDDEN extern atomic_uint_fast64_t g_seq;

static inline uint64_t stc_now(void) /* CLOCK_MONOTONIC, ns: every event's clock */
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
STC_HIDDEN uint32_t stc_gettid(void);

/* ---------------------------------------------------------------- memory (mem.c) */
STC_HIDDEN void *stc_mem_alloc(size_t n); /* zeroed, page-granular, never fails silently: NULL */
STC_HIDDEN void stc_mem_free(void *p, size_t n);
/* The mmap'd array arr of *cap elements of elem bytes, doubled (first
 * elements when empty) with its first used ones kept: the new array (arr is
 * unmapped, *cap updated), or NULL with nothing changed. */
STC_HIDDEN void *stc_mem_grow(void *arr, size_t *cap, size_t used, size_t elem, size_t first);

/* ---------------------------------------------------------------- events */
/* Records an event from the calling thread: assigns seq and time, encodes it
 * into the thread's buffer.  ev->type and payload must be set. (emit.c) */
STC_HIDDEN void stc_emit(stp_event *ev);
/* Like stc_emit for an API call that began at begin_ns and ends now: the
 * event's time is begin_ns (never before the thread's previous event in its
 * buffer), end_ns is now. (emit.c) */
STC_HIDDEN void stc_emit_span(stp_event *ev, uint64_t begin_ns);
/* (defs.c) */
STC_HIDDEN uint32_t stc_intern_string(const char *s, size_t len);
/* Interns a call path (innermost first); returns its stack id, 0 on failure. */
STC_HIDDEN uint32_t stc_intern_stack(const uint64_t *ips, uint32_t n);
/* Fills up to max return addresses of the calling thread, innermost first,
 * starting at the caller of the collector's entry point. (unwind.c) */
STC_HIDDEN uint32_t stc_unwind(uint64_t *ips, uint32_t max);
struct dl_phdr_info;
/* The span [lo, hi) of an object's PT_LOAD segments; 0 when it has none. (phdr.c) */
STC_HIDDEN int stc_phdr_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi);

/* Named libraries in memory (modspan.c): a set of file-name prefixes
 * ("libcuda.so", ...) and, once found, the spans of the loaded objects
 * that carry them.  stc_modset_scan looks them up (again only while one is
 * missing, and then only when the loader's list of objects changed since:
 * a program linked with the static CUDA runtime never loads libcudart.so,
 * and a callback must not walk the list every time); stc_modset_has says whether ip lies in prefix m's objects;
 * stc_modset_skip counts the leading ips that lie in the first nskip
 * prefixes' objects (the frames to drop from a call path). */
#define STC_MODSET_MAX 8
typedef struct stc_modspan {
	uintptr_t lo, hi;
} stc_modspan;
typedef struct stc_modset {
	const char *const *prefix;
	unsigned n; /* <= STC_MODSET_MAX */
	stc_modspan span[STC_MODSET_MAX][2];
	_Atomic int done[STC_MODSET_MAX];
	_Atomic unsigned long long loads; /* the loader's adds + subs at the last walk (0: none yet) */
} stc_modset;
STC_HIDDEN void stc_modset_scan(stc_modset *set);
STC_HIDDEN int stc_modset_has(const stc_modset *set, unsigned m, uint64_t ip);
STC_HIDDEN uint32_t stc_modset_skip(const stc_modset *set, unsigned nskip, const uint64_t *ips, uint32_t d);

/* Events a backend writes itself, in EVENTS chunks of its own (the CUDA
 * backend's launches, held until their device time is known):
 *   stc_ensure_output  the first event of a process image opens the trace
 *                      (lazily in a fork child); 0 when it cannot be written
 *   stc_out_chunk      writes a chunk whose payload sits at
 *                      buf + STP_CHUNK_HEADER_SIZE (the definitions it needs
 *                      first); the caller holds no output lock
 *   stc_flusher_lazy   starts the flusher thread when it is due (call it
 *                      when g_flusher_on is 0, as stc_emit does) */
STC_HIDDEN int stc_ensure_output(void);
STC_HIDDEN void stc_out_chunk(unsigned type, uint32_t tid, uint8_t *buf, size_t payload_len);
STC_HIDDEN extern atomic_int g_flusher_on;
STC_HIDDEN void stc_flusher_lazy(uint64_t now);
#define STC_BUF_SIZE (256u << 10) /* a thread buffer: the most an EVENTS chunk holds */

/* ---------------------------------------------------------------- Python frames (pyframes.c ...) */
/*
 * The calling thread's Python frames, for the backends whose events a
 * Python program makes (PyTorch's tensors, the CUDA libraries' own
 * allocations): pyframes.c (which way they are read; the GIL path),
 * pylayout.c (read in place, without the GIL, once a probe found the
 * layout), pylines.c (the cache of their names), pypath.c (a path's Python
 * part), pybackward.c (inside a backward pass: the forward line and module
 * whose backward runs, or where the pass was started, for threads with no
 * Python frames).
 */
/* The process runs CPython (its C API could be found). */
STC_HIDDEN int stc_py_active(void);
/* ip lies in the object holding the interpreter's eval loop. */
STC_HIDDEN int stc_py_in_interpreter(uint64_t ip);
/* Up to max Python frames of the calling thread, innermost first, as
 * STP_PYFRAME_TAG | string id.  Read in place when the layout is known (no
 * GIL, any thread); else a Python thread that does not hold the GIL takes it
 * for the walk as take_gil says (STC_GIL_*), or gets none; 0 for a thread
 * Python did not create. */
enum {
	STC_GIL_NEVER = 0,    /* only if the thread holds it already */
	STC_GIL_IF_ALONE = 1, /* also when it is the interpreter's only thread (nothing can hold it) */
	STC_GIL_WAIT = 2,     /* also by waiting: the caller holds no lock another thread may wait for with the GIL */
};
STC_HIDDEN uint32_t stc_py_frames(uint64_t *ips, uint32_t max, int take_gil);
/* How frames are read: in place (any thread, no GIL), through the GIL (the
 * rules above), not known yet (no probe ran), or not a Python process. */
enum { STC_PYF_NONE = 0, STC_PYF_UNKNOWN = 1, STC_PYF_IN_PLACE = 2, STC_PYF_GIL = 3 };
STC_HIDDEN int stc_py_frames_how(void);
/* A native path ips[0..n) (innermost first, room for max) completed with
 * the Python part: cut where it enters the interpreter, then the thread's
 * Python frames, or inside a backward pass on a thread with none, the
 * frames it was started from.  Returns the new depth (n when there are no
 * Python frames to add). */
STC_HIDDEN uint32_t stc_py_complete(uint64_t *ips, uint32_t n, uint32_t max, int take_gil);
/* The caller's path walked now, as a tensor's is: g_cfg.depth native
 * frames completed with the Python part (stc_py_complete), interned; 0
 * when paths are off (depth 0) or none was found. */
STC_HIDDEN uint32_t stc_py_walk(int take_gil);
/* A hash of the thread's Python frames without a backward site (those a
 * lean iteration's tensors are made under; where the thread has none, the
 * backward's origin): the key of collector/torch/torch_lean.c. */
STC_HIDDEN uint64_t stc_py_lean_key(int take_gil);
/* The iteration under way is recorded lean (fold.c, "Lean iterations"):
 * a tensor's path is the one the last full iteration had (torch_lean.c).
 * 0 full; STC_LEAN_SAME the last iterations repeated one written in full,
 * STC_LEAN_SHAPE only its shape (the same events with other sizes:
 * varying lengths), so a tensor takes its path from the same Python
 * frames whatever its size. */
enum { STC_LEAN_SAME = 1, STC_LEAN_SHAPE = 2 };
STC_HIDDEN extern int g_lean_now;
/* Counts the ITER_BEGIN markers recorded where iterations may go lean
 * (folding on, STPROF_LEAN, Python frames in place; marker.c moves it,
 * fold.c holds it): a thread sees a new iteration begin when it moves;
 * 0: no lean iteration can come. */
STC_HIDDEN extern uint64_t g_iter_gen;

/* ---------------------------------------------------------------- live device objects (devobj.c) */
/*
 * The live GPU-visible objects of the process (device, managed and pinned
 * host allocations, and the segments a caching allocator reserved), shared
 * by the device backends: the CUPTI callbacks and the PyTorch allocators
 * add and remove them, kernel launches look pointers up in them
 * (conservative references from the parameter buffer), and the Compute
 * Sanitizer backend copies a device's sorted ranges to the GPU for each
 * patched launch.
 *
 * Invariants:
 *   - Entries never overlap: adding a range removes every older entry it
 *     overlaps (a free we did not see must not leave a stale object behind
 *     that would swallow the addresses of a new one).
 *   - Entries are kept sorted by address, so a lookup is a binary search that
 *     checks the END of the range too (an address one past an object is not
 *     in it), and a snapshot is already in the order the device search needs.
 *   - No fixed limit: the table grows (memory from mmap, never the heap being
 *     recorded).  A failed growth drops the new entry and counts it.
 *   - Every change bumps the generation, so a reader can tell whether a copy
 *     it made is still current without comparing contents.
 *   - Safe from any thread (one mutex; no callback runs under it).
 *   - A backend that records a device object's FREE (or ALLOC) itself
 *     changes this table BEFORE recording it (a launch's map is the table
 *     as it was at the launch: the Compute Sanitizer backend's).
 */
typedef struct stc_devobj {
	uint64_t addr, size;
	int32_t device;   /* -1: not tied to one device (pinned host memory) */
	uint8_t kind;     /* stp_mem_kind */
	uint8_t segment;  /* 1: an allocator's segment, not an object */
	uint32_t stack;   /* call path of the allocation, 0 = none */
	uint64_t id;      /* order of addition, from 1 */
} stc_devobj;

/* Adds [addr, addr+size).  Older entries that overlap it are removed (and
 * counted as stale).  Returns the new entry's id, 0 when size is 0 or the
 * table could not grow. */
STC_HIDDEN uint64_t stc_devobj_add(uint64_t addr, uint64_t size, int32_t device, uint8_t kind, uint8_t segment,
                                   uint32_t stack);
/* Removes the entry that STARTS at addr; fills *out (may be NULL) with it.
 * Returns 1 when one was removed, 0 when none starts there. */
STC_HIDDEN int stc_devobj_remove(uint64_t addr, stc_devobj *out);
/* The entry that contains p (addr <= p < addr+size).  Returns 1 if found.
 * Objects are preferred to segments only in that segments never overlap
 * objects here: a backend records one or the other for a range. */
STC_HIDDEN int stc_devobj_find(uint64_t p, stc_devobj *out);
/* Copies the entries of device dev (-1: all; entries with device -1 are
 * always included) in address order: starts[i] and ends[i] (exclusive), and
 * ids[i] when ids is not NULL.  Writes at most max; returns how many there
 * are (call again with a bigger buffer when that exceeds max).  *gen (may
 * be NULL) receives the generation the copy belongs to. */
STC_HIDDEN size_t stc_devobj_snapshot(int32_t dev, uint64_t *starts, uint64_t *ends, uint64_t *ids, size_t max,
                                      uint64_t *gen);
STC_HIDDEN uint64_t stc_devobj_generation(void);
STC_HIDDEN size_t stc_devobj_count(void);
/* Entries removed because a newer one overlapped them; additions dropped
 * because the table could not grow. */
STC_HIDDEN void stc_devobj_stats(uint64_t *stale, uint64_t *dropped);
/* Empties the table (tests; a forked child keeps its parent's objects). */
STC_HIDDEN void stc_devobj_reset(void);

/* ---------------------------------------------------------------- who records what (cuda_mode.c) */
/*
 * The CUPTI backend sees every cudaMalloc/cuMemAlloc/cuMemMap of the
 * process; the PyTorch backend knows what PyTorch does with them.  The
 * Python shim sets the mode (through the torch backend's exported entry
 * point) before PyTorch touches the GPU; the CUPTI backend reads it on
 * each allocation call:
 *
 *   STC_TORCH_CUDA_NONE       no shim on the device: CUPTI records every
 *                             allocation call as an object (ALLOC/FREE) and
 *                             adds it to the live-object table.
 *   STC_TORCH_CUDA_PLUGGABLE  STAlloc's profiling mode: libstprof.so is
 *                             PyTorch's CUDAPluggableAllocator; it records
 *                             each tensor (ALLOC/FREE, pool STP_POOL_TENSORS,
 *                             devobj) and calls cudaMalloc/cudaFree with
 *                             t_busy set.
 *   STC_TORCH_CUDA_CACHING    PyTorch's caching allocator kept: the torch
 *                             backend records tensors (ALLOC/FREE, devobj)
 *                             and the allocator's segments (SEGMENT_RESERVE/
 *                             RELEASE) from the allocator's own reports;
 *                             CUPTI skips the allocation calls whose call
 *                             path passes through libc10_cuda (PyTorch's
 *                             segments).
 *
 * In every mode the CUPTI backend ignores calls made while t_busy is set
 * (the collector's own, and the pluggable allocator's), and records a
 * device allocation made by XLA's own code (JAX's CUDA plugin) as a segment
 * of pool STP_POOL_JAX: JAX's buffers inside it are the JAX backend's (the
 * shim's, through collector/jax/), at stand-in addresses.
 *
 * The two device backends' claims:
 *   g_cupti_records_memory  the CUPTI backend records device allocations
 *                           (subscribed, CUDA not torn down): the Compute
 *                           Sanitizer backend then records none of its own
 *                           and only keeps the live-object table.
 *   g_sanitizer_api_pid     the process whose kernel launches, copies and
 *                           sets the Compute Sanitizer backend records (a
 *                           forked child's g_pid differs: it does not); the
 *                           CUPTI backend records none of its own then, so
 *                           each is one event, the one with exact accesses.
 */
enum { STC_TORCH_CUDA_NONE = 0, STC_TORCH_CUDA_PLUGGABLE = 1, STC_TORCH_CUDA_CACHING = 2 };
STC_HIDDEN extern _Atomic int g_torch_cuda_mode;
STC_HIDDEN extern _Atomic int g_cupti_records_memory;
STC_HIDDEN extern _Atomic pid_t g_sanitizer_api_pid;

/* ---------------------------------------------------------------- a backend's hooks (hooks.c) */
/*
 * A backend registers one stc_backend with STC_BACKEND(name) = {...}; the
 * core runs the hooks of every backend linked into libstprof.so, in link
 * order (collector/CMakeLists.txt lists the backends: cuda, sanitizer,
 * torch).  Registration is a table in a section of its own, there before
 * any code runs.  Every hook may be NULL.
 *
 *   start         the process image starts recording (end of the
 *                 collector's start; the recording is on)
 *   finish        the image ends by exit (the destructor, _exit, _Exit), while
 *                 events can still be recorded; from the thread that ends it
 *   fork_prepare, fork_parent, fork_child   pthread_atfork's three; the
 *                 core's own state is reset before fork_child runs
 *   flush         each flush round of the flusher thread, before the
 *                 buffers are written (final: the last one)
 *   mark          each flush round just before its watermark, under the
 *                 flush lock: writes what the backend held that is ready,
 *                 returns the watermark lowered below the seq of anything
 *                 still held (try_only: from a signal handler, write
 *                 nothing, take no lock that may be held)
 */
typedef struct stc_backend {
	const char *name;
	void (*start)(void);
	void (*finish)(void);
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*fork_child)(void);
	void (*flush)(int final);
	uint64_t (*mark)(uint64_t mark, int try_only);
} stc_backend;

#define STC_BACKEND(id)                                                                      \
	static const stc_backend stc_backend_##id;                                               \
	__attribute__((used, section("stc_backends"))) static const stc_backend *const           \
	        stc_backend_ref_##id = &stc_backend_##id;                                        \
	static const stc_backend stc_backend_##id

#endif
