/*
 * stprof/allocsim.h - allocator models: replay a stream of allocations and
 * frees through faithful models of real GPU allocators and measure what they
 * reserve.
 *
 * Models (docs/allocator-models.md says which source each rule comes from):
 *   ALLOCSIM_PYTORCH  PyTorch's CUDACachingAllocator: round_size with
 *                     roundup_power2_divisions, small/large pools with
 *                     2 MiB / 20 MiB segments, should_split, max_split_size,
 *                     max_non_split_rounding, per-stream best fit by
 *                     (stream, size, address), merge on free, release of
 *                     cached blocks and retry at a device capacity, garbage
 *                     collection; with expandable_segments:True, the
 *                     expandable-segment variant (page mapping/unmapping).
 *   ALLOCSIM_BFC      XLA/TensorFlow BFC: 256 B rounding, 21 bins, its split
 *                     rule, coalescing, region growth (allow_growth) or one
 *                     preallocated region, optional free-region collection.
 *   ALLOCSIM_RAW      raw cudaMalloc/cudaFree per allocation (no cache).
 * Host heap models (allocsim_host_*, allocsim/host*.c), for programs that
 * are not iterative (servers, pipelines): what a host allocator would hold
 * in 2 MiB huge pages (and 8 KiB blocks) for the same objects:
 *   ALLOCSIM_HOST_SIZE_CLASSES  size classes on huge pages: libstalloc's
 *                     spans and pages with one lifetime class for all
 *                     (what jemalloc, TCMalloc or mimalloc do on huge pages);
 *   ALLOCSIM_HOST_GLIBC  glibc-like: 16-byte chunks with an 8-byte header
 *                     in one address-ordered arena, best fit, coalescing,
 *                     big requests mmapped on their own (dynamic threshold);
 *   ALLOCSIM_HOST_LIFETIME  libstalloc's lifetime heap: spans and pages by
 *                     the lifetime class given with each allocation
 *                     (a model's prediction, or the object's own class).
 *
 * For each model the result holds the peak allocated M_a (bytes handed out,
 * after the model's rounding), the peak reserved M_r (bytes the model got
 * from the device), the efficiency E = M_a / M_r and the fragmentation 1 - E.
 *
 * Three ways in:
 *   - allocsim_model_*: one model, fed event by event (ids are any 64-bit
 *     values, e.g. addresses); what the tests use.
 *   - allocsim_events + allocsim_run: record the events once in a compact
 *     log (24 bytes an event), then replay it through any number of models,
 *     explain the worst moment, try recommended settings.
 *   - allocsim_collector / allocsim_replay_file: feed .stp trace events
 *     (stprof/trace.h); builds one event log per device and a report.
 *     A device whose allocations are JAX's buffers (pool STP_POOL_JAX) is
 *     reported the XLA way: XLA's BFC as the program ran it, its error
 *     against XLA's own statistics (allocsim_collector_xla_stat), and
 *     XLA_PYTHON_CLIENT_* settings instead of PYTORCH_ALLOC_CONF ones.
 *
 * Invariants every model keeps (tests/allocsim checks them): live blocks
 * never overlap; allocated <= reserved at every event (except raw, where
 * they are equal); freeing everything brings allocated to 0.
 *
 * Nothing here prints unless asked (allocsim_*_print); results are plain
 * structs for the report and exporters to format.
 */
#ifndef STPROF_ALLOCSIM_H
#define STPROF_ALLOCSIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ALLOCSIM_UNLIMITED UINT64_MAX
#define ALLOCSIM_MIB (1024ull * 1024ull)

/* ------------------------------------------------------------- config */

typedef enum allocsim_model_kind {
	ALLOCSIM_PYTORCH = 0,
	ALLOCSIM_BFC = 1,
	ALLOCSIM_RAW = 2
} allocsim_model_kind;

#define ALLOCSIM_POW2_INTERVALS 16 /* 1 MiB .. 64 GiB, as in PyTorch */

typedef struct allocsim_config {
	allocsim_model_kind model;
	char name[48];      /* label for reports; "" = derived from the settings */
	uint64_t capacity;  /* bytes the device can give; 0 = unlimited (no OOM) */

	/* PyTorch CUDACachingAllocator (PYTORCH_ALLOC_CONF keys) */
	uint64_t max_split_size;         /* max_split_size_mb; UNLIMITED by default */
	uint64_t max_non_split_rounding; /* max_non_split_rounding_mb; 20 MiB */
	uint64_t large_segment_size;     /* large_segment_size_mb; 20 MiB (kLargeBuffer) */
	uint32_t roundup_power2_divisions[ALLOCSIM_POW2_INTERVALS]; /* 0 = off */
	int expandable_segments;         /* expandable_segments:True */
	double garbage_collection_threshold; /* (0,1); 0 = off; needs capacity */

	/* BFC */
	int bfc_allow_growth;              /* 1: regions grow from 2 MiB; 0: preallocate */
	uint64_t bfc_memory_limit;         /* 0 = capacity (unlimited when growing) */
	uint64_t bfc_max_internal_fragmentation; /* 128 MiB */
	double bfc_fragmentation_fraction; /* >0: max_internal_frag = fraction * limit */
	int bfc_garbage_collection;        /* free whole free regions before OOM */

	/* raw cudaMalloc */
	uint64_t raw_alignment; /* every allocation is rounded up to this; 512 */
} allocsim_config;

/* Defaults of a model (PyTorch's, BFC's with allow_growth, raw's). */
void allocsim_config_default(allocsim_config *c, allocsim_model_kind model);

/*
 * Parses a PYTORCH_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF style string on top
 * of *c: comma-separated key:value pairs, lists in brackets, blanks ignored:
 *
 *   expandable_segments:True,max_split_size_mb:128,
 *   roundup_power2_divisions:[256:1,512:2,>:8]
 *
 * PyTorch keys: max_split_size_mb, max_non_split_rounding_mb,
 * large_segment_size_mb, roundup_power2_divisions (N or [MB:N,...,>:N]),
 * expandable_segments, garbage_collection_threshold, backend (native), and
 * the host/locking keys PyTorch accepts (release_lock_on_cudamalloc,
 * pinned_*: accepted, no effect).  stprof keys: model:pytorch|bfc|raw,
 * name:LABEL, capacity_mb:N, capacity_gb:N, allow_growth:True|False,
 * memory_limit_mb:N, max_internal_fragmentation_mb:N,
 * fragmentation_fraction:F, garbage_collection:True|False, raw_alignment:N.
 * The value checks are PyTorch's (max_split_size_mb >= 20, powers of two...).
 * Returns 0, or -1 with a one-line message naming the offset and token in err.
 */
int allocsim_config_parse(allocsim_config *c, const char *text, char *err, size_t errlen);

/* The settings that differ from the model's defaults, as a string that
 * allocsim_config_parse accepts ("" for pure defaults).  Returns buf. */
char *allocsim_config_format(const allocsim_config *c, char *buf, size_t len);
/* The report label: c->name, or "pytorch", "pytorch expandable_segments",
 * "bfc allow_growth", ... derived from the settings.  Returns buf. */
char *allocsim_config_label(const allocsim_config *c, char *buf, size_t len);
/* Checks a config (values a parser would refuse, BFC preallocation without
 * a limit).  0 or -1 with a message. */
int allocsim_config_check(const allocsim_config *c, char *err, size_t errlen);

/* ------------------------------------------------------------- results */

typedef struct allocsim_sample {
	uint64_t time;      /* time of the first event of the interval */
	uint64_t allocated; /* max over the interval */
	uint64_t reserved;  /* max over the interval */
} allocsim_sample;

typedef struct allocsim_result {
	allocsim_config config;
	char label[96];
	uint64_t events, allocs, frees;
	uint64_t unmatched_frees;  /* frees of ids that were not live (ignored) */
	uint64_t duplicate_allocs; /* allocs of a live id (the old one is freed first) */
	uint64_t peak_allocated;   /* M_a */
	uint64_t peak_reserved;    /* M_r */
	uint64_t peak_requested;   /* peak of live requested bytes (before rounding) */
	uint64_t peak_allocated_time, peak_reserved_time;
	uint64_t peak_reserved_event; /* index of the event that first reached M_r */
	double efficiency;            /* M_a / M_r (1 when M_r is 0) */
	double fragmentation;         /* 1 - efficiency */
	uint64_t final_allocated, final_reserved;
	uint64_t segment_allocs;   /* cudaMalloc calls, or page mappings (expandable) */
	uint64_t segment_frees;    /* cudaFree calls, or page unmappings */
	uint64_t largest_segment;  /* largest single cudaMalloc/region/mapping */
	uint64_t splits, merges;
	uint64_t alloc_retries;    /* PyTorch num_alloc_retries: cache flushed, retried */
	uint64_t ooms;             /* requests that would fail at `capacity` */
	uint64_t first_oom_time, first_oom_event; /* valid when ooms > 0 */
	uint64_t first_oom_size;
	int aborted;               /* stopped early (allocsim_run_opts.abort_above) */
	allocsim_sample *series;   /* decimated (time, allocated, reserved); owned */
	size_t nseries;
} allocsim_result;

void allocsim_result_clear(allocsim_result *r); /* frees the series */
/* One line: label, M_a, M_r, E, fragmentation, segments, OOMs. */
void allocsim_result_print(FILE *f, const allocsim_result *r);

/* ------------------------------------------------------------- one model */

typedef struct allocsim_model allocsim_model;

allocsim_model *allocsim_model_new(const allocsim_config *c, char *err, size_t errlen);
/*
 * Allocates `size` bytes as object `id` on `stream` (any 64-bit handle).
 * *addr (if not NULL) gets the simulated address.  Returns 0, 1 when the
 * request would have failed at the configured capacity (it is then served
 * beyond the capacity so the replay can go on; result.ooms counts it), or
 * -1 for a bad request (size >= 2^48).  An id that is already live is freed
 * first (counted in duplicate_allocs).
 */
int allocsim_model_alloc(allocsim_model *m, uint64_t id, uint64_t size, uint64_t stream,
                         uint64_t time, uint32_t stack, uint64_t *addr);
/* Frees object id.  Returns 0, or 1 when id is not live (ignored). */
int allocsim_model_free(allocsim_model *m, uint64_t id, uint64_t time);
/* torch.cuda.empty_cache(): give every unused cached segment back. */
void allocsim_model_empty_cache(allocsim_model *m, uint64_t time);
/* The result so far (series copied; clear it with allocsim_result_clear). */
void allocsim_model_result(allocsim_model *m, allocsim_result *r);
/* Bytes allocated (after the model's rounding) and reserved now. */
void allocsim_model_usage(allocsim_model *m, uint64_t *allocated, uint64_t *reserved);
/* Calls fn for every range the model maps (mapped = 1: a cudaMalloc'd
 * segment, a BFC region, expandable segment pages) or unmaps (0), with
 * the model's segment number (a segment's pages share it; numbers are
 * reused once a segment is gone), as it happens.  The raw model tells
 * nothing.  fn NULL stops. */
void allocsim_model_watch(allocsim_model *m,
                          void (*fn)(void *ctx, int mapped, uint64_t addr, uint64_t size, uint32_t segment),
                          void *ctx);
/* The block holding live object id: its size (the request after the
 * model's rounding, or more when the rest was not worth splitting off) and
 * in *addr its address; 0 when id is not live (or the raw model). */
uint64_t allocsim_model_block(allocsim_model *m, uint64_t id, uint64_t *addr);
/* Checks the model's internal invariants (links, segments tiled by blocks,
 * no two free neighbours, free sets holding exactly the free blocks, the
 * byte counts adding up): 0, or -1 with the first broken one in why.  Costs
 * O(blocks); for tests and debugging. */
int allocsim_model_check(allocsim_model *m, char *why, size_t len);
void allocsim_model_destroy(allocsim_model *m);

/* ------------------------------------------------------------- snapshot */

typedef enum allocsim_block_state {
	ALLOCSIM_BLOCK_FREE = 0,      /* cached, mapped, not in use */
	ALLOCSIM_BLOCK_ALLOCATED = 1,
	ALLOCSIM_BLOCK_UNMAPPED = 2   /* expandable segment address space, no pages */
} allocsim_block_state;

typedef struct allocsim_block_info {
	uint64_t addr, size;
	uint8_t state;        /* allocsim_block_state */
	uint32_t stack;       /* allocated: the allocation's stack id */
	uint32_t split_stack; /* free: stack of the allocation whose split left it (0 = none) */
	uint32_t left_stack;  /* free: stacks of the allocated neighbours (0 = none) */
	uint32_t right_stack;
} allocsim_block_info;

typedef struct allocsim_segment_info {
	uint64_t addr, size;   /* size: bytes reserved (mapped bytes when expandable) */
	uint64_t allocated;    /* bytes in allocated blocks */
	uint64_t free_bytes;   /* bytes in free (mapped) blocks */
	uint64_t largest_free;
	uint64_t stream;       /* the stream handle given to alloc */
	uint8_t small_pool;    /* PyTorch small pool */
	uint8_t expandable;
	uint32_t stack;        /* stack of the request that created it */
	uint32_t first_block, nblocks; /* into allocsim_snapshot.blocks, by address */
} allocsim_segment_info;

typedef struct allocsim_site {
	uint32_t stack;
	uint64_t splits;           /* splits this site's allocations made (explain replay) */
	uint64_t split_free_bytes; /* free bytes now in blocks this site split off */
	uint64_t pinning_bytes;    /* live bytes of this site in segments holding free bytes */
	uint64_t live_bytes;       /* live bytes of this site */
} allocsim_site;

#define ALLOCSIM_FREE_BINS 21 /* free block sizes [256*2^b, 256*2^(b+1)), last unbounded */

typedef struct allocsim_snapshot {
	uint64_t time, event;      /* the moment (event index in the log) */
	uint64_t allocated, reserved;
	uint64_t free_bytes, free_blocks, largest_free;
	uint64_t free_small_pool, free_large_pool; /* PyTorch pools */
	uint64_t free_by_bin[ALLOCSIM_FREE_BINS];  /* bytes of free blocks by size bin */
	uint64_t request_size;     /* the request being served at the moment (0 = none) */
	uint32_t request_stack;
	allocsim_segment_info *segments; size_t nsegments; /* by free bytes, largest first */
	allocsim_block_info *blocks; size_t nblocks;
	allocsim_site *sites; size_t nsites; /* by split_free_bytes, then pinning_bytes, then
	                                      * splits; sites holding nothing now: the 64 with
	                                      * most splits */
} allocsim_snapshot;

/* qsort order of allocsim_snapshot.sites: split-off free bytes, then
 * pinning bytes, then splits, all descending; stack ascending on ties. */
int allocsim_site_cmp(const void *a, const void *b);
/* The current state of a model. */
int allocsim_model_snapshot(allocsim_model *m, allocsim_snapshot *s);
void allocsim_snapshot_clear(allocsim_snapshot *s);
typedef const char *(*allocsim_stack_namer)(void *ctx, uint32_t stack, char *buf, size_t len);
/* Prints the worst-moment explanation: where the free bytes are (up to
 * max_segments segments), which call sites split which blocks.  Times print
 * relative to t0 (ns).  namer may be NULL (stacks print as "stack #N"). */
void allocsim_snapshot_print(FILE *f, const allocsim_snapshot *s, uint64_t t0, size_t max_segments,
                             allocsim_stack_namer namer, void *ctx);

/* ------------------------------------------------------------- event log */

typedef struct allocsim_events allocsim_events;

allocsim_events *allocsim_events_new(void);
void allocsim_events_destroy(allocsim_events *e);
/* Appends an allocation / a free (same meaning as allocsim_model_*).
 * Returns 0, 1 for an ignored free of a non-live id, -1 for a bad request
 * or out of memory. */
int allocsim_events_alloc(allocsim_events *e, uint64_t id, uint64_t size, uint64_t stream,
                          uint64_t time, uint32_t stack);
int allocsim_events_free(allocsim_events *e, uint64_t id, uint64_t time);
size_t allocsim_events_count(const allocsim_events *e);
/* Gives back the log's spare capacity (call when done appending). */
void allocsim_events_trim(allocsim_events *e);
size_t allocsim_events_memory(const allocsim_events *e); /* bytes held */
uint64_t allocsim_events_allocs(const allocsim_events *e);

typedef struct allocsim_run_opts {
	size_t max_samples;    /* series length bound (0 = 1024) */
	uint64_t abort_above;  /* stop once reserved exceeds this (0 = never) */
	uint64_t abort_ooms_at; /* stop once this many requests OOMed (0 = never) */
} allocsim_run_opts;

/* Replays the whole log through one model. 0, or -1 (bad config: err). */
int allocsim_run(const allocsim_events *e, const allocsim_config *c, const allocsim_run_opts *o,
                 allocsim_result *r, char *err, size_t errlen);
/* allocsim_run, and the snapshot allocsim_explain would give at the
 * result's peak reserved, mostly without a second replay: the state is
 * captured when a new peak is reached (at most once per n events, n the
 * snapshot's size in blocks and call sites, so the cost stays linear), and
 * replayed only if the final peak was not captured. */
int allocsim_run_explained(const allocsim_events *e, const allocsim_config *c, const allocsim_run_opts *o,
                           allocsim_result *r, allocsim_snapshot *worst, char *err, size_t errlen);
/* Replays the log up to and including event `event` (e.g. a result's
 * peak_reserved_event) and takes a snapshot there, counting splits by site
 * on the way. */
int allocsim_explain(const allocsim_events *e, const allocsim_config *c, uint64_t event,
                     allocsim_snapshot *s, char *err, size_t errlen);

/* A request refused at run time, tried on a model: the log replayed up to
 * it with the config's capacity (what the device is known to have given),
 * then the request. */
typedef struct allocsim_refusal_probe {
	int served;                /* the model served it within the capacity */
	uint64_t ooms_before;      /* requests before it the model could not serve within it */
	uint64_t first_oom_time;   /* the first of those (valid when ooms_before) */
	uint64_t allocated, reserved; /* the model's bytes just before the request */
	uint64_t free_bytes, largest_free; /* free in its segments then, and the largest free block:
	                                    * fragmentation when the request is above the one and
	                                    * below the other */
} allocsim_refusal_probe;

/* Replays events [0, before) through c (its capacity set: 0 would serve
 * everything), then asks for `size` bytes on `stream` (a handle, as given
 * to allocsim_events_alloc).  0, or -1 (bad config: err). */
int allocsim_probe_request(const allocsim_events *e, const allocsim_config *c, size_t before, uint64_t size,
                           uint64_t stream, allocsim_refusal_probe *out, char *err, size_t errlen);

/* ------------------------------------------------------------- advice */

typedef struct allocsim_recommendation {
	char settings[160];    /* PYTORCH_ALLOC_CONF value to try (a JAX device: VAR=VALUE) */
	uint64_t peak_allocated, peak_reserved;
	double efficiency;
	uint64_t ooms, alloc_retries;
	int64_t reserved_delta; /* vs the base config: negative = saves memory */
	double efficiency_delta;
} allocsim_recommendation;

/*
 * Tries candidate settings on top of `base` (a PyTorch config):
 * expandable_segments, max_split_size_mb, roundup_power2_divisions and
 * combinations of the best ones, simulating each.  Writes the best up to
 * `max` settings that lower the peak reserved (or the OOM count), best
 * first, and returns how many (0 = nothing helps).  base_result is the
 * result of `base` on the same log.
 */
size_t allocsim_recommend(const allocsim_events *e, const allocsim_config *base,
                          const allocsim_result *base_result, allocsim_recommendation *out,
                          size_t max);

/* ------------------------------------------------------------- traces */

struct stp_event; /* stprof/trace.h */

/* ------------------------------------------------------------- XLA (JAX) */

/* The figures of XLA's allocator statistics (jax Device.memory_stats()). */
typedef enum allocsim_xla_key {
	ALLOCSIM_XLA_BYTES_IN_USE = 0,
	ALLOCSIM_XLA_PEAK_BYTES_IN_USE,
	ALLOCSIM_XLA_POOL_BYTES,
	ALLOCSIM_XLA_PEAK_POOL_BYTES,
	ALLOCSIM_XLA_LARGEST_FREE_BLOCK,
	ALLOCSIM_XLA_BYTES_LIMIT,
	ALLOCSIM_XLA_BYTES_RESERVED,
	ALLOCSIM_XLA_PEAK_BYTES_RESERVED,
	ALLOCSIM_XLA_NUM_ALLOCS,
	ALLOCSIM_XLA_LARGEST_ALLOC_SIZE,
	ALLOCSIM_XLA_NKEYS
} allocsim_xla_key;
/* memory_stats()'s name of a key ("bytes_in_use", ...); NULL when out of range. */
const char *allocsim_xla_key_name(int key);
/* The key of a name of n bytes, or -1. */
int allocsim_xla_key_of(const char *name, size_t n);

/* The XLA_PYTHON_CLIENT_* settings a JAX program ran with. */
typedef struct allocsim_xla_settings {
	int known;            /* the trace said; otherwise JAX's defaults */
	int preallocate;      /* XLA_PYTHON_CLIENT_PREALLOCATE: 1 (default) or 0 */
	double mem_fraction;  /* XLA_PYTHON_CLIENT_MEM_FRACTION: 0.75 by default */
	int platform;         /* XLA_PYTHON_CLIENT_ALLOCATOR=platform: no BFC */
} allocsim_xla_settings;
void allocsim_xla_settings_default(allocsim_xla_settings *s);

/* XLA's statistics at one point of a device's events, and the as-run
 * model's figures at the same point. */
typedef struct allocsim_xla_probe {
	uint64_t events;      /* how many of the device's logged events came before it */
	uint64_t time;
	uint64_t value[ALLOCSIM_XLA_NKEYS];
	uint32_t have;        /* bit k: value[k] was given */
	uint64_t model_in_use, model_pool, model_largest_free;
} allocsim_xla_probe;

/*
 * The as-run model of a JAX device and its error against XLA's own
 * statistics: replays the log through c and, at each probe, takes the
 * model's bytes in use, pool bytes and largest free chunk (probes in
 * `events` order).  0, or -1 with err (bad config).
 */
int allocsim_xla_probe_run(const allocsim_events *e, const allocsim_config *c, allocsim_xla_probe *probes,
                           size_t nprobes, char *err, size_t errlen);

/* ------------------------------------------------------------- trace replay */

typedef struct allocsim_replay_opts {
	const char *as_run;   /* PYTORCH_ALLOC_CONF the program ran with (NULL = defaults) */
	const allocsim_xla_settings *xla; /* a JAX program's settings (NULL = JAX's defaults) */
	const char *const *extra; size_t nextra; /* more config strings to simulate */
	uint64_t capacity;    /* device bytes for every model (0 = unlimited) */
	int no_recommend;     /* skip trying settings */
	int no_explain;       /* skip the worst-moment replay */
	int no_bfc, no_raw;   /* leave these models out */
	int no_expandable;    /* leave out the as-run config with expandable_segments flipped */
	size_t max_samples;   /* series length bound (0 = 1024) */
	size_t max_recommendations; /* 0 = 3 */
} allocsim_replay_opts;

typedef struct allocsim_actual {
	int present;               /* the trace carried segment events */
	uint64_t segment_reserves, segment_releases;
	uint64_t peak_allocated;   /* from the allocation sizes the allocator reported */
	uint64_t peak_reserved;    /* from SEGMENT_RESERVE / SEGMENT_RELEASE */
	double efficiency;
	double allocated_error;    /* (model - actual) / actual, the as-run model */
	double reserved_error;
	/* allocations made while the bytes allocated exceeded the bytes the
	 * segment events reserve: the segments are incomplete (an inconsistent
	 * snapshot), so efficiency and the errors above are not given */
	uint64_t over_reserved;
	/* a JAX device: the actual figures are XLA's statistics, sampled
	 * (peak_allocated: peak_bytes_in_use, 0 when no sample gave it;
	 * peak_reserved: peak_pool_bytes, else the largest pool_bytes) */
	int xla;
	uint64_t xla_samples;
	uint64_t bytes_limit;      /* XLA's memory limit for its BFC (0: not given) */
	uint64_t in_use_samples;   /* samples that gave bytes_in_use */
	double in_use_error;       /* the largest |model - actual| / actual bytes in use over them */
	int has_largest_free;      /* at the last sample that gave it: */
	uint64_t largest_free, model_largest_free;
} allocsim_actual;

typedef struct allocsim_device_report {
	int32_t device;            /* -1: host heap */
	int host_fallback;         /* no device allocations: host ones, "what if on a GPU" */
	uint64_t allocs, frees, unmatched_frees;
	allocsim_result *results; size_t nresults; /* [0] is PyTorch as run */
	allocsim_actual actual;
	int has_worst;
	allocsim_snapshot worst;   /* results[0] at its peak reserved */
	int recommend_tried;       /* candidates were simulated (recs may be empty) */
	allocsim_recommendation *recs; size_t nrecs;
	/* JAX's buffers (pool STP_POOL_JAX): the as-run model is XLA's BFC (or
	 * its platform allocator), recs are XLA_PYTHON_CLIENT_* settings */
	int xla;
	allocsim_xla_settings xla_settings; /* as run */
	uint64_t xla_capacity;     /* the device memory the advice assumes (0: unknown) */
	allocsim_xla_probe *probes; size_t nprobes;
	/* the first request the allocator refused at run time (a REFUSED
	 * event of the device, not an attempt: stp_refused_attempt), tried on
	 * each model (refusal_probes[i] for results[i]) with capacity
	 * refusal_capacity: --capacity, else the most the allocator had
	 * reserved before it (the device gave that much at least) */
	int has_refusal, refusal_capacity_given; /* given: --capacity */
	uint64_t refusal_time, refusal_size, refusal_capacity;
	allocsim_refusal_probe *refusal_probes;
} allocsim_device_report;

/* The refused request's fix, when the as-run model refuses it too (it
 * agrees with the run) and another PyTorch config serves it within the
 * same capacity: that config's index in results, its PYTORCH_ALLOC_CONF
 * settings in buf.  -2 when no model serves it (within --capacity: no
 * setting helps, the live bytes and the request need more; within what
 * the device had given: the device may have had up to the request more),
 * else -1. */
#define ALLOCSIM_REFUSAL_NONE (-2)
int allocsim_refusal_fix(const allocsim_device_report *dr, char *buf, size_t len);

typedef struct allocsim_report {
	allocsim_device_report *devices; size_t ndevices;
	uint64_t trace_events;     /* events read */
	uint64_t start_time;       /* time_ns of the first event (times print relative to it) */
	size_t memory;             /* bytes of event logs held while replaying */
	/* what a host fallback replayed, for its heading: "host heap" (NULL)
	 * or "CPU tensors" (a PyTorch CPU run's tensors: the caller says) */
	const char *host_name;
} allocsim_report;

/* Feeding trace events one by one (for a report that reads the trace once
 * for many analyses). */
typedef struct allocsim_collector allocsim_collector;
allocsim_collector *allocsim_collector_new(void);
void allocsim_collector_event(allocsim_collector *c, const struct stp_event *ev);
/* The same with the caller's numbers for the objects of ALLOC and FREE
 * events: `slot` (< 2^31) is dense (recycled once freed), never allocated
 * while live, and a free names a live slot of the same device.  The
 * collector then keeps no address map of its own (the report's detector
 * already knows each object).  Use one way or the other per collector. */
void allocsim_collector_event_slot(allocsim_collector *c, const struct stp_event *ev, uint32_t slot);
/* One figure of XLA's statistics for a device (-1: the host) at this point
 * of the events fed so far; figures at the same point make one probe. */
void allocsim_collector_xla_stat(allocsim_collector *c, int32_t device, uint64_t time, int key, uint64_t value);
/* Runs the models and fills *out. 0, or -1 with err (bad option string). */
int allocsim_collector_finish(allocsim_collector *c, const allocsim_replay_opts *o,
                              allocsim_report *out, char *err, size_t errlen);
void allocsim_collector_destroy(allocsim_collector *c);

/* Reads a .stp trace and does all of the above. 0, or -1 with err
 * ("FILE: offset N: what" for a bad trace, or a bad option). */
int allocsim_replay_file(const char *path, const allocsim_replay_opts *o, allocsim_report *out,
                         char *err, size_t errlen);
void allocsim_report_clear(allocsim_report *r);
/* The text section of the report: per device, the model table, the actual
 * E and the model's error, the worst moment, the recommendations. */
void allocsim_report_print(FILE *f, const allocsim_report *r, allocsim_stack_namer namer, void *ctx);

/* ---------------------------------------------------------------- host heaps
 * Event by event, as allocsim_model_*: addr is the object's address in the
 * trace (any 64-bit id), lifetime_class 0..7 (stprof/lifetimes.h; only the
 * lifetime heap uses it).  A page or block counts while any object placed
 * on it is live (a span's blocks while any of its slots is, or while it is
 * the one its size and class fill).  docs/allocator-models.md, "Host heaps". */
typedef enum allocsim_host_kind {
	ALLOCSIM_HOST_SIZE_CLASSES = 0,
	ALLOCSIM_HOST_GLIBC,
	ALLOCSIM_HOST_LIFETIME,
} allocsim_host_kind;

typedef struct allocsim_host allocsim_host;

typedef struct allocsim_host_usage {
	uint64_t pages;     /* 2 MiB pages holding a live object */
	uint64_t blocks;    /* 8 KiB blocks holding one */
	uint64_t max_pages; /* the most pages held at once */
} allocsim_host_usage;

/* NULL when out of memory. */
allocsim_host *allocsim_host_new(allocsim_host_kind kind);
void allocsim_host_delete(allocsim_host *h);
/* 0, or -1 when out of memory (the model is then unusable).  An address
 * still live is freed first. */
int allocsim_host_alloc(allocsim_host *h, uint64_t addr, uint64_t size, unsigned lifetime_class);
/* Frees of addresses not live are ignored. */
void allocsim_host_free(allocsim_host *h, uint64_t addr);
allocsim_host_usage allocsim_host_usage_of(const allocsim_host *h);
/* "size classes", "glibc-like", "lifetime heap". */
const char *allocsim_host_name(allocsim_host_kind kind);

#ifdef __cplusplus
}
#endif
#endif
