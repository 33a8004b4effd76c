/*
 * access.c - API events (kernels, copies, sets, framework ops) and the
 * objects they touch: DrGPUM's object-level analysis (§5.1) over a
 * topological order of the APIs across streams (§5.3).
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
 * Inefficiency distances are differences of levels.
 *
 * Patterns per object, at the end of its life (thresholds in the options):
 *   early allocation   levels strictly between allocation and first access
 *                      >= early_min_apis; waste = size x (first access - alloc)
 *   late deallocation  levels strictly between last access and free
 *                      >= late_min_apis; waste = size x (free - last access end)
 *   unused allocation  no access at all; waste = size x lifetime
 *   temporary idleness levels strictly between two consecutive accesses
 *                      >= idle_min_apis; waste = size x the idle times
 *   dead write         a copy, set or kernel writes it (no read) and the
 *                      access before was also a copy, set or kernel that
 *                      only wrote it (a kernel's write-only range is exact:
 *                      the Compute Sanitizer backend's; framework ops are
 *                      left out, their modes are per tensor argument);
 *                      waste = size x time between the two writes
 * Redundant allocation needs every object's first and last access: those
 * are kept (48 bytes per accessed object) for det_access_finish().
 *
 * Memory: about 120 bytes per live object, 48 per accessed object, a few
 * per stream.
 */
#include <stdlib.h>
#include <string.h>

#include "det.h"
#include "space.h"

#define NIL UINT32_MAX

typedef struct acc_obj {
	uint32_t left, right, prio, stamp;
	uint64_t lvl_alloc, lvl_first, lvl_last, lvl_write, lvl_read;
	uint64_t first_ns, last_end_ns, last_write_ns;
	uint64_t idle_max;
	double idle_waste, dead_waste;
	uint32_t naccess, dead_writes, idle_count;
	uint8_t mode;        /* this API's combined access mode */
	uint8_t last_cs_write; /* the last access was a copy/set that only wrote */
} acc_obj;

typedef struct acc_rec {     /* an accessed object, for redundant allocation */
	uint64_t first, last;    /* levels */
	uint64_t size;
	uint64_t alloc_ns, free_ns, last_end_ns;
	uint32_t site;
	uint32_t ko;             /* objinfo.c index (keep_objects), else UINT32_MAX */
} acc_rec;

struct det_access {
	acc_obj *o;
	uint32_t cap;
	uint32_t root;
	uint32_t rng;
	uint32_t stamp;
	uint64_t max_level;
	int32_t free_device;     /* the free event being handled */
	uint64_t free_stream;
	det_map streams;         /* (device, stream) -> last level, past 16 */
	uint64_t skey[16], slevel[16];
	uint32_t nstreams;
	uint32_t *touched;
	uint32_t ntouched, touched_cap;
	acc_rec *rec;
	uint64_t nrec, rec_cap;
};

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
	a->o[slot] = (acc_obj){.left = NIL, .right = NIL, .prio = a->rng, .stamp = 0, .lvl_alloc = lvl,
	                       .lvl_write = lvl};
	a->root = t_insert(d, a->root, slot);
	return 0;
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
			}
			x->mode |= (uint8_t)mode;
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

int det_access_api(stp_det *d, const stp_event *ev)
{
	struct det_access *a = d->acc;
	const stp_api_info *api = &ev->u.api;
	uint64_t ns = ev->time_ns > d->t0 ? ev->time_ns - d->t0 : 0;
	uint64_t end_ns = api->end_ns > ev->time_ns ? api->end_ns - d->t0 : ns;
	if (++a->stamp == 0) { /* wrapped: clear the stamps */
		for (uint32_t i = 0; i < a->cap; i++)
			a->o[i].stamp = 0;
		a->stamp = 1;
	}
	a->ntouched = 0;
	for (uint32_t i = 0; i < api->nranges; i++) {
		const stp_range *r = &api->ranges[i];
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
			x->first_ns = ns;
		} else {
			uint64_t gap = lvl > x->lvl_last ? lvl - x->lvl_last - 1 : 0;
			if (gap >= d->opt.idle_min_apis && gap > 0) {
				x->idle_count++;
				x->idle_waste += (double)ob->size * (double)(ns > x->last_end_ns ? ns - x->last_end_ns : 0);
				x->idle_max = max64(x->idle_max, gap);
			}
		}
		int cs_write = copy_or_set && x->mode == STP_ACCESS_WRITE;
		if (cs_write && x->last_cs_write) {
			x->dead_writes++;
			x->dead_waste += (double)ob->size * (double)(ns > x->last_write_ns ? ns - x->last_write_ns : 0);
		}
		x->last_cs_write = (uint8_t)cs_write;
		if (x->mode & STP_ACCESS_WRITE) {
			x->lvl_write = lvl;
			x->lvl_read = 0;
			x->last_write_ns = ns;
		} else {
			x->lvl_read = max64(x->lvl_read, lvl);
		}
		x->lvl_last = lvl;
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
	stp_det_instance in = {.alloc_seq = ob->alloc_seq, .free_seq = freed ? 0 : UINT64_MAX, .alloc_ns = ob->alloc_ns,
	                       .free_ns = freed ? ns : UINT64_MAX, .addr = ob->addr, .size = ob->size,
	                       .other_site = UINT32_MAX};
	double sz = (double)ob->size;
	if (!x->naccess) {
		in.distance = lvl_end - x->lvl_alloc;
		in.at_ns = ob->alloc_ns;
		in.until_ns = ns;
		det_finding_add(d, STP_PAT_UNUSED_ALLOC, ob->site, 1, ob->size, sz * (double)(ns - ob->alloc_ns),
		                in.distance, &in);
		return lvl_end - x->lvl_alloc;
	}
	uint64_t between = x->lvl_first - x->lvl_alloc - 1;
	if (x->lvl_first > x->lvl_alloc && between >= d->opt.early_min_apis && between > 0) {
		in.distance = x->lvl_first - x->lvl_alloc;
		in.at_ns = ob->alloc_ns;
		in.until_ns = x->first_ns;
		det_finding_add(d, STP_PAT_EARLY_ALLOC, ob->site, 1, ob->size,
		                sz * (double)(x->first_ns > ob->alloc_ns ? x->first_ns - ob->alloc_ns : 0), in.distance, &in);
	}
	if (freed && lvl_end > x->lvl_last + 1) {
		between = lvl_end - x->lvl_last - 1;
		if (between >= d->opt.late_min_apis) {
			in.distance = lvl_end - x->lvl_last;
			in.at_ns = x->last_end_ns < ns ? x->last_end_ns : ns;
			in.until_ns = ns;
			det_finding_add(d, STP_PAT_LATE_DEALLOC, ob->site, 1, ob->size, sz * (double)(ns - in.at_ns),
			                in.distance, &in);
		}
	}
	if (x->idle_count) {
		in.distance = x->idle_max;
		in.at_ns = ob->alloc_ns;
		in.until_ns = ob->alloc_ns + (uint64_t)(x->idle_waste / (sz > 0 ? sz : 1));
		det_finding_add(d, STP_PAT_TEMP_IDLE, ob->site, 1, ob->size, x->idle_waste, x->idle_max, &in);
	}
	if (x->dead_writes) {
		in.distance = x->dead_writes;
		in.at_ns = in.until_ns = 0;
		det_finding_add(d, STP_PAT_DEAD_WRITE, ob->site, 1, ob->size, x->dead_waste, x->dead_writes, &in);
	}
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
		a->rec[a->nrec++] = (acc_rec){.first = x->lvl_first, .last = x->lvl_last, .size = ob->size,
		                              .alloc_ns = ob->alloc_ns, .free_ns = freed ? ns : d->end_ns,
		                              .last_end_ns = x->last_end_ns, .site = ob->site, .ko = UINT32_MAX};
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
		stp_det_instance in = {.alloc_ns = o2->alloc_ns, .free_ns = o2->free_ns, .size = o2->size,
		                       .distance = o2->first - o1->last, .at_ns = from, .until_ns = to > from ? to : from,
		                       .other_site = o1->site, .other_size = o1->size};
		if (o2->ko != UINT32_MAX) { /* keep_objects: the object and the instance's seq */
			in.alloc_seq = d->ko_seq[o2->ko];
			d->ko_info[o2->ko] |= (uint16_t)(1u << (4 + STP_PAT_REDUNDANT_ALLOC));
		}
		det_finding_add(d, STP_PAT_REDUNDANT_ALLOC, o2->site, 1, o2->size, waste, in.distance, &in);
	}
	free(ev), free(owner), free(up);
	return 0;
}

int det_access_finish(stp_det *d)
{
	struct det_access *a = d->acc;
	if (!a || !a->nrec)
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
