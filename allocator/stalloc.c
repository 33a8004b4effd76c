/*
 * stalloc.c - the allocator of stprof/stalloc.h: one lock around the
 * pool (occupancy bitmap, live blocks), the signature sequences (the
 * start-up's, walked once; the iteration's, cyclic; the spare ranges'),
 * the persistent slots and the fallback.
 *
 * A request of at least min_size (match()): while the start-up sequence
 * lasts, it is matched there first (match_boot()): a persistent request's
 * position gives that request's own slot; a temporary's gives none (but
 * after a skip, where a persistent position of its size follows closely:
 * drifted_slot()).
 * Then, once iterations run, the iteration's sequence (match_iter()): a
 * hit hands out the entry's planned range when all of it is free, else a
 * free spare range of its size (a request whose previous instance
 * outlives the iteration) or another entry's of its size (rehome()); a
 * dynamic hit the best-fitting free range of its group's reusable
 * intervals.  Before the first iteration, a start-up temporary takes the
 * iteration's free space (take_startup()), or, when it outlives start-up,
 * a spare or one of the first entries of its size (take_early()).  Where
 * the plan's shapes vary, what none of these served takes free pool space
 * (take_free()).  Everything else is the fallback's.
 *
 * Invariants: every live pool block is in `live` (offset unit -> requested
 * size) and its units are set in `bits`; pool_live is the sum of their
 * planned (aligned) sizes; a unit is set by one live block at most.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "stprof/plan.h"

struct stalloc {
	atomic_flag lock;
	stalloc_backend b;
	stalloc_opts o;
	char *base;
	uint64_t pool, unit;       /* bytes; the plan's alignment */
	st_bits bits;
	st_ptrmap live;            /* pool offset / unit -> requested size << 1 | is a slot */
	st_slab pers;              /* persistent entries: exact-size slots */
	st_seq iter;               /* the iteration */
	st_seq boot;               /* the start-up sequence (plan 1.3): requests before the iteration */
	uint32_t *boot_slot;       /* boot position -> persistent slot, or BOOT_TEMP, BOOT_LATE_TEMP */
	uint64_t *boot_place;      /* boot position -> the range planned for a BOOT_LATE_TEMP (plan 1.4),
	                            * UINT64_MAX none; NULL when the plan places none */
	uint64_t slot_top;         /* end of the persistent slots' ranges (the bottom of the pool) */
	uint64_t layout_top;       /* end of the plan's ranges; above it, the dynamic space */
	int lend_free;             /* shapes vary: requests the plan does not serve take free
	                            * pool space (take_free) before the fallback */
	st_seq spare;              /* spare ranges (STP_REQ_SPARE), chained by size; never matched */
	stp_interval *ivals;       /* dynamic groups' reusable intervals */
	uint32_t nivals;
	uint32_t *gfirst, *gcount; /* per group */
	uint32_t ngroups;
	uint64_t hist[2];
	uint64_t seen;             /* requests of at least min_size so far (the planner's ordinals) */
	int64_t slot_drift;        /* ordinal - seen at the last slot taken */
	int slots_due;             /* iterations were marked: slots are taken only when due */
	int iter_armed;            /* the iteration sequence is matched (see stalloc_new) */
	uint32_t outliving_at;     /* st_alloc_outliving: entries before it are taken this iteration */
	st_fallback fb;
	atomic_ulong fb_blocks;    /* live fallback blocks, read without the lock */
	pthread_t last_thread;     /* the thread of the last request (under the lock) */
	pthread_t threads[ST_THREADS_MAX]; /* the threads seen, st.threads of them */
	stalloc_stats st;
};

void stalloc_opts_init(stalloc_opts *o)
{
	memset(o, 0, sizeof *o);
	o->min_size = UINT64_MAX; /* the plan's */
	o->cache_limit = UINT64_MAX; /* per plan, in stalloc_new */
	o->lookahead = 32;
	o->resync_after = 2;
}

/* Counts the threads that make requests (a few compares when the thread
 * changes; one when it does not). */
static void note_thread(stalloc *a)
{
	pthread_t me = pthread_self();
	if (a->st.requests > 1 && pthread_equal(me, a->last_thread))
		return;
	a->last_thread = me;
	for (uint64_t i = 0; i < a->st.threads; i++)
		if (pthread_equal(a->threads[i], me))
			return;
	if (a->st.threads < ST_THREADS_MAX)
		a->threads[a->st.threads++] = me;
}

static void lock(stalloc *a)
{
	unsigned spins = 0;
	while (atomic_flag_test_and_set_explicit(&a->lock, memory_order_acquire))
		if (++spins > 64) {
			sched_yield();
			spins = 0;
		}
}

static void unlock(stalloc *a) { atomic_flag_clear_explicit(&a->lock, memory_order_release); }

static uint64_t units_of(const stalloc *a, uint64_t size) { return size / a->unit + (size % a->unit != 0); }

/* ------------------------------------------------------------ building */

/* An entry's place in its sequence: (allocation tick, ordinal) for the
 * iteration (ticks order requests of any source; ordinals break ties),
 * the ordinal alone for the start-up sequence. */
typedef struct ord_ix { uint64_t key; uint32_t i; } ord_ix;

/* sorts by key: LSD radix, 8 passes of 8 bits (plans hold up to millions
 * of entries); stable, so equal keys keep the plan's order */
static void sort_ord(ord_ix *v, uint32_t n, ord_ix *tmp)
{
	for (unsigned shift = 0; shift < 64; shift += 8) {
		uint32_t cnt[257] = {0};
		for (uint32_t i = 0; i < n; i++)
			cnt[((v[i].key >> shift) & 0xff) + 1]++;
		if (cnt[1] == n)
			continue; /* this digit is 0 everywhere */
		for (int d = 0; d < 256; d++)
			cnt[d + 1] += cnt[d];
		for (uint32_t i = 0; i < n; i++)
			tmp[cnt[(v[i].key >> shift) & 0xff]++] = v[i];
		memcpy(v, tmp, n * sizeof *v);
	}
}

/* Which of the allocator's tables a request of the plan goes to. */
enum { KIND_ITER, KIND_PERSISTENT, KIND_SPARE };
static int kind_of(const stp_req *q)
{
	if (q->flags & STP_REQ_SPARE)
		return KIND_SPARE;
	return q->flags & STP_REQ_PERSISTENT ? KIND_PERSISTENT : KIND_ITER;
}

/* The entries of the plan of one kind, of at least min_size, in their
 * sequence's order; *out is mapped (st_unmap with *n entries). */
static int build_entries(const stp_reqs *r, const stp_plan *p, int kind, uint64_t min_size, st_entry **out,
                         uint32_t *nout)
{
	uint32_t n = 0;
	for (size_t i = 0; i < r->n; i++)
		if (kind_of(&r->req[i]) == kind && r->req[i].size >= min_size)
			n++;
	*out = NULL;
	*nout = n;
	if (!n)
		return 0;
	ord_ix *v = st_map((size_t)n * sizeof *v), *tmp = st_map((size_t)n * sizeof *tmp);
	st_entry *e = st_map((size_t)n * sizeof *e);
	int rc = -1;
	if (!v || !tmp || !e)
		goto out;
	n = 0;
	for (size_t i = 0; i < r->n; i++)
		if (kind_of(&r->req[i]) == kind && r->req[i].size >= min_size)
			v[n++] = (ord_ix){kind == KIND_PERSISTENT ? r->req[i].ordinal
			                                          : (r->req[i].t_start << 32 | r->req[i].ordinal),
			                  (uint32_t)i};
	sort_ord(v, n, tmp);
	for (uint32_t k = 0; k < n; k++) {
		const stp_req *q = &r->req[v[k].i];
		e[k].size = q->size;
		e[k].dynamic = (q->flags & STP_REQ_DYNAMIC) || p->offset[v[k].i] == STP_NO_OFFSET;
		e[k].off = e[k].dynamic ? 0 : p->offset[v[k].i];
		e[k].group = e[k].dynamic && p->group ? p->group[v[k].i] : UINT32_MAX;
		e[k].ordinal = q->ordinal;
		e[k].varying = !e[k].dynamic && (q->flags & STP_REQ_VARYING);
		e[k].outlives = kind == KIND_ITER && q->t_end <= q->t_start;
	}
	*out = e;
	e = NULL;
	rc = 0;
out:
	st_unmap(v, (size_t)n * sizeof *v);
	st_unmap(tmp, (size_t)n * sizeof *tmp);
	st_unmap(e, (size_t)n * sizeof *e);
	return rc;
}

/* Keeps the entries with a planned range (a persistent or spare entry
 * without an offset is of no use); returns how many. */
static uint32_t keep_static(st_entry *e, uint32_t n)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!e[i].dynamic)
			e[k++] = e[i];
	return k;
}

/* boot_slot of a temporary of start-up, and of one that was still live
 * when the first iteration began (made just before it, freed in it) */
#define BOOT_TEMP UINT32_MAX
#define BOOT_LATE_TEMP (UINT32_MAX - 1)

/* The start-up sequence, without the sizes below min_size (an override of
 * the plan's renumbers it: a persistent entry's ordinal is its position in
 * the plan's sequence), and which of its positions is which slot. */
static int build_boot(stalloc *a, const stp_reqs *r, const stp_plan *p)
{
	for (uint32_t i = 0; i < a->pers.n; i++) {
		uint64_t end = a->pers.e[i].off + units_of(a, a->pers.e[i].size) * a->unit;
		if (end > a->slot_top)
			a->slot_top = end;
	}
	uint32_t n = 0;
	for (uint32_t i = 0; i < r->nstartup; i++)
		n += STP_STARTUP_SIZE(r->startup[i]) >= a->o.min_size && STP_STARTUP_SIZE(r->startup[i]);
	if (!n)
		return 0;
	uint32_t *by_ordinal = st_map((size_t)r->nstartup * sizeof *by_ordinal);
	st_entry *e = st_map((size_t)n * sizeof *e);
	a->boot_slot = st_map((size_t)n * sizeof *a->boot_slot);
	if (p->startup_offset)
		a->boot_place = st_map((size_t)n * sizeof *a->boot_place);
	int rc = -1;
	if (!by_ordinal || !e || !a->boot_slot || (p->startup_offset && !a->boot_place))
		goto out;
	memset(by_ordinal, 0xff, (size_t)r->nstartup * sizeof *by_ordinal);
	for (uint32_t i = 0; i < a->pers.n; i++)
		if (a->pers.e[i].ordinal < r->nstartup && STP_STARTUP_SIZE(r->startup[a->pers.e[i].ordinal]) == a->pers.e[i].size)
			by_ordinal[a->pers.e[i].ordinal] = i;
	n = 0;
	for (uint32_t i = 0; i < r->nstartup; i++) {
		uint64_t size = STP_STARTUP_SIZE(r->startup[i]);
		if (size < a->o.min_size || !size)
			continue;
		if (a->boot_place)
			a->boot_place[n] = p->startup_offset[i] == STP_NO_OFFSET ? UINT64_MAX : p->startup_offset[i];
		e[n] = (st_entry){.size = size, .group = UINT32_MAX, .ordinal = i};
		a->boot_slot[n++] = by_ordinal[i] != UINT32_MAX                   ? by_ordinal[i]
		                    : r->startup[i] & STP_STARTUP_OUTLIVES ? BOOT_LATE_TEMP
		                                                           : BOOT_TEMP;
	}
	rc = st_seq_build(&a->boot, e, n, 0);
out:
	st_unmap(by_ordinal, (size_t)r->nstartup * sizeof *by_ordinal);
	st_unmap(e, (size_t)n * sizeof *e);
	return rc;
}

static int build_tables(stalloc *a, const stp_reqs *r, const stp_plan *p)
{
	st_entry *e;
	uint32_t n;
	if (build_entries(r, p, KIND_PERSISTENT, a->o.min_size, &e, &n) < 0)
		return -1;
	int rc = st_slab_build(&a->pers, e, keep_static(e, n), a->unit);
	st_unmap(e, (size_t)n * sizeof *e);
	if (rc < 0 || build_entries(r, p, KIND_SPARE, a->o.min_size, &e, &n) < 0)
		return -1;
	rc = st_seq_build(&a->spare, e, keep_static(e, n), 0);
	st_unmap(e, (size_t)n * sizeof *e);
	if (rc < 0 || build_entries(r, p, KIND_ITER, a->o.min_size, &e, &n) < 0)
		return -1;
	rc = st_seq_build(&a->iter, e, n, 1);
	st_unmap(e, (size_t)n * sizeof *e);
	return rc < 0 ? rc : build_boot(a, r, p);
}

stalloc *stalloc_new(const stp_reqs *r, const stp_plan *p, const stalloc_backend *b, const stalloc_opts *o,
                     char *err, size_t errlen)
{
	stalloc_opts dflt;
	if (!o) {
		stalloc_opts_init(&dflt);
		o = &dflt;
	}
	if (!p->align || (p->align & (p->align - 1))) {
		snprintf(err, errlen, "plan alignment %" PRIu64 " is not a power of two", p->align);
		return NULL;
	}
	stalloc *a = st_map(sizeof *a);
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	atomic_flag_clear(&a->lock);
	a->b = *b;
	a->o = *o;
	if (a->o.min_size == UINT64_MAX)
		a->o.min_size = r->min_size;
	a->unit = p->align;
	a->pool = p->pool / a->unit * a->unit;
	for (size_t i = 0; i < r->n; i++) {
		/* the reader checked it; a plan built in memory is trusted as well */
		if (p->offset[i] != STP_NO_OFFSET && p->offset[i] % a->unit) {
			snprintf(err, errlen, "entry %zu: offset %" PRIu64 " not aligned to %" PRIu64, i, p->offset[i],
			         a->unit);
			goto fail;
		}
	}
	if (a->pool) {
		a->base = b->reserve(b->ctx, a->pool);
		if (!a->base) {
			snprintf(err, errlen, "could not reserve the %s pool of %" PRIu64 " bytes",
			         b->name ? b->name : "memory", a->pool);
			goto fail;
		}
	}
	if (st_bits_init(&a->bits, a->pool / a->unit) < 0 || build_tables(a, r, p) < 0)
		goto oom;
	/* shapes vary from step to step: what the plan does not place takes
	 * free pool space, the dynamic space above the layout first */
	a->lend_free = r->shapes_vary;
	for (size_t i = 0; i < r->n; i++)
		if (p->offset[i] != STP_NO_OFFSET && p->offset[i] + units_of(a, r->req[i].size) * a->unit > a->layout_top)
			a->layout_top = p->offset[i] + units_of(a, r->req[i].size) * a->unit;
	if (a->layout_top > a->pool)
		a->layout_top = a->pool;
	a->ngroups = p->ngroups;
	a->nivals = p->nintervals;
	if (a->ngroups) {
		a->gfirst = st_map(a->ngroups * sizeof *a->gfirst);
		a->gcount = st_map(a->ngroups * sizeof *a->gcount);
		a->ivals = st_map((a->nivals + 1) * sizeof *a->ivals);
		if (!a->gfirst || !a->gcount || !a->ivals)
			goto oom;
		for (uint32_t g = 0; g < a->ngroups; g++) {
			a->gfirst[g] = p->groups[g].first;
			a->gcount[g] = p->groups[g].count;
		}
		if (a->nivals)
			memcpy(a->ivals, p->intervals, a->nivals * sizeof *a->ivals);
	}
	/* the fallback caches what it frees, as the caching allocators do (a
	 * request outside the plan, as a batch of another size, would
	 * otherwise map and fault its pages in each time: glibc gives large
	 * blocks back at their free); on the host, up to the pool's size.
	 * Not a host plan whose shapes vary: there the fallback takes the few
	 * requests longer than any recorded at their place, each of a size
	 * not seen before, so a cached block seldom fits the next one and the
	 * cache only adds to the memory reserved (an LSTM of varying lengths:
	 * 1.20x the pool with it, 1.08x without); free pool space is its
	 * cache. */
	uint64_t limit = o->cache_limit;
	if (limit == UINT64_MAX)
		limit = r->device ? 0 : a->pool > ((uint64_t)64 << 20) ? a->pool : (uint64_t)64 << 20;
	st_fallback_init(&a->fb, &a->b, limit, o->no_fallback_cache || (r->shapes_vary && !r->device), r->device);
	/* A plan cut from iteration markers is followed from the first marker
	 * on: before it, the program's start-up would match iteration entries
	 * of the same sizes and take their ranges.  Without markers, from the
	 * start. */
	a->iter_armed = r->iteration < 0 || o->no_wait_for_step;
	a->st.pool = a->pool;
	a->st.layout = a->layout_top;
	a->st.align = a->unit;
	a->st.entries = a->pers.n + a->iter.n + a->spare.n;
	for (uint32_t i = 0; i < a->iter.n; i++)
		a->st.dynamic_entries += a->iter.e[i].dynamic;
	return a;
oom:
	snprintf(err, errlen, "out of memory building the allocator's tables");
fail:
	stalloc_destroy(a);
	return NULL;
}

stalloc *stalloc_open(const char *plan_path, const stalloc_backend *b, const stalloc_opts *o, char *err,
                      size_t errlen)
{
	stp_reqs r;
	stp_plan p;
	stp_reqs_init(&r);
	memset(&p, 0, sizeof p);
	if (stp_plan_read(plan_path, &r, &p, err, errlen) < 0) {
		stp_reqs_free(&r);
		stp_plan_free(&p);
		return NULL;
	}
	stalloc *a = stalloc_new(&r, &p, b, o, err, errlen);
	stp_reqs_free(&r);
	stp_plan_free(&p);
	return a;
}

void stalloc_destroy(stalloc *a)
{
	if (!a)
		return;
	if (a->base && a->b.unreserve)
		a->b.unreserve(a->b.ctx, a->base, a->pool);
	st_bits_free(&a->bits);
	st_ptrmap_free(&a->live);
	st_slab_free(&a->pers);
	st_seq_free(&a->iter);
	st_seq_free(&a->spare);
	st_unmap(a->boot_slot, a->boot.n * sizeof *a->boot_slot);
	st_unmap(a->boot_place, a->boot.n * sizeof *a->boot_place);
	st_seq_free(&a->boot);
	st_unmap(a->gfirst, a->ngroups * sizeof *a->gfirst);
	st_unmap(a->gcount, a->ngroups * sizeof *a->gcount);
	st_unmap(a->ivals, (a->nivals + 1) * sizeof *a->ivals);
	if (a->fb.b)
		st_fallback_destroy(&a->fb);
	st_unmap(a, sizeof *a);
}

/* ------------------------------------------------------------ the calls */

static void note_peaks(stalloc *a)
{
	stalloc_stats *s = &a->st;
	if (s->pool_live > s->pool_peak)
		s->pool_peak = s->pool_live;
	if (s->fb_live > s->fb_peak)
		s->fb_peak = s->fb_live;
	s->fb_reserved = a->fb.reserved;
	if (s->fb_reserved > s->fb_reserved_peak)
		s->fb_reserved_peak = s->fb_reserved;
	if (a->pool + s->fb_reserved > s->peak_reserved)
		s->peak_reserved = a->pool + s->fb_reserved;
	if (s->pool_live + s->fb_live > s->peak_allocated)
		s->peak_allocated = s->pool_live + s->fb_live;
}

/* Takes [off, off + size) of the pool when it is free and aligned; slot:
 * a persistent entry's slot (slab.c gets it back at the free). */
static void *take(stalloc *a, uint64_t off, uint64_t size, uint64_t align, int slot)
{
	uint64_t lo = off / a->unit, n = units_of(a, size ? size : 1);
	char *p = a->base + off;
	if (align > 1 && ((uintptr_t)p & (align - 1)))
		return NULL;
	if (!st_bits_clear_range(&a->bits, lo, n)) {
		if (a->o.log) {
			/* name the live block in the way: the nearest start below */
			for (uint64_t u = lo + n; u-- > 0 && lo + n - u < (1u << 20);) {
				const uint64_t *v = st_ptrmap_get(&a->live, u);
				if (v && u + units_of(a, *v >> 1 ? *v >> 1 : 1) > lo) {
					fprintf(a->o.log, "  in the way: block at offset %" PRIu64 " of %" PRIu64 " bytes\n",
					        u * a->unit, *v >> 1);
					break;
				}
			}
		}
		return NULL;
	}
	if (st_ptrmap_put(&a->live, lo, size << 1 | (uint64_t)!!slot) < 0)
		return NULL;
	st_bits_set(&a->bits, lo, n);
	a->st.pool_live += n * a->unit;
	return p;
}

static void *take_dynamic(stalloc *a, uint32_t group, uint64_t size, uint64_t align)
{
	if (group >= a->ngroups)
		return NULL;
	uint64_t n = units_of(a, size ? size : 1), best = UINT64_MAX, best_len = UINT64_MAX;
	for (uint32_t k = 0; k < a->gcount[group]; k++) {
		const stp_interval *iv = &a->ivals[a->gfirst[group] + k];
		uint64_t lo = iv->offset / a->unit, hi = (iv->offset + iv->size) / a->unit, len;
		uint64_t at = st_bits_best_fit(&a->bits, lo, hi, n, &len);
		if (at != UINT64_MAX && len < best_len) {
			best = at;
			best_len = len;
		}
	}
	return best == UINT64_MAX ? NULL : take(a, best * a->unit, size, align, 0);
}

static const char *const how[] = {"miss", "hit", "reorder", "resync", "dynamic"};

/* The matched entry's range is still in use.  First a spare range of this
 * size (the planner's second range for a request whose previous instance
 * outlives the iteration: the instances take the two in turn); else, for
 * an object that lives longer than when profiled or a request matched to
 * its neighbour of the same size, the range of another entry of this size
 * that is free now, so the request stays in the pool rather than growing
 * the fallback.  That entry's own request may find it in use later and
 * come here in turn; nothing ever overlaps (take() checks the bitmap).  At
 * most REHOME_TRIES entries of each. */
#define REHOME_TRIES 64
static void *take_same_size(stalloc *a, const st_seq *s, uint64_t planned, uint64_t size, uint64_t align)
{
	uint64_t *head = st_ptrmap_get(&s->first, planned);
	unsigned tries = 0;
	for (uint32_t c = head ? (uint32_t)*head : 0; c && tries < REHOME_TRIES; c = s->next_same[c - 1], tries++) {
		void *p = take(a, s->e[c - 1].off, size, align, 0);
		if (p)
			return p;
	}
	return NULL;
}

/* planned: the matched entry's size (a varying entry's is the largest seen) */
static void *rehome(stalloc *a, uint64_t planned, uint64_t size, uint64_t align)
{
	void *p = take_same_size(a, &a->spare, planned, size, align);
	if (p) {
		a->st.spare_hits++;
		return p;
	}
	if ((p = take_same_size(a, &a->iter, planned, size, align)) != NULL)
		a->st.rehomed++;
	return p;
}

/* The iteration's matcher (see sequence.c). */
static void *match_iter(stalloc *a, uint64_t size, uint64_t align)
{
	uint32_t pos, skipped;
	st_seq *s = &a->iter;
	uint64_t wraps = s->wraps;
	int m = a->o.match_by_index ? (skipped = 0, st_seq_match_index(s, size, &pos))
	                            : st_seq_match(s, size, a->hist, a->o.lookahead, a->o.resync_after, &pos, &skipped);
	a->st.iterations += s->wraps - wraps;
	if (m == ST_MISS) {
		a->st.unmatched++;
		if (a->o.log)
			fprintf(a->o.log, "iter %" PRIu64 " -> miss (cursor %u of %u)\n", size, s->cursor, s->n);
		return NULL;
	}
	a->st.skipped += skipped;
	a->st.reordered += m == ST_HIT_REORDER;
	a->st.resyncs += m == ST_HIT_RESYNC;
	void *p = m == ST_HIT_DYNAMIC ? take_dynamic(a, s->e[pos].group, size, align)
	                              : take(a, s->e[pos].off, size, align, 0);
	if (!p && m != ST_HIT_DYNAMIC)
		p = rehome(a, s->e[pos].size, size, align);
	if (p)
		*(m == ST_HIT_DYNAMIC ? &a->st.dynamic_hits : &a->st.hits) += 1;
	else
		*(m == ST_HIT_DYNAMIC ? &a->st.dynamic_nofit : &a->st.occupied) += 1;
	if (a->o.log)
		fprintf(a->o.log, "iter %" PRIu64 " -> %s entry %u (cursor %u, skipped %u) %s %" PRIu64 "\n", size, how[m],
		        pos, s->cursor, skipped, p ? "at offset" : "no room, planned offset",
		        p ? (uint64_t)((char *)p - a->base) : s->e[pos].off);
	return p;
}

/* The range of slot i, which the caller took from the slab (given back to
 * it when the range cannot be used). */
static void *slot_range(stalloc *a, uint32_t i, uint64_t size, uint64_t align)
{
	void *p = take(a, a->pers.e[i].off, size, align, 1);
	if (!p)
		st_slab_untake(&a->pers, i);
	return p;
}

/* Plans without a start-up sequence (1.2 and older): a free persistent
 * slot of exactly this size.  Once iterations run, only a
 * slot that is due: its request came at about this point of the profiled
 * run (the slot's ordinal, shifted by the drift measured at the last slot
 * taken, at most SLOT_REACH requests ahead).  Lazily made state (an
 * optimizer's, made in its first step) has slots of the sizes of the
 * iteration's temporaries; a temporary of the forward pass that took one
 * and still held it when the state was made would push the state onto an
 * iteration entry's range for good, and that entry's request, in every
 * later iteration, elsewhere.  Only after an iteration marker: the count
 * of requests is then the program's own from its start, as the planner's
 * ordinals are (without markers, or armed from the start, any free slot of
 * the size is taken, as in start-up). */
#define SLOT_REACH 4

/* A slot not due yet (ahead of the count, within the reach) is left alone
 * when the iteration's sequence expects this very request: the last
 * gradient of a backward pass comes just before the optimizer's first
 * state of its size, and had it taken the state's slot, the state would
 * take the gradient's range in the iteration for good. */
static void *match_slot(stalloc *a, uint64_t size, uint64_t align)
{
	if (a->slots_due) {
		uint32_t i = st_slab_peek(&a->pers, size);
		if (i == UINT32_MAX)
			return NULL;
		int64_t ahead = (int64_t)a->pers.e[i].ordinal - ((int64_t)a->seen + a->slot_drift);
		if (ahead > SLOT_REACH || (ahead > 0 && a->iter_armed && st_seq_expects(&a->iter, size)))
			return NULL;
	}
	uint32_t i = st_slab_take(&a->pers, size);
	void *p = i == UINT32_MAX ? NULL : slot_range(a, i, size, align);
	if (!p)
		return NULL;
	a->slot_drift = (int64_t)a->pers.e[i].ordinal - (int64_t)a->seen;
	a->st.slot_hits++;
	if (a->o.log)
		fprintf(a->o.log, "slot %" PRIu64 " -> persistent entry %u\n", size, i);
	return p;
}

/* A slot for a request the start-up sequence says is persistent: its own
 * (position -> slot), else a free one of its size whose own request has
 * gone by (its owner was served elsewhere). */
static void *take_slot(stalloc *a, uint32_t i, uint64_t size, uint64_t align)
{
	uint32_t now = a->boot.cursor < a->boot.n ? a->boot.e[a->boot.cursor].ordinal : UINT32_MAX;
	if (!st_slab_take_at(&a->pers, i)) {
		for (i = st_slab_peek(&a->pers, size); i != UINT32_MAX && a->pers.e[i].ordinal >= now;
		     i = st_slab_next_free(&a->pers, i))
			;
		if (i == UINT32_MAX || !st_slab_take_at(&a->pers, i))
			return NULL;
	}
	return slot_range(a, i, size, align);
}

/* After the start-up sequence: any free slot of the size (its owner was
 * served elsewhere or never came: the range is idle otherwise). */
static void *lend_slot(stalloc *a, uint64_t size, uint64_t align)
{
	uint32_t i = st_slab_take(&a->pers, size);
	void *p = i == UINT32_MAX ? NULL : slot_range(a, i, size, align);
	if (!p)
		return NULL;
	a->st.slot_hits++;
	if (a->o.log)
		fprintf(a->o.log, "slot %" PRIu64 " -> persistent entry %u, lent\n", size, i);
	return p;
}

enum { BOOT_OTHER = 0, BOOT_LATE, BOOT_SERVED, BOOT_NO_SLOT };
#define DRIFT_REACH 32

/* The start-up sequence drifted (the match skipped entries: a first step
 * of another shape than the recorded one) onto a temporary that outlives
 * start-up, and a persistent request of the same size follows within
 * SLOT_REACH positions with its slot free: the request is taken for that
 * persistent one.  Guessing wrong the other way costs more: a persistent
 * object served as a temporary lies on an iteration entry's range for
 * good, and every later request planned over that range (the recurrence's
 * largest tensors, ranges shared in the layout with small late ones) goes
 * to the fallback; a temporary on a slot holds it only while it lives
 * (the slot's own request, when it comes meanwhile, takes another free
 * slot of its size or the fallback).  The cursor stays where the match put
 * it: moving it to the persistent position, when the guess was wrong, puts
 * the rest of start-up out of step (measured on the LSTM of
 * test_stalloc_loops: 1.16x the pool instead of 1.09x). */
static void *drifted_slot(stalloc *a, uint32_t pos, uint64_t size, uint64_t align)
{
	for (uint32_t q = pos + 1; q < a->boot.n && q <= pos + DRIFT_REACH; q++) {
		uint32_t i = a->boot_slot[q];
		if (i >= BOOT_LATE_TEMP || a->boot.e[q].size != size || !st_slab_take_at(&a->pers, i))
			continue;
		void *p = slot_range(a, i, size, align);
		if (!p)
			return NULL;
		if (a->o.log)
			fprintf(a->o.log, "slot %" PRIu64 " -> persistent entry %u (position %u, after a drift in start-up)\n",
			        size, i, q);
		return p;
	}
	return NULL;
}

/* Follows the start-up sequence (plan 1.3) with the iteration's matcher:
 * a request at a persistent request's position takes that request's slot;
 * any other is a temporary (or the iteration's), which never takes a slot
 * its owner will want. */
static int match_boot(stalloc *a, uint64_t size, uint64_t align, void **out, uint32_t *late_pos)
{
	uint32_t pos, skipped;
	int m = st_seq_match(&a->boot, size, a->hist, a->o.lookahead, a->o.resync_after, &pos, &skipped);
	if (m != ST_MISS && skipped && a->boot_slot[pos] == BOOT_LATE_TEMP && (*out = drifted_slot(a, pos, size, align))) {
		a->st.slot_hits++;
		return BOOT_SERVED;
	}
	if (m == ST_MISS || a->boot_slot[pos] >= BOOT_LATE_TEMP) {
		if (a->o.log)
			fprintf(a->o.log, "start-up %" PRIu64 " -> %s (position %u of %u)\n", size,
			        m == ST_MISS                         ? "not in the sequence"
			        : a->boot_slot[pos] == BOOT_LATE_TEMP ? "a temporary that outlives start-up"
			                                              : "a temporary",
			        m == ST_MISS ? a->boot.cursor : pos, a->boot.n);
		if (m != ST_MISS && a->boot_slot[pos] == BOOT_LATE_TEMP) {
			*late_pos = pos;
			return BOOT_LATE;
		}
		return BOOT_OTHER;
	}
	*out = take_slot(a, a->boot_slot[pos], size, align);
	if (*out) {
		a->st.slot_hits++;
		if (a->o.log)
			fprintf(a->o.log, "slot %" PRIu64 " -> persistent entry %u (position %u)\n", size,
			        a->boot_slot[pos], pos);
		return BOOT_SERVED;
	}
	a->st.occupied++;
	if (a->o.log)
		fprintf(a->o.log, "slot %" PRIu64 " -> persistent entry %u in use, no other free\n", size,
		        a->boot_slot[pos]);
	return BOOT_NO_SLOT;
}

/* A start-up temporary, before the first iteration: the best-fitting free
 * range above the persistent slots, where the iteration's entries lie (they
 * are all free until it begins). */
static void *take_startup(stalloc *a, uint64_t size, uint64_t align)
{
	uint64_t n = units_of(a, size ? size : 1), len;
	uint64_t at = st_bits_best_fit(&a->bits, a->slot_top / a->unit, a->pool / a->unit, n, &len);
	void *p = at == UINT64_MAX ? NULL : take(a, at * a->unit, size, align, 0);
	if (p)
		a->st.startup_hits++;
	return p;
}

/* A request the plan does not serve, in a plan whose shapes vary: the
 * best-fitting free range of the dynamic space above the layout (sized by
 * stprof plan from the variation it replayed), else of the pool above the
 * persistent slots (an iteration shorter than the planned one leaves its
 * ranges idle). */
static void *take_free(stalloc *a, uint64_t size, uint64_t align)
{
	uint64_t n = units_of(a, size ? size : 1), len, at = UINT64_MAX;
	if (a->pool > a->layout_top)
		at = st_bits_best_fit(&a->bits, a->layout_top / a->unit, a->pool / a->unit, n, &len);
	if (at == UINT64_MAX && a->layout_top > a->slot_top)
		at = st_bits_best_fit(&a->bits, a->slot_top / a->unit, a->layout_top / a->unit, n, &len);
	void *p = at == UINT64_MAX ? NULL : take(a, at * a->unit, size, align, 0);
	if (p) {
		a->st.free_hits++;
		if (a->o.log)
			fprintf(a->o.log, "  -> free pool space at offset %" PRIu64 "\n", at * a->unit);
	}
	return p;
}

/* A start-up temporary that outlives start-up: an entry of its size among
 * the iteration's first ones, free now (the matcher steps over it when the
 * iteration's own request is the one made early). */
static void *take_early(stalloc *a, uint64_t size, uint64_t align)
{
	for (uint32_t j = 0; j < a->iter.n && j <= a->o.lookahead; j++) {
		const st_entry *e = &a->iter.e[j];
		if (!e->dynamic && e->size == size) {
			void *p = take(a, e->off, size, align, 0);
			if (p)
				return p;
		}
	}
	return NULL;
}

/* A start-up temporary that outlives start-up, at the range the plan gave
 * it (1.4: over the slots of persistent requests made after it is freed,
 * planner/startup.c), when that is free. */
static void *take_placed(stalloc *a, uint32_t pos, uint64_t size, uint64_t align)
{
	uint64_t off = a->boot_place ? a->boot_place[pos] : UINT64_MAX;
	void *p = off == UINT64_MAX ? NULL : take(a, off, size, align, 0);
	if (p && a->o.log)
		fprintf(a->o.log, "  -> its planned range at offset %" PRIu64 "\n", off);
	return p;
}

static void *match(stalloc *a, uint64_t size, uint64_t align)
{
	void *p = NULL;
	int late = 0;
	uint32_t late_pos = 0; /* with late: its start-up position */
	if (a->boot.n && a->boot.cursor < a->boot.n) {
		int m = match_boot(a, size, align, &p, &late_pos);
		late = m == BOOT_LATE;
		if (m == BOOT_SERVED)
			return p;
		if (m == BOOT_NO_SLOT)
			return NULL; /* persistent: never on an iteration entry's range */
	} else {
		/* without a start-up sequence (plans before 1.3), or after it: a
		 * free slot is one whose owner is not coming (any more) */
		p = a->boot.n ? lend_slot(a, size, align) : match_slot(a, size, align);
		if (p)
			return p;
	}
	if (a->iter_armed)
		return match_iter(a, size, align);
	/* a temporary that will still be live when the iteration begins stays
	 * off its entries' ranges, but for its own: one made just before the
	 * first iteration is the "previous iteration's" instance of a request
	 * that outlives its iteration, whose spare range is free until the
	 * instances alternate, or that iteration's first request come early (a
	 * batch made before the loop's first step) */
	if (a->boot.n && !late && (p = take_startup(a, size, align)) != NULL)
		return p;
	if (late && ((p = take_placed(a, late_pos, size, align)) != NULL ||
	             (p = take_same_size(a, &a->spare, size, size, align)) != NULL ||
	             (p = take_early(a, size, align)) != NULL)) {
		a->st.startup_hits++;
		return p;
	}
	a->st.unmatched++;
	if (a->o.log)
		fprintf(a->o.log, "start-up %" PRIu64 " -> no slot\n", size);
	return NULL;
}

/* A request the trace kept only because it outlives an iteration the
 * collector folded (st_alloc_outliving): the next iteration entry of its
 * size that outlives the planned iteration, after those taken in this one. */
static void *match_outliving(stalloc *a, uint64_t size, uint64_t align)
{
	const st_seq *s = &a->iter;
	uint64_t *head = a->iter_armed ? st_ptrmap_get(&s->first, size) : NULL;
	uint32_t pos = UINT32_MAX;
	for (uint32_t c = head ? (uint32_t)*head : 0; c && pos == UINT32_MAX; c = s->next_same[c - 1])
		if (c - 1 >= a->outliving_at && s->e[c - 1].outlives && !s->e[c - 1].dynamic)
			pos = c - 1;
	if (pos == UINT32_MAX)
		return NULL;
	a->outliving_at = pos + 1;
	void *p = take(a, s->e[pos].off, size, align, 0);
	if (!p)
		p = rehome(a, s->e[pos].size, size, align);
	if (p)
		a->st.hits++;
	if (a->o.log)
		fprintf(a->o.log, "outliving %" PRIu64 " -> entry %u %s %" PRIu64 "\n", size, pos,
		        p ? "at offset" : "no room, planned offset", p ? (uint64_t)((char *)p - a->base) : s->e[pos].off);
	return p;
}

static void *alloc_with(stalloc *a, uint64_t size, uint64_t align, int outliving)
{
	if (!align)
		align = a->unit;
	if (align & (align - 1))
		return NULL;
	lock(a);
	a->st.requests++;
	note_thread(a);
	void *p = NULL;
	if (size >= a->o.min_size && size) {
		if (outliving)
			p = match_outliving(a, size, align);
		if (!p)
			p = match(a, size, align);
		if (!p && a->iter_armed && a->lend_free)
			p = take_free(a, size, align);
		a->seen++;
		a->hist[1] = a->hist[0];
		a->hist[0] = size;
	} else {
		a->st.small++;
	}
	if (!p) {
		p = st_fallback_alloc(&a->fb, size, align);
		if (p) {
			a->st.fallbacks++;
			a->st.fb_live += size;
			if (a->o.log && size >= a->o.min_size)
				fprintf(a->o.log, "  -> fallback %" PRIu64 " (%" PRIu64 " B live there)\n", size, a->st.fb_live);
			atomic_fetch_add_explicit(&a->fb_blocks, 1, memory_order_relaxed);
		}
	}
	note_peaks(a);
	unlock(a);
	return p;
}

void *stalloc_alloc(stalloc *a, uint64_t size, uint64_t align) { return alloc_with(a, size, align, 0); }
void *st_alloc_outliving(stalloc *a, uint64_t size, uint64_t align) { return alloc_with(a, size, align, 1); }

static int in_pool(const stalloc *a, const void *p)
{
	return a->base && (const char *)p >= a->base && (const char *)p < a->base + a->pool;
}

int stalloc_free(stalloc *a, void *p)
{
	if (!p)
		return 0;
	lock(a);
	int ours = 0;
	uint64_t size;
	if (in_pool(a, p)) {
		uint64_t off = (uint64_t)((char *)p - a->base);
		if (off % a->unit == 0 && st_ptrmap_del(&a->live, off / a->unit, &size)) {
			int slot = size & 1;
			size >>= 1;
			uint64_t n = units_of(a, size ? size : 1);
			st_bits_reset(&a->bits, off / a->unit, n);
			if (slot)
				st_slab_release(&a->pers, off / a->unit);
			a->st.pool_live -= n * a->unit;
			ours = 1;
		}
	} else if (st_fallback_free(&a->fb, p, &size)) {
		a->st.fb_live -= size;
		atomic_fetch_sub_explicit(&a->fb_blocks, 1, memory_order_relaxed);
		ours = 1;
	}
	if (ours)
		a->st.frees++;
	else
		a->st.foreign_frees++;
	if (a->o.log && !ours)
		fprintf(a->o.log, "free %p -> not ours (pool %p + %" PRIu64 ")\n", p, (void *)a->base, a->pool);
	else if (a->o.log && in_pool(a, p))
		fprintf(a->o.log, "free offset %" PRIu64 "\n", (uint64_t)((char *)p - a->base));
	note_peaks(a);
	unlock(a);
	return ours;
}

uint64_t stalloc_size(stalloc *a, const void *p)
{
	uint64_t size = 0;
	lock(a);
	if (in_pool(a, p)) {
		uint64_t off = (uint64_t)((const char *)p - a->base);
		const uint64_t *v = off % a->unit ? NULL : st_ptrmap_get(&a->live, off / a->unit);
		size = v ? *v >> 1 : 0;
	} else {
		size = st_fallback_size(&a->fb, p);
	}
	unlock(a);
	return size;
}

int stalloc_owns(stalloc *a, const void *p)
{
	if (in_pool(a, p))
		return 1; /* the pool is ours whole; a stale pointer is still not the C library's */
	lock(a);
	int r = st_ptrmap_get(&a->fb.blocks, (uint64_t)(uintptr_t)p) != NULL;
	unlock(a);
	return r;
}

void stalloc_step(stalloc *a)
{
	lock(a);
	a->iter_armed = 1;
	a->slots_due = 1;
	a->outliving_at = 0;
	/* a marker right after the sequence wrapped by itself starts nothing new */
	if (a->iter.cursor != 0 || a->iter.misses) {
		st_seq_restart(&a->iter);
		a->st.iterations++;
	}
	unlock(a);
}

void st_fork_prepare(stalloc *a) { lock(a); }
void st_fork_release(stalloc *a) { unlock(a); }
int st_maybe_fallback(stalloc *a) { return atomic_load_explicit(&a->fb_blocks, memory_order_relaxed) != 0; }

void stalloc_pool(stalloc *a, void **base, uint64_t *size)
{
	*base = a->base;
	*size = a->pool;
}

void stalloc_stats_get(stalloc *a, stalloc_stats *s)
{
	lock(a);
	*s = a->st;
	s->min_size = a->o.min_size;
	unlock(a);
	uint64_t served = s->hits + s->slot_hits + s->dynamic_hits + s->startup_hits + s->free_hits;
	uint64_t matched = served + (s->fallbacks - s->small);
	s->hit_rate = matched ? (double)served / (double)matched : 0;
	s->efficiency = s->peak_reserved ? (double)s->peak_allocated / (double)s->peak_reserved : 0;
}

static const char *human(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", (double)b / (double)(1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%.2f MiB", (double)b / (double)(1ull << 20));
	else if (b >= 1024)
		snprintf(buf, len, "%.1f KiB", (double)b / 1024.0);
	else
		snprintf(buf, len, "%" PRIu64 " B", b);
	return buf;
}

void stalloc_stats_print(FILE *f, const stalloc_stats *s)
{
	char b1[32], b2[32], b3[32], b4[32];
	fprintf(f, STALLOC_STATS_HEAD "%s (alignment %" PRIu64 "), plan entries %" PRIu64 " (%" PRIu64 " dynamic)\n",
	        human(s->pool, b1, sizeof b1), s->align, s->entries, s->dynamic_entries);
	fprintf(f, "stalloc: requests %" PRIu64 ": planned hits %" PRIu64 ", persistent slots %" PRIu64
	           ", dynamic hits %" PRIu64 ", start-up temporaries %" PRIu64 ", free pool space %" PRIu64
	           " (%.1f%% of the requests of the plan's sizes in the pool)\n",
	        s->requests, s->hits, s->slot_hits, s->dynamic_hits, s->startup_hits, s->free_hits, 100.0 * s->hit_rate);
	if (s->small_uncounted)
		fprintf(f, "stalloc: below the plan's min size (%s): passed to glibc, not planned (not counted)\n",
		        human(s->min_size, b1, sizeof b1));
	else if (!s->min_size) /* only requests of 0 bytes (empty tensors) are below it */
		fprintf(f, "stalloc: zero-byte requests (empty tensors and the like): %" PRIu64 ", not planned%s\n",
		        s->small + s->small_passed, s->small_passed ? " (the program's own allocator served them)" : "");
	else
		fprintf(f, "stalloc: below the plan's min size (%s): %" PRIu64 " requests, not planned%s\n",
		        human(s->min_size, b1, sizeof b1), s->small + s->small_passed,
		        s->small_passed ? " (the program's own allocator served them)" : "");
	fprintf(f, "stalloc: drift: %" PRIu64 " plan entries skipped, %" PRIu64 " reordered hits, %" PRIu64
	           " resyncs, %" PRIu64 " served at another entry of their size, %" PRIu64 " iterations\n",
	        s->skipped, s->reordered, s->resyncs, s->rehomed, s->iterations);
	if (s->spare_hits)
		fprintf(f, "stalloc: %" PRIu64 " served at a spare range (their previous iteration's instance still live)\n",
		        s->spare_hits);
	if (s->threads > 1)
		fprintf(f, "stalloc: requests from %" PRIu64 "%s threads: they interleave in another order in every run, "
		           "so the plan's sequence is followed less (what it misses goes to the fallback)\n",
		        s->threads, s->threads >= ST_THREADS_MAX ? " or more" : "");
	fprintf(f, "stalloc: fallback: %" PRIu64 " requests (%" PRIu64 " planned range still in use, %" PRIu64
	           " not in the plan, %" PRIu64 " dynamic without room%s), peak %s live, %s reserved\n",
	        s->fallbacks, s->occupied, s->unmatched, s->dynamic_nofit,
	        s->free_hits ? ", less those given free pool space" : "", human(s->fb_peak, b1, sizeof b1),
	        human(s->fb_reserved_peak, b2, sizeof b2));
	fprintf(f, "stalloc: peak allocated %s, peak reserved %s (pool %s in use at most), efficiency %.1f%%\n",
	        human(s->peak_allocated, b3, sizeof b3), human(s->peak_reserved, b4, sizeof b4),
	        human(s->pool_peak, b1, sizeof b1), 100.0 * s->efficiency);
}
