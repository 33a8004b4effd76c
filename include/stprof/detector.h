/*
 * stprof/detector.h - diagnosis of a trace: objects and lifetimes,
 * iterations and phases, lifetime classes, inefficiency patterns.
 *
 * stp_det_run() reads a trace twice (streaming: memory grows with the
 * objects live at one time, the call sites and the iteration/phase windows,
 * never with the number of events) and returns an immutable result:
 *
 *   - per memory space (host, device N, ...): allocations, frees, live at
 *     the end, peak live bytes and when;
 *   - the timeline: iteration and phase windows, from markers when the
 *     trace has them, otherwise detected from the period of the allocation
 *     sequence, with the source and a confidence, and the steady-state
 *     iteration (what the planner consumes);
 *   - per call site (a distinct call path): counts, bytes live at the peak,
 *     lifetime classes, lifetime histograms in decades of time and of
 *     logical distance;
 *   - findings: DrGPUM's patterns aggregated per call site with the worst
 *     instance, and the host-trace late-free heuristic.
 *
 * Definitions and thresholds are documented in docs/report.md.
 */
#ifndef STPROF_DETECTOR_H
#define STPROF_DETECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "stprof/allocsim.h"
#include "stprof/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ options */

typedef enum stp_det_iter_mode {
	STP_DET_ITER_AUTO = 0,    /* markers if present, else detect */
	STP_DET_ITER_MARKERS = 1, /* markers only (none when the trace has none) */
	STP_DET_ITER_DETECT = 2,  /* ignore markers, detect from the allocations */
	STP_DET_ITER_NONE = 3     /* no iterations: no classes */
} stp_det_iter_mode;

typedef struct stp_det_options {
	uint64_t min_size;        /* objects smaller than this are ignored (0) */
	/* DrGPUM thresholds (defaults are the paper's). */
	uint32_t early_min_apis;  /* APIs between alloc and first access (2) */
	uint32_t late_min_apis;   /* APIs between last access and free (1) */
	uint32_t idle_min_apis;   /* APIs between two accesses (2) */
	double redundant_pct;     /* size difference for a reuse pair, % (10) */
	/* Host-trace late free: an object whose death is later than this
	 * fraction of its peers' (0.9) and at least late_free_min_segments
	 * timeline segments after it (2). */
	double late_free_quantile;
	uint32_t late_free_min_segments;
	uint32_t late_free_min_peers; /* peers needed to judge (5) */
	stp_det_iter_mode iter_mode;
	uint32_t detect_max_allocs; /* allocations examined by detection (2M) */
	uint32_t series_points;     /* memory-over-time samples (1000) */
	uint32_t site_depth;        /* frames (past the allocator's own) that make
	                             * a call site; deeper differences merge (12) */
	/* Allocator models (docs/allocator-models.md), fed from pass 2: the
	 * device allocations, or, when the trace has none, the host ones of at
	 * least sim_host_min_size bytes ("what if these ran on a GPU"). */
	unsigned sim_models;        /* STP_DET_SIM_* bits; 0: none (no models) */
	uint64_t sim_capacity;      /* device bytes for OOM/retry simulation (0: unlimited) */
	const char *sim_alloc_conf; /* PYTORCH_ALLOC_CONF the program ran with (NULL: defaults) */
	int sim_no_recommend;       /* do not try settings */
	uint64_t sim_host_min_size; /* host fallback: smaller allocations are not fed (512) */
	/* Keep each object's class and patterns for stp_det_object_info() (the
	 * timeline exporter): 14 bytes per allocation (1); with 2, also when
	 * it ended and its module, for stp_det_object() (the HTML viewer): 26
	 * bytes (0). */
	int keep_objects;
	/* With keep_objects: keep each object's first N accesses (API events
	 * whose ranges touch it) for stp_det_object_accesses(), 24 bytes each
	 * (0: none). */
	uint32_t keep_accesses;
	/* A window of the trace (ns since its first event, [begin, end)): the
	 * peak, and the call sites live at it, are the window's; findings are
	 * those whose worst instance overlaps it.  Classes, totals and the
	 * models stay the whole trace's.  0: no window. */
	int has_window;
	uint64_t window_begin_ns, window_end_ns;
	/* Progress: called now and then with the pass (1 or 2) and the bytes
	 * read so far out of total; NULL for none. */
	void (*progress)(void *ctx, int pass, uint64_t done, uint64_t total);
	void *progress_ctx;
	/* The space analyzed in depth (sites, classes, timeline, plan):
	 * STP_DET_SPACE_AUTO = tensors or device memory when the trace has them
	 * (a PyTorch run), else the highest peak. */
	int space;
	/* what the result calls the trace (stp_det_result.path), e.g. the
	 * snapshot a temporary trace was imported from; NULL: the path read */
	const char *name;
	/* Call paths as recorded: no folding of framework frames, full C++
	 * names (stprof report --all-frames); 0: folded (detector/fold.c). */
	int all_frames;
} stp_det_options;

#define STP_DET_SPACE_AUTO 0
#define STP_DET_SPACE_HOST 1    /* the host heap */
#define STP_DET_SPACE_TENSORS 2 /* host tensor storages */
#define STP_DET_SPACE_DEVICE 3  /* device memory (the highest peak of them) */
/* Parses "auto", "host", "tensors" or "device"; -1 when unknown. */
int stp_det_space_parse(const char *name, int *space);
/* 1 when s is of the kind space (STP_DET_SPACE_*) names (auto: any). */
struct stp_det_space;
int stp_det_space_is(const struct stp_det_space *s, int space);
/* Its name in reports: "host", "cpu tensors", "device 0", "managed", ... */
const char *stp_det_space_name(const struct stp_det_space *s, char *buf, size_t len);

/* Models: PyTorch's caching allocator as run (always, when any model is
 * asked for: the worst moment and the recommendations are its), the same
 * with expandable_segments flipped, BFC, raw cudaMalloc. */
#define STP_DET_SIM_PYTORCH 1u
#define STP_DET_SIM_EXPANDABLE 2u
#define STP_DET_SIM_BFC 4u
#define STP_DET_SIM_RAW 8u
#define STP_DET_SIM_ALL 15u
/* Parses "pytorch,expandable,bfc,raw", "all" or "none" into *models; -1
 * on an unknown name. */
int stp_det_sim_models_parse(const char *list, unsigned *models);

void stp_det_options_default(stp_det_options *o);

/* ------------------------------------------------------------ timeline */

typedef enum stp_det_source {
	STP_DET_SRC_NONE = 0,     /* no iterations known */
	STP_DET_SRC_MARKERS = 1,  /* from ITER/PHASE markers */
	STP_DET_SRC_DETECTED = 2  /* from the allocation sequence */
} stp_det_source;

typedef struct stp_det_iteration {
	int64_t index;            /* the marker's value, or the ordinal */
	uint64_t begin_seq, end_seq;   /* [begin, end): seqs of the boundaries */
	uint64_t begin_ns, end_ns;     /* times since the trace started */
	uint64_t allocs;          /* allocations inside */
	uint64_t peak_bytes;      /* highest live bytes inside (primary space) */
	uint32_t first_phase, nphases; /* its phases: phases[first_phase ..] */
	int folded;               /* kept as counters (a FOLD event): no phases, its
	                           * temporaries not objects; allocs and peak from it */
	int64_t like;             /* folded: the index of the iteration it repeats */
	int detail;               /* recorded in more detail than the run's steady
	                           * state (every host allocation while the heap is
	                           * sampled elsewhere, or before the collector went
	                           * lean: trace.h's annotations): its time is more
	                           * the recording's than the program's */
} stp_det_iteration;

typedef struct stp_det_phase {
	const char *name;         /* "forward", "backward", ... */
	int64_t micro_batch;
	int32_t iteration;        /* index into iterations, -1 outside */
	uint64_t begin_seq, end_seq;
	uint64_t begin_ns, end_ns;
	const char *inner;        /* the phase nested in it ("recompute" inside a
	                           * backward under activation checkpointing; the
	                           * first one met), NULL when none */
} stp_det_phase;

typedef struct stp_det_timeline {
	stp_det_source iter_source, phase_source;
	double confidence;        /* 0..1: 1 for markers; match rate when detected */
	const char *method;       /* one line: how the windows were found */
	uint64_t period_allocs;   /* detected: allocations per iteration, else 0 */
	uint32_t niterations, nphases;
	const stp_det_iteration *iterations;
	const stp_det_phase *phases;
	int32_t steady;           /* index of the steady-state iteration, -1 none */
	const char *steady_why;   /* one line: why that one */
} stp_det_timeline;

/* ------------------------------------------------------------ results */

typedef enum stp_det_class {
	STP_CLASS_PERSISTENT = 0, /* covers a whole iteration (weights, optimizer state) */
	STP_CLASS_SCOPED = 1,     /* allocated in one phase, freed in another */
	STP_CLASS_TRANSIENT = 2,  /* allocated and freed in the same phase */
	STP_CLASS_INIT_ONLY = 3,  /* set-up (into the first iteration) or teardown only */
	STP_CLASS_LEAKED = 4,     /* never freed, and its site keeps leaking */
	STP_CLASS_LIVE_AT_END = 5,/* never freed in a trace that was cut short */
	STP_CLASS_UNCLASSIFIED = 6, /* no iterations known */
	STP_CLASS_COUNT = 7
} stp_det_class;

typedef enum stp_det_pattern {
	STP_PAT_EARLY_ALLOC = 0,
	STP_PAT_LATE_DEALLOC = 1,
	STP_PAT_REDUNDANT_ALLOC = 2,
	STP_PAT_UNUSED_ALLOC = 3,
	STP_PAT_LEAK = 4,
	STP_PAT_TEMP_IDLE = 5,
	STP_PAT_DEAD_WRITE = 6,
	STP_PAT_LATE_FREE = 7,    /* host-trace heuristic (no accesses needed) */
	STP_PAT_OVERALLOC = 8,    /* intra-object: only part of it was ever touched */
	STP_PAT_STRUCTURED = 9,   /* intra-object: each API touched its own part, none twice */
	STP_PAT_NONUNIFORM = 10,  /* intra-object: a small part touched by far more APIs than the rest */
	STP_PAT_COUNT = 11
} stp_det_pattern;

/* Why an instance of a pattern is what the program's structure makes, not
 * a fault to fix: such findings are kept apart (result->expected). */
typedef enum stp_det_expect {
	STP_EXPECT_NONE = 0,
	STP_EXPECT_ACROSS_ITERATIONS = 1, /* state the loop keeps (weights, optimizer state):
	                                   * idle between iterations or between its uses in one */
	STP_EXPECT_PHASES = 2,            /* kept from one phase for a later one, or idle
	                                   * inside a backward or an optimizer step (the
	                                   * framework orders those ops): activations saved for
	                                   * the backward, gradients waiting for the step */
	STP_EXPECT_TEARDOWN = 3,          /* freed after the loop ended, unused or unread since */
	STP_EXPECT_LIBRARY = 4,           /* a library's own buffer (cuBLAS, cuDNN workspaces) */
	STP_EXPECT_CACHED = 5,            /* a caching allocator's tensors: it reuses the memory
	                                   * already, a reuse by hand saves nothing */
	STP_EXPECT_OFF_PEAK = 6,          /* kept after its last use, but not over its
	                                   * iteration's memory peak: freeing it sooner would
	                                   * not lower the peak */
	STP_EXPECT_SETUP = 7,             /* before the loop began: set-up */
	STP_EXPECT_NEGLIGIBLE = 8,        /* the object is under 1/1024 of its space's peak */
	STP_EXPECT_MINOR = 9,             /* an early allocation or idleness wasting under 1/16
	                                   * of another finding on the same object */
	STP_EXPECT_LOADER = 10,           /* a DataLoader's batch (its collate, or received from a
	                                   * worker through shared memory): its prefetching and
	                                   * reordering keep it, not the program's code */
	STP_EXPECT_COUNT = 11
} stp_det_expect;

/* Lifetime histogram buckets in time: [0] < 1 us, [1] < 10 us, ...
 * [k] < 10^k us, ... [10] >= 10^9 us (1000 s); [11] never freed. */
#define STP_DET_TIME_BUCKETS 12
/* In logical distance (API levels, or events when the trace has no API
 * events): [0] = 0, [1] 1-9, [2] 10-99, ... [7] >= 10^6; [8] never freed. */
#define STP_DET_LOGICAL_BUCKETS 9

/* A request refused for want of memory (stp_det_space.refused_first/last):
 * the bytes asked for, the bytes live and reserved (segment events; 0
 * without) in its space then, when (ns since start, seq), its call path. */
typedef struct stp_det_refusal {
	uint64_t bytes, live, reserved, ns, seq;
	uint32_t stack;
} stp_det_refusal;

typedef struct stp_det_space {
	uint8_t kind;             /* stp_mem_kind */
	uint8_t tensors;          /* a framework's tensor storages (host pool 1 or 2) */
	uint8_t jax;              /* it holds JAX's buffers (pool 2) */
	int32_t device;           /* -1 host heap; -2 host tensors */
	uint64_t allocs, frees, bytes_allocated, bytes_freed;
	uint64_t live_objects_end, live_bytes_end;
	uint64_t peak_bytes, peak_objects, peak_seq, peak_ns; /* ns since start */
	/* --window: nothing allocated inside the window rose above what was
	 * live as it opened; the peak is that (at the window's start, the
	 * objects live just before event peak_seq) */
	uint8_t peak_at_window_begin;
	/* the peak is inside a folded iteration (a FOLD event: its own objects
	 * are counters): the objects at the peak (peak_objects, the sites' and
	 * classes' live@peak) are those live at the highest moment of the
	 * iteration written in full that it repeats, peak_like (-1: none, or
	 * the FOLD's own count), which held peak_like_bytes then; peak_bytes
	 * is the folded iteration's own */
	int64_t peak_like;
	uint64_t peak_like_bytes, peak_like_seq;
	uint64_t reserved_peak;   /* from SEGMENT events; 0 when none */
	/* a device space with a framework's allocator recorded (PyTorch's
	 * tensors, pool 1): its allocations, and the device memory other
	 * libraries took with cudaMalloc themselves (cuBLAS's workspaces),
	 * which the allocator's segments do not hold */
	uint64_t pool_allocs, pool_peak_bytes;
	uint64_t other_allocs, other_bytes_allocated, other_peak_bytes;
	/* allocations that took the bytes allocated (pool 1's when there is
	 * one) above the bytes its segment events hold: the segments are not
	 * the allocator's whole state (an inconsistent snapshot, lost events),
	 * so reserved_peak says nothing of fragmentation; 0 when consistent */
	uint64_t over_reserved;
	/* the host heap recorded under sampling (docs/record.md, "Host heap"):
	 * the largest interval in force (0: every allocation recorded), how
	 * many of allocs were sampled ones, and the allocations they stand for
	 * (the estimate of the program's count).  Bytes of a sampled space are
	 * estimates throughout (each sampled object weighs 1/p); object counts
	 * are those recorded. */
	uint64_t sample_interval, sampled_allocs;
	double est_allocs;
	/* of allocs and bytes_allocated, those of folded iterations (FOLD
	 * events): counters, in no class and (but the sampled heap's) no site */
	uint64_t folded_allocs, folded_bytes;
	/* requests the allocator refused for want of memory (REFUSED events,
	 * format 1.4: c10's CPU allocator, a cudaMalloc or cuMemCreate that
	 * failed): how many, the first and the last */
	uint64_t refused;
	stp_det_refusal refused_first, refused_last;
	/* an allocator's own attempts refused (stp_refused_attempt: PyTorch's
	 * caching allocator's cudaMalloc): how many; the requests they were
	 * for that it served after freeing its cache (its ALLOC followed on
	 * the thread), the first of them (the first attempt's moment, the
	 * bytes the request's); the requests whose outcome the trace does not hold
	 * (it ended first) */
	uint64_t refused_attempts, retried, retry_unknown;
	stp_det_refusal retried_first;
} stp_det_space;

typedef struct stp_det_site {
	uint32_t stack;           /* stack id (0 = none) */
	uint8_t kind;             /* memory kind of its first allocation */
	uint8_t dominant;         /* stp_det_class holding most of its bytes */
	uint64_t allocs, frees, bytes_allocated, max_size;
	uint64_t peak_bytes, peak_objects;  /* live at the primary peak */
	uint64_t end_bytes, end_objects;    /* live at the end */
	uint64_t class_objects[STP_CLASS_COUNT];
	uint64_t class_bytes[STP_CLASS_COUNT];
	uint64_t peak_class_bytes[STP_CLASS_COUNT]; /* of its bytes live at peak */
	uint64_t life_time[STP_DET_TIME_BUCKETS];
	uint64_t life_logical[STP_DET_LOGICAL_BUCKETS];
	double byte_ns;           /* sum of size x lifetime (freed objects) */
} stp_det_site;

typedef struct stp_det_instance {
	uint64_t alloc_seq, free_seq;  /* free_seq UINT64_MAX when never freed */
	uint64_t alloc_ns, free_ns;    /* since start */
	uint64_t addr, size;
	uint64_t distance;        /* inefficiency distance: the APIs (result->logical_unit:
	                           * kernels, ops) between its two ends; dead write: the
	                           * writes never read; late free: timeline segments */
	uint64_t levels;          /* the same in DrGPUM's topological levels (0: n/a) */
	uint64_t at_ns, until_ns; /* the wasted interval (since start) */
	uint64_t at_seq, until_seq; /* the events bounding it (0: not known) */
	uint32_t other_site;      /* redundant: the site whose object to reuse, else UINT32_MAX */
	uint64_t other_alloc_seq, other_size;
	uint64_t used_bytes;      /* overallocation: bytes ever touched (in 64ths of it);
	                           * structured access: the largest part one API touched;
	                           * non-uniform frequency: the hot part's bytes */
	uint64_t used_lo, used_hi; /* ... from offset used_lo to used_hi (exclusive) */
	uint64_t hot_apis;        /* non-uniform frequency: APIs that touched the hottest 64th */
	double cold_apis;         /* ... and the other touched 64ths, on average */
} stp_det_instance;

typedef struct stp_det_finding {
	stp_det_pattern pattern;
	uint32_t site;            /* index into sites */
	uint64_t objects, bytes;  /* objects that matched, their bytes */
	double waste_byte_ns;     /* bytes x time wasted, summed */
	uint64_t max_distance;
	stp_det_instance worst;   /* the instance with the most waste */
	/* memory-leak: the iterations its objects come from (how many, the
	 * first and the last; 0 iters: no iterations), and how many of its
	 * objects were freed after the loop (at exit) rather than never */
	uint32_t leak_iters;
	int64_t leak_first_iter, leak_last_iter;
	uint64_t leak_freed_after;
	uint8_t expected;         /* stp_det_expect: 0 in result->findings */
} stp_det_finding;

typedef struct stp_det_sample {
	uint64_t t_ns;            /* since start: end of the sample's interval */
	uint64_t live_bytes;      /* highest live bytes in the interval (primary space) */
	uint64_t reserved_bytes;  /* highest reserved (SEGMENT events), 0 when none */
} stp_det_sample;

typedef struct stp_det_result {
	/* the trace */
	const char *path;
	const char *command;      /* cmdline of the process, "" when unknown */
	uint32_t pid;
	int32_t rank, local_rank, world_size; /* from RANK, LOCAL_RANK, WORLD_SIZE; -1 unknown */
	int rank_late;            /* the rank was learnt after the start (torch.multiprocessing.spawn's
	                           * worker: init_process_group; the stprof.rank annotation) */
	uint64_t events, api_events, marker_events, lost_events;
	uint64_t by_type[STP_EV_TYPE_MAX + 1];
	uint64_t duration_ns;
	uint64_t t0_ns;           /* time_ns of the first event: the origin of every *_ns */
	int whole;                /* an end record was read */
	uint32_t end_reason;
	int32_t end_value;
	const char *error;        /* reader error ("FILE: offset N: ..."), NULL if none */
	uint64_t unknown_frees;   /* frees of addresses not live */
	uint64_t reused_live;     /* allocations at a live address (lost free) */
	uint64_t small_ignored;   /* allocations under min_size */
	uint64_t huge_ignored;    /* allocations over 64 PiB: impossible sizes, ignored */
	/* steady iterations folded by the collector (FOLD events,
	 * docs/trace-format.md): how many, the events and allocations they
	 * stand for (in the spaces' counts; not objects, sites or classes
	 * except the sampled heap's per-site counts) */
	uint64_t folded_iterations, folded_events, folded_allocs;

	/* objects */
	uint32_t nspaces;
	const stp_det_space *spaces;
	int32_t primary;          /* the space analyzed in depth (options.space), -1 none */
	int32_t peak_iteration;   /* iteration holding the primary peak, -1 */
	int32_t peak_phase;       /* phase holding it, -1 */
	uint64_t class_objects[STP_CLASS_COUNT], class_bytes[STP_CLASS_COUNT];
	uint64_t peak_class_bytes[STP_CLASS_COUNT]; /* bytes live at peak, by class */
	int has_window;           /* stp_det_options' window: the peak and findings are its */
	uint64_t window_begin_ns, window_end_ns;
	uint64_t leaks_set_aside; /* never freed, not judged leaks (analyze.c): */
	uint64_t leaks_set_aside_bytes; /* caches filled once, runtime buffers */
	/* an imported snapshot whose allocations lay outside its segments: how
	 * many; its segments were dropped (annotation stprof.segments_dropped) */
	uint64_t segments_dropped;

	stp_det_timeline timeline;

	uint32_t nsites;          /* call sites: stp_det_site_get(), sorted by
	                           * peak_bytes, then bytes_allocated */

	int have_accesses;        /* the trace has API events with ranges */
	const char *logical_unit; /* distances: "kernels", "ops", "GPU calls" (the trace's
	                           * API events), or "events" without them */
	uint32_t nfindings;
	const stp_det_finding *findings; /* sorted by waste, worst first */
	uint64_t pattern_objects[STP_PAT_COUNT]; /* per pattern, objects matched */
	double pattern_waste[STP_PAT_COUNT];
	uint8_t pattern_available[STP_PAT_COUNT]; /* 0: needs accesses the trace lacks */
	/* findings the program's structure explains (stp_det_expect), kept
	 * apart: sorted by waste; their objects are not in pattern_objects */
	uint32_t nexpected;
	const stp_det_finding *expected;
	uint64_t expect_objects[STP_EXPECT_COUNT];
	/* how the accesses were recorded (the collector's annotations) */
	struct {
		int32_t sanitizer;    /* --accesses=exact: the stprof.sanitizer annotation
		                       * (1 started; 0 none or not built; < 0 why not) */
		uint64_t launches, sampled; /* kernel launches, and those with accesses */
		uint64_t timed;       /* launches with the device's start and end */
		uint64_t unread;      /* launches whose hits could not be read back */
		uint64_t dropped;     /* objects past an event's range limit */
		uint64_t unplaced;    /* launches with accesses not placed in any object */
		uint32_t kinds;       /* instruction kinds patched (sanitizer_backend.c's list) */
		uint64_t unsure_objects; /* objects live during an unplaced access: no
		                          * access findings are judged for them */
		uint64_t apis;        /* API events (kernels, copies, sets, ops) */
	} acc;

	uint32_t nseries;
	const stp_det_sample *series;

	/* allocator models: NULL when none ran (sim_error says why, if it
	 * failed); times in it are the trace's own clock (start_time = the
	 * first event's) */
	const allocsim_report *sim;
	const char *sim_error;
	int sim_host;             /* fed host allocations (the trace has no device ones) */
	uint64_t sim_fed_allocs;  /* allocations fed to the models */
	uint64_t sim_skipped;     /* host allocations under sim_host_min_size, not fed */
	uint64_t sim_skipped_other; /* device allocations outside PyTorch's allocator (other
	                               libraries' own cudaMalloc), not fed */
	uint64_t sim_min_size;    /* that threshold (0 for device allocations) */
} stp_det_result;

typedef struct stp_det stp_det;

/* Analyzes a trace.  Returns NULL when the file cannot be opened (err says
 * why: "FILE: offset N: what").  A damaged file still returns a result of
 * what was read before the damage, with result->error set. */
stp_det *stp_det_run(const char *path, const stp_det_options *o, char *err, size_t errlen);
const stp_det_result *stp_det_result_of(const stp_det *d);
void stp_det_free(stp_det *d);

/* The windows only: pass 1 (plus detection when there are no markers) and
 * a light second pass over the primary space's allocations for the
 * per-iteration counts and peaks the steady choice needs (the same steady
 * iteration as stp_det_run's); no call sites, classes, findings, series or
 * models.  The cheap call for the planner.  The timeline, spaces and trace
 * counts of the result are valid until stp_det_free(). */
stp_det *stp_det_timeline_run(const char *path, const stp_det_options *o, char *err, size_t errlen);

/* With opt.keep_objects: the class (stp_det_class) of the object whose
 * ALLOC event has seq alloc_seq, and in *patterns (if not NULL) the bits
 * 1 << stp_det_pattern of the patterns it was found in.  -1 when unknown.
 * O(1) when called in allocation order. */
int stp_det_object_info(stp_det *d, uint64_t alloc_seq, unsigned *patterns);

/* The result's own arithmetic (docs/report.md, "Self-check"): the classes,
 * call sites and bytes by module sum to the analyzed space's figures,
 * peaks lie within totals, every space's live bytes at the end are what
 * was allocated less what was freed, allocated bytes stay within reserved
 * ones unless over_reserved says otherwise, every model's M_a within its
 * M_r.  Returns the number of violations (0: consistent) and describes the
 * first few in buf, one per line. */
uint32_t stp_det_check(stp_det *d, char *buf, size_t len);

/* With opt.keep_objects >= 2: what the detector knows of one object (the
 * one whose ALLOC event has seq alloc_seq). */
typedef struct stp_det_object_rec {
	int cls;                  /* stp_det_class */
	unsigned patterns;        /* 1 << stp_det_pattern bits */
	uint64_t end_seq;         /* the event that ended it: its FREE, or an ALLOC
	                           * at its address (a lost free); UINT64_MAX when
	                           * it lived to the end.  The detector's matching:
	                           * a reader of the trace needs no address map */
	const char *module;       /* the innermost module open when it was made
	                           * (stp_det_modules' rule), NULL when none */
	uint32_t accesses;        /* APIs that touched it (opt.keep_accesses) */
} stp_det_object_rec;
/* 0 and *out, or -1 when the object is unknown (smaller than min_size)
 * or the detector ran with keep_objects < 2.  O(1) when called in
 * allocation order. */
int stp_det_object(stp_det *d, uint64_t alloc_seq, stp_det_object_rec *out);

/* One access kept by opt.keep_accesses. */
typedef struct stp_det_access {
	uint64_t ns;              /* the API's start, since the trace's first event */
	const char *name;         /* kernel or op name ("" when unnamed) */
	uint8_t kind;             /* stp_api_kind */
	uint8_t mode;             /* STP_ACCESS_* bits of its ranges on the object */
} stp_det_access;
/* The first accesses (at most max) of an object, in time order; strings
 * valid until stp_det_free(). */
uint32_t stp_det_object_accesses(stp_det *d, uint64_t alloc_seq, stp_det_access *out, uint32_t max);

/* The index in result->spaces of the space an allocation counts in, -1
 * when none (the detector's rule: kind, device, and host pool 1 apart). */
int32_t stp_det_alloc_space(const stp_det *d, const stp_alloc_info *a);

/* ------------------------------------------------------------ level of detail */

/* Which objects a timeline draws one by one when it cannot draw them all:
 * the level of detail the Perfetto exporter (--top) and the HTML viewer
 * share.  Score: bytes x lifetime (or bytes); objects with a finding come
 * first, by their own score.  With a window only objects live inside it
 * count, with the part of their lifetime inside it; an object never freed
 * lives to the trace's last event.  Ties go to the earlier allocation. */
typedef struct stp_det_select_opts {
	uint64_t n;               /* objects to choose */
	int by_size;              /* score bytes instead of bytes x lifetime */
	int64_t offset;           /* added to the trace's times (the caller's clock) */
	int has_window;           /* only [lo, hi] of the caller's clock */
	uint64_t lo, hi;
	/* which allocations may be chosen (the ones the caller draws); NULL: all */
	int (*eligible)(void *ctx, const stp_event *alloc);
	/* 1 when the object has a finding; NULL: none */
	int (*has_finding)(void *ctx, uint64_t alloc_seq);
	void *ctx;
} stp_det_select_opts;

/* Reads the trace once; *bits (calloc'd, *nbits bits, free() it) marks the
 * chosen objects by ALLOC seq.  0, or -1 with a one-line message in err
 * ("FILE: offset N: what", or out of memory).  Memory: the live eligible
 * objects and a heap of n. */
int stp_det_select(const char *path, const stp_det_select_opts *o, uint64_t **bits, uint64_t *nbits, char *err,
                   size_t errlen);

/* ------------------------------------------------------------ frames */


/* Call site `site` (0 .. nsites-1) in *out.  Sites are kept compact (a
 * real PyTorch program has 10^5-10^6 of them, most allocating once) and
 * expanded here. */
void stp_det_site_get(const stp_det *d, uint32_t site, stp_det_site *out);
/* Its stack id (0: none). */
uint32_t stp_det_site_stack(const stp_det *d, uint32_t site);

/* Bytes by module: the analyzed space's allocations charged to the
 * innermost module open (module markers) when made, most bytes first;
 * "(no module)" for those outside any.  0 rows when the trace has no module
 * markers.  Valid until stp_det_free(). */
typedef struct stp_det_module {
	const char *name;
	uint64_t allocs, bytes;
} stp_det_module;
uint32_t stp_det_modules(stp_det *d, const stp_det_module **out);

/* The result's call-site index of a stack id (UINT32_MAX when no
 * allocation had it), e.g. to name the stacks of the allocator models. */
uint32_t stp_det_stack_site(const stp_det *d, uint32_t stack);
/* "site #N: f <- g" of a stack, N counted from 1 (the text report's
 * numbering), f and g its first two frames' functions without parameter
 * lists (an allocsim_stack_namer; ctx is the stp_det).  NULL when unknown. */
const char *stp_det_stack_name(void *d, uint32_t stack, char *buf, size_t len);

typedef struct stp_det_frame {
	uint64_t ip;
	const char *module;       /* path of the module, "" when unknown */
	uint64_t offset;          /* ip - load bias (the module's ELF address) */
	const char *function;     /* NULL when not symbolized */
	const char *file;         /* NULL when unknown */
	uint32_t line;            /* 0 when unknown */
	const char *op;           /* folded paths: the PyTorch operator that
	                           * allocated below this frame (aten::addmm), NULL */
	uint8_t interpreted;      /* a Python frame the collector read from the
	                           * interpreter (not a snapshot's source frame):
	                           * Python source whatever its file's name (./train) */
	uint8_t program;          /* a Python frame of the program's own package,
	                           * installed though it is (a console script's,
	                           * python -m PKG's): the user's code */
} stp_det_frame;

/* Resolves one address of the trace (caller: a return address, i.e. every
 * frame but the innermost); strings valid until stp_det_free(). */
void stp_det_resolve(stp_det *d, uint64_t ip, int caller, stp_det_frame *out);
/* Frames of a site's call path, after dropping the profiler's and the
 * allocator's own frames and the wrappers below.  Folded (the default,
 * detector/fold.c): the user's own line first (with the operator that
 * allocated in .op), then its callers, framework frames left out, C++ names
 * shortened; with stp_det_options.all_frames, every frame innermost first
 * with the user's Python line put first.  Returns the depth (<= max).
 * Strings stay valid until stp_det_free(). */
uint32_t stp_det_site_frames(stp_det *d, uint32_t site, stp_det_frame *out, uint32_t max);
/* The same for any stack id of the trace (an object's own, whole path;
 * stp_det_site_frames of a site is that of its stack). */
uint32_t stp_det_stack_frames(stp_det *d, uint32_t stack, stp_det_frame *out, uint32_t max);
/* 1 when a folded view leaves the frame at ip out (framework: PyTorch's,
 * CUDA's, the interpreter's native frames); 0 with all_frames.  Python
 * frames of libraries are kept (they are lines of Python a user can read). */
int stp_det_frame_hidden(stp_det *d, uint64_t ip);
/* Two sites whose folded paths read the same: the frame of site's path
 * that tells it from other's (the first that differs inward from the
 * user's line, then outward), in *out.  Returns 0 when none does. */
int stp_det_site_difference(stp_det *d, uint32_t site, uint32_t other, stp_det_frame *out);
/* The innermost line of an installed package other than PyTorch that a
 * site's path went through below the user's line (a Hugging Face model's
 * modeling_gpt2.py:374 in GPT2MLP.forward, run from the user's
 * trainer.train()), in *out.  Returns 0 when it went through none (a model
 * of the user's own, torch.nn's layers). */
int stp_det_site_package_line(stp_det *d, uint32_t site, stp_det_frame *out);
/* The allocation wrappers that site paths are shown below (innermost
 * first): the innermost frames nearly every call site shares (at least 80%
 * of 5 or more sites), e.g. a program's own tensor_alloc <- xmalloc.
 * Returns how many (<= max). */
uint32_t stp_det_wrappers(stp_det *d, stp_det_frame *out, uint32_t max);
/* 1 when a site's objects are a library's own buffers, not the program's
 * tensors: its path goes through a CUDA library (cuBLAS, cuDNN, NCCL ...)
 * or a function naming a workspace or a BLAS handle (PyTorch's cuBLAS and
 * cuBLASLt workspaces, made at the first matmul of each thread and stream
 * and kept for the process).  The report shows them apart. */
int stp_det_site_library(stp_det *d, uint32_t site);
/* One line for a frame: "func (file:line)", "func (module+0xoff)" or
 * "module+0xoff". */
const char *stp_det_frame_text(const stp_det_frame *f, char *buf, size_t len);
/* Why a site's path shows no line of the program (one sentence), NULL
 * when it does (its folded path starts at the user's own frame). */
const char *stp_det_site_no_line(stp_det *d, uint32_t site);
/* The frame is the user's own code: a Python frame outside the standard
 * library, installed packages and the shim, or a native frame outside the
 * framework (PyTorch, CUDA, the interpreter, the C/C++ runtimes). */
int stp_det_frame_is_user(const stp_det_frame *f);
/* "where" of a site: its first frame's text ("?" when it has no stack). */
const char *stp_det_site_where(stp_det *d, uint32_t site, char *buf, size_t len);

/* ------------------------------------------------------------ names */

const char *stp_det_class_name(unsigned c);    /* "persistent", ... */
const char *stp_det_pattern_name(unsigned p);  /* "early-allocation", ... */
const char *stp_det_pattern_title(unsigned p); /* "Early allocation", ... */
const char *stp_det_source_name(unsigned s);   /* "none", "markers", "detected" */
/* A concrete suggestion for a finding (one or two sentences). */
const char *stp_det_suggestion(stp_det *d, const stp_det_finding *f, char *buf, size_t len);
const char *stp_det_expect_name(unsigned e);  /* "across-iterations", ... */
/* One line on why a finding of this kind is expected. */
const char *stp_det_expect_text(unsigned e);
/* Where an interval of the trace lies on the timeline, in words: "in
 * forward of iteration 3", "from forward to backward of iteration 3",
 * "from iteration 2 to iteration 3", "before the loop"; "" without a
 * timeline.  seqs as in stp_det_instance (at_seq, until_seq). */
const char *stp_det_span_text(const stp_det *d, uint64_t from_seq, uint64_t to_seq, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
