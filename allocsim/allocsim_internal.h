/*
 * allocsim_internal.h - what the allocator models (sim_*.c) share: the block
 * arena, the segment table, the ordered block sets, and the model interface
 * the replay driver (allocsim_core.c) calls.  Private to allocsim/: nothing
 * outside it includes this header (tests/layout checks it); the tests use
 * stprof/allocsim.h and stprof/allocpolicy.h, except allocsim/tests/.
 *
 * Blocks live in one growable array per model and are named by index; index
 * 0 is the nil block (all zeros, never modified), so links need no pointer
 * checks.  A block is in at most one ordered set at a time; the set's links
 * and key live in the block itself (intrusive AVL tree), so lookups, inserts
 * and erases are O(log n) with no allocation.  A block's key (k1, k2) is set
 * by the model before inserting and must not change while it is in a set.
 *
 * Invariants:
 *   - B[0] is all zeros; height 0 means "not in a set".
 *   - blocks of one segment form a list by address through prev/next; their
 *     ranges are adjacent and do not overlap.
 *   - a block's index stays the same for its whole life (split keeps the
 *     remainder's index), so slot_block[] entries stay valid.
 */
#ifndef STPROF_ALLOCSIM_INTERNAL_H
#define STPROF_ALLOCSIM_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>

#include "stprof/allocsim.h"

/* block flags */
#define SB_LIVE 1u        /* not on the arena's free list */
#define SB_ALLOCATED 2u
#define SB_MAPPED 4u      /* backed by memory (always, except expandable VA) */
#define SB_EXPANDABLE 8u
#define SB_SMALL 16u      /* PyTorch small pool */

typedef struct sim_block {
	uint64_t k1, k2;               /* set key */
	uint32_t c[2], parent;         /* set links: c[0] left, c[1] right */
	uint8_t height;                /* AVL height; 0 = not in a set */
	uint8_t flags;
	uint16_t stream;               /* dense stream index */
	uint64_t addr, size;
	uint32_t prev, next;           /* address neighbours in the segment */
	uint32_t stack;                /* allocated: stack of the allocation */
	uint32_t split_stack;          /* free: who split it off */
	uint32_t seg;                  /* segment index */
	uint32_t gc_base;              /* PyTorch GC age base */
} sim_block;

typedef struct sim_seg {
	uint64_t addr, size;  /* size: the cudaMalloc size, or the VA size when expandable */
	uint64_t page;        /* expandable: page size; 0 otherwise */
	uint16_t stream;
	uint8_t small, expandable, live;
	uint32_t stack;       /* request that created it */
	uint32_t next_free;   /* segment free list */
} sim_seg;

typedef struct sim_tree {
	uint32_t root;
	uint32_t count;
} sim_tree;

/* ---------------------------------------------------------------- tree */

/* a < (k1, k2), without branches */
static inline int st_less(const sim_block *a, uint64_t k1, uint64_t k2)
{
	return (a->k1 < k1) | ((a->k1 == k1) & (a->k2 < k2));
}

static inline void st_fix_height(sim_block *B, uint32_t i)
{
	uint8_t hl = B[B[i].c[0]].height, hr = B[B[i].c[1]].height;
	B[i].height = (uint8_t)(1 + (hl > hr ? hl : hr));
}

static inline void st_replace_child(sim_block *B, sim_tree *t, uint32_t parent, uint32_t old, uint32_t new_)
{
	if (!parent)
		t->root = new_;
	else
		B[parent].c[B[parent].c[1] == old] = new_;
}

/* Rotates x's child on side d up into x's place: d = 1 is a left rotation
 * (the right child rises), d = 0 a right rotation.  Returns the new root. */
static inline uint32_t st_rotate(sim_block *B, sim_tree *t, uint32_t x, int d)
{
	uint32_t y = B[x].c[d], p = B[x].parent, m = B[y].c[!d];
	B[x].c[d] = m;
	if (m)
		B[m].parent = x;
	B[y].parent = p;
	st_replace_child(B, t, p, x, y);
	B[y].c[!d] = x;
	B[x].parent = y;
	st_fix_height(B, x);
	st_fix_height(B, y);
	return y;
}

/* Restores balance and heights from x up; stops where a subtree's height
 * did not change (nothing above it can have changed either). */
static inline void st_rebalance(sim_block *B, sim_tree *t, uint32_t x)
{
	while (x) {
		uint8_t old = B[x].height;
		uint32_t l = B[x].c[0], r = B[x].c[1];
		int bal = (int)B[l].height - (int)B[r].height;
		if (bal > 1 || bal < -1) {
			int d = bal < -1; /* the heavy side */
			uint32_t h = B[x].c[d];
			if (B[B[h].c[d]].height < B[B[h].c[!d]].height)
				st_rotate(B, t, h, !d);
			x = st_rotate(B, t, x, d);
		} else {
			st_fix_height(B, x);
		}
		if (B[x].height == old)
			return;
		x = B[x].parent;
	}
}

static inline void st_insert(sim_block *B, sim_tree *t, uint32_t i)
{
	uint32_t p = 0, cur = t->root;
	int d = 0;
	uint64_t k1 = B[i].k1, k2 = B[i].k2;
	while (cur) {
		p = cur;
		d = st_less(&B[cur], k1, k2); /* go right when cur < key */
		cur = B[cur].c[d];
	}
	B[i].c[0] = B[i].c[1] = 0;
	B[i].parent = p;
	B[i].height = 1;
	if (!p)
		t->root = i;
	else
		B[p].c[d] = i;
	t->count++;
	st_rebalance(B, t, p);
}

static inline uint32_t st_extreme(const sim_block *B, uint32_t x, int d)
{
	if (!x)
		return 0;
	while (B[x].c[d])
		x = B[x].c[d];
	return x;
}

static inline uint32_t st_min(const sim_block *B, uint32_t x)
{
	return st_extreme(B, x, 0);
}

static inline uint32_t st_max(const sim_block *B, uint32_t x)
{
	return st_extreme(B, x, 1);
}

static inline void st_erase(sim_block *B, sim_tree *t, uint32_t z)
{
	uint32_t start;
	uint32_t zl = B[z].c[0], zr = B[z].c[1];
	if (!zl || !zr) {
		uint32_t child = zl ? zl : zr;
		uint32_t p = B[z].parent;
		st_replace_child(B, t, p, z, child);
		if (child)
			B[child].parent = p;
		start = p;
	} else {
		uint32_t y = st_min(B, zr);
		if (B[y].parent != z) {
			uint32_t yp = B[y].parent, yr = B[y].c[1];
			B[yp].c[0] = yr;
			if (yr)
				B[yr].parent = yp;
			B[y].c[1] = zr;
			B[zr].parent = y;
			start = yp;
		} else {
			start = y;
		}
		B[y].c[0] = zl;
		B[zl].parent = y;
		B[y].parent = B[z].parent;
		st_replace_child(B, t, B[z].parent, z, y);
		B[y].height = B[z].height;
	}
	B[z].c[0] = B[z].c[1] = B[z].parent = 0;
	B[z].height = 0;
	t->count--;
	st_rebalance(B, t, start);
}

/* First block whose key is >= (k1, k2), or 0.  The descent has no
 * data-dependent branch: the comparison picks the child. */
static inline uint32_t st_lower_bound(const sim_block *B, const sim_tree *t, uint64_t k1, uint64_t k2)
{
	uint32_t x = t->root, res = 0;
	while (x) {
		int lt = st_less(&B[x], k1, k2);
		res = lt ? res : x;
		x = B[x].c[lt];
	}
	return res;
}

static inline uint32_t st_step(const sim_block *B, uint32_t x, int d)
{
	if (B[x].c[d])
		return st_extreme(B, B[x].c[d], !d);
	uint32_t p = B[x].parent;
	while (p && B[p].c[d] == x) {
		x = p;
		p = B[p].parent;
	}
	return p;
}

static inline uint32_t st_next(const sim_block *B, uint32_t x)
{
	return st_step(B, x, 1);
}

static inline uint32_t st_prev(const sim_block *B, uint32_t x)
{
	return st_step(B, x, 0);
}

static inline uint32_t st_first(const sim_block *B, const sim_tree *t)
{
	return st_min(B, t->root);
}

static inline uint32_t st_last(const sim_block *B, const sim_tree *t)
{
	return st_max(B, t->root);
}

/* Checks the AVL and order invariants of a tree; returns its size or -1. */
long sim_tree_verify(const sim_block *B, const sim_tree *t);

/* ---------------------------------------------------------------- model */

typedef struct sim_base sim_base;

typedef struct sim_ops {
	/* 0 ok, 1 served beyond capacity (OOM) */
	int (*alloc)(sim_base *m, uint32_t slot, uint64_t size, uint16_t stream, uint32_t stack,
	             uint64_t *addr);
	void (*free)(sim_base *m, uint32_t slot);
	void (*empty_cache)(sim_base *m);
	void (*destroy)(sim_base *m);
	/* full consistency check (tests): 0 or -1 with a reason in why */
	int (*check)(sim_base *m, char *why, size_t len);
} sim_ops;

struct sim_base {
	const sim_ops *ops;
	allocsim_config cfg;
	/* counters the driver reads after every event */
	uint64_t allocated, reserved;
	uint64_t segment_allocs, segment_frees, largest_segment;
	uint64_t splits, merges, retries, ooms;
	/* block arena */
	sim_block *B;
	uint32_t nB, capB, freeB;
	/* segment table */
	sim_seg *S;
	uint32_t nS, capS, freeS;
	/* slot -> allocated block */
	uint32_t *slot_block;
	uint32_t nslot;
	uint64_t next_va;
	/* explain mode: splits by stack id (open addressing, key 0 = empty;
	 * key and count side by side: one cache miss a probe) */
	int count_sites;
	struct sim_site_slot {
		uint32_t key, count;
	} *site_tab;
	uint32_t site_mask, nsites;
	int oom_failed; /* set by a model when it could not even serve beyond capacity */
	/* allocsim_model_watch: told of every range mapped or unmapped */
	void (*watch)(void *ctx, int mapped, uint64_t addr, uint64_t size, uint32_t segment);
	void *watch_ctx;
};

/* A model got (mapped = 1) or gave back (0) [addr, addr + size) of
 * segment seg (cudaMalloc/cudaFree, a region, or expandable pages). */
static inline void sim_note_range(sim_base *m, int mapped, uint64_t addr, uint64_t size, uint32_t seg)
{
	if (m->watch)
		m->watch(m->watch_ctx, mapped, addr, size, seg);
}

/* Arena helpers (allocsim_arena.c).  sim_block_new may move B: re-read pointers. */
uint32_t sim_block_new(sim_base *m);
void sim_block_delete(sim_base *m, uint32_t i);
uint32_t sim_seg_new(sim_base *m);
void sim_seg_delete(sim_base *m, uint32_t s);
int sim_slots_reserve(sim_base *m, uint32_t slot);
uint64_t sim_va_alloc(sim_base *m, uint64_t size, uint64_t align);
void sim_base_init(sim_base *m, const sim_ops *ops, const allocsim_config *c);
void sim_base_release(sim_base *m);
void sim_note_split(sim_base *m, uint32_t stack);
/* Block i now holds the object in slot: allocated, its call path, the
 * model's allocated bytes; *addr (when given) gets its address. */
static inline void sim_block_take(sim_base *m, uint32_t i, uint32_t slot, uint32_t stack, uint64_t *addr)
{
	sim_block *B = m->B;
	B[i].flags |= SB_ALLOCATED;
	B[i].stack = stack;
	B[i].split_stack = 0;
	m->allocated += B[i].size;
	m->slot_block[slot] = i;
	if (addr)
		*addr = B[i].addr;
}
uint64_t sim_site_splits(const sim_base *m, uint32_t stack);

/* Model constructors (sim_pytorch.c, sim_bfc.c, sim_raw.c). */
sim_base *sim_pytorch_new(const allocsim_config *c);
sim_base *sim_bfc_new(const allocsim_config *c);
sim_base *sim_raw_new(const allocsim_config *c);
sim_base *sim_new(const allocsim_config *c, char *err, size_t errlen);

/* The size rules are in allocpolicy.c (stprof/allocpolicy.h). */

/* Checks what every arena model keeps: links, tiling of segments, no two
 * free (or unmapped) neighbours, sets hold exactly the free blocks with
 * the right keys, allocated and reserved add up (allocsim_arena.c). key_fn
 * gives a free block's expected (k1, k2); unmapped blocks use (stream, addr). */
int sim_check_arena(sim_base *m, void (*key_fn)(const sim_block *b, uint64_t *k1, uint64_t *k2),
                    const sim_tree *const *sets, size_t nsets, long expect_in_sets, char *why, size_t len);

/* The generic snapshot of a model's blocks and segments (allocsim_explain.c). */
int sim_snapshot(sim_base *m, allocsim_snapshot *s);

/* ---------------------------------------------------------------- event log */

/* One event: 24 bytes.  slot bit 31 set = free.  size_stream: size in the
 * low 48 bits, stream index in the high 16. */
typedef struct sim_ev {
	uint32_t slot;
	uint32_t stack;
	uint64_t size_stream;
	uint64_t time;
} sim_ev;

#define SIM_EV_FREE 0x80000000u
#define SIM_SIZE_MASK ((1ull << 48) - 1)

/* id -> slot map with slot recycling (allocsim_events.c), also used by
 * allocsim_model. */
typedef struct sim_id_ent {
	uint64_t key;
	uint32_t val; /* slot + 1; 0 = empty */
	uint32_t pad;
} sim_id_ent;

typedef struct sim_idmap {
	sim_id_ent *ent; /* key and value side by side: one cache miss a probe */
	uint64_t *sizes; /* per slot: size of the live object */
	uint32_t mask, count;
	uint32_t *free_slots;
	uint32_t nfree, capfree;
	uint32_t nslots, capslots;
} sim_idmap;

int sim_idmap_init(sim_idmap *m);
void sim_idmap_release(sim_idmap *m);
/* Gives id a slot; *was_live set when id already had one (returned then). */
int64_t sim_idmap_add(sim_idmap *m, uint64_t id, uint64_t size, int *was_live);
/* The slot of a live id, or -1. */
int64_t sim_idmap_find(const sim_idmap *m, uint64_t id);
/* Removes id; returns its slot or -1. *size gets its size. */
int64_t sim_idmap_remove(sim_idmap *m, uint64_t id, uint64_t *size);

/* stream handle -> dense index */
typedef struct sim_streams {
	uint64_t *handles;
	uint32_t n, cap;
} sim_streams;
int sim_stream_index(sim_streams *s, uint64_t handle);

struct allocsim_events {
	sim_ev *ev;
	size_t n, cap;
	sim_idmap ids;
	sim_streams streams;
	uint64_t allocs, frees, unmatched_frees, duplicate_allocs;
};

/* Runs the nc configs on a device's log into dr->results, the first one
 * explained at its peak (unless o->no_explain) (allocsim_core.c). */
int sim_run_configs(const allocsim_events *e, const allocsim_config *cfgs, size_t nc, const allocsim_replay_opts *o,
                    allocsim_device_report *dr, char *err, size_t errlen);
/* The report of a device holding JAX's buffers (allocsim_xla.c): models,
 * the as-run one probed at XLA's samples, XLA_PYTHON_CLIENT_* advice. */
int sim_xla_report(const allocsim_events *e, allocsim_xla_probe *probes, size_t nprobes,
                   const allocsim_replay_opts *o, allocsim_device_report *dr, char *err, size_t errlen);

/* Internal: appends and returns the slot used (or -1); for the trace
 * collector's actual-size tracking. */
int64_t sim_events_alloc_slot(allocsim_events *e, uint64_t id, uint64_t size, uint64_t stream,
                              uint64_t time, uint32_t stack);
/* The same; *dup_slot gets the slot of the live object with the same id
 * that was freed first (-1 if none). */
int64_t sim_events_alloc_slot2(allocsim_events *e, uint64_t id, uint64_t size, uint64_t stream,
                               uint64_t time, uint32_t stack, int64_t *dup_slot);
int64_t sim_events_free_slot(allocsim_events *e, uint64_t id, uint64_t time);
/* The caller numbers the objects (dense slots, never allocated while live,
 * frees only of live slots): no id map (allocsim_collector_event_slot). */
int64_t sim_events_alloc_direct(allocsim_events *e, uint32_t slot, uint64_t size, uint64_t stream, uint64_t time,
                                uint32_t stack);
int64_t sim_events_free_direct(allocsim_events *e, uint32_t slot, uint64_t time);

/* Runs a log through a model up to event `stop` (exclusive; SIZE_MAX = all),
 * filling r when not NULL.  Returns 0. */
int sim_replay(sim_base *m, const allocsim_events *e, size_t stop, const allocsim_run_opts *o,
               allocsim_result *r);
/* The same, also keeping in *snap the state at the latest peak of reserved
 * it could afford to snapshot; *snap_ok says whether that is the final peak. */
int sim_replay_snap(sim_base *m, const allocsim_events *e, size_t stop, const allocsim_run_opts *o,
                    allocsim_result *r, allocsim_snapshot *snap, int *snap_ok);

/* formatting helpers (allocsim_print.c) */
char *sim_fmt_bytes(uint64_t b, char *buf, size_t len);
char *sim_fmt_sbytes(int64_t b, char *buf, size_t len);

#endif
