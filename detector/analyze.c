/*
 * analyze.c - pass 2: every object from allocation to free (or to the end),
 * its class, its call site's aggregates, the snapshot at the primary peak,
 * per-iteration counts, and the memory-over-time series.  API events go to
 * access.c, freed objects to latefree.c as well.
 *
 * Memory: one 48-byte det_obj per live object (slots are recycled through
 * a free list that mirrors pass 1's, so a FREE event finds its object by
 * the slot pass 1 recorded, without an address map), one det_site per call
 * site that allocates, one 4-byte index per stack id.
 *
 * Classes (docs/report.md): with ib(s) the number of iteration boundaries
 * up to s and A, F the values at allocation and free,
 *   persistent  covers a whole iteration (det_crosses_iterations): weights,
 *               optimizer state; not a tensor re-made every iteration that
 *               crosses one boundary;
 *   init-only   allocated before the first iteration and freed before the
 *               second begins, or allocated after the last one;
 *   transient   A == F inside the loop and the same segment;
 *   scoped      otherwise when freed;
 *   leaked      never freed, from a site whose never-freed objects come
 *               from two or more complete iterations; or never freed in a
 *               whole trace and either not persistent, or allocated after
 *               the first iteration by a site that frees its other objects;
 *               live-at-end instead of the latter when the trace was cut.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "det.h"
#include "space.h"

/* Whether an object allocated at ib a and freed at ib f covers a whole
 * iteration k: allocated before its begin (a <= 2k), freed after its end
 * (f >= 2k + 2).  One that only crosses a boundary (allocated in iteration
 * k, freed early in k + 1: a tensor re-made every iteration and deleted
 * after the optimizer step, where the next iteration begins) does not. */
int det_crosses_iterations(const stp_det *d, uint32_t a, uint32_t f)
{
	uint32_t n = d->niters;
	uint32_t k = (a + 1) / 2; /* the first iteration begun after a */
	return n >= 1 && k <= n - 1 && f >= 2 * k + 2;
}

stp_det_class det_classify(const stp_det *d, uint32_t a, uint32_t sega, uint32_t f, uint32_t segf, int freed)
{
	uint32_t n = d->niters;
	if (!n)
		return STP_CLASS_UNCLASSIFIED; /* no iterations: no classes (leaks: finish_obj) */
	if (det_crosses_iterations(d, a, freed ? f : 2 * n + 2))
		return STP_CLASS_PERSISTENT;
	if (!freed)
		return d->stats.whole && !d->snapshot ? STP_CLASS_LEAKED : STP_CLASS_LIVE_AT_END;
	if (a == f) {
		if (a == 0 || a >= 2 * n)
			return STP_CLASS_INIT_ONLY;
		return sega == segf ? STP_CLASS_TRANSIENT : STP_CLASS_SCOPED;
	}
	if (a == 0)
		return STP_CLASS_INIT_ONLY;
	return STP_CLASS_SCOPED;
}

/* iteration an allocation belongs to: -1 before the loop, n after it; a gap
 * between two iterations belongs to the one before */
static int64_t iter_of_ib(const stp_det *d, uint32_t ib)
{
	if (ib == 0)
		return -1;
	if (ib >= 2 * d->niters)
		return d->niters;
	return (ib - 1) / 2;
}

typedef struct pass2 {
	uint64_t seq, ns;
	uint32_t seg, ib;
	int32_t primary;
	uint64_t peak_seq;
	int peak_before; /* the peak is the state before event peak_seq (a --window's start) */
	uint64_t mark_seq; /* where its objects are marked: peak_seq, or a folded
	                    * peak's reference's own (stp_det_space.peak_like) */
	uint64_t *sl, *sr; /* series: max live, max reserved per point */
	uint32_t npts;
	uint64_t reserved;
	uint64_t heap_interval; /* host-heap sampling in force (space.h) */
	det_map segs;
} pass2;

/* The site of a stack: its call path cut at opt.site_depth frames past the
 * profiler's and the allocator's own (so paths that differ only further out,
 * are one site).  Frames of a language interpreter (python3.X, libpython)
 * end the key after two: their native paths vary with every bytecode and
 * tell nothing about the program.  Computed once per stack id. */
static uint64_t path_key(stp_det *d, uint32_t stack)
{
	uint64_t h = 0x84222325cbf29ce4ull, ip;
	uint32_t parent, depth = 0, kept = 0, skipping = 1;
	uint32_t interp = 0, py = 0;
	while (stack && stp_reader_stack_node(d->rd, stack, &parent, &ip) == 0) {
		/* Python frames (tensor paths: native frames, then the Python
		 * ones) are all part of the key up to site_depth of them: the
		 * user's line tells sites apart, however deep the native path */
		if (STP_IS_PYFRAME(ip)) {
			h = (h ^ ip) * 0x100000001b3ull;
			h ^= h >> 29;
			stack = parent;
			if (++py >= d->opt.site_depth)
				break;
			continue;
		}
		if (kept >= d->opt.site_depth) {
			stack = parent; /* past the native key: only Python frames count */
			continue;
		}
		unsigned cls = det_frames_module_class(d->frames, ip);
		if (skipping)
			skipping = (cls & DET_MOD_PLUMBING) != 0;
		depth++;
		stack = parent;
		h = (h ^ ip) * 0x100000001b3ull;
		h ^= h >> 29;
		if (!skipping)
			kept++;
		/* an interpreter's own frames say nothing about the program, and
		 * vary without end: two of them end the key */
		if ((cls & DET_MOD_INTERPRETER) && ++interp >= 2)
			break;
	}
	return h | 1;
}

static det_site *site_for(stp_det *d, uint32_t stack, uint8_t kind, uint32_t *index)
{
	if (stack >= d->site_of_stack_cap) {
		uint32_t nc = d->site_of_stack_cap ? d->site_of_stack_cap : 1024;
		while (nc <= stack)
			nc *= 2;
		uint32_t *n = realloc(d->site_of_stack, nc * sizeof *n);
		if (!n)
			return NULL;
		memset(n + d->site_of_stack_cap, 0, (nc - d->site_of_stack_cap) * sizeof *n);
		d->site_of_stack = n;
		d->site_of_stack_cap = nc;
	}
	uint32_t s = d->site_of_stack[stack];
	if (!s) {
		uint64_t key = stack ? path_key(d, stack) : 2, v;
		if (det_map_get(&d->site_paths, key, &v)) {
			s = d->site_of_stack[stack] = (uint32_t)v + 1;
			*index = s - 1;
			return &d->sites[s - 1];
		}
		if (d->nsites == d->sites_cap) {
			uint32_t nc = d->sites_cap ? d->sites_cap * 2 : 256;
			det_site *ns = realloc(d->sites, nc * sizeof *ns);
			if (!ns)
				return NULL;
			d->sites = ns;
			det_site_rec *np = realloc(d->spub, nc * sizeof *np);
			if (!np)
				return NULL;
			d->spub = np;
			d->sites_cap = nc;
		}
		det_site *st = &d->sites[d->nsites];
		memset(st, 0, sizeof *st);
		st->leak_last_iter = st->leak_first_iter = INT64_MIN;
		det_site_rec *sp = &d->spub[d->nsites];
		memset(sp, 0, sizeof *sp);
		sp->stack = stack;
		sp->kind = kind;
		sp->one_class = 0xff;
		if (det_map_put(&d->site_paths, key, d->nsites, NULL) < 0)
			return NULL;
		s = d->site_of_stack[stack] = ++d->nsites;
	}
	*index = s - 1;
	return &d->sites[s - 1];
}

static uint32_t obj_new(stp_det *d)
{
	if (d->obj_free != UINT32_MAX) {
		uint32_t s = d->obj_free;
		d->obj_free = d->objs[s].site;
		return s;
	}
	if (d->nobjs == d->objs_cap) {
		uint32_t nc = d->objs_cap ? d->objs_cap * 2 : 4096;
		det_obj *n = realloc(d->objs, (size_t)nc * sizeof *n);
		if (!n)
			return UINT32_MAX;
		d->objs = n;
		d->objs_cap = nc;
	}
	return d->nobjs++;
}

static void series_note(stp_det *d, pass2 *p, uint64_t live)
{
	if (!p->npts)
		return;
	uint64_t b = d->end_ns ? (p->ns * (p->npts - 1)) / d->end_ns : 0;
	if (b >= p->npts)
		b = p->npts - 1;
	if (p->sl[b] == UINT64_MAX || live > p->sl[b])
		p->sl[b] = live;
	if (p->sr[b] == UINT64_MAX || p->reserved > p->sr[b])
		p->sr[b] = p->reserved;
}

/* A site's class and lifetime counts for one more ended object (det.h,
 * det_site_rec: the first is kept inline, the cold record comes with the
 * second). */
static void site_add_obj(stp_det *d, det_site_rec *sp, unsigned c, uint64_t size, int at_peak, unsigned tb,
                         unsigned lb)
{
	if (sp->one_class == 0xff) { /* the first object that ends */
		sp->one_class = (uint8_t)c;
		sp->one_tb = (uint8_t)tb;
		sp->one_lb = (uint8_t)lb;
		sp->one_size = size;
		sp->one_at_peak = (uint8_t)at_peak;
		return;
	}
	if (!sp->cold) {
		if (d->ncold == d->cold_cap) {
			uint32_t nc = d->cold_cap ? d->cold_cap * 2 : 256;
			det_site_cold *n = realloc(d->cold, nc * sizeof *n);
			if (!n)
				return; /* out of memory: the counts stay partial */
			d->cold = n;
			d->cold_cap = nc;
		}
		det_site_cold *k = &d->cold[d->ncold];
		memset(k, 0, sizeof *k);
		uint64_t first = sp->one_size;
		k->class_objects[sp->one_class] = 1;
		k->class_bytes[sp->one_class] = first;
		if (sp->one_at_peak)
			k->peak_class_bytes[sp->one_class] = first;
		k->life_time[sp->one_tb] = 1;
		k->life_logical[sp->one_lb] = 1;
		sp->cold = ++d->ncold;
	}
	det_site_cold *k = &d->cold[sp->cold - 1];
	k->class_objects[c]++;
	k->class_bytes[c] += size;
	if (at_peak)
		k->peak_class_bytes[c] += size;
	k->life_time[tb]++;
	k->life_logical[lb]++;
}

/* An ended object's slot back on the free list, its class, late-free
 * entry and end (end_seq: UINT64_MAX never freed) kept for the exporter
 * and the viewer when asked (objinfo.c). */
static void release_obj(stp_det *d, uint32_t slot, stp_det_class c, uint32_t late_free, uint64_t end_seq)
{
	det_obj *o = &d->objs[slot];
	if (d->ko_seq && o->ko < d->nko) {
		d->ko_info[o->ko] = (uint16_t)((d->ko_info[o->ko] & ~15u) | (unsigned)c);
		d->ko_lf[o->ko] = late_free;
		det_ko_end(d, o->ko, end_seq);
	}
	o->flags &= (uint8_t)~DET_OBJ_LIVE;
	o->site = d->obj_free;
	d->obj_free = slot;
}

/* An object of a space not analyzed in depth (no call site): only its
 * class, for the timeline's lanes; a never-freed one is not judged a leak. */
static void finish_other(stp_det *d, pass2 *p, uint32_t slot, int freed, uint64_t free_seq)
{
	det_obj *o = &d->objs[slot];
	stp_det_class c = det_classify(d, o->ib, o->seg, p->ib, p->seg, freed);
	if (c == STP_CLASS_LEAKED)
		c = STP_CLASS_LIVE_AT_END;
	if (d->have_ranges)
		det_access_end_obj(d, slot, freed, p->ns);
	release_obj(d, slot, c, UINT32_MAX, freed ? free_seq : UINT64_MAX);
}

/* The complete iterations of the loop (the last one when the trace was cut
 * or the iteration left open does not count). */
static int64_t complete_iters(const stp_det *d)
{
	return (int64_t)d->niters - (d->last_iter_cut || !d->stats.whole ? 1 : 0);
}

/* A site leaks (finish_live counted its loop survivors: objects allocated
 * in a complete iteration and never freed, or freed only after the loop)
 * when its survivors keep coming: from two or more complete iterations and
 * from at least half of them; or, a slow leak or a growth that starts late,
 * from three iterations or more, still coming in the second half of the
 * loop, at a site that does not free such objects in a later iteration
 * (a window of the last N, a cache that evicts: it frees as many as it
 * keeps). */
static int site_leaks(const stp_det *d, const det_site *s)
{
	int64_t complete = complete_iters(d);
	if (s->leak_iters >= 2 && 2 * (int64_t)s->leak_iters >= complete)
		return 1;
	return s->leak_iters >= 3 && 2 * s->leak_last_iter >= complete && s->freed_crossed < s->leak_objects;
}

/* The leak finding of one survivor of the loop (never freed: free_seq
 * UINT64_MAX). */
static void leak_finding(stp_det *d, const det_site *s, uint32_t site, uint64_t addr, uint64_t size,
                         uint64_t bytes, uint64_t alloc_seq, uint64_t alloc_ns, uint64_t free_seq, uint64_t free_ns, uint64_t logical)
{
	uint64_t until = free_seq == UINT64_MAX ? d->end_ns : free_ns;
	uint64_t life = until > alloc_ns ? until - alloc_ns : 0;
	stp_det_instance in = {.alloc_seq = alloc_seq, .free_seq = free_seq, .alloc_ns = alloc_ns, .free_ns = free_ns,
	                       .addr = addr, .size = size, .distance = logical, .at_ns = alloc_ns, .until_ns = until,
	                       .other_site = UINT32_MAX};
	det_finding_add(d, STP_PAT_LEAK, site, 1, bytes, (double)bytes * (double)life, logical, &in);
	det_finding_leak_span(d, site, s->leak_iters, s->leak_first_iter, s->leak_last_iter,
	                      free_seq != UINT64_MAX);
}

static int survivor_push(stp_det *d, const det_obj *o, const pass2 *p, uint64_t logical)
{
	if (d->nsurv == d->surv_cap) {
		uint64_t nc = d->surv_cap ? d->surv_cap * 2 : 256;
		det_survivor *n = realloc(d->surv, nc * sizeof *n);
		if (!n)
			return -1;
		d->surv = n;
		d->surv_cap = nc;
	}
	d->surv[d->nsurv++] = (det_survivor){.addr = o->addr, .size = o->size, .bytes = det_obj_bytes(o),
	                                     .alloc_seq = o->alloc_seq,
	                                     .alloc_ns = o->alloc_ns, .free_seq = p->seq, .free_ns = p->ns,
	                                     .logical = logical, .iter = iter_of_ib(d, o->ib), .site = o->site};
	return 0;
}

/* Ends an object's life: at a free (freed = 1) or at the end of the trace. */
static void finish_obj(stp_det *d, pass2 *p, uint32_t slot, int freed, uint64_t free_seq)
{
	det_obj *o = &d->objs[slot];
	if (o->site == DET_NO_SITE) {
		finish_other(d, p, slot, freed, free_seq);
		return;
	}
	det_site *s = &d->sites[o->site];
	det_site_rec *sp = &d->spub[o->site];
	uint64_t bytes = det_obj_bytes(o);
	uint64_t life = (freed ? p->ns : d->end_ns) - o->alloc_ns;
	if ((int64_t)life < 0)
		life = 0;
	stp_det_class c = det_classify(d, o->ib, o->seg, p->ib, p->seg, freed);
	d->ko_hint = o->ko; /* findings of this object mark its record (objinfo.c) */
	int leak = 0;
	if (!freed && d->snapshot) {
		/* the state at a snapshot: its blocks are live, not leaked (the
		 * program went on); nothing is set aside either */
		if (c == STP_CLASS_LEAKED)
			c = STP_CLASS_LIVE_AT_END;
	} else if (!freed && d->niters) {
		/* A leak is memory lost track of while the program runs: its site's
		 * never-freed objects keep coming, from two or more complete
		 * iterations and from at least half of them.  What else is never
		 * freed (a cache filled once, libc's stdio buffers, the
		 * interpreter's objects that exit does not free, teardown's
		 * allocations) is set aside, counted, not a finding. */
		leak = site_leaks(d, s);
		if (leak) {
			c = STP_CLASS_LEAKED;
		} else {
			if (c == STP_CLASS_LEAKED) /* not persistent, not a leak */
				c = STP_CLASS_LIVE_AT_END;
			d->res.leaks_set_aside++;
			d->res.leaks_set_aside_bytes += bytes;
		}
	} else if (!freed) {
		/* no iterations: DrGPUM's leak for device memory never freed; host
		 * objects live at exit are the runtime's as often as not */
		if (d->stats.whole && d->spaces[o->space].kind == STP_MEM_DEVICE)
			leak = 1;
		else {
			d->res.leaks_set_aside++;
			d->res.leaks_set_aside_bytes += bytes;
		}
	}
	d->res.class_objects[c]++;
	d->res.class_bytes[c] += bytes;
	if (o->flags & DET_OBJ_AT_PEAK)
		d->res.peak_class_bytes[c] += bytes;
	uint64_t logical = d->have_ranges ? det_access_end_obj(d, slot, freed, p->ns)
	                                  : (freed ? free_seq : d->last_seq + 1) - o->alloc_seq;
	unsigned tb = freed ? det_time_bucket(life) : STP_DET_TIME_BUCKETS - 1;
	unsigned lb = freed ? det_logical_bucket(logical) : STP_DET_LOGICAL_BUCKETS - 1;
	site_add_obj(d, sp, c, bytes, (o->flags & DET_OBJ_AT_PEAK) != 0, tb, lb);
	if (freed) {
		sp->frees++;
		sp->byte_ns += (double)bytes * (double)life;
		if (o->ib & 1)
			s->freed_in_loop++;
		int64_t ia = iter_of_ib(d, o->ib), iff = iter_of_ib(d, p->ib);
		if (ia >= 0 && iff > ia && iff < (int64_t)d->niters) /* in a later iteration of the loop */
			s->freed_crossed++;
	} else {
		sp->end_bytes += bytes;
		sp->end_objects++;
	}
	s->live_bytes -= bytes;
	s->live_objects--;
	if (leak)
		leak_finding(d, s, o->site, o->addr, o->size, bytes, o->alloc_seq, o->alloc_ns, UINT64_MAX, UINT64_MAX, logical);
	/* allocated in a complete iteration, freed only after the loop: a
	 * survivor finish_live judges with the never-freed ones (not at a
	 * snapshot: its blocks are live, not leaked) */
	if (freed && !d->snapshot && d->niters && p->ib >= 2 * d->niters) {
		int64_t ia = iter_of_ib(d, o->ib);
		if (ia >= 0 && ia < complete_iters(d) && survivor_push(d, o, p, logical) < 0)
			d->survivors_oom = 1;
	}
	uint32_t lfe = UINT32_MAX;
	if (freed && d->niters)
		det_latefree_object(d, o, p->ns, p->ib, p->seg, &lfe);
	release_obj(d, slot, c, lfe, freed ? free_seq : UINT64_MAX);
}

/* The primary peak: mark what is live. */
static void mark_peak(stp_det *d, uint32_t si)
{
	for (uint32_t v = 0; v < d->nobjs; v++) {
		det_obj *x = &d->objs[v];
		if (!(x->flags & DET_OBJ_LIVE) || x->space != si)
			continue;
		x->flags |= DET_OBJ_AT_PEAK;
		d->spub[x->site].peak_bytes += det_obj_bytes(x);
		d->spub[x->site].peak_objects++;
	}
}

static int on_alloc(stp_det *d, pass2 *p, const stp_event *ev)
{
	const stp_alloc_info *a = &ev->u.alloc;
	if (!DET_KEEPS(d, a->size))
		return 0;
	int si = det_space_index(d, a->kind, DET_ALLOC_DEVICE(a));
	if (si < 0)
		return -1;
	double w = det_alloc_weight(p->heap_interval, a);
	uint64_t bytes = det_weighted(a->size, w);
	det_modbytes_stack(d, a->stack);
	if (si == p->primary)
		det_modbytes_alloc(d, bytes);
	if (d->reuse_i < d->nreuse && d->reuse[d->reuse_i].seq == ev->seq) { /* lost free: end the old one here */
		uint32_t old = d->reuse[d->reuse_i++].slot;
		det_obj *o = &d->objs[old];
		if (o->flags & DET_OBJ_SIM) { /* the models end it here too */
			stp_event fe = {.type = STP_EV_FREE, .seq = ev->seq, .time_ns = ev->time_ns};
			fe.u.free = (stp_free_info){.addr = a->addr, .kind = a->kind, .device = a->device, .stream = a->stream};
			det_sim_free(d, &fe, old);
		}
		d->sstate[o->space].live_bytes -= det_obj_bytes(o);
		d->sstate[o->space].live_objects--;
		finish_obj(d, p, old, 1, ev->seq);
	}
	/* only the analyzed space's objects have call sites (det_space_in_view) */
	int in_view = det_space_in_view(d, (uint32_t)si);
	uint32_t site_idx = DET_NO_SITE;
	det_site *s = in_view ? site_for(d, a->stack, a->kind, &site_idx) : NULL;
	uint32_t slot = obj_new(d); /* the slot pass 1 gave it (same free list) */
	if ((in_view && !s) || slot == UINT32_MAX)
		return -1;
	det_obj *o = &d->objs[slot];
	*o = (det_obj){.addr = a->addr, .size = a->size, .alloc_seq = ev->seq, .alloc_ns = p->ns, .site = site_idx,
	               .seg = p->seg, .ib = p->ib, .space = (uint16_t)si,
	               .flags = (uint8_t)(DET_OBJ_LIVE | (a->pool == STP_POOL_TENSORS ? DET_OBJ_POOL : 0)),
	               .ko = UINT32_MAX, .w = (float)w};
	if (s) {
		det_site_rec *sp = &d->spub[site_idx];
		sp->allocs++;
		sp->bytes_allocated += bytes;
		if (a->size > sp->max_size)
			sp->max_size = a->size;
		s->live_bytes += bytes;
		s->live_objects++;
	}
	det_space_state *ss = &d->sstate[si];
	ss->live_bytes += bytes;
	ss->live_objects++;
	if (si == p->primary) {
		if ((p->ib & 1) && p->ib / 2 < d->niters) {
			stp_det_iteration *it = &d->iters[p->ib / 2];
			it->allocs++;
			if (ss->live_bytes > it->peak_bytes) {
				it->peak_bytes = ss->live_bytes;
				if (d->ipeak_seq)
					d->ipeak_seq[p->ib / 2] = ev->seq;
			}
		}
		series_note(d, p, ss->live_bytes);
		if (ev->seq == p->mark_seq && !p->peak_before)
			mark_peak(d, (uint32_t)si);
	}
	if (d->simc)
		det_sim_alloc(d, o, slot, ev);
	if (d->opt.keep_objects) {
		o->ko = (uint32_t)(d->nko < UINT32_MAX ? d->nko : UINT32_MAX);
		if (det_ko_push(d, ev->seq) < 0)
			return -1;
	}
	if (d->have_ranges && det_access_alloc(d, slot, ev) < 0)
		return -1;
	return 0;
}

/* A folded iteration: its allocations and peak in the primary space count
 * for the iteration and the series; the sampled heap's per-site counts for
 * their sites (transient objects: allocated and freed). */
static int on_fold(stp_det *d, pass2 *p, const stp_event *ev)
{
	const stp_fold_info *f = &ev->u.fold;
	for (uint32_t k = 0; k < f->nspaces; k++) {
		int si = det_fold_space_index(d, &f->spaces[k]);
		if (si < 0)
			return -1;
		if (si != p->primary)
			continue;
		const stp_fold_space *x = &f->spaces[k];
		uint64_t peak = d->sstate[si].iter_begin_live + x->carried_in + x->peak;
		if ((p->ib & 1) && p->ib / 2 < d->niters) {
			stp_det_iteration *it = &d->iters[p->ib / 2];
			it->allocs += x->allocs;
			if (peak > it->peak_bytes)
				it->peak_bytes = peak;
		}
		series_note(d, p, peak);
		/* the peak inside a folded iteration whose reference's highest
		 * moment is not known: the objects live then are the ones with
		 * events (its temporaries are counters) */
		if (ev->seq == p->mark_seq && !p->peak_before)
			mark_peak(d, (uint32_t)si);
	}
	for (uint32_t k = 0; k < f->nsites; k++) {
		const stp_fold_site *x = &f->sites[k];
		int si = det_space_index(d, x->kind, det_space_device(x->kind, x->device, x->pool));
		if (si < 0)
			return -1;
		if (!det_space_in_view(d, (uint32_t)si)) /* only the analyzed space has call sites */
			continue;
		uint32_t site_idx = 0;
		det_site *s = site_for(d, x->stack, x->kind, &site_idx);
		if (!s)
			return -1;
		det_site_rec *sp = &d->spub[site_idx];
		sp->allocs += x->allocs;
		sp->frees += x->allocs;
		sp->bytes_allocated += x->bytes;
	}
	return 0;
}

static void on_free(stp_det *d, pass2 *p, const stp_event *ev)
{
	if (d->fslot_i >= d->nfslot)
		return;
	uint32_t slot = d->fslot[d->fslot_i++];
	if (slot == UINT32_MAX || slot >= d->nobjs)
		return;
	det_obj *o = &d->objs[slot];
	if (!(o->flags & DET_OBJ_LIVE) || o->addr != ev->u.free.addr)
		return; /* cannot happen: pass 1 and pass 2 hand out the same slots */
	det_space_state *ss = &d->sstate[o->space];
	ss->live_bytes -= det_obj_bytes(o);
	ss->live_objects--;
	if (o->space == p->primary)
		series_note(d, p, ss->live_bytes);
	if (d->have_ranges)
		det_access_free_event(d, ev);
	if (o->flags & DET_OBJ_SIM)
		det_sim_free(d, ev, slot);
	finish_obj(d, p, (uint32_t)slot, 1, ev->seq);
}


static stp_det *sort_ctx;
static int cmp_slot(const void *a, const void *b)
{
	const det_obj *x = &sort_ctx->objs[*(const uint32_t *)a], *y = &sort_ctx->objs[*(const uint32_t *)b];
	return x->alloc_seq < y->alloc_seq ? -1 : x->alloc_seq > y->alloc_seq;
}

/* Objects never freed, and the loop's survivors freed after it: first the
 * per-site count of distinct iterations they come from (in allocation
 * order), then the survivors' leak findings, then each never-freed
 * object's class. */
typedef struct surv_key {
	uint64_t seq;
	int64_t iter;
	uint32_t site;
} surv_key;
static int cmp_surv(const void *a, const void *b)
{
	const surv_key *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int finish_live(stp_det *d, pass2 *p)
{
	uint64_t m = 0;
	uint32_t *slots = malloc((d->nobjs ? d->nobjs : 1) * sizeof *slots);
	if (!slots)
		return -1;
	for (uint32_t v = 0; v < d->nobjs; v++)
		if (d->objs[v].flags & DET_OBJ_LIVE)
			slots[m++] = v;
	sort_ctx = d;
	qsort(slots, m, sizeof *slots, cmp_slot);
	int64_t last_complete = complete_iters(d);
	surv_key *keys = malloc((m + d->nsurv + 1) * sizeof *keys);
	if (!keys) {
		free(slots);
		return -1;
	}
	uint64_t nk = 0;
	for (uint64_t j = 0; j < m; j++) {
		det_obj *o = &d->objs[slots[j]];
		if (o->site == DET_NO_SITE)
			continue;
		keys[nk++] = (surv_key){.seq = o->alloc_seq, .iter = iter_of_ib(d, o->ib), .site = o->site};
	}
	for (uint64_t j = 0; j < d->nsurv; j++)
		keys[nk++] = (surv_key){.seq = d->surv[j].alloc_seq, .iter = d->surv[j].iter, .site = d->surv[j].site};
	if (d->nsurv)
		qsort(keys, nk, sizeof *keys, cmp_surv);
	for (uint64_t j = 0; j < nk; j++) {
		det_site *s = &d->sites[keys[j].site];
		int64_t it = keys[j].iter;
		if (it >= 0 && it < last_complete) {
			s->leak_objects++;
			if (it != s->leak_last_iter) {
				s->leak_iters++;
				s->leak_last_iter = it;
				if (s->leak_first_iter == INT64_MIN)
					s->leak_first_iter = it;
			}
		}
	}
	free(keys);
	for (uint64_t j = 0; j < d->nsurv; j++) {
			const det_survivor *v = &d->surv[j];
		const det_site *s = &d->sites[v->site];
		if (site_leaks(d, s))
			leak_finding(d, s, v->site, v->addr, v->size, v->bytes, v->alloc_seq, v->alloc_ns, v->free_seq, v->free_ns,
			             v->logical);
	}
	p->ib = d->nibounds;
	p->seg = d->ncuts;
	p->ns = d->end_ns;
	for (uint64_t j = 0; j < m; j++)
		finish_obj(d, p, slots[j], 0, 0);
	free(slots);
	return 0;
}

int det_analyze(stp_det *d)
{
	char err[512];
	d->rd = stp_reader_open(d->path, err, sizeof err);
	if (!d->rd) {
		if (!d->error)
			d->error = strdup(err);
		return -1;
	}
	det_frames_set_reader(d->frames, d->rd);
	struct stat st;
	uint64_t fsize = stat(d->path, &st) == 0 ? (uint64_t)st.st_size : 0;
	pass2 p = {.primary = d->res.primary, .peak_seq = UINT64_MAX, .mark_seq = UINT64_MAX};
	if (p.primary >= 0) {
		const stp_det_space *ps = &d->spaces[p.primary];
		p.peak_seq = ps->peak_seq, p.peak_before = ps->peak_at_window_begin;
		p.mark_seq = ps->peak_like >= 0 ? ps->peak_like_seq : ps->peak_seq;
	}
	d->obj_free = UINT32_MAX;
	if (det_map_init(&p.segs, 64) < 0 || det_map_init(&d->site_paths, 1024) < 0)
		return -1;
	p.npts = d->opt.series_points;
	if (p.npts) {
		p.sl = malloc(p.npts * sizeof *p.sl);
		p.sr = malloc(p.npts * sizeof *p.sr);
		if (!p.sl || !p.sr)
			goto oom;
		memset(p.sl, 0xff, p.npts * sizeof *p.sl);
		memset(p.sr, 0xff, p.npts * sizeof *p.sr);
	}
	if (d->have_ranges && det_access_init(d) < 0)
		goto oom;
	if (d->have_ranges && d->niters) {
		d->ipeak_seq = malloc(d->niters * sizeof *d->ipeak_seq);
		if (!d->ipeak_seq)
			goto oom;
		memset(d->ipeak_seq, 0xff, d->niters * sizeof *d->ipeak_seq);
	}
	if (d->niters && det_latefree_init(d) < 0)
		goto oom;
	if (det_sim_init(d) < 0)
		goto oom;
	stp_event ev;
	uint64_t nev = 0;
	int rc;
	while ((rc = stp_reader_next(d->rd, &ev)) > 0) {
		p.seq = ev.seq;
		p.ns = ev.time_ns > d->t0 ? ev.time_ns - d->t0 : 0;
		while (p.seg < d->ncuts && d->cuts[p.seg] <= ev.seq) {
			if (d->cut_ns[p.seg] == UINT64_MAX)
				d->cut_ns[p.seg] = p.ns;
			p.seg++;
		}
		while (p.ib < d->nibounds && d->ibounds[p.ib] <= ev.seq)
			p.ib++;
		if ((++nev & 0xfffff) == 0 && d->opt.progress)
			d->opt.progress(d->opt.progress_ctx, 2, stp_reader_stats(d->rd)->bytes, fsize);
		if (p.peak_before && ev.seq == p.peak_seq)
			mark_peak(d, (uint32_t)p.primary);
		switch (ev.type) {
		case STP_EV_ALLOC:
			if (on_alloc(d, &p, &ev) < 0)
				goto oom;
			break;
		case STP_EV_FREE:
			on_free(d, &p, &ev);
			break;
		case STP_EV_API:
			if (d->have_ranges && det_access_api(d, &ev) < 0)
				goto oom;
			break;
		case STP_EV_MARKER:
			det_heap_sample_note(d->rd, &ev, &p.heap_interval);
			if (ev.u.marker.kind == STP_MARK_ITER_BEGIN)
				for (uint32_t i = 0; i < d->nspaces; i++)
					d->sstate[i].iter_begin_live = d->sstate[i].live_bytes;
			det_modbytes_marker(d, &ev);
			if (d->simc && ev.u.marker.kind == STP_MARK_ANNOTATION)
				det_sim_xla_marker(d, &ev);
			break;
		case STP_EV_FOLD:
			det_modbytes_fold(d);
			if (on_fold(d, &p, &ev) < 0)
				goto oom;
			break;
		case STP_EV_REFUSED: /* the models try the first refused request */
			if (d->simc)
				det_sim_device_event(d, &ev);
			break;
		case STP_EV_SEGMENT_RESERVE:
		case STP_EV_SEGMENT_RELEASE: {
			if (d->simc)
				det_sim_device_event(d, &ev);
			int si = det_space_index(d, ev.u.segment.kind, ev.u.segment.device);
			uint64_t v;
			if (ev.type == STP_EV_SEGMENT_RESERVE) {
				if (si == p.primary) {
					if (det_map_put(&p.segs, ev.u.segment.addr, ev.u.segment.size, &v) == 0)
						p.reserved -= v;
					p.reserved += ev.u.segment.size;
					series_note(d, &p, d->sstate[si].live_bytes);
				}
			} else if (det_map_del(&p.segs, ev.u.segment.addr, &v)) {
				p.reserved -= v;
				if (p.primary >= 0)
					series_note(d, &p, d->sstate[p.primary].live_bytes);
			}
			break;
		}
		default:
			break;
		}
	}
	/* the events before an error were all seen: finish as if the trace
	 * ended there (pass 1 recorded the error) */
	while (p.seg < d->ncuts) {
		if (d->cut_ns[p.seg] == UINT64_MAX)
			d->cut_ns[p.seg] = d->end_ns;
		p.seg++;
	}
	if (finish_live(d, &p) < 0)
		goto oom;
	if (d->have_ranges && det_access_finish(d) < 0)
		goto oom;
	if (d->lf && det_latefree_finish(d) < 0)
		goto oom;
	det_sim_finish(d);
	/* series: points with no event carry the previous value */
	if (p.npts) {
		d->series = calloc(p.npts, sizeof *d->series);
		if (!d->series)
			goto oom;
		uint64_t l = 0, r = 0;
		for (uint32_t i = 0; i < p.npts; i++) {
			if (p.sl[i] != UINT64_MAX)
				l = p.sl[i];
			if (p.sr[i] != UINT64_MAX)
				r = p.sr[i];
			d->series[i] = (stp_det_sample){
				.t_ns = p.npts > 1 ? d->end_ns * i / (p.npts - 1) : d->end_ns, .live_bytes = l, .reserved_bytes = r};
		}
		d->nseries = p.npts;
	}
	free(p.sl);
	free(p.sr);
	det_map_destroy(&p.segs);
	free(d->objs);
	d->objs = NULL;
	free(d->fslot);
	d->fslot = NULL;
	return 0;
oom:
	free(p.sl);
	free(p.sr);
	det_map_destroy(&p.segs);
	if (!d->error)
		d->error = strdup("out of memory");
	return -1;
}
