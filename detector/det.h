/*
 * det.h - the detector's internal state, shared by its passes.
 *
 *   scan.c      pass 1: spaces and peaks, markers, the allocation tokens
 *   windows.c   iteration/phase windows from markers, cuts, steady state
 *   period.c    iterations and phases detected from the tokens
 *   analyze.c   pass 2: objects, classes, sites, the peak snapshot, series
 *   access.c    API events: object lookup by range, topological levels,
 *               DrGPUM's per-object patterns and overallocation
 *   judge.c     what the program's structure explains (iterations, phases,
 *               libraries), the words that place an interval
 *   radix.c     the radix sort of the large sorts
 *   latefree.c  the host-trace late-free heuristic
 *   findings.c  findings aggregated per (pattern, site)
 *   simfeed.c   the allocator models, fed from pass 2
 *   objinfo.c   per-object class and patterns for the exporter
 *   result.c    the public result: sorting, names, suggestions
 *   iterstats.c the light second pass of stp_det_timeline_run()
 *   state.c     the helpers the passes share (spaces, names, cuts, buckets)
 *   det.c       stp_det_run(), stp_det_timeline_run(): the passes in order
 *
 * Timeline model: the trace is cut at "cuts" (every iteration and phase
 * boundary, sorted by seq); segment(s) = number of cuts <= s.  Iteration
 * boundaries alone are "ibounds" (begin_0, end_0, begin_1, end_1, ...);
 * ib(s) = number of ibounds <= s, so ib is odd inside an iteration.
 */
#ifndef STP_DET_DET_H
#define STP_DET_DET_H

#include <stdint.h>

#include "frames.h"
#include "livemap.h"
#include "stprof/detector.h"
#include "stprof/trace.h"

/* ------------------------------------------------------------ pieces */

typedef struct det_space_state {
	uint64_t live_bytes, live_objects, reserved;
	uint64_t iter_begin_live; /* live bytes at the last ITER_BEGIN (a FOLD's peak is above it) */
	/* the open iteration's highest moment (pass 1; seq UINT64_MAX: none
	 * above its start), kept for each iteration written in full
	 * (det_iter_peak) so that a folded peak can stand on its reference's */
	uint64_t it_peak_live, it_peak_seq, it_peak_ns, it_peak_objects;
	uint64_t pool_live, other_live; /* device: pool 1 and the rest (stp_det_space) */
	/* an allocator's refused attempts not yet resolved (scan.c's
	 * attempt_*): the thread, the first attempt's moment */
	uint8_t attempt_open;
	uint32_t attempt_tid;
	stp_det_refusal attempt_first;
} det_space_state;

/* A live object in pass 2 (56 bytes). */
typedef struct det_obj {
	uint64_t addr, size;
	uint64_t alloc_seq, alloc_ns;
	uint32_t site;     /* internal site index; DET_NO_SITE outside the analyzed space */
	uint32_t seg;      /* segment at allocation */
	uint32_t ib;       /* iteration-boundary count at allocation */
	uint16_t space;
	uint8_t flags;     /* DET_OBJ_* */
	uint8_t pad;
	uint32_t ko;       /* objinfo.c record (keep_objects) */
	float w;           /* what it stands for: 1, or 1/p for a sampled heap object */
} det_obj;
/* An allocation larger than this (64 PiB, past any address space: x86-64
 * and AArch64 address at most 2^57 bytes) cannot have happened; it is
 * ignored and counted (stp_det_result.huge_ignored), so that no sum of the
 * report wraps past 2^64. */
#define DET_MAX_SIZE (1ull << 56)
/* Whether the detector analyzes an allocation of this size. */
#define DET_KEEPS(d, size) ((size) >= (d)->opt.min_size && (size) <= DET_MAX_SIZE)
#define DET_NO_SITE UINT32_MAX /* det_obj.site of an object outside the analyzed space */
/* The bytes an object counts for in sums (its size, weighted when sampled). */
static inline uint64_t det_obj_bytes(const det_obj *o)
{
	return o->w == 1.0f ? o->size : (uint64_t)((double)o->size * (double)o->w + 0.5);
}
#define DET_OBJ_AT_PEAK 1u
#define DET_OBJ_ACCESSED 2u
#define DET_OBJ_SIM 4u      /* fed to the allocator models */
#define DET_OBJ_LIVE 8u     /* the slot holds a live object */
#define DET_OBJ_POOL 16u    /* a framework allocator's tensor (pool STP_POOL_TENSORS) */

/* What pass 2 keeps for a call site besides its public record (d->spub). */
typedef struct det_site {
	uint64_t live_bytes, live_objects;
	uint64_t freed_in_loop;     /* freed objects allocated inside an iteration */
	int64_t leak_last_iter;     /* distinct-iteration count of never-freed objects */
	int64_t leak_first_iter;    /* the first of those iterations */
	uint64_t leak_objects;      /* never-freed objects allocated in complete iterations */
	uint64_t freed_crossed;     /* objects allocated in the loop, freed in a later iteration */
	uint32_t leak_iters;
	uint32_t out_index;         /* index in the result's sites */
} det_site;

/* A call site's public figures, compact (88 bytes): stp_det_site_get()
 * expands it.  Class counts and lifetime histograms live in a det_site_cold
 * record (336 bytes), made when a site's second object ends; until then the
 * first ended object's class, buckets, size and whether it was live at the
 * peak are kept here (one_*).  Most call sites of a real PyTorch program
 * allocate once. */
typedef struct det_site_rec {
	uint32_t stack;
	uint8_t kind, dominant;
	uint8_t one_class, one_tb, one_lb; /* the first ended object's class (0xff: none
	                                    * yet) and buckets */
	uint8_t one_at_peak;
	uint8_t pad[2];
	uint32_t cold;                      /* index + 1 into d->cold, 0 none */
	uint64_t allocs, frees, bytes_allocated, max_size;
	uint64_t peak_bytes, peak_objects, end_bytes, end_objects;
	double byte_ns;
	uint64_t one_size;
} det_site_rec;

typedef struct det_site_cold {
	uint64_t class_objects[STP_CLASS_COUNT];
	uint64_t class_bytes[STP_CLASS_COUNT];
	uint64_t peak_class_bytes[STP_CLASS_COUNT];
	uint64_t life_time[STP_DET_TIME_BUCKETS];
	uint64_t life_logical[STP_DET_LOGICAL_BUCKETS];
} det_site_cold;

typedef struct det_finding_acc {
	stp_det_finding f;
	double worst_waste;
} det_finding_acc;

/* An object allocated in a complete iteration and freed only after the
 * loop (teardown): judged a leak with the never-freed ones (analyze.c). */
typedef struct det_survivor {
	uint64_t addr, size, bytes, alloc_seq, alloc_ns, free_seq, free_ns, logical;
	int64_t iter;
	uint32_t site;
} det_survivor;

/* An allocation at a live address (a lost free): pass 2 ends the object in
 * `slot` there. */
typedef struct det_reuse {
	uint64_t seq;
	uint32_t slot;
} det_reuse;

struct det_access;   /* access.c */
struct det_latefree; /* latefree.c */

/* objinfo.c: only called when d->opt.keep_objects */
int det_ko_push(stp_det *d, uint64_t seq);
uint64_t det_ko_find(const stp_det *d, uint64_t seq); /* UINT64_MAX: none */
void det_ko_mark(stp_det *d, uint64_t seq, stp_det_pattern p);
/* keep_objects >= 2: object record k ended at seq (UINT64_MAX: never);
 * keep_accesses: an API touched it (ns since the start, name string id,
 * kind, access mode).  -1 on OOM. */
void det_ko_end(stp_det *d, uint64_t k, uint64_t end_seq);
int det_ko_access(stp_det *d, uint64_t k, uint64_t ns, uint32_t name, uint8_t kind, uint8_t mode);
void det_ko_free(stp_det *d);

/* latefree.c */

struct stp_det {
	stp_det_options opt;
	stp_det_result res;
	char *path;
	char *command;
	char *error;
	det_frames *frames;
	stp_reader *rd;            /* pass-2 reader: stacks for the frames */

	/* the trace, from pass 1 */
	uint64_t t0;               /* first event time: the origin of *_ns */
	uint64_t end_ns;           /* last event time (since t0) */
	uint64_t last_seq;
	stp_trace_stats stats;
	int have_ranges;           /* API events carry address ranges */
	uint8_t space_judged[256]; /* the access patterns judge space i's objects (det_scan) */
	int have_iter_markers, have_phase_markers;
	int seen_iter_end;         /* an ITER_END marker was read */
	int snapshot;              /* the trace is a memory snapshot (STP_END_SNAPSHOT):
	                            * what is live at its end is live, never leaked */

	/* spaces */
	stp_det_space *spaces;
	det_space_state *sstate;
	uint32_t nspaces, spaces_cap;

	/* the highest moment of each space in each iteration written in full
	 * (scan.c): a folded peak's objects are its reference's at its own
	 * (40 bytes a space an iteration, about half an iters[] entry) */
	struct det_iter_peak {
		int64_t iter;
		uint64_t seq, ns, bytes;
		uint32_t objects, space;
	} *ipeaks;
	uint32_t nipeaks, ipeaks_cap;

	/* timeline */
	stp_det_iteration *iters;
	uint32_t niters, iters_cap;
	stp_det_phase *phases;
	uint32_t nphases, phases_cap;
	uint64_t *cuts, *cut_ns;
	uint32_t ncuts, cuts_cap;
	uint64_t *ibounds;
	uint32_t nibounds;
	/* marker state while pass 1 runs */
	int iter_open, phase_open, phase_depth, last_iter_cut; /* open: index + 1 */
	/* the recording's detail (stprof.heap_sample_bytes and stprof.lean
	 * annotations): the interval now, whether one was ever set above 0, the
	 * lean state now and whether it was ever 1 (windows.c,
	 * stp_det_iteration.detail) */
	uint64_t mk_heap_interval;
	int mk_heap_sampled, mk_lean, mk_lean_seen;
	uint64_t cur_max_live, cur_max_seq, cur_max_ns, cur_ns;
	/* the turnaround: the first peak within 0.1% of the iteration's highest
	 * (windows.c), so that near-equal micro-batch peaks do not flip it */
	uint64_t turn_cand_live, turn_cand_seq, turn_cand_ns;
	uint64_t *turn_ns;
	char method[512];
	char steady_why[256];
	/* interned names (phase names): reader string id -> char* */
	det_map names;
	char **name_store;
	uint32_t nnames, names_cap;

	/* detection window (pass 1): per allocation a token, its seq, the
	 * live bytes after it and its size (clipped to 32 bits: it only places
	 * iteration boundaries) */
	uint32_t *tok, *tok_size;
	uint64_t *tok_seq, *tok_live;
	uint64_t ntok, tok_cap, total_allocs;
	/* marker iterations without phase markers: live-bytes peak per iteration */
	uint64_t *turn_seq;
	uint32_t nturn, turn_cap;

	/* pass 1 -> pass 2: object slots.  Pass 1 hands out slots with the
	 * same LIFO free list as pass 2's obj_new(), and records the slot each
	 * FREE event ends (UINT32_MAX: not live) and the lost frees. */
	int want_slots;
	uint64_t *p1_size;
	uint8_t *p1_space;
	uint32_t *p1_next, p1_nslots, p1_cap, p1_free;
	uint32_t *fslot;
	uint64_t nfslot, fslot_cap, fslot_i;
	det_reuse *reuse;
	uint32_t nreuse, reuse_cap, reuse_i;

	/* pass 2 */
	det_obj *objs;
	uint32_t nobjs, objs_cap, obj_free; /* free list through .site */
	det_site_rec *spub;                 /* public figures, sorted at the end */
	uint32_t *site_order;               /* result index -> record (result.c) */
	det_site_cold *cold;                /* sites with two objects or more ended */
	uint32_t ncold, cold_cap;
	det_site *sites;                    /* the rest, same index */
	uint32_t nsites, sites_cap;
	uint32_t *site_of_stack;            /* stack id -> site index + 1 */
	uint32_t site_of_stack_cap;
	det_map site_paths;                 /* cut call path -> site index */
	det_survivor *surv;                 /* loop survivors freed after the loop */
	uint64_t nsurv, surv_cap;
	int survivors_oom;
	det_finding_acc *facc;
	uint32_t nfacc, facc_cap;
	det_map fidx;                       /* (pattern, site) -> facc index */
	struct det_access *acc;
	struct det_latefree *lf;
	struct det_modbytes *modbytes; /* bytes by module (modbytes.c) */

	/* allocation wrappers: the innermost frames (after the plumbing) that
	 * nearly every call site shares; paths are shown below them */
	uint64_t wrap_ip[8];
	uint32_t wrap_n;
	int wrap_done;
	int has_python_frames; /* stp_det_site_no_line: -1 not known yet */

	/* allocator models (simfeed.c) */
	allocsim_collector *simc;
	allocsim_report sim;
	int sim_device, sim_ran;
	int sim_pool_only; /* device: only a framework's pool (1 or 2) is fed (simfeed.c) */
	char *sim_error;
	allocsim_xla_settings sim_xla; /* a JAX run's XLA_PYTHON_CLIENT_* (xlafeed.c) */

	/* per-object class and patterns (objinfo.c, opt.keep_objects) */
	uint64_t *ko_seq;
	uint16_t *ko_info;                  /* class | pattern bits << 4 */
	uint32_t *ko_lf;                    /* late-free entry, UINT32_MAX none */
	uint64_t nko, ko_cap, ko_cursor;
	uint64_t ko_hint;                   /* record of the object being ended */
	/* keep_objects >= 2 (objinfo.c): when each ended and the module it was
	 * made in; keep_accesses: its first accesses */
	uint64_t *ko_end;                   /* seq that ended it, UINT64_MAX never */
	uint32_t *ko_mod;                   /* det_modbytes_name() index + 1, 0 none */
	uint32_t *ko_acc;                   /* its first record in acc + 1, 0 none */
	uint32_t *ko_nacc;                  /* APIs that touched it (saturating) */
	struct det_ko_acc *acc_rec;
	uint64_t nacc_rec, acc_rec_cap;

	/* pass 2: per iteration, the seq where the primary space first reached
	 * the iteration's highest live bytes (UINT64_MAX: none) */
	uint64_t *ipeak_seq;

	/* outputs owned here */
	stp_det_finding *out_findings;
	stp_det_sample *series;
	uint32_t nseries;
};

/* ------------------------------------------------------------ helpers (state.c) */

/* Index of the space (kind, device), created when new; -1 on OOM. */
int det_space_index(stp_det *d, uint8_t kind, int32_t device);
const char *det_intern(stp_det *d, const stp_reader *r, uint32_t sid);
int det_push_cut(stp_det *d, uint64_t seq, uint64_t ns);
/* Number of sorted values <= x (binary search). */
uint32_t det_count_le(const uint64_t *v, uint32_t n, uint64_t x);
/* Lifetime histogram buckets. */
unsigned det_time_bucket(uint64_t ns);
unsigned det_logical_bucket(uint64_t dist);

/* Stable radix sort of (key, value) pairs by key (radix.c); -1 on OOM. */
int det_radix_kv(uint64_t *key, uint32_t *val, size_t n);

/* passes */
int det_scan(stp_det *d);                /* pass 1 */
void det_tokens_free(stp_det *d);        /* the detection window's arrays */
int det_windows_from_markers(stp_det *d);/* after pass 1 when markers exist */
int det_detect_period(stp_det *d);       /* after pass 1 otherwise */
int det_windows_finish(stp_det *d);      /* cuts and ibounds sorted */
int det_analyze(stp_det *d);             /* pass 2 */
int det_iter_stats(stp_det *d);          /* stp_det_timeline_run's light pass 2 */
void det_choose_steady(stp_det *d);
int det_build_result(stp_det *d);

/* classes (analyze.c) */
stp_det_class det_classify(const stp_det *d, uint32_t ib_alloc, uint32_t seg_alloc, uint32_t ib_free,
                           uint32_t seg_free, int freed);
/* 1 when an object alive over [ib_alloc, ib_free] covers a whole iteration
 * (crossing one boundary is not enough: analyze.c). */
int det_crosses_iterations(const stp_det *d, uint32_t ib_alloc, uint32_t ib_free);

/* findings (findings.c): det_finding_add_x with an stp_det_expect (0:
 * actionable), det_finding_add without */
void det_finding_add(stp_det *d, stp_det_pattern p, uint32_t site, uint64_t objects, uint64_t bytes,
                     double waste, uint64_t distance, const stp_det_instance *inst);
/* A leak finding's iterations (after det_finding_add of the site's leak). */
void det_finding_leak_span(stp_det *d, uint32_t site, uint32_t iters, int64_t first, int64_t last, int after_loop);
void det_finding_add_x(stp_det *d, stp_det_pattern p, stp_det_expect why, uint32_t site, uint64_t objects,
                       uint64_t bytes, double waste, uint64_t distance, const stp_det_instance *inst);

/* judge.c */
int det_judge_usable(const stp_det *d);            /* iterations to judge against */
uint32_t det_ib_at(const stp_det *d, uint64_t seq); /* iteration boundaries <= seq */
int32_t det_phase_at(const stp_det *d, uint64_t seq); /* innermost phase, -1 none */
/* An idle gap of the object allocated at alloc_seq, from one access (seq)
 * to the next: what explains it. */
stp_det_expect det_judge_idle(const stp_det *d, uint64_t alloc_seq, uint64_t from_seq, uint64_t to_seq);
int det_before_loop(const stp_det *d, uint64_t seq); /* before the first iteration */
/* a backward phase's name: "backward", or "recompute" (nested in one) */
int det_phase_is_backward(const char *name);
/* an object idle before gap_seq and last read at last_seq, in a backward of
 * the same iteration that began after gap_seq: an activation saved for the
 * backward, whose earlier idle gaps its keeping costs anyway */
int det_kept_for_backward(const stp_det *d, uint64_t gap_seq, uint64_t last_seq);
int det_same_segment(const stp_det *d, uint64_t a_seq, uint64_t b_seq);
int det_after_loop(const stp_det *d, uint64_t seq); /* past the last iteration's end */
/* 1 when [a_seq, b_seq] holds an iteration's live-bytes peak (pass 2's
 * ipeak_seq: judged at the end of the pass) */
int det_spans_peak(const stp_det *d, uint64_t a_seq, uint64_t b_seq);
/* 1 when a call path is a library's own (its frames: cuBLAS, cuDNN, ... or
 * a function naming a workspace). */
int det_site_is_library(stp_det *d, uint32_t stack);
/* Whether a call path makes or receives a DataLoader's batch (Python
 * frames in torch/utils/data/ or torch.multiprocessing's reductions). */
int det_site_is_loader(stp_det *d, uint32_t stack);

/* access.c: only used when d->have_ranges */
int det_access_init(stp_det *d);
void det_access_free(stp_det *d);
int det_access_alloc(stp_det *d, uint32_t slot, const stp_event *ev);
/* An object's life ends (freed, or at the end of the trace at time ns):
 * its patterns; returns its lifetime in API levels. */
uint64_t det_access_end_obj(stp_det *d, uint32_t slot, int freed, uint64_t ns);
/* The free event about to end an object (its stream orders the free). */
void det_access_free_event(stp_det *d, const stp_event *ev);
int det_access_api(stp_det *d, const stp_event *ev);
int det_access_finish(stp_det *d); /* redundant allocation, after the pass */
const char *det_access_unit(const stp_det *d); /* what the API events mostly are */
uint64_t det_access_napi(const stp_det *d);

/* simfeed.c: only called when d->simc */
int det_sim_init(stp_det *d);
void det_sim_alloc(stp_det *d, det_obj *o, uint32_t slot, const stp_event *ev);
void det_sim_free(stp_det *d, const stp_event *ev, uint32_t slot);
void det_sim_device_event(stp_det *d, const stp_event *ev); /* segments, refusals */
void det_sim_finish(stp_det *d);
/* xlafeed.c: a JAX run's annotations of XLA's statistics and settings (an
 * ANNOTATION marker) into the allocator models */
void det_sim_xla_marker(stp_det *d, const stp_event *ev);
/* simsites.c: merges the worst moments' rows of one call site. */
void det_sim_merge_sites(stp_det *d);
void det_sim_free_all(stp_det *d);

/* objinfo.c: only called when d->opt.keep_objects */
int det_ko_push(stp_det *d, uint64_t seq);
uint64_t det_ko_find(const stp_det *d, uint64_t seq); /* UINT64_MAX: none */
void det_ko_mark(stp_det *d, uint64_t seq, stp_det_pattern p);

/* latefree.c */
int det_latefree_init(stp_det *d);
void det_latefree_free(stp_det *d);
/* *entry gets the entry the object was counted in (UINT32_MAX: none) */
int det_latefree_object(stp_det *d, const det_obj *o, uint64_t free_ns, uint32_t ib_free, uint32_t seg_free,
                        uint32_t *entry);
int det_latefree_finish(stp_det *d);

#endif
