/*
 * stprof/lifetimes.h - lifetime models: which lifetime class an allocation
 * of a calling context will have (Llama, shared/seeds/001_*).
 *
 * Classes are log-scale buckets of wall time, as Llama's: an object lives
 * under 10 ms (class 0), 100 ms, 1 s, 10 s, 100 s, 1000 s (5), longer (6),
 * or is never freed while the program runs (7).  A calling context is the
 * innermost `depth` native frames of an allocation (the caller of malloc
 * first), each frame named by its module's file name and its address in
 * the module's ELF image (the load bias taken away), so the same binary
 * gives the same context from run to run whatever ASLR does.
 *
 * A model holds, for every prefix of every context seen (its innermost k
 * frames, k = 1..depth), the class label of that prefix: the class of the
 * 95th percentile of the lifetimes of its objects (Llama §5.1).  A context
 * never seen is predicted from its longest prefix the model knows (the
 * frames it shares with known contexts), else from the model's fallback.
 *
 * Invariants: entries are sorted by key and keys are distinct; a key is
 * stp_lt_key(level, prefix hash), so prefixes of different lengths never
 * collide by construction of the level in the key.  The learner is in
 * planner/lifetime_learn.c, the file format in planner/lifetime_model.c
 * (docs/lifetimes.md), the allocator that uses a model in
 * allocator/lifetime_*.c.
 */
#ifndef STPROF_LIFETIMES_H
#define STPROF_LIFETIMES_H

#include <stddef.h>
#include <stdint.h>

#include "allocpolicy.h"
#include "outfile.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STP_LT_CLASSES 8
#define STP_LT_NEVER 7     /* never freed while the program ran */
#define STP_LT_DEPTH_MAX 16
#define STP_LT_DEPTH_DEFAULT 8

typedef struct stp_lt_entry {
	uint64_t key;    /* stp_lt_key(level, hash of the innermost `level` frames) */
	uint64_t count;  /* allocations seen with this prefix */
	uint8_t level;   /* frames in the prefix, 1..depth */
	uint8_t label;   /* lifetime class, 0..STP_LT_NEVER */
} stp_lt_entry;

typedef struct stp_lt_model {
	uint32_t depth;     /* frames of a full context */
	uint8_t fallback;   /* class of a context that shares no frame with a known one */
	uint64_t n;
	stp_lt_entry *e;    /* sorted by key */
} stp_lt_model;

/* The class of a lifetime in nanoseconds (freed objects). */
unsigned stp_lt_class_of(uint64_t lifetime_ns);
/* "<10ms", "<100ms", ..., ">=1000s", "never". */
const char *stp_lt_class_name(unsigned c);
/* The upper bound of a class in nanoseconds; UINT64_MAX for the last two. */
uint64_t stp_lt_class_limit_ns(unsigned c);

/* The lifetime heap's size rules (allocator/lifetime_heap.c, and its
 * models in allocsim/host_spans.c) are stprof/allocpolicy.h's
 * (allocpolicy_lt_size_classes). */
#define STP_LT_SMALL_MAX ALLOCPOLICY_LT_SMALL_MAX
#define STP_LT_BLOCK ALLOCPOLICY_LT_BLOCK
#define STP_LT_SIZE_CLASSES ALLOCPOLICY_LT_SIZE_CLASSES

/* Frame and prefix hashing (the same in the learner and the allocator). */
uint64_t stp_lt_mix(uint64_t x); /* a 64-bit finalizer (splitmix64's) */
uint64_t stp_lt_module_hash(const char *basename);
uint64_t stp_lt_frame_hash(uint64_t module_hash, uint64_t vaddr);
uint64_t stp_lt_extend(uint64_t prefix, uint64_t frame); /* prefix 0: none yet */
uint64_t stp_lt_key(unsigned level, uint64_t prefix);

/* prefixes[k-1] is the hash of the innermost k frames (k = 1..n).  Returns
 * the predicted class; *level gets the prefix length that decided (0: the
 * fallback). */
unsigned stp_lt_predict(const stp_lt_model *m, const uint64_t *prefixes, uint32_t n, unsigned *level);
const stp_lt_entry *stp_lt_find(const stp_lt_model *m, uint64_t key);

/* The file (text, docs/lifetimes.md).  Read and parse return 0, or -1 with
 * a one-line "FILE: offset N: what" in err. */
int stp_lt_is_model(const char *path);          /* 1 when the file starts with the magic */
int stp_lt_read(const char *path, stp_lt_model *m, char *err, size_t errlen);
int stp_lt_parse(const void *data, size_t len, const char *name, stp_lt_model *m, char *err, size_t errlen);
/* comments: optional lines written after the header (each without '\n'),
 * e.g. the contexts' symbolized frames; NULL for none.  Written as every
 * output is (stprof/outfile.h: an earlier model kept as PATH.old, any
 * other file left alone). */
extern const stp_outkind stp_outkind_lifetimes;
int stp_lt_write(const char *path, const stp_lt_model *m, const char *const *comments, size_t ncomments,
                 char *err, size_t errlen);
void stp_lt_model_free(stp_lt_model *m);

/* ---- learning (planner/lifetime_learn.c) */
typedef struct stp_lt_learner stp_lt_learner;
stp_lt_learner *stp_lt_learner_new(uint32_t depth);
void stp_lt_learner_free(stp_lt_learner *l);
/* Adds one trace's host-heap allocations (call paths, lifetimes).  Returns
 * 0, or -1 with the reader's one-line error. */
int stp_lt_learner_add(stp_lt_learner *l, const char *trace, char *err, size_t errlen);
/* The model of what was added. */
int stp_lt_learner_model(const stp_lt_learner *l, stp_lt_model *m);
/* Allocations and distinct full contexts added. */
uint64_t stp_lt_learner_allocs(const stp_lt_learner *l);
uint64_t stp_lt_learner_contexts(const stp_lt_learner *l);
/* Allocations by class of their own lifetime. */
void stp_lt_learner_histogram(const stp_lt_learner *l, uint64_t out[STP_LT_CLASSES]);

/* Up to max lines naming the heaviest contexts' frames (module+address)
 * and predicted class, for the model file's comments; *out and each line
 * are the caller's to free.  Returns the count. */
size_t stp_lt_learner_comments(const stp_lt_learner *l, const stp_lt_model *m, char ***out, size_t max);

/* Accuracy of a model on a held-out trace's contexts, as Llama's Table 3:
 * each full context of the trace has its own label (its p95 class there);
 * unweighted: the share of contexts whose prediction equals it, weighted:
 * the same counted by allocations.  Off-by-one: within one class. */
typedef struct stp_lt_accuracy {
	uint64_t contexts, allocs;
	uint64_t ctx_exact, ctx_near, alloc_exact, alloc_near;
	uint64_t ctx_known, alloc_known;   /* the full context was in the model */
	uint64_t ctx_backoff, alloc_backoff; /* a shorter prefix decided */
	uint64_t confusion[STP_LT_CLASSES][STP_LT_CLASSES]; /* [true][predicted], allocations */
} stp_lt_accuracy;
int stp_lt_evaluate(const stp_lt_model *m, const stp_lt_learner *test, stp_lt_accuracy *a);

/* ---- what the lifetime heap would do with a recorded run
 * (planner/lifetime_sim.c): the trace's host allocations replayed through
 * allocsim's host heap models (stprof/allocsim.h): size classes on huge
 * pages (one lifetime class: a size-class allocator), glibc-like, the
 * lifetime heap with the model's predictions, and with each object's own
 * class (a perfect predictor).  Pages: 2 MiB holding a live object;
 * blocks: 8 KiB holding one. */
enum { STP_LT_SIM_SIZE_CLASSES, STP_LT_SIM_GLIBC, STP_LT_SIM_PREDICTED, STP_LT_SIM_OWN, STP_LT_SIM_MODELS };
#define STP_LT_SIM_SAMPLES 10
#define STP_LT_SIM_SITES 8
typedef struct stp_lt_sim_point {
	uint64_t t_ns;          /* since the first allocation */
	uint64_t live;          /* bytes requested and not yet freed */
	uint64_t pages[STP_LT_SIM_MODELS];  /* huge pages holding a live object, per model */
	uint64_t blocks[STP_LT_SIM_MODELS]; /* 8 KiB blocks holding one */
} stp_lt_sim_point;
typedef struct stp_lt_sim_site {
	size_t ctx;             /* the learner's context (stp_lt_learner_frame) */
	uint64_t allocs, bytes;
	uint64_t tenth[10];     /* allocations in each tenth of the run */
	uint8_t label;          /* its own class in this run (p95) */
	uint8_t predicted;      /* the model's */
} stp_lt_sim_site;
typedef struct stp_lt_sim {
	uint64_t allocs, duration_ns;
	stp_lt_sim_point samples[STP_LT_SIM_SAMPLES]; /* at the end of each tenth of the run */
	stp_lt_sim_point peak;  /* when the most bytes were live */
	uint64_t max_pages[STP_LT_SIM_MODELS]; /* the most huge pages each model held */
	size_t nsites;
	stp_lt_sim_site site[STP_LT_SIM_SITES]; /* the contexts with most allocations */
} stp_lt_sim;
/* l: a learner of the model's depth (the trace is added to it, twice). */
int stp_lt_simulate(const stp_lt_model *m, stp_lt_learner *l, const char *trace, stp_lt_sim *out, char *err,
                    size_t errlen);
/* Frame i of a learner's context: the module's path (NULL: unknown), the
 * frame's ELF address, and the module's ELF address range; 0 past the end. */
int stp_lt_learner_frame(const stp_lt_learner *l, size_t ctx, uint32_t i, const char **path, uint64_t *vaddr,
                         uint64_t *vlo, uint64_t *vsize);

#ifdef __cplusplus
}
#endif
#endif
