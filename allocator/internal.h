/*
 * internal.h - the pieces of libstalloc, private to allocator/:
 *
 *   mem.c        tables in anonymous mappings (never malloc: the allocator
 *                runs under a malloc interposer)
 *   ptrmap.c     an open-addressing map u64 -> u64 (pointers, offsets, sizes)
 *   bits.c       the pool's occupancy bitmap, one bit per alignment unit
 *   sequence.c   the iteration's signature sequence and the matcher:
 *                cursor, lookahead, reorder ring, resync
 *   slab.c       the persistent entries as exact-size slots, any order
 *   fallback.c   the caching fallback and its 512-byte tiny slots
 *   stalloc.c    the allocator: lock, pool, the calls of stprof/stalloc.h
 *   backend_host.c  the host backend (mmap pool, glibc blocks)
 *   preload.c    libstalloc.so's malloc family and marker entry point
 *   rank.c       which rank plan a process of a torchrun job enforces (rank.h)
 *   preload_cuda.c  libstalloc.so's cudaMalloc/cudaFree and PyTorch's
 *                CUDAPluggableAllocator entry points
 *   preload_torch.c  libstalloc.so's c10::alloc_cpu/free_cpu: PyTorch CPU
 *                tensor storages from a tensor plan
 *   replay.c     the allocator driven by a recorded trace (stprof plan's
 *                check of a plan; not in libstalloc.so)
 *   lifetime_*.c the lifetime heap, for a lifetime model (lifetime.h)
 *
 * Calls run one way: preload*.c, replay.c -> stalloc.c -> sequence.c, slab.c, fallback.c ->
 * bits.c, ptrmap.c -> mem.c.
 */
#ifndef STPROF_ALLOCATOR_INTERNAL_H
#define STPROF_ALLOCATOR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "stprof/allocsim.h"
#include "stprof/stalloc.h"

/* The alignment each preload asks of the allocator: a plan for it must be
 * aligned at least so (replay.c and stprof plan use the same figures). */
#define ST_ALIGN_DEVICE 256  /* cudaMalloc's, PyTorch's CUDA tensors */
#define ST_ALIGN_TENSORS 64  /* c10::alloc_cpu's (gAlignment) */
#define ST_ALIGN_HOST 16     /* malloc's */

/* ---- mem.c: zeroed memory from mmap, rounded to pages; NULL on failure */
void *st_map(size_t bytes);
void st_unmap(void *p, size_t bytes);

/* ---- ptrmap.c: u64 -> u64, keys anything but UINT64_MAX; grows itself */
typedef struct st_ptrmap {
	uint64_t *k, *v;
	size_t cap, n; /* cap a power of two, or 0 */
} st_ptrmap;
int st_ptrmap_put(st_ptrmap *m, uint64_t key, uint64_t val); /* -1: no memory */
uint64_t *st_ptrmap_get(const st_ptrmap *m, uint64_t key);
int st_ptrmap_del(st_ptrmap *m, uint64_t key, uint64_t *val); /* 1 removed, 0 absent */
void st_ptrmap_free(st_ptrmap *m);

/* ---- bits.c: one bit per unit of the pool, 1 = in use */
typedef struct st_bits {
	uint64_t *w;
	uint64_t nbits;
} st_bits;
int st_bits_init(st_bits *b, uint64_t nbits);
void st_bits_free(st_bits *b);
int st_bits_clear_range(const st_bits *b, uint64_t lo, uint64_t n); /* 1: all of [lo, lo+n) free */
void st_bits_set(st_bits *b, uint64_t lo, uint64_t n);
void st_bits_reset(st_bits *b, uint64_t lo, uint64_t n);
/* The start of the smallest free run of at least n units inside [lo, hi),
 * lowest address among equals; UINT64_MAX when none. */
uint64_t st_bits_best_fit(const st_bits *b, uint64_t lo, uint64_t hi, uint64_t n, uint64_t *run_len);

/* ---- sequence.c */
typedef struct st_entry {
	uint64_t off;        /* offset in the pool (static), or 0 */
	uint64_t size;       /* the request's size as recorded */
	uint32_t group;      /* dynamic group, or UINT32_MAX */
	uint16_t dynamic;
	uint16_t outlives;   /* an iteration entry live across the iteration's end (it wraps) */
	uint32_t ordinal;    /* persistent: index among the requests before the planned iteration */
	uint32_t varying;    /* static, sized for the largest request seen at its place: any
	                      * request up to its size may take it (STP_REQ_VARYING) */
} st_entry;

#define ST_RING 8
typedef struct st_seq {
	st_entry *e;
	uint32_t n;
	int cyclic;              /* the iteration repeats; the start-up sequence does not */
	st_ptrmap first;         /* size -> first position + 1 with that size */
	uint32_t *next_same;     /* position -> next position with the same size + 1, 0 none */
	uint32_t *var;           /* positions of the varying entries, ascending */
	uint32_t nvar;
	uint32_t cursor;
	uint32_t ring[ST_RING];  /* entries skipped lately (reorders), UINT32_MAX empty */
	uint32_t ring_at;
	uint32_t misses;         /* misses in a row */
	uint64_t wraps;          /* times the cursor went past the last entry */
} st_seq;

enum { ST_MISS = 0, ST_HIT, ST_HIT_REORDER, ST_HIT_RESYNC, ST_HIT_DYNAMIC };

int st_seq_build(st_seq *s, const st_entry *src, uint32_t n, int cyclic);
void st_seq_free(st_seq *s);
/* Index-only matching (STAlloc's published allocator): the entry at the
 * cursor, which advances whatever the request; for comparisons. */
int st_seq_match_index(st_seq *s, uint64_t size, uint32_t *pos);
void st_seq_restart(st_seq *s); /* the cursor to the first entry */
/* 1 when the entry at the cursor is a static one of this size: the
 * request the sequence expects next (st_seq_match's first choice). */
int st_seq_expects(const st_seq *s, uint64_t size);
/* Matches a request of `size`; hist[0], hist[1] are the sizes of the two
 * requests before it.  Returns ST_* with the entry in *pos; *skipped gets
 * how many entries the cursor passed over. */
int st_seq_match(st_seq *s, uint64_t size, const uint64_t hist[2], uint32_t lookahead, uint32_t resync_after,
                 uint32_t *pos, uint32_t *skipped);

/* ---- slab.c: persistent entries as exact-size slots, any order */
typedef struct st_slab {
	st_entry *e;
	uint32_t n;
	uint64_t unit;
	uint32_t *next, *prev; /* free list links: index + 1, 0 none */
	uint8_t *is_free;
	st_ptrmap free;   /* size -> first free slot + 1 (0: none free now) */
	st_ptrmap taken;  /* pool unit of a handed-out slot -> slot */
	uint32_t nfree;   /* slots free now */
} st_slab;
int st_slab_build(st_slab *s, const st_entry *e, uint32_t n, uint64_t unit);
void st_slab_free(st_slab *s);
uint32_t st_slab_take(st_slab *s, uint64_t size);   /* a free slot of that size, or UINT32_MAX */
int st_slab_take_at(st_slab *s, uint32_t i);         /* slot i when free: 1, else 0 */
uint32_t st_slab_peek(const st_slab *s, uint64_t size); /* the slot take would give, not taken */
uint32_t st_slab_next_free(const st_slab *s, uint32_t i); /* after free slot i on its list */
int st_slab_release_slot(st_slab *s, uint32_t i);    /* slot i free again (no lookup) */
void st_slab_untake(st_slab *s, uint32_t i);        /* give back a slot that could not be used */
void st_slab_release(st_slab *s, uint64_t unit_off); /* the block at that unit was freed */

/* ---- fallback.c */
typedef struct st_fallback {
	const stalloc_backend *b;
	allocsim_config cfg;     /* PyTorch's rounding */
	st_ptrmap blocks;        /* live block address -> requested size << 1 | tiny */
	st_ptrmap cache;         /* rounded size -> head node + 1 */
	struct st_fnode *nodes;  /* cached blocks: (ptr, next) */
	uint32_t nnodes, cap_nodes, free_node;
	uint64_t cached, cache_limit;
	int no_cache;
	int tiny_slots;          /* 512-byte slots of 2 MiB chunks (a device's small requests) */
	uint64_t reserved;       /* raw bytes held: live, cached and tiny chunks */
	uint64_t tiny_chunks;
	uint64_t *chunks;        /* the tiny slots' chunks, given back at destroy */
	uint64_t cap_chunks;
} st_fallback;
void st_fallback_init(st_fallback *f, const stalloc_backend *b, uint64_t cache_limit, int no_cache, int tiny_slots);
void st_fallback_destroy(st_fallback *f);
void *st_fallback_alloc(st_fallback *f, uint64_t size, uint64_t align);
/* 1 when p was a live fallback block (freed); *size gets its requested size. */
int st_fallback_free(st_fallback *f, void *p, uint64_t *size);
uint64_t st_fallback_size(const st_fallback *f, const void *p); /* 0: not ours */

/* ---- stalloc.c: for the replay (replay.c) */
/* A request the trace kept only because it outlives an iteration the
 * collector folded (STP_SEV_ALLOC_OUTLIVING): served at the range of the
 * next iteration entry of its size that outlives the planned iteration,
 * where the sequence left out of the trace would have put it; else as
 * stalloc_alloc would serve it. */
void *st_alloc_outliving(stalloc *a, uint64_t size, uint64_t align);

/* ---- stalloc.c: for the preloads */
#define ST_THREADS_MAX 16 /* threads told apart in the statistics */
void st_fork_prepare(stalloc *a); /* takes the lock (pthread_atfork) */
void st_fork_release(stalloc *a); /* gives it back, in parent and child */
/* 1 when a fallback block might be p's owner (a lock-free hint: 0 means
 * surely not, so a free of the C library's own blocks costs no lock). */
int st_maybe_fallback(stalloc *a);

/* ---- preload.c, for preload_cuda.c: the device plan's allocator, made on
 * first use with the given backend (NULL when the plan is a host plan, or
 * none was given, or it failed: then the caller uses the real calls). */
stalloc *st_preload_device(const stalloc_backend *b);
/* A device plan was read (and passed the reader's checks). */
int st_preload_device_planned(void);
/* The tensor plan's allocator (preload_torch.c), NULL without one; storages
 * below *min_size are not planned. */
stalloc *st_preload_tensors(uint64_t *min_size);
/* A tensor below that min size went to c10's own allocation (counted). */
void st_preload_tensor_small(void);

/* ---- the entry points libstalloc.so exports (preload.c, preload_cuda.c)
 * beside the C library's malloc family */
#include <sys/types.h>
void stprof_mark_v1(int kind, const char *name, int64_t value);
void *memalign(size_t align, size_t n);
void *pvalloc(size_t n);
size_t malloc_usable_size(void *p);
int cudaMalloc(void **out, size_t size);
int cudaFree(void *p);
void *stalloc_torch_alloc(ssize_t size, int device, void *stream);
void stalloc_torch_free(void *p, ssize_t size, int device, void *stream);
void stalloc_torch_init(int device_count);
void stalloc_torch_reset(void);

#endif
