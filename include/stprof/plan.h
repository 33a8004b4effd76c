/*
 * stprof/plan.h - allocation plans: requests in, offsets out.
 *
 * The planner works on an in-memory array of requests (one steady-state
 * iteration), independent of where they came from: a trace
 * (stp_reqs_from_trace), a MiniMalloc CSV (stp_reqs_read_csv) or the
 * schedule generator (stp_gen_megatron).  It produces an STAlloc plan: a
 * static offset for every static request inside one pool, and for dynamic
 * requests the address intervals they may reuse per HomoLayer group.
 *
 * Time model.  Times are integer ticks within one iteration of length
 * `period`; a request is live over the half-open [t_start, t_end).  A request
 * with t_end <= t_start wraps: it is live over [t_start, period) and
 * [0, t_end) of the next iteration (allocated late, freed early in the next).
 * A persistent request is live all the time.  A plan is valid when no two
 * requests that are live at the same tick of the repeating schedule overlap
 * in address; stp_plan_verify() proves it.
 *
 * The algorithms and where they deviate from the STAlloc paper are in
 * docs/planner.md; the file format in docs/plan-format.md.
 */
#ifndef STPROF_PLAN_H
#define STPROF_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "outfile.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STP_REQ_DYNAMIC 1u    /* size known only at run time (MoE): not planned statically */
#define STP_REQ_PERSISTENT 2u /* live across the whole iteration (weights, optimizer state) */
/* A second range of a request's size and call site for a request whose
 * instance of one iteration is still live when the next one's is allocated:
 * whole iteration, never matched by the request sequence; the runtime
 * allocator takes it when the request's own range is held (plan 1.2). */
#define STP_REQ_SPARE 4u
/* The request's size varies across iterations at its place (sequence
 * lengths, batch sizes): planned statically at the largest size seen there;
 * the runtime allocator serves a request of any size up to it at its range
 * (plan 1.3). */
#define STP_REQ_VARYING 8u

#define STP_NO_OFFSET UINT64_MAX
#define STP_NO_GROUP UINT32_MAX

typedef struct stp_req {
	uint64_t size;
	uint64_t t_start, t_end;          /* ticks, half-open; wraps when t_end <= t_start */
	uint32_t phase_start, phase_end;  /* phase segment ids (index into stp_reqs.phases), 0 = none */
	uint32_t layer_start, layer_end;  /* layer segment ids (stp_reqs.layers), 0 = none */
	uint32_t flags;                   /* STP_REQ_* */
	uint32_t ordinal;                 /* signature: index among the allocations of the iteration */
	uint64_t callsite;                /* signature: hash of the allocation's call path */
} stp_req;

/* A phase or layer segment: a named stretch of the iteration's timeline. */
typedef struct stp_span {
	uint32_t name;     /* offset into stp_reqs.strings, 0 = "" */
	int64_t value;     /* micro-batch for phases */
	uint64_t t_begin, t_end;
} stp_span;

typedef struct stp_reqs {
	stp_req *req;
	size_t n, cap;
	uint64_t period;               /* ticks in one iteration; every time is <= period */
	stp_span *phases, *layers;     /* entry 0 is "none" */
	uint32_t nphases, nlayers;
	char *strings;                 /* NUL-separated; offset 0 is "" */
	uint32_t strings_len, strings_cap;
	/* where it came from (the plan file keeps it) */
	uint32_t source;               /* string: trace or CSV path */
	int64_t iteration;             /* iteration index in the trace, -1 = none */
	uint64_t begin_seq, end_seq;   /* the window cut from the trace */
	uint64_t trace_events;
	uint32_t notes;                /* string: what the converter had to assume */
	uint32_t program;              /* string: the traced process's program, its key
	                                * (stprof/programkey.h: "EXE\nSCRIPT"); "" unknown */
	int device;                    /* 1: device allocations (GPU), 0: host or unknown */
	int tensors;                   /* 1: PyTorch CPU tensor storages (the tensor space) */
	uint64_t min_size;             /* allocations below it were left out (0: none); the
	                                * runtime allocator sends them elsewhere */
	/* The start-up sequence: the sizes of the allocations before the
	 * iteration (of at least min_size), in order, up to the last one that is
	 * persistent (a persistent request's ordinal is its index here); the
	 * runtime allocator follows it to tell persistent requests from the
	 * temporaries around them (plan 1.3; none in older files). */
	int sizes_vary;                /* of shapes_vary, sizes at a place (not just counts): a
	                                * trace's; 0 from a plan file */
	int shapes_vary;               /* sizes or counts of requests vary from one iteration to the
	                                * next: the runtime lends free pool space (plan 1.3) */
	uint64_t iterations;           /* complete iterations in the trace, folded ones included
	                                * (0: unknown, as from a plan file) */
	uint64_t *startup;             /* sizes, | STP_STARTUP_OUTLIVES */
	uint32_t nstartup, startup_cap;
	/* Optional (a trace's, not a plan file's; NULL: unknown), per start-up
	 * entry: for one made before the first iteration marker and freed after
	 * it, how many entries of the sequence were made before its free (the
	 * persistent requests from that position on arrive after it is gone);
	 * UINT32_MAX for every other entry. */
	uint32_t *startup_until;
} stp_reqs;
/* In the start-up sequence: the allocation was still live when the first
 * iteration began (persistent, or freed in one of the first iterations). */
#define STP_STARTUP_OUTLIVES (1ull << 63)
#define STP_STARTUP_SIZE(v) ((v) & ~STP_STARTUP_OUTLIVES)

void stp_reqs_init(stp_reqs *r);
void stp_reqs_free(stp_reqs *r);
/* Appends a request (grows the array); returns its index or -1 (no memory). */
long stp_reqs_add(stp_reqs *r, const stp_req *q);
/* Appends a size to the start-up sequence; 0 or -1 (no memory). */
int stp_reqs_add_startup(stp_reqs *r, uint64_t size);
/* dst = src without the requests below min_size (nor their places in the
 * start-up sequence): ordinals counted again among the rest, as a trace
 * converted with that min size would have them; dst->min_size = min_size.
 * 0 or -1 (no memory). */
int stp_reqs_raise_min(const stp_reqs *src, uint64_t min_size, stp_reqs *dst);
/* Interns nothing: appends a string, returns its offset (0 on failure). */
uint32_t stp_reqs_string(stp_reqs *r, const char *s);
const char *stp_reqs_str(const stp_reqs *r, uint32_t off);
/* Adds a phase / layer segment, returns its id (>= 1), 0 on failure. */
uint32_t stp_reqs_add_phase(stp_reqs *r, const char *name, int64_t value, uint64_t t0, uint64_t t1);
uint32_t stp_reqs_add_layer(stp_reqs *r, const char *name, int64_t value, uint64_t t0, uint64_t t1);
/* Checks the set: times <= period, sizes > 0, segment ids in range.
 * Returns 0, or -1 with a message naming the first bad request. */
int stp_reqs_check(const stp_reqs *r, char *err, size_t errlen);
/* Whether request q is live at tick t of the repeating schedule. */
int stp_req_live_at(const stp_req *q, uint64_t period, uint64_t t);

/* Lower bound on any plan's pool: the maximum over time of the bytes live
 * (dynamic requests included when with_dynamic, at their recorded sizes). */
uint64_t stp_lower_bound(const stp_reqs *r, int with_dynamic);

/* ------------------------------------------------------------------ plans */

typedef struct stp_interval {
	uint64_t offset, size;
} stp_interval;

/* Dynamic reusable space of one HomoLayer group (layer_start, layer_end):
 * address intervals of the pool idle during [t_begin, t_end). */
typedef struct stp_dyn_group {
	uint32_t layer_start, layer_end;
	uint64_t t_begin, t_end;
	uint32_t first, count;   /* into stp_plan.intervals */
	uint64_t requests, max_bytes; /* dynamic requests in the group, their peak live bytes */
} stp_dyn_group;

typedef enum stp_plan_algo {
	STP_ALGO_STALLOC = 0,   /* STAlloc static plan + improvement */
	STP_ALGO_STALLOC_ONLY,  /* STAlloc static plan, no improvement step */
	STP_ALGO_GREEDY         /* greedy by size, best fit (TFLite / MemoMalloc) */
} stp_plan_algo;

typedef struct stp_plan_opts {
	stp_plan_algo algo;
	uint64_t align;         /* every offset and size is a multiple of it (>= 1) */
	int no_fusion;          /* skip HomoPhase fusion */
	int verbose;            /* progress and step figures on stderr */
	double budget;          /* seconds for the improvement search after the
	                         * STAlloc and greedy steps (stopped early when the
	                         * bound is met); 0 = no search (default 2) */
	double greedy_seconds;  /* STP_ALGO_GREEDY: give up after this many CPU
	                         * seconds and return 1 without a plan (a baseline
	                         * that must not cost more than the plan it is
	                         * compared with); 0 = no limit (default).
	                         * STP_ALGO_STALLOC: the CPU limit for completing
	                         * greedy-by-size after the search when the
	                         * improvement step dropped it; 0 = the default
	                         * (half the budget or half the planning's CPU
	                         * time so far, the larger, at least 20 ms) */
	int no_greedy_check;    /* STP_ALGO_STALLOC: do not complete greedy-by-size
	                         * after the search (the plan may then be larger
	                         * than greedy's layout) */
	uint64_t improve_work;  /* the improvement step's work (visits of
	                         * overlapping requests); 0 = the default, 16 a
	                         * request + 4,000,000 (tests set it small) */
} stp_plan_opts;

/* The step whose layout a plan keeps (the best verified one of all). */
typedef enum stp_plan_step {
	STP_STEP_STALLOC = 0,   /* STAlloc steps */
	STP_STEP_IMPROVE,       /* STAlloc + re-placement above the bound */
	STP_STEP_GREEDY,        /* greedy by size (+ re-placement) */
	STP_STEP_SEARCH,        /* exact search (search.c; up to 5000 static requests) */
	STP_STEP_PEAK,          /* exact search of the requests near the peak, the rest
	                         * first fit (large.c; above 5000 static requests) */
	STP_STEP_WINDOWS,       /* first fit window by window in time (window.c) */
	STP_STEP_REPAIR         /* exact re-placement around the peak (repair.c) */
} stp_plan_step;
const char *stp_plan_step_name(int step);

typedef struct stp_plan_stats {
	uint64_t lower_bound;        /* static + persistent requests, aligned sizes */
	uint64_t lower_bound_all;    /* dynamic requests included */
	uint64_t pool_stalloc;       /* after the STAlloc steps, before improvement */
	uint64_t persistent_bytes;
	uint64_t pinned_requests;    /* non-persistent requests pinned by the cyclic cut */
	uint64_t phase_groups, fused_groups, units, size_groups;
	uint64_t improved_requests;  /* re-placed by the improvement step */
	int greedy_layout;           /* the improvement step kept greedy-by-size's (improved) layout */
	int step;                    /* stp_plan_step that produced the layout */
	int optimal;                 /* 1: no layout of the working view has a smaller pool */
	uint64_t proven_bound;       /* pools below it are impossible (>= lower_bound when the
	                              * cut pins nothing; the working view's bound otherwise) */
	uint64_t pool_greedy;        /* greedy-by-size, improved; 0 = not run */
	uint64_t pool_greedy_plain;  /* greedy-by-size alone (what STP_ALGO_GREEDY
	                              * writes), computed by this build; 0 = not
	                              * computed (not needed, skipped or stopped) */
	double greedy_seconds;       /* CPU seconds that pool_greedy_plain took */
	double greedy_limit;         /* > 0: greedy-by-size was stopped at this many
	                              * CPU seconds after the search */
	uint64_t search_nodes;       /* search nodes visited */
	double search_seconds;       /* time spent searching */
	double found_seconds;        /* since planning began, when the kept layout was found */
	int search_stopped;          /* 1: the budget ran out before the search was done */
	uint64_t dynamic_requests;
	uint64_t dynamic_fit;        /* dynamic requests of the trace that fit their reusable space */
	uint64_t dynamic_fallback_peak; /* peak bytes of those that do not (the fallback allocator's) */
	double seconds;
	/* set by whoever replayed the plan through the runtime allocator
	 * (stprof plan): the summary calls a plan optimal only when it is
	 * followed */
	int runtime_checked, runtime_followed;
	uint64_t dynamic_space;      /* bytes added to the pool above the layout for what the plan
	                              * does not place where shapes vary (stprof plan's replay) */
} stp_plan_stats;

typedef struct stp_plan {
	uint64_t pool;               /* bytes */
	uint64_t align;
	size_t n;
	uint64_t *offset;            /* per request; STP_NO_OFFSET for dynamic ones */
	uint32_t *group;             /* per request: dynamic group index or STP_NO_GROUP */
	stp_dyn_group *groups;
	uint32_t ngroups;
	stp_interval *intervals;
	uint32_t nintervals;
	/* Per start-up entry (stp_reqs.nstartup), or NULL: the range a start-up
	 * temporary that outlives start-up takes, over the slots of persistent
	 * requests made after it is freed (STP_NO_OFFSET: none); nplaced of
	 * them have one (plan 1.4). */
	uint64_t *startup_offset;
	uint32_t nplaced;
	stp_plan_stats stats;
} stp_plan;

void stp_plan_opts_init(stp_plan_opts *o);
/* Builds a plan for r.  Returns 0, -1 with a message (no memory, bad set),
 * or 1 when greedy_seconds ran out (no plan, nothing to free). */
int stp_plan_build(const stp_reqs *r, const stp_plan_opts *o, stp_plan *p, char *err, size_t errlen);
void stp_plan_free(stp_plan *p);

/* Proves that no two statically placed requests overlap in both time (of the
 * repeating schedule) and address, that each lies inside the pool, and that
 * every dynamic group's intervals are idle over the group's time range.
 * Returns 0, or -1 with the first conflict described in err. */
int stp_plan_verify(const stp_reqs *r, const stp_plan *p, char *err, size_t errlen);

/* ------------------------------------------------------------- plan file */

/* A plan file (its magic bytes), and a CSV with an offset column as
 * stp_reqs_write_csv() writes it: what an output may replace
 * (stprof/outfile.h). */
extern const stp_outkind stp_outkind_plan, stp_outkind_csv;

/* Writes r and p as a plan file (docs/plan-format.md), as stprof/outfile.h
 * says (an earlier plan at path is kept as .old).  0 or -1 with err. */
int stp_plan_write(const char *path, const stp_reqs *r, const stp_plan *p, char *err, size_t errlen);
/* Reads a plan file into r (requests, segments, source) and p.  Any damage
 * gives -1 and "FILE: offset N: what" in err. */
int stp_plan_read(const char *path, stp_reqs *r, stp_plan *p, char *err, size_t errlen);
/* Same, from memory (the fuzz target uses it); name is used in messages. */
int stp_plan_parse(const void *data, size_t len, const char *name, stp_reqs *r, stp_plan *p,
                   char *err, size_t errlen);
/* Human-readable dump; max_entries caps the entry list (0 = all). */
void stp_plan_show(FILE *f, const stp_reqs *r, const stp_plan *p, size_t max_entries);
/* The quality summary: pool vs lower bound vs greedy (greedy_pool 0 = not run). */
void stp_plan_summary(FILE *f, const stp_reqs *r, const stp_plan *p, uint64_t greedy_pool, double greedy_s);

/* ------------------------------------------------------ MiniMalloc CSV */

/* Reads `id,lower,upper,size[,alignment][,offset]` (header names the
 * columns, any order).  Lifetimes are half-open.  ids land in ordinal, the
 * offsets (if the column exists) in *offsets (malloc'd, NULL when absent).
 * Bad input: -1 and "FILE:LINE: what". */
int stp_reqs_read_csv(const char *path, stp_reqs *r, uint64_t **offsets, char *err, size_t errlen);
int stp_reqs_parse_csv(const char *data, size_t len, const char *name, stp_reqs *r,
                       uint64_t **offsets, char *err, size_t errlen);
/* Writes the instance back with an `offset` column (MiniMalloc's output);
 * "-": standard output. */
int stp_reqs_write_csv(const char *path, const stp_reqs *r, const uint64_t *offsets, char *err, size_t errlen);

/* ---------------------------------------------------------- from traces */

/*
 * The steady-state window.  By default the converter finds it from the
 * trace's ITER_BEGIN/END markers (the last complete iteration, or
 * `iteration` when >= 0).  A detector that found the iteration by itself
 * passes begin_seq/end_seq instead (use_seq = 1), and may pass phase cuts;
 * without cuts the trace's PHASE markers inside the window are used.
 */
typedef struct stp_phase_cut {
	uint64_t begin_seq, end_seq;  /* events begin_seq <= seq < end_seq */
	const char *name;
	int64_t value;                /* micro-batch */
} stp_phase_cut;

typedef struct stp_window {
	int64_t iteration;            /* -1: the last complete marked iteration */
	int use_seq;                  /* 1: use begin_seq/end_seq, not markers */
	uint64_t begin_seq, end_seq;  /* the iteration: begin_seq <= seq < end_seq */
	const stp_phase_cut *cuts;    /* optional, sorted by begin_seq */
	uint32_t ncuts;
	int device_only;              /* keep device allocations only (host when none) */
	int detect_varying;           /* requests whose size varies across iterations: 0 taken as
	                               * recorded, STP_VARYING_MAX (default) planned at the largest
	                               * size seen, STP_VARYING_DYNAMIC dynamic (STAlloc's way) */
	uint64_t host_min_size;       /* host allocations (when planned) smaller than this are left out */
	/* Optional: the whole trace's allocations and frees of the planned
	 * space (device, tensors or host, as chosen for the plan; of a host
	 * space, those of at least the smaller of stream_min_size and
	 * host_min_size bytes), with the iteration markers, in trace order:
	 * what a runtime allocator enforcing the plan is asked (stalloc's
	 * replay).  NULL: not collected. */
	struct stp_stream *stream;
	uint64_t stream_min_size;
} stp_window;

/* One event of a stream: an allocation of `size` bytes that later frees
 * name by `obj` (objects are numbered from 0 in allocation order), its
 * free, or the start of iteration `size` (an ITER_BEGIN marker).  Of an
 * iteration the collector folded (docs/record.md, "Long runs") the trace
 * holds only the allocations that outlive it: ALLOC_OUTLIVING, for the
 * replay to serve where the sequence left out would have put them (the
 * program asks for them amid that sequence, never alone). */
enum { STP_SEV_ALLOC = 0, STP_SEV_FREE = 1, STP_SEV_ITER = 2, STP_SEV_ALLOC_OUTLIVING = 3 };
typedef struct stp_sev {
	uint64_t size;
	uint32_t obj;
	uint32_t kind;
} stp_sev;

typedef struct stp_stream {
	stp_sev *ev;
	size_t n, cap;
	uint32_t nobj;                /* objects allocated */
	uint32_t iterations;          /* ITER events */
	uint32_t folded;              /* iterations the collector folded */
} stp_stream;

void stp_stream_free(stp_stream *s);

enum { STP_VARYING_OFF = 0, STP_VARYING_MAX = 1, STP_VARYING_DYNAMIC = 2 };

void stp_window_init(stp_window *w);
/* Converts one iteration of a trace to requests.  Returns 0, or -1 with a
 * message. Fills r->notes with what it assumed (no markers, ...). */
int stp_reqs_from_trace(const char *path, const stp_window *w, stp_reqs *r, char *err, size_t errlen);

/* ------------------------------------------------------------ generator */

typedef enum stp_gen_schedule {
	STP_GEN_1F1B = 0,
	STP_GEN_INTERLEAVED,   /* Megatron's interleaved 1F1B with `chunks` model chunks per stage */
	STP_GEN_GPIPE          /* all forwards, then all backwards */
} stp_gen_schedule;

typedef struct stp_gen_opts {
	uint32_t layers;        /* transformer layers on this pipeline stage */
	uint32_t micro_batches;
	uint32_t stages, stage; /* pipeline size and which stage this trace is */
	uint32_t chunks;        /* virtual chunks (interleaved) */
	stp_gen_schedule schedule;
	int recompute;          /* full activation recomputation */
	uint32_t experts;       /* > 0: MoE MLP with that many experts, varying sizes */
	int jitter;             /* add op temporaries of random sizes with overlapping lifetimes */
	uint64_t hidden, seq, batch; /* model shape (bytes scale with them) */
	uint64_t seed;
} stp_gen_opts;

void stp_gen_opts_init(stp_gen_opts *o);
/* Picks micro_batches so that the trace has about n requests. */
void stp_gen_opts_for_size(stp_gen_opts *o, size_t n);
int stp_gen_megatron(const stp_gen_opts *o, stp_reqs *r, char *err, size_t errlen);

/* A random guillotine cut of a width x period rectangle into requests: the
 * optimum pool is exactly `width` by construction. */
int stp_gen_guillotine(uint64_t width, uint64_t period, size_t n, uint64_t seed, stp_reqs *r);

#ifdef __cplusplus
}
#endif
#endif
