/*
 * stprof/trace.h - the .stp trace model, writer and reader.
 *
 * Everything in stprof reads what this header describes.  A trace holds the
 * events of ONE process image: allocations and frees (host heap, device,
 * managed, pinned), an allocator's own segment reservations, API calls
 * (kernel launches, copies, sets, syncs, framework ops) with the address
 * ranges they read and wrote, and markers (iterations, phases, modules).
 *
 * Invariants a consumer may rely on:
 *   - stp_reader_next() returns events in increasing `seq` order.  Sequence
 *     numbers are per process, start at 0 and are dense; a gap means events
 *     were lost (stp_trace_stats.lost_events counts them), or folded: a
 *     FOLD event (a steady iteration kept as counters) stands for the
 *     events missing between its seq and its iteration's end
 *     (stp_trace_stats.folded_events).
 *   - `time_ns` is CLOCK_MONOTONIC of the recording machine.  It is
 *     non-decreasing per thread, and almost so across threads.
 *   - String and stack ids are >= 1; 0 means "none".  An id in an event is
 *     always defined before the event is returned.  The stack id in an
 *     event is a call-path node (the innermost frame's): the same call path
 *     always has the same id, whatever id the writer used.
 *   - Memory use of a reader is bounded by the distinct strings and stack
 *     nodes plus the recording's flush window, never by the trace length.
 *
 * The byte format is specified in docs/trace-format.md.
 */
#ifndef STPROF_TRACE_H
#define STPROF_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STP_FORMAT_MAJOR 1
#define STP_FORMAT_MINOR 4

typedef enum stp_event_type {
	STP_EV_PROCESS = 1,  /* the process this trace belongs to (first event) */
	STP_EV_THREAD = 2,   /* a thread was seen (or renamed) */
	STP_EV_MODULE = 3,   /* an ELF object mapped into the process */
	STP_EV_ALLOC = 4,    /* an object was allocated */
	STP_EV_FREE = 5,     /* an object was freed */
	STP_EV_SEGMENT_RESERVE = 6, /* an allocator reserved memory (cudaMalloc by a cache) */
	STP_EV_SEGMENT_RELEASE = 7, /* ... and gave it back */
	STP_EV_API = 8,      /* a kernel, copy, set, sync or framework op */
	STP_EV_MARKER = 9,   /* iteration / phase / module / annotation */
	STP_EV_FOLD = 10,    /* a steady iteration folded into counters (1.2) */
	STP_EV_REFUSED = 11, /* an allocator refused a request (1.4): u.alloc,
	                      * addr 0, size and requested the bytes asked for
	                      * (requested 0: an attempt, stp_refused_attempt) */
	STP_EV_TYPE_MAX = 11
} stp_event_type;

typedef enum stp_mem_kind {
	STP_MEM_HOST = 0,
	STP_MEM_DEVICE = 1,
	STP_MEM_MANAGED = 2,
	STP_MEM_PINNED = 3
} stp_mem_kind;

/* Pool 1 of host memory: a framework's tensor storages (PyTorch's CPU
 * allocator), recorded apart from the heap allocations of the interpreter
 * and libraries; readers treat it as a memory space of its own. */
#define STP_POOL_TENSORS 1u
/* Pool 2, of host or device memory: JAX's buffers (the storage of its
 * arrays and the temporary buffers of its compiled XLA programs), recorded
 * apart from the heap (host) and from other libraries' device memory; a
 * memory space of its own (docs/jax.md). */
#define STP_POOL_JAX 2u
/* 1 for the pools of a framework's own buffers (1 and 2): what allocator
 * models, plans and reports take as the program's tensors. */
static inline int stp_pool_framework(uint32_t pool)
{
	return pool == STP_POOL_TENSORS || pool == STP_POOL_JAX;
}

/* The stream of a host tensor storage (pool 1) that the framework mapped
 * itself rather than took from its allocator: shared memory (a batch a
 * DataLoader's worker sent), a shared file (torch.from_file(shared=True)).
 * In the tensor space, never in a plan: no allocator serves it (its FREE
 * carries it too). */
#define STP_STREAM_MAPPED 1u
static inline int stp_host_mapped(uint8_t kind, uint32_t pool, uint64_t stream)
{
	return kind == STP_MEM_HOST && pool == STP_POOL_TENSORS && stream == STP_STREAM_MAPPED;
}

/* A call-path frame that is not a machine address but a Python frame: the
 * low 32 bits are the string id of "FILE:LINE in FUNCTION". */
#define STP_PYFRAME_TAG 0xfff0000000000000ull
#define STP_IS_PYFRAME(ip) (((ip) & 0xffffffff00000000ull) == STP_PYFRAME_TAG)

typedef enum stp_api_kind {
	STP_API_OTHER = 0,
	STP_API_KERNEL = 1,
	STP_API_MEMCPY = 2,
	STP_API_MEMSET = 3,
	STP_API_SYNC = 4,
	STP_API_OP = 5 /* a framework operator (aten::mm, ...) */
} stp_api_kind;

typedef enum stp_marker_kind {
	STP_MARK_ITER_BEGIN = 1,   /* value = iteration index */
	STP_MARK_ITER_END = 2,
	STP_MARK_PHASE_BEGIN = 3,  /* name = phase ("forward", "backward", ...), value = micro-batch */
	STP_MARK_PHASE_END = 4,
	STP_MARK_MODULE_ENTER = 5, /* name = module path ("layers.3.attn") */
	STP_MARK_MODULE_EXIT = 6,
	STP_MARK_ANNOTATION = 7,   /* free-form name and value */
	STP_MARK_KIND_MAX = 7
} stp_marker_kind;

/* Host-heap sampling (docs/trace-format.md, "Sampled host heap"): the
 * annotation marker that says, from where it stands in the trace on, the
 * sampling interval R of host-heap allocations (pool 0 of host memory):
 * value R > 0, an allocation below R bytes was recorded with probability
 * 1 - exp(-size/R), one of R bytes or more always; value 0, every one was.
 * Before the first such annotation every allocation was recorded. */
#define STP_HEAP_SAMPLE_ANNOTATION "stprof.heap_sample_bytes"
/* Lean recording (docs/record.md, "Lean iterations"): from the ITER_BEGIN
 * this annotation follows, value 1: tensor call paths taken from the last
 * full iteration instead of walked, no module markers from the PyTorch
 * shim; 0: full detail again. */
#define STP_LEAN_ANNOTATION "stprof.lean"
/* What a recorded allocation of size bytes stands for under interval R
 * (0: every allocation recorded): 1/p, at least 1. */
double stp_heap_weight(uint64_t size, uint64_t interval);

/* Access modes of an API's address range. */
#define STP_ACCESS_READ 1u
#define STP_ACCESS_WRITE 2u
/* A range of this mode (address 0, size 0) says that the API also touched
 * memory the collector could not place in any object (a GPU kernel's TMA
 * operation whose tensor map it could not read): any live object may have
 * been read or written by it. */
#define STP_ACCESS_UNPLACED 4u

typedef struct stp_range {
	uint64_t addr;
	uint64_t size;
	uint32_t mode; /* STP_ACCESS_* bits */
} stp_range;

typedef struct stp_process_info {
	uint32_t pid, ppid;
	int32_t rank, local_rank, world_size; /* -1 when not set */
	uint32_t cmdline;          /* string id: argv joined by spaces */
	uint32_t exe;              /* string id: /proc/self/exe */
	uint32_t hostname;         /* string id */
	uint64_t start_realtime_ns; /* CLOCK_REALTIME at start */
	uint64_t start_monotonic_ns;
} stp_process_info;

typedef struct stp_thread_info {
	uint32_t tid;
	uint32_t name; /* string id, 0 when unnamed */
} stp_thread_info;

#define STP_BUILD_ID_MAX 32
typedef struct stp_module_info {
	uint32_t path;     /* string id */
	uint64_t base;     /* lowest mapped address */
	uint64_t size;     /* span of the PT_LOAD segments */
	uint64_t bias;     /* load bias: runtime address - ELF virtual address */
	uint32_t build_id_len;
	uint8_t build_id[STP_BUILD_ID_MAX];
} stp_module_info;

typedef struct stp_alloc_info {
	uint64_t addr;
	uint64_t size;      /* bytes the allocator handed out (may be rounded) */
	uint64_t requested; /* bytes the caller asked for */
	uint32_t stack;     /* stack id, 0 = none */
	uint8_t kind;       /* stp_mem_kind */
	int32_t device;     /* -1 for host */
	uint64_t stream;    /* 0 = default */
	uint32_t pool;      /* allocator pool, 0 = default */
} stp_alloc_info;

typedef struct stp_free_info {
	uint64_t addr;
	uint64_t size;  /* 0 when the freeing API does not say */
	uint8_t kind;
	int32_t device;
	uint64_t stream;
	uint32_t pool;
} stp_free_info;

/* SEGMENT_RESERVE uses all fields; SEGMENT_RELEASE leaves stack 0. */
typedef stp_alloc_info stp_segment_info;

/* A REFUSED event with requested 0 is an allocator's own attempt refused
 * (PyTorch's caching allocator's cudaMalloc of `size` bytes for a segment),
 * not a caller's request: the allocator frees its cache and asks again,
 * and either serves the request (its ALLOC follows on the same thread) or
 * gives up (a REFUSED of the request follows). */
static inline int stp_refused_attempt(const stp_alloc_info *a)
{
	return a->requested == 0;
}

/* The bytes a REFUSED event asked for: the request's, or an attempt's own. */
static inline uint64_t stp_refused_bytes(const stp_alloc_info *a)
{
	return stp_refused_attempt(a) ? a->size : a->requested;
}

typedef struct stp_api_info {
	uint8_t kind;        /* stp_api_kind */
	uint32_t name;       /* string id: kernel / op name */
	int32_t device;
	uint64_t stream;
	uint64_t end_ns;     /* begin is the event's time_ns; end >= begin */
	uint32_t stack;      /* host call path of the launch, 0 = none */
	uint32_t nranges;
	const stp_range *ranges; /* valid until the next stp_reader_next() */
} stp_api_info;

typedef struct stp_marker_info {
	uint8_t kind;    /* stp_marker_kind */
	uint32_t name;   /* string id, 0 = none */
	int64_t value;
} stp_marker_info;

/* A folded iteration (docs/trace-format.md, "Folded iterations"): the
 * collector found it the same as an iteration written in full (`like`) and
 * wrote only what changes the memory between iterations: its iteration
 * markers, the allocations that outlive it and the frees of objects from
 * before it (with their seqs); the rest (objects allocated and freed
 * within it, or within it and the next folded one; API events; phase and
 * module markers) is summed up here.  The event's seq is the first left
 * out; the seqs missing from it to last_seq were folded, not lost. */
typedef struct stp_fold_space {
	uint8_t kind;         /* stp_mem_kind */
	int32_t device;
	uint32_t pool;        /* as an ALLOC's: 1 = tensors */
	uint64_t allocs;      /* allocations left out */
	uint64_t bytes;       /* their bytes (a sampled heap's weighed: estimates) */
	uint64_t peak;        /* the highest live bytes above the iteration's start, every object counted */
	uint64_t carried_in;  /* bytes left out with the iteration before, freed in this one */
	uint64_t carried_out; /* bytes left out with this one, freed in the next (live at its end) */
	uint64_t sampled;     /* of allocs: sampled host-heap ones */
	uint64_t sampled_est; /* the allocations those stand for (sum of 1/p, rounded) */
	/* (1.3, where stp_fold_info.counted) how many of the objects left out
	 * (this iteration's and the carried_in ones) are live at the peak */
	uint64_t peak_objects;
} stp_fold_space;

typedef struct stp_fold_site {
	uint32_t stack;       /* call path (stack id) */
	uint8_t kind;
	int32_t device;
	uint32_t pool;
	uint64_t allocs;      /* sampled host-heap allocations left out */
	uint64_t bytes;       /* what they stand for (weighed) */
} stp_fold_site;

typedef struct stp_fold_info {
	int64_t iteration;    /* the iteration markers' value */
	int64_t like;         /* the iteration written in full that it repeats */
	uint64_t last_seq;    /* its end marker's seq */
	uint64_t elided;      /* events left out, this one's seq included */
	uint64_t apis, markers; /* of them: API events, phase and module markers */
	uint64_t digest;      /* of the iteration's allocations, frees, segments, APIs, markers */
	uint32_t nspaces, nsites;
	uint8_t counted;      /* the spaces carry peak_objects (1.3) */
	const stp_fold_space *spaces; /* valid until the next stp_reader_next() */
	/* sampled host-heap allocations left out by the folded iterations since
	 * the last FOLD that had sites, per call site (they differ from one
	 * iteration to the next; the rest repeats `like`) */
	const stp_fold_site *sites;
} stp_fold_info;

typedef struct stp_event {
	uint8_t type;    /* stp_event_type */
	uint32_t tid;
	uint64_t seq;
	uint64_t time_ns;
	union {
		stp_process_info process;
		stp_thread_info thread;
		stp_module_info module;
		stp_alloc_info alloc;
		stp_free_info free;
		stp_segment_info segment;
		stp_api_info api;
		stp_marker_info marker;
		stp_fold_info fold;
	} u;
} stp_event;

/* ---------------------------------------------------------------- writer */

/*
 * A single-threaded writer for tools, converters and tests.  (The collector
 * has its own multi-threaded buffering on top of the same encoder.)  Events
 * must be appended in increasing seq order; seq is assigned by the writer
 * when ev->seq is STP_SEQ_AUTO.
 */
typedef struct stp_writer stp_writer;
#define STP_SEQ_AUTO UINT64_MAX

/* The file is written as stprof/outfile.h says: beside PATH, renamed into
 * place by stp_writer_close() (an earlier trace there is kept as PATH.old;
 * anything else that is not a trace is refused). */
stp_writer *stp_writer_open(const char *path, char *err, size_t errlen);
/* Interns a string; returns its id (>= 1). Same text -> same id. */
uint32_t stp_writer_string(stp_writer *w, const char *s);
/* Interns a call path, innermost frame first; returns its stack id (>= 1),
 * 0 when n == 0.  A reader gives the same id back in events. */
uint32_t stp_writer_stack(stp_writer *w, const uint64_t *ips, uint32_t n);
/* Appends an event. tid, time_ns and the payload are taken as given. */
int stp_writer_event(stp_writer *w, const stp_event *ev);
/* Flushes buffered chunks to the file (the file stays open). */
int stp_writer_flush(stp_writer *w);
/* Writes the end record and closes; exit_status: the process's wait status
 * encoded as in docs/trace-format.md (STP_END_*). Returns 0 on success. */
int stp_writer_close(stp_writer *w, uint32_t end_reason, int32_t end_value);
/* Closes without an end record (simulates a killed program). */
void stp_writer_abandon(stp_writer *w);
/* Gives up: the file is removed and its path left as it was. */
void stp_writer_discard(stp_writer *w);

/* End reasons carried by the END chunk. */
#define STP_END_EXIT 1    /* value = exit status */
#define STP_END_SIGNAL 2  /* value = signal number */
#define STP_END_EXEC 3    /* the image was replaced by execve */
#define STP_END_DETACH 4  /* recording stopped, process went on */
#define STP_END_SNAPSHOT 5 /* the state at a memory snapshot (an imported
                            * PyTorch snapshot): the process went on */

/* ---------------------------------------------------------------- reader */

typedef struct stp_reader stp_reader;

typedef struct stp_trace_header {
	uint16_t major, minor;
	uint64_t flags;
} stp_trace_header;

typedef struct stp_trace_stats {
	uint64_t bytes;          /* bytes consumed so far */
	uint64_t chunks;
	uint64_t chunk_bytes[5]; /* bytes (headers included) by chunk type, 1..4 */
	uint64_t events;         /* events returned so far */
	uint64_t by_type[STP_EV_TYPE_MAX + 1];
	uint64_t strings, stack_nodes;
	uint64_t lost_events;    /* gaps in the sequence numbers (folded ones not counted) */
	uint64_t folded_events;  /* events FOLD events stand for (theirs included) */
	uint64_t folded_iterations; /* FOLD events */
	int whole;               /* an END chunk was read */
	uint32_t end_reason;     /* STP_END_*, 0 when not whole */
	int32_t end_value;
	uint64_t first_time_ns, last_time_ns;
	/* The file ends inside a chunk (its writer was stopped mid-write): the
	 * chunk's offset and the bytes of it in the file, which are not read.
	 * Everything before was read; this is not an error.  0: not cut. */
	uint64_t cut_offset, cut_bytes;
} stp_trace_stats;

/* Opens a trace. On failure returns NULL and writes a one-line message
 * ("FILE: offset N: what") into err. */
stp_reader *stp_reader_open(const char *path, char *err, size_t errlen);
/* Next event in seq order: 1 = *ev filled, 0 = end of trace, -1 = error
 * (stp_reader_error() says what; the events before it were all returned). */
int stp_reader_next(stp_reader *r, stp_event *ev);
const char *stp_reader_error(const stp_reader *r);
/* A trace that ends without an END chunk is NOT an error (the program was
 * killed, or its writer stopped): stats.whole says so, and stats.cut_bytes
 * whether it ends inside a chunk (read to the last whole one). */
const stp_trace_stats *stp_reader_stats(const stp_reader *r);
/* Whether the trace at path ends inside a chunk, found without reading its
 * events (for a warning before it is read): 1 with the chunk's offset and
 * the bytes from there to the end, which readers leave unread; 0 when it
 * does not (or cannot be told: not a regular file, not a trace, damaged
 * before its end). */
int stp_trace_cut(const char *path, uint64_t *offset, uint64_t *bytes);
/* 1 when the trace at path ends with a whole END chunk (found from its
 * last 64 bytes). */
int stp_trace_has_end(const char *path);
/* The same, and *reason the END chunk's reason (STP_END_*): 1 when the
 * trace ends with a whole END chunk, 0 (*reason untouched) when not. */
int stp_trace_end_reason(const char *path, uint32_t *reason);
const stp_trace_header *stp_reader_header(const stp_reader *r);
const char *stp_reader_path(const stp_reader *r);
/* String by id; "" for 0 or an unknown id. */
const char *stp_reader_string(const stp_reader *r, uint32_t id);
/* Frames of a stack, innermost first, at most max. Returns the depth. */
uint32_t stp_reader_stack(const stp_reader *r, uint32_t stack, uint64_t *ips, uint32_t max);
/* Number of stack ids defined so far (ids are 1..n). */
uint32_t stp_reader_stack_count(const stp_reader *r);
/* Parent node and innermost frame of a stack id (the stack trie). */
int stp_reader_stack_node(const stp_reader *r, uint32_t stack, uint32_t *parent, uint64_t *ip);
void stp_reader_close(stp_reader *r);

/* Names for printing. */
const char *stp_event_type_name(unsigned type);
const char *stp_mem_kind_name(unsigned kind);
const char *stp_api_kind_name(unsigned kind);
const char *stp_marker_kind_name(unsigned kind);

#ifdef __cplusplus
}
#endif
#endif
