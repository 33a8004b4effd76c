/*
 * access.c - API events (kernels, copies, sets, framework ops) and the
 * objects they touch: DrGPUM's object-level analysis (§5.1) over a
 * topological order of the APIs across streams (§5.3), and its
 * intra-object patterns (§3.2) from the parts of objects the ranges name.
 *
 * Objects: the live objects are also kept in a treap ordered by address so
 * an API's ranges find every object they overlap (interior pointers and
 * sub-ranges included) in O(log n + k).
 *
 * Order: every API, allocation and free is a vertex; its level is one more
 * than the highest level of its predecessors: the previous vertex on the
 * same (device, stream), the last writer of each object it reads (RAW), and
 * the last writer and the readers since of each object it writes or frees
 * (WAW, WAR).  Events arrive in invocation order and every edge points
 * back, so this is Kahn's algorithm computed as the events stream by: the
 * level is the round in which Kahn's algorithm would remove the vertex.
 * Thresholds compare levels (DrGPUM's); the distances reported count the
 * APIs in between in invocation order (kernels, ops: what a person reads),
 * with the levels beside them.
 *
 * Patterns per object, at the end of its life (thresholds in the options):
 *   early allocation   levels strictly between allocation and first access,
 *                      and APIs between in invocation order, >= early_min_apis
 *                      (2: one kernel between is an op's own order);
 *                      waste = size x (first access - the allocation's time
 *                      on the device: after the APIs launched before it)
 *   late deallocation  levels strictly between last access and free
 *                      >= late_min_apis, and, when the trace has trusted
 *                      iterations (judge.c), a phase boundary between them
 *                      (a tensor freed a few ops after its last use in the
 *                      same phase is Python's scoping, not a finding), and
 *                      then it counts only when the time it was kept holds
 *                      an iteration's live-bytes peak (else apart: freeing
 *                      it sooner would not lower the peak);
 *                      waste = size x (free - last access end)
 *   unused allocation  no access at all; waste = size x lifetime
 *   temporary idleness levels strictly between two consecutive accesses,
 *                      and APIs between in invocation order, >= idle_min_apis;
 *                      waste = size x the idle times
 *   An early allocation or temporary idleness wasting under 1/16 of another
 *   actionable instance of the same object is kept apart (minor).
 *   dead write         a copy, set or kernel writes it (no read) and the
 *                      access before was also a copy, set or kernel that
 *                      only wrote it, or it is freed with such a write
 *                      unread (a kernel's write-only range is exact: the
 *                      Compute Sanitizer backend's; framework ops are left
 *                      out, their modes are per tensor argument);
 *                      waste = size x time the unread value was kept
 *   overallocation     accessed, but less than 80% of its 64ths were ever
 *                      touched (the ranges name parts of it), and its
 *                      untouched bytes are mostly one piece (DrGPUM's
 *                      fragmentation below 80%); waste = untouched x lifetime
 *   structured access  DrGPUM's §3.2: at least 3 APIs touched it, each only
 *                      its own part (at most half of it), and no 64th was
 *                      touched by two APIs; waste = (size - the largest
 *                      part) x lifetime
 *   non-uniform access frequency  DrGPUM's §3.2 counted in APIs, not in
 *                      accesses: per 64th, the APIs that touched it; the hot
 *                      part (64ths touched by at least half as many APIs as
 *                      the hottest, which at least 8 touched) is at most a
 *                      quarter of the object, the other touched 64ths
 *                      (at least a quarter of it) were touched by at most a
 *                      quarter as many on average; waste = cold bytes x
 *                      lifetime x the share of its APIs that left the cold
 *                      part alone
 * The intra-object patterns need objects of at least 4 KiB (structured
 * access and frequency; overallocation 64 bytes); their parts are 64ths
 * (the sanitizer backend's ranges name 32nds).
 * Instances the structure explains are marked (judge.c): idleness of the
 * loop's state, from one phase to another or of what a backward reads,
 * set-up before the loop, late deallocations and unread writes at teardown,
 * objects under 1/1024 of their space's peak; the result keeps them apart.
 * An API with an UNPLACED range (accesses the collector could not place)
 * may have touched any object: the objects live then get no access finding
 * (result->acc.unsure_objects).
 * Redundant allocation needs every object's first and last access: those
 * are kept (96 bytes per accessed object) for det_access_finish().
 *
 * Memory: about 200 bytes per live object, 64 per accessed object, a few
 * per stream, 256 per live object an API touched only part of (its
 * counts per 64th).
 */
#include <stdlib.h>
#include <string.h>

#include "det.h"
#include "space.h"

#define NIL UINT32_MAX

typedef struct acc_idle {      /* idle gaps of one kind (actionable, or the structure's) */
	uint64_t max_apis, max_levels;
	uint64_t at_seq, until_seq, at_ns, until_ns; /* the longest gap */
	double waste;
	uint32_t count;
	uint8_t why;                  /* stp_det_expect of the longest */
} acc_idle;

typedef struct acc_obj {
	uint32_t left, right, prio, stamp;
	uint64_t lvl_alloc, lvl_first, lvl_last, lvl_write, lvl_read;
	uint64_t api_alloc, api_first, api_last, api_write; /* API ordinals */
	uint64_t seq_first, seq_last, seq_write;
	uint64_t first_ns, last_end_ns, last_write_ns;
	uint64_t alloc_dev_ns;  /* when it took effect on the device (det_access_alloc) */
	uint64_t unplaced_alloc, unplaced_write; /* a->unplaced then */
	uint64_t cover;        /* 64ths of the object any range touched */
	uint64_t api_cover;    /* ... this API's ranges */
	uint64_t slices;       /* the 64ths earlier APIs touched, while each touched its own */
	uint32_t nslices;      /* APIs that did */
	uint32_t freq;         /* 1 + its counts' index in freq (0: every API touched all of it) */
	uint8_t slice_max;     /* 64ths of the largest of those parts */
	uint8_t slices_off;    /* an API touched all of it, or a 64th another had */
	acc_idle idle[2];      /* [0] actionable gaps, [1] gaps the structure explains */
	double dead_waste;
	uint32_t naccess, dead_writes;
	uint64_t dead_max_apis, dead_seq_from, dead_seq_to;
	uint8_t mode;          /* this API's combined access mode */
	uint8_t last_cs_write; /* the last access was a copy/set/kernel that only wrote */
} acc_obj;

typedef struct acc_rec {     /* an accessed object, for redundant allocation */
	uint64_t first, last;    /* levels */
	uint64_t api_first, api_last;
	uint64_t size;
	uint64_t alloc_ns, free_ns, last_end_ns;
	uint64_t seq_last, seq_first;
	uint64_t addr, alloc_seq;
	uint32_t site, space;
	uint32_t ko;             /* objinfo.c index (keep_objects), else UINT32_MAX */
	uint8_t cached;          /* a caching allocator's tensor (pool 1) */
} acc_rec;

typedef struct acc_pend {   /* an object's instance, held until its others are known */
	stp_det_instance in;
	double waste;
	uint8_t pat, why;
} acc_pend;

typedef struct acc_late {    /* a late deallocation waiting for the iterations' peaks */
	stp_det_instance in;
	double waste;
	uint32_t site;
} acc_late;

struct det_access {
	acc_obj *o;
	uint32_t cap;
	uint32_t root;
	uint32_t rng;
	uint32_t stamp;
	uint64_t max_level;
	uint64_t end_max;        /* the latest end of an API so far (device time when timed there) */
	uint64_t napi;           /* API events so far: the ordinal of the last */
	uint64_t unplaced;       /* API events with an UNPLACED range so far */
	uint64_t nkernel, nop, nother; /* API events by kind (the distances' unit) */
	int32_t free_device;     /* the free event being handled */
	uint64_t free_stream, free_seq;
	uint8_t free_cached;
	det_map streams;         /* (device, stream) -> last level, past 16 */
	uint64_t skey[16], slevel[16];
	uint32_t nstreams;
	uint32_t *touched;
	uint32_t ntouched, touched_cap;
	acc_rec *rec;
	uint64_t nrec, rec_cap;
	acc_late *late;          /* late deallocations judged at the end (the peaks) */
	uint64_t nlate, late_cap;
	acc_pend pend[8];        /* the ending object's instances (det_access_end_obj) */
	uint32_t npend;
	uint32_t (*freq)[64];    /* per 64th of an object, the APIs that touched it */
	uint32_t nfreq, freq_cap, freq_free; /* freq_free: 1 + a released one, chained through [0] */
};

#define INTRA_MIN_SIZE 4096u   /* structured access, frequency: objects at least this large */
#define HOT_MIN_APIS 8u        /* non-uniform frequency: the hottest 64th's APIs at least */

/* A zeroed set of counts per 64th: 1 + its index, or 0 when out of memory. */
static uint32_t freq_take(struct det_access *a)
{
	uint32_t k = a->freq_free;
	if (k) {
		a->freq_free = a->freq[k - 1][0];
	} else {
		if (a->nfreq == a->freq_cap) {
			uint32_t nc = a->freq_cap ? a->freq_cap * 2 : 64;
			uint32_t(*n)[64] = realloc(a->freq, (size_t)nc * sizeof *n);
			if (!n)
				return 0;
			a->freq = n;
			a->freq_cap = nc;
		}
		k = ++a->nfreq;
	}
	memset(a->freq[k - 1], 0, sizeof a->freq[0]);
	return k;
}

static void freq_release(struct det_access *a, acc_obj *x)
{
	if (!x->freq)
		return;
	a->freq[x->freq - 1][0] = a->freq_free;
	a->freq_free = x->freq;
	x->freq = 0;
}

static uint64_t stream_key(int32_t device, uint64_t stream)
{
	return (stream * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(uint32_t)device << 1) ^ 0x5bd1e995u;
}

int det_access_init(stp_det *d)
{
	struct det_access *a = calloc(1, sizeof *a);
	if (!a)
		return -1;
	d->acc = a;
	a->root = NIL;
	a->rng = 0x9e3779b9u;
	return det_map_init(&a->streams, 16);
}

void det_access_free(stp_det *d)
{
	struct det_access *a = d->acc;
	if (!a)
		return;
	free(a->o);
	free(a->touched);
	free(a->rec);
	free(a->late);
	free(a->freq);
	det_map_destroy(&a->streams);
	free(a);
	d->acc = NULL;
}

/* ------------------------------------------------------------ treap */

static uint64_t key_of(const stp_det *d, uint32_t s) { return d->objs[s].addr; }

static uint32_t rot_right(acc_obj *o, uint32_t n)
{
	uint32_t l = o[n].left;
	o[n].left = o[l].right;
	o[l].right = n;
	return l;
}

static uint32_t rot_left(acc_obj *o, uint32_t n)
{
	uint32_t r = o[n].right;
	o[n].right = o[r].left;
	o[r].left = n;
	return r;
}

static uint32_t t_insert(stp_det *d, uint32_t n, uint32_t s)
{
	acc_obj *o = d->acc->o;
	if (n == NIL)
		return s;
	if (key_of(d, s) < key_of(d, n)) {
		o[n].left = t_insert(d, o[n].left, s);
		if (o[o[n].left].prio > o[n].prio)
			n = rot_right(o, n);
	} else {
		o[n].right = t_insert(d, o[n].right, s);
		if (o[o[n].right].prio > o[n].prio)
			n = rot_left(o, n);
	}
	return n;
}

static uint32_t t_remove(stp_det *d, uint32_t n, uint32_t s)
{
	acc_obj *o = d->acc->o;
	if (n == NIL)
		return NIL;
	if (n == s) {
		if (o[n].left == NIL)
			return o[n].right;
		if (o[n].right == NIL)
			return o[n].left;
		if (o[o[n].left].prio > o[o[n].right].prio) {
			n = rot_right(o, n);
			o[n].right = t_remove(d, o[n].right, s);
		} else {
			n = rot_left(o, n);
			o[n].left = t_remove(d, o[n].left, s);
		}
		return n;
	}
	if (key_of(d, s) < key_of(d, n))
		o[n].left = t_remove(d, o[n].left, s);
	else
		o[n].right = t_remove(d, o[n].right, s);
	return n;
}

/* ------------------------------------------------------------ levels */

/* Streams are few: a small array searched linearly, the map past 16. */
static uint64_t *stream_slot(struct det_access *a, int32_t device, uint64_t stream)
{
	uint64_t k = stream_key(device, stream);
	for (uint32_t i = 0; i < a->nstreams; i++)
		if (a->skey[i] == k)
			return &a->slevel[i];
	if (a->nstreams < 16) {
		a->skey[a->nstreams] = k;
		a->slevel[a->nstreams] = 0;
		return &a->slevel[a->nstreams++];
	}
	return NULL;
}

static uint64_t stream_level(struct det_access *a, int32_t device, uint64_t stream)
{
	uint64_t *p = stream_slot(a, device, stream), v = 0;
	if (p)
		return *p;
	det_map_get(&a->streams, stream_key(device, stream), &v);
	return v;
}

static void set_stream_level(struct det_access *a, int32_t device, uint64_t stream, uint64_t level)
{
	uint64_t *p = stream_slot(a, device, stream);
	if (p)
		*p = level;
	else
		det_map_put(&a->streams, stream_key(device, stream), level, NULL);
}

static uint64_t max64(uint64_t x, uint64_t y) { return x > y ? x : y; }

/* An actionable instance on an object too small to matter is set apart. */
static stp_det_expect sized(const stp_det *d, uint32_t space, uint64_t size, stp_det_expect why)
{
	if (why == STP_EXPECT_NONE && size < d->spaces[space].peak_bytes / 1024)
		return STP_EXPECT_NEGLIGIBLE;
	return why;
}

int det_access_alloc(stp_det *d, uint32_t slot, const stp_event *ev)
{
	struct det_access *a = d->acc;
	if (slot >= a->cap) {
		uint32_t nc = a->cap ? a->cap * 2 : 4096;
		while (nc <= slot)
			nc *= 2;
		acc_obj *n = realloc(a->o, (size_t)nc * sizeof *n);
		if (!n)
			return -1;
		a->o = n;
		a->cap = nc;
	}
	const stp_alloc_info *al = &ev->u.alloc;
	/* objects out of view (the heap of a tensor-space run) are no vertex:
	 * distances count the tensors' allocations and the ops only */
	int in_view = det_space_in_view(d, d->objs[slot].space);
	uint64_t lvl = stream_level(a, al->device, al->stream) + (in_view ? 1 : 0);
	if (in_view) {
		set_stream_level(a, al->device, al->stream, lvl);
		a->max_level = max64(a->max_level, lvl);
	}
	a->rng ^= a->rng << 13;
	a->rng ^= a->rng >> 17;
	a->rng ^= a->rng << 5;
	/* an allocation takes effect on the device once the work launched
	 * before it is done (a caching allocator hands out blocks that
	 * queued kernels may still use): with kernels timed on the device,
	 * running behind the host, the host's time of the allocation would
	 * count that lag as early allocation */
	uint64_t at = d->objs[slot].alloc_ns;
	a->o[slot] = (acc_obj){.left = NIL, .right = NIL, .prio = a->rng, .stamp = 0, .lvl_alloc = lvl,
	                       .lvl_write = lvl, .api_alloc = a->napi, .unplaced_alloc = a->unplaced,
	                       .alloc_dev_ns = a->end_max > at ? a->end_max : at};
	a->root = t_insert(d, a->root, slot);
	return 0;
}

/* The 64ths of an object [s, s + len) that bytes [lo, hi) overlap. */
static uint64_t cover_bits(uint64_t s, uint64_t len, uint64_t lo, uint64_t hi)
{
	if (!len)
		return ~0ull;
	uint64_t a = lo > s ? lo - s : 0, b = hi - s < len ? hi - s : len; /* [a, b) inside */
	if (b <= a)
		return 0;
	if (a == 0 && b == len)
		return ~0ull;
	/* k = floor(off * 64 / len), without overflow for objects below 2^57 */
	uint64_t k0 = len < (1ull << 57) ? a * 64 / len : a / (len / 64 + 1);
	uint64_t k1 = len < (1ull << 57) ? (b - 1) * 64 / len : (b - 1) / (len / 64 + 1);
	if (k1 > 63)
		k1 = 63;
	uint64_t upto = k1 >= 63 ? ~0ull : (2ull << k1) - 1;
	return upto & ~((1ull << k0) - 1);
}

/* collects the objects overlapping [lo, hi) into a->touched, merging modes */
static int collect(stp_det *d, uint32_t n, uint64_t lo, uint64_t hi, uint32_t mode)
{
	struct det_access *a = d->acc;
	while (n != NIL) {
		const det_obj *ob = &d->objs[n];
		uint64_t end = ob->addr + (ob->size ? ob->size : 1);
		if (ob->addr < hi && end > lo) {
			acc_obj *x = &a->o[n];
			if (x->stamp != a->stamp) {
				if (a->ntouched == a->touched_cap) {
					uint32_t nc = a->touched_cap ? a->touched_cap * 2 : 64;
					uint32_t *t = realloc(a->touched, nc * sizeof *t);
					if (!t)
						return -1;
					a->touched = t;
					a->touched_cap = nc;
				}
				a->touched[a->ntouched++] = n;
				x->stamp = a->stamp;
				x->mode = 0;
				x->api_cover = 0;
			}
			x->mode |= (uint8_t)mode;
			x->api_cover |= cover_bits(ob->addr, ob->size, lo, hi);
		}
		/* left holds smaller addresses: they can overlap only if lo is
		 * below this node; right only if hi is above it */
		if (lo < ob->addr) {
			if (hi > ob->addr && collect(d, a->o[n].right, lo, hi, mode) < 0)
				return -1;
			n = a->o[n].left;
		} else {
			n = a->o[n].right;
		}
	}
	return 0;
}

/* The intra-object record of an API that touched the 64ths x->api_cover
 * of ob (before x->naccess counts it). */
static void intra_api(struct det_access *a, acc_obj *x, const det_obj *ob)
{
	uint64_t c = x->api_cover;
	x->cover |= c;
	if (ob->size < INTRA_MIN_SIZE)
		return;
	if (!x->slices_off) { /* structured access: a part of its own */
		if (c == ~0ull || (c & x->slices)) {
			x->slices_off = 1;
		} else {
			unsigned n = (unsigned)__builtin_popcountll(c);
			x->slices |= c;
			x->nslices++;
			if (n > x->slice_max)
				x->slice_max = (uint8_t)n;
		}
	}
	if (!x->freq && c != ~0ull) { /* the first API that left some of it alone */
		x->freq = freq_take(a);
		if (x->freq)
			for (unsigned k = 0; k < 64; k++)
				a->freq[x->freq - 1][k] = x->naccess; /* each API before touched all of it */
	}
	if (x->freq)
		for (uint64_t m = c; m; m &= m - 1)
			a->freq[x->freq - 1][__builtin_ctzll(m)]++;
}

int det_access_api(stp_det *d, const stp_event *ev)
{
	struct det_access *a = d->acc;
	const stp_api_info *api = &ev->u.api;
	uint64_t ns = ev->time_ns > d->t0 ? ev->time_ns - d->t0 : 0;
	uint64_t end_ns = api->end_ns > ev->time_ns ? api->end_ns - d->t0 : ns;
	if (api->kind == STP_API_SYNC)
		return 0; /* a wait, not work: no vertex, not counted */
	a->napi++;
	a->end_max = max64(a->end_max, end_ns);
	if (api->kind == STP_API_KERNEL)
		a->nkernel++;
	else if (api->kind == STP_API_OP)
		a->nop++;
	else
		a->nother++;
	if (++a->stamp == 0) { /* wrapped: clear the stamps */
		for (uint32_t i = 0; i < a->cap; i++)
			a->o[i].stamp = 0;
		a->stamp = 1;
	}
	a->ntouched = 0;
	for (uint32_t i = 0; i < api->nranges; i++) {
		const stp_range *r = &api->ranges[i];
		if (r->mode & STP_ACCESS_UNPLACED) {
			a->unplaced++;
			continue;
		}
		uint64_t hi = r->addr + (r->size ? r->size : 1);
		if (hi < r->addr)
			hi = UINT64_MAX;
		uint32_t mode = r->mode & (STP_ACCESS_READ | STP_ACCESS_WRITE);
		if (!mode)
			mode = STP_ACCESS_READ | STP_ACCESS_WRITE;
		if (collect(d, a->root, r->addr, hi, mode) < 0)
			return -1;
	}
	/* the level: after the stream's previous vertex and every dependency */
	uint64_t lvl = stream_level(a, api->device, api->stream) + 1;
	for (uint32_t i = 0; i < a->ntouched; i++) {
		const acc_obj *x = &a->o[a->touched[i]];
		if (x->mode & STP_ACCESS_READ)
			lvl = max64(lvl, x->lvl_write + 1);
		if (x->mode & STP_ACCESS_WRITE)
			lvl = max64(lvl, max64(x->lvl_write, x->lvl_read) + 1);
	}
	set_stream_level(a, api->device, api->stream, lvl);
	a->max_level = max64(a->max_level, lvl);
	int copy_or_set = api->kind == STP_API_MEMCPY || api->kind == STP_API_MEMSET || api->kind == STP_API_KERNEL;
	for (uint32_t i = 0; i < a->ntouched; i++) {
		uint32_t s = a->touched[i];
		acc_obj *x = &a->o[s];
		const det_obj *ob = &d->objs[s];
		if (!x->naccess) {
			x->lvl_first = lvl;
			x->api_first = a->napi;
			x->seq_first = ev->seq;
			x->first_ns = ns;
		} else {
			uint64_t gap = lvl > x->lvl_last ? lvl - x->lvl_last - 1 : 0;
			uint64_t apis = a->napi - x->api_last - 1;
			/* idle: levels apart (DrGPUM's), and as many APIs really ran in
			 * between in invocation order (levels of two streams can differ
			 * with nothing between; allocations and frees are levels too,
			 * and one kernel between two uses is no gap to offload in) */
			if (gap >= d->opt.idle_min_apis && gap > 0 && apis >= d->opt.idle_min_apis && apis > 0) {
				uint8_t why = (uint8_t)det_judge_idle(d, ob->alloc_seq, x->seq_last, ev->seq);
				acc_idle *g = &x->idle[why != STP_EXPECT_NONE];
				g->count++;
				g->waste += (double)ob->size * (double)(ns > x->last_end_ns ? ns - x->last_end_ns : 0);
				if (apis >= g->max_apis) {
					g->max_apis = apis;
					g->max_levels = gap;
					g->at_seq = x->seq_last;
					g->until_seq = ev->seq;
					g->at_ns = x->last_end_ns;
					g->until_ns = ns;
					g->why = why;
				}
			}
		}
		int cs_write = copy_or_set && x->mode == STP_ACCESS_WRITE;
		if (cs_write && x->last_cs_write && x->unplaced_write == a->unplaced) {
			x->dead_writes++;
			x->dead_waste += (double)ob->size * (double)(ns > x->last_write_ns ? ns - x->last_write_ns : 0);
			uint64_t apis = a->napi - x->api_write;
			if (apis >= x->dead_max_apis) {
				x->dead_max_apis = apis;
				x->dead_seq_from = x->seq_write;
				x->dead_seq_to = ev->seq;
			}
		}
		x->last_cs_write = (uint8_t)cs_write;
		intra_api(a, x, ob);
		if (x->mode & STP_ACCESS_WRITE) {
			x->lvl_write = lvl;
			x->lvl_read = 0;
			x->last_write_ns = ns;
			x->api_write = a->napi;
			x->seq_write = ev->seq;
			x->unplaced_write = a->unplaced;
		} else {
			x->lvl_read = max64(x->lvl_read, lvl);
		}
		x->lvl_last = lvl;
		x->api_last = a->napi;
		x->seq_last = ev->seq;
		x->last_end_ns = end_ns;
		x->naccess++;
		d->objs[s].flags |= DET_OBJ_ACCESSED;
		if (ob->ko != UINT32_MAX && det_ko_access(d, ob->ko, ns, api->name, api->kind, x->mode) < 0)
			return -1;
	}
	return 0;
}

void det_access_free_event(stp_det *d, const stp_event *ev)
{
	d->acc->free_device = ev->u.free.device;
	d->acc->free_stream = ev->u.free.stream;
	d->acc->free_seq = ev->seq;
}

const char *det_access_unit(const stp_det *d)
{
	const struct det_access *a = d->acc;
	if (!a || !a->napi)
		return "kernels";
	if (a->nop * 2 >= a->napi)
		return "ops";
	if (a->nkernel * 5 >= a->napi * 4)
		return "kernels";
	return "GPU calls";
}

uint64_t det_access_napi(const stp_det *d) { return d->acc ? d->acc->napi : 0; }

/* An intra-object instance spans the object's life (until ns). */
static void whole_life(stp_det_instance *in, const det_obj *ob, uint64_t ns)
{
	in->levels = 0;
	in->at_ns = ob->alloc_ns;
	in->until_ns = ns;
	in->at_seq = ob->alloc_seq;
	in->until_seq = 0;
}

/* Overallocation: the touched 64ths, the untouched run, DrGPUM's rule. */
/* An instance of the ending object, held until its others are known. */
static void pend_add(stp_det *d, stp_det_pattern pat, stp_det_expect why, double waste, const stp_det_instance *in)
{
	struct det_access *a = d->acc;
	if (a->npend < sizeof a->pend / sizeof a->pend[0])
		a->pend[a->npend++] = (acc_pend){.in = *in, .waste = waste, .pat = (uint8_t)pat, .why = (uint8_t)why};
}

/* The ending object's instances, added: an early allocation or a temporary
 * idleness wasting under 1/MINOR_RATIO of what another actionable pattern
 * of the same object wastes is set apart (STP_EXPECT_MINOR): the object is
 * listed for the stronger one, and a second line for a gap that small is
 * nothing to act on. */
#define MINOR_RATIO 16.0
static void pend_flush(stp_det *d, const det_obj *ob, double late_waste)
{
	struct det_access *a = d->acc;
	for (uint32_t i = 0; i < a->npend; i++) {
		acc_pend *p = &a->pend[i];
		if (p->why == STP_EXPECT_NONE && (p->pat == STP_PAT_EARLY_ALLOC || p->pat == STP_PAT_TEMP_IDLE)) {
			double other = late_waste;
			for (uint32_t j = 0; j < a->npend; j++)
				if (j != i && a->pend[j].why == STP_EXPECT_NONE && a->pend[j].waste > other)
					other = a->pend[j].waste;
			if (p->waste * MINOR_RATIO < other)
				p->why = STP_EXPECT_MINOR;
		}
	}
	for (uint32_t i = 0; i < a->npend; i++) {
		const acc_pend *p = &a->pend[i];
		det_finding_add_x(d, (stp_det_pattern)p->pat, (stp_det_expect)p->why, ob->site, 1, ob->size, p->waste,
		                  p->in.distance, &p->in);
	}
	a->npend = 0;
}

static void judge_parts(stp_det *d, const acc_obj *x, const det_obj *ob, uint64_t ns, stp_det_instance *in)
{
	uint64_t c = x->cover;
	if (c == ~0ull || !c || ob->size < 64)
		return;
	unsigned used = (unsigned)__builtin_popcountll(c);
	/* the longest run of untouched 64ths: one piece to cut away, or scattered */
	unsigned run = 0, best = 0;
	for (unsigned k = 0; k < 64; k++) {
		run = (c >> k & 1) ? 0 : run + 1;
		if (run > best)
			best = run;
	}
	unsigned unused = 64 - used;
	double frag = 1.0 - (double)best / (double)unused;
	if (used * 100 >= 80 * 64 || frag * 100 >= 80)
		return;
	unsigned lo = (unsigned)__builtin_ctzll(c), hi = 64 - (unsigned)__builtin_clzll(c);
	uint64_t size = ob->size;
	in->used_bytes = size / 64 * used + (size % 64) * used / 64;
	in->used_lo = lo * (size / 64) + lo * (size % 64) / 64;
	in->used_hi = hi >= 64 ? size : hi * (size / 64) + hi * (size % 64) / 64;
	in->distance = 64 - used; /* 64ths never touched */
	whole_life(in, ob, ns);
	double untouched = (double)(size - in->used_bytes);
	pend_add(d, STP_PAT_OVERALLOC, sized(d, ob->space, ob->size, STP_EXPECT_NONE),
	         untouched * (double)(ns - ob->alloc_ns), in);
	in->used_bytes = in->used_lo = in->used_hi = 0;
}

/* The offset of the k-th 64th of an object of size bytes. */
static uint64_t off64(uint64_t size, unsigned k) { return k >= 64 ? size : k * (size / 64) + k * (size % 64) / 64; }

/* Structured access: each API its own part, none twice. */
static void judge_slices(stp_det *d, const acc_obj *x, const det_obj *ob, uint64_t ns, stp_det_instance *in)
{
	if (ob->size < INTRA_MIN_SIZE || x->slices_off || x->nslices < 3 || x->slice_max * 2u > 64u)
		return;
	uint64_t part = off64(ob->size, x->slice_max);
	in->used_bytes = part;
	in->used_lo = off64(ob->size, (unsigned)__builtin_ctzll(x->slices));
	in->used_hi = off64(ob->size, 64 - (unsigned)__builtin_clzll(x->slices));
	in->distance = x->nslices;
	whole_life(in, ob, ns);
	pend_add(d, STP_PAT_STRUCTURED, sized(d, ob->space, ob->size, STP_EXPECT_NONE),
	         (double)(ob->size - part) * (double)(ns - ob->alloc_ns), in);
	in->used_bytes = in->used_lo = in->used_hi = 0;
}

/* Non-uniform access frequency, counted in APIs per 64th. */
static void judge_freq(stp_det *d, const acc_obj *x, const uint32_t *f, const det_obj *ob, uint64_t ns,
                       stp_det_instance *in)
{
	uint32_t top = 0;
	for (unsigned k = 0; k < 64; k++)
		top = f[k] > top ? f[k] : top;
	if (top < HOT_MIN_APIS)
		return;
	unsigned nhot = 0, ncold = 0, lo = 64, hi = 0;
	uint64_t shot = 0, scold = 0;
	for (unsigned k = 0; k < 64; k++) {
		if (f[k] * 2ull >= top) {
			nhot++;
			shot += f[k];
			lo = k < lo ? k : lo;
			hi = k + 1;
		} else if (f[k]) {
			ncold++;
			scold += f[k];
		}
	}
	/* a small hot part, a large cold part touched a quarter as often */
	if (nhot > 16 || ncold < 16 || (double)shot / nhot < 4.0 * (double)scold / ncold)
		return;
	double cold = (double)scold / ncold;
	uint64_t hot_bytes = off64(ob->size, hi) - off64(ob->size, lo), cold_bytes = ob->size - hot_bytes;
	in->used_bytes = hot_bytes;
	in->used_lo = off64(ob->size, lo);
	in->used_hi = off64(ob->size, hi);
	in->hot_apis = top;
	in->cold_apis = cold;
	in->distance = top;
	whole_life(in, ob, ns);
	double idle = x->naccess ? 1.0 - cold / (double)x->naccess : 0;
	pend_add(d, STP_PAT_NONUNIFORM, sized(d, ob->space, ob->size, STP_EXPECT_NONE),
	         (double)cold_bytes * (double)(ns - ob->alloc_ns) * (idle > 0 ? idle : 0), in);
	in->used_bytes = in->used_lo = in->used_hi = in->hot_apis = 0;
	in->cold_apis = 0;
}

uint64_t det_access_end_obj(stp_det *d, uint32_t slot, int freed, uint64_t ns)
{
	struct det_access *a = d->acc;
	acc_obj *x = &a->o[slot];
	const det_obj *ob = &d->objs[slot];
	uint64_t lvl_end;
	/* a PyTorch run analyzed in its tensor space: the interpreter's heap
	 * objects are no vertex and no findings (no op ever touches them) */
	if (!det_space_in_view(d, ob->space) || !d->space_judged[ob->space]) {
		/* nor are the objects of a space API events do not name (a
		 * CUDA run's host heap: scan.c, judge_spaces) */
		a->root = t_remove(d, a->root, slot);
		freq_release(a, x);
		return 0;
	}
	if (freed) { /* the free vertex: after the stream, the last writer and readers */
		lvl_end = max64(stream_level(a, a->free_device, a->free_stream), max64(x->lvl_write, x->lvl_read)) + 1;
		set_stream_level(a, a->free_device, a->free_stream, lvl_end);
		a->max_level = max64(a->max_level, lvl_end);
	} else {
		lvl_end = a->max_level + 1;
	}
	a->root = t_remove(d, a->root, slot);
	uint64_t free_seq = freed ? a->free_seq : 0;
	stp_det_instance in = {.alloc_seq = ob->alloc_seq, .free_seq = freed ? free_seq : UINT64_MAX,
	                       .alloc_ns = ob->alloc_ns, .free_ns = freed ? ns : UINT64_MAX, .addr = ob->addr,
	                       .size = ob->size, .other_site = UINT32_MAX};
	double sz = (double)ob->size;
	/* something unplaced ran while it lived: any access may have been it */
	if (a->unplaced != x->unplaced_alloc) {
		d->res.acc.unsure_objects++;
		freq_release(a, x);
		return lvl_end - x->lvl_alloc;
	}
	int teardown = freed && det_after_loop(d, free_seq);
	if (!x->naccess) {
		in.distance = a->napi - x->api_alloc;
		in.levels = lvl_end - x->lvl_alloc;
		in.at_ns = ob->alloc_ns;
		in.until_ns = ns;
		in.at_seq = ob->alloc_seq;
		in.until_seq = free_seq;
		det_finding_add_x(d, STP_PAT_UNUSED_ALLOC, sized(d, ob->space, ob->size, STP_EXPECT_NONE), ob->site, 1, ob->size,
		                  sz * (double)(ns - ob->alloc_ns), in.distance, &in);
		return lvl_end - x->lvl_alloc;
	}
	double late_waste = 0; /* a late deallocation judged at the end, its waste */
	a->npend = 0;
	uint64_t between = x->lvl_first - x->lvl_alloc - 1;
	if (x->lvl_first > x->lvl_alloc && between >= d->opt.early_min_apis && between > 0 &&
	    x->api_first - x->api_alloc - 1 >= d->opt.early_min_apis && x->api_first > x->api_alloc + 1) {
		in.distance = x->api_first - x->api_alloc - 1;
		in.levels = x->lvl_first - x->lvl_alloc;
		in.at_ns = x->alloc_dev_ns < x->first_ns ? x->alloc_dev_ns : x->first_ns;
		in.until_ns = x->first_ns;
		in.at_seq = ob->alloc_seq;
		in.until_seq = x->seq_first;
		stp_det_expect why = det_before_loop(d, x->seq_first) ? STP_EXPECT_SETUP : STP_EXPECT_NONE;
		pend_add(d, STP_PAT_EARLY_ALLOC, sized(d, ob->space, ob->size, why),
		         sz * (double)(x->first_ns - in.at_ns), &in);
	}
	if (freed && lvl_end > x->lvl_last + 1) {
		between = lvl_end - x->lvl_last - 1;
		/* with trusted iterations, a free in the phase of the last use is
		 * the program's scoping, not a late deallocation */
		int same_phase = det_judge_usable(d) && det_same_segment(d, x->seq_last, free_seq);
		if (between >= d->opt.late_min_apis && !same_phase && a->napi > x->api_last) {
			in.distance = a->napi - x->api_last;
			in.levels = lvl_end - x->lvl_last;
			in.at_ns = x->last_end_ns < ns ? x->last_end_ns : ns;
			in.until_ns = ns;
			in.at_seq = x->seq_last;
			in.until_seq = free_seq;
			double w = sz * (double)(ns - in.at_ns);
			stp_det_expect why = teardown ? STP_EXPECT_TEARDOWN
			                     : det_before_loop(d, free_seq) ? STP_EXPECT_SETUP
			                                                    : sized(d, ob->space, ob->size, STP_EXPECT_NONE);
			if (why == STP_EXPECT_NONE && det_judge_usable(d) && d->ipeak_seq) {
				/* over an iteration's peak or not: known at the end */
				if (a->nlate == a->late_cap) {
					uint64_t nc = a->late_cap ? a->late_cap * 2 : 256;
					acc_late *l = realloc(a->late, nc * sizeof *l);
					if (l) {
						a->late = l;
						a->late_cap = nc;
					}
				}
				if (a->nlate < a->late_cap)
					a->late[a->nlate++] = (acc_late){.in = in, .waste = w, .site = ob->site};
				late_waste = w;
			} else {
				pend_add(d, STP_PAT_LATE_DEALLOC, why, w, &in);
			}
		}
	}
	for (int k = 0; k < 2; k++) {
		const acc_idle *g = &x->idle[k];
		if (!g->count)
			continue;
		in.distance = g->max_apis;
		in.levels = g->max_levels;
		in.at_ns = g->at_ns;
		in.until_ns = g->until_ns;
		in.at_seq = g->at_seq;
		in.until_seq = g->until_seq;
		/* gaps in the forward of an object the backward reads later: it
		 * stays allocated for the backward anyway (a residual's input
		 * between its two uses, saved by the layer norm before it) */
		stp_det_expect why = k ? (stp_det_expect)g->why
		                     : det_kept_for_backward(d, g->until_seq, x->seq_last) ? STP_EXPECT_PHASES
		                                                                            : sized(d, ob->space, ob->size,
		                                                                                    STP_EXPECT_NONE);
		pend_add(d, STP_PAT_TEMP_IDLE, why, g->waste, &in);
	}
	/* the last write, never read before the free */
	int unread = freed && x->last_cs_write && x->unplaced_write == a->unplaced;
	if (x->dead_writes || unread) {
		double w = x->dead_waste;
		in.distance = x->dead_writes + (unread ? 1 : 0);
		in.levels = 0;
		in.at_seq = x->dead_seq_from;
		in.until_seq = x->dead_seq_to;
		in.at_ns = in.until_ns = 0;
		if (unread) {
			w += sz * (double)(ns > x->last_write_ns ? ns - x->last_write_ns : 0);
			if (!x->dead_writes) {
				in.at_seq = x->seq_write;
				in.until_seq = free_seq;
				in.at_ns = x->last_write_ns;
				in.until_ns = ns;
			}
		}
		/* the only unread write is the last one, freed after the loop:
		 * the final state of a training loop */
		stp_det_expect why = !x->dead_writes && teardown ? STP_EXPECT_TEARDOWN : STP_EXPECT_NONE;
		pend_add(d, STP_PAT_DEAD_WRITE, sized(d, ob->space, ob->size, why), w, &in);
	}
	judge_parts(d, x, ob, ns, &in);
	judge_slices(d, x, ob, ns, &in);
	if (x->freq)
		judge_freq(d, x, a->freq[x->freq - 1], ob, ns, &in);
	freq_release(a, x);
	pend_flush(d, ob, late_waste);
	/* kept for redundant allocation */
	if (a->nrec == a->rec_cap) {
		uint64_t nc = a->rec_cap ? a->rec_cap * 2 : 1024;
		acc_rec *r = realloc(a->rec, nc * sizeof *r);
		if (r) {
			a->rec = r;
			a->rec_cap = nc;
		}
	}
	if (a->nrec < a->rec_cap)
		a->rec[a->nrec++] = (acc_rec){.first = x->lvl_first, .last = x->lvl_last, .api_first = x->api_first,
		                              .api_last = x->api_last, .size = ob->size, .alloc_ns = ob->alloc_ns,
		                              .free_ns = freed ? ns : d->end_ns, .last_end_ns = x->last_end_ns,
		                              .seq_last = x->seq_last, .seq_first = x->seq_first, .addr = ob->addr,
		                              .alloc_seq = ob->alloc_seq, .site = ob->site, .space = ob->space,
		                              .ko = UINT32_MAX, .cached = (ob->flags & DET_OBJ_POOL) != 0};
	if (d->ko_seq && a->nrec)
		a->rec[a->nrec - 1].ko = ob->ko; /* for the exporter's per-object patterns */
	return lvl_end - x->lvl_alloc;
}

/* ------------------------------------------------------------ redundant */

static uint32_t uf_find(uint32_t *up, uint32_t i)
{
	while (up[i] != i) {
		up[i] = up[up[i]];
		i = up[i];
	}
	return i;
}

/* DrGPUM's one-pass reuse pairs within one group of similar sizes.  The
 * list of first/last accesses is walked from the tail; an object turns Done
 * at its first access and then reuses the closest object to its left that
 * is still Initial (its last access is left of here) and not yet reused. */
static int redundant_group(stp_det *d, const acc_rec *all, const uint32_t *idx, uint32_t n)
{
	/* the first/last accesses by (level, last after first, object): key =
	 * level * 2 + last, value = 2 * object + last; the sort is stable and
	 * the input is in object order */
	uint64_t *ek = malloc((size_t)n * 2 * sizeof *ek);
	uint32_t *ev = malloc((size_t)n * 2 * sizeof *ev);
	uint32_t *owner = malloc((size_t)n * sizeof *owner);     /* object of the k-th last event */
	uint32_t *up = malloc(((size_t)n + 1) * sizeof *up);      /* union-find: previous not reused */
	if (!ek || !ev || !owner || !up) {
		free(ek), free(ev), free(owner), free(up);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		const acc_rec *g = &all[idx[i]];
		ek[2 * i] = g->first << 1;
		ev[2 * i] = 2 * i;
		ek[2 * i + 1] = (g->last << 1) | 1;
		ev[2 * i + 1] = 2 * i + 1;
	}
	if (det_radix_kv(ek, ev, (size_t)n * 2) < 0) {
		free(ek), free(ev), free(owner), free(up);
		return -1;
	}
	free(ek);
	uint32_t nl = 0;
	for (uint32_t p = 0; p < 2 * n; p++)
		if (ev[p] & 1) {
			owner[nl] = ev[p] >> 1;
			nl++;
		}
	/* up[k + 1] = k + 1 while the k-th last event's object is free to be
	 * reused; 0 is the sentinel "none" */
	for (uint32_t k = 0; k <= nl; k++)
		up[k] = k;
	/* walking down, lo = the count of last events left of p */
	uint32_t lo = nl;
	for (uint32_t p = 2 * n; p-- > 0;) {
		if (ev[p] & 1) {
			lo--;
			continue;
		}
		/* Done: the closest last event left of p whose object is unused */
		uint32_t k = uf_find(up, lo);
		if (!k)
			continue;
		uint32_t j = owner[k - 1], i = ev[p] >> 1;
		up[k] = k - 1; /* reused */
		const acc_rec *o2 = &all[idx[i]], *o1 = &all[idx[j]];
		uint64_t from = max64(o2->alloc_ns, o1->last_end_ns), to = o2->free_ns < o1->free_ns ? o2->free_ns : o1->free_ns;
		uint64_t mn = o1->size < o2->size ? o1->size : o2->size;
		double waste = to > from ? (double)mn * (double)(to - from) : 0;
		stp_det_instance in = {.alloc_seq = o2->alloc_seq, .alloc_ns = o2->alloc_ns, .free_ns = o2->free_ns,
		                       .addr = o2->addr, .size = o2->size,
		                       .distance = o2->api_first > o1->api_last ? o2->api_first - o1->api_last : 0,
		                       .levels = o2->first - o1->last, .at_ns = from, .until_ns = to > from ? to : from,
		                       .at_seq = o1->seq_last, .until_seq = o2->seq_first, .other_site = o1->site,
		                       .other_size = o1->size};
		/* two tensors of a caching allocator: it reuses the block already */
		stp_det_expect why =
			sized(d, o2->space, o2->size, o1->cached && o2->cached ? STP_EXPECT_CACHED : STP_EXPECT_NONE);
		if (o2->ko != UINT32_MAX) { /* keep_objects: the object's record */
			if (why == STP_EXPECT_NONE)
				d->ko_info[o2->ko] |= (uint16_t)(1u << (4 + STP_PAT_REDUNDANT_ALLOC));
		}
		det_finding_add_x(d, STP_PAT_REDUNDANT_ALLOC, why, o2->site, 1, o2->size, waste, in.distance, &in);
	}
	free(ev), free(owner), free(up);
	return 0;
}

int det_access_finish(stp_det *d)
{
	struct det_access *a = d->acc;
	if (!a)
		return 0;
	/* late deallocations: over an iteration's peak, or apart */
	if (d->ipeak_seq)
		for (uint32_t k = 0; k < d->niters; k++)
			if (d->ipeak_seq[k] == UINT64_MAX) /* no allocation inside: keep them sorted */
				d->ipeak_seq[k] = k ? d->ipeak_seq[k - 1] : 0;
	for (uint64_t i = 0; i < a->nlate; i++) {
		const acc_late *l = &a->late[i];
		stp_det_expect why = det_spans_peak(d, l->in.at_seq, l->in.until_seq) ? STP_EXPECT_NONE : STP_EXPECT_OFF_PEAK;
		det_finding_add_x(d, STP_PAT_LATE_DEALLOC, why, l->site, 1, l->in.size, l->waste, l->in.distance, &l->in);
	}
	a->nlate = 0;
	if (!a->nrec)
		return 0;
	if (a->nrec > UINT32_MAX)
		a->nrec = UINT32_MAX; /* 4 G accessed objects: the rest are left out */
	uint64_t *ks = malloc(a->nrec * sizeof *ks);
	uint32_t *ki = malloc(a->nrec * sizeof *ki);
	if (!ks || !ki) {
		free(ks), free(ki);
		return -1;
	}
	for (uint64_t i = 0; i < a->nrec; i++) {
		ks[i] = a->rec[i].size;
		ki[i] = (uint32_t)i;
	}
	/* by size, then by index (stable) */
	if (det_radix_kv(ks, ki, a->nrec) < 0) {
		free(ks), free(ki);
		return -1;
	}
	double f = 1.0 + d->opt.redundant_pct / 100.0;
	for (uint64_t s = 0; s < a->nrec;) {
		uint64_t e = s + 1;
		while (e < a->nrec && (double)ks[e] <= (double)ks[s] * f && e - s < UINT32_MAX / 2)
			e++;
		if (e - s >= 2 && redundant_group(d, a->rec, ki + s, (uint32_t)(e - s)) < 0) {
			free(ks), free(ki);
			return -1;
		}
		s = e;
	}
	free(ks), free(ki);
	return 0;
}
