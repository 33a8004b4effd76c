/*
 * check.c - the result's own arithmetic (stp_det_check): every figure a
 * report prints must be one a careful reader could check against the
 * others.  Run by `stprof report --check`, and by every detector run of
 * the test suite (STPROF_SELF_CHECK=1, cli/selfcheck.c), so every test
 * trace passes through it.
 *
 * With S the space analyzed in depth (the result's primary):
 *   - the classes sum to S's objects and bytes, and their bytes live at the
 *     peak to S's peak (the classes are S's objects: detector.h); on a
 *     folded trace, with S's folded allocations (counters, in no class),
 *     and within the peak (one inside a folded iteration);
 *   - the call sites are S's: their allocations, bytes, bytes and objects
 *     live at the peak and at the end sum to S's; each site's classes sum
 *     to its objects, its peak is within what it allocated;
 *   - bytes by module sum to S's allocations (when shown);
 *   - findings name a listed site and stay within its objects and bytes;
 *     leaks and the never-freed objects set aside are within S's live
 *     objects at the end;
 *   - every space: frees within allocations, what is live at the end is
 *     what was allocated less what was freed (exactly, without lost
 *     frees), peaks within totals and at or above the end (without a
 *     window), allocated within reserved when it has segment events and
 *     says nothing of an inconsistency;
 *   - iterations: in order, within the trace, their peaks within S's peak
 *     and their allocations within S's; the memory series within S's peak;
 *   - allocator models: M_a <= M_r for every model, and the actual figures
 *     when given.
 * Invariant: reads the result only; never changes it.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "det.h"

typedef struct chk {
	char *buf;
	size_t len, used;
	uint32_t n;
} chk;

static void bad(chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(chk *c, const char *fmt, ...)
{
	c->n++;
	if (!c->buf || c->used + 1 >= c->len || c->n > 8)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(c->buf + c->used, c->len - c->used, fmt, ap);
	va_end(ap);
	if (w < 0)
		return;
	c->used += (size_t)w;
	if (c->used + 1 < c->len) {
		c->buf[c->used++] = '\n';
		c->buf[c->used] = 0;
	} else {
		c->used = c->len - 1;
	}
}

#define EQ(c, what, a, b)                                                                                          \
	do {                                                                                                       \
		uint64_t a_ = (a), b_ = (b);                                                                       \
		if (a_ != b_)                                                                                      \
			bad(c, "%s: %" PRIu64 " != %" PRIu64, what, a_, b_);                                       \
	} while (0)
#define LE(c, what, a, b)                                                                                          \
	do {                                                                                                       \
		uint64_t a_ = (a), b_ = (b);                                                                       \
		if (a_ > b_)                                                                                       \
			bad(c, "%s: %" PRIu64 " > %" PRIu64, what, a_, b_);                                        \
	} while (0)

static void check_space(chk *c, const stp_det_result *r, uint32_t i)
{
	const stp_det_space *s = &r->spaces[i];
	char w[128];
#define W(text) (snprintf(w, sizeof w, "space %u: %s", i, text), w)
	LE(c, W("frees within allocations"), s->frees, s->allocs);
	LE(c, W("bytes freed within bytes allocated"), s->bytes_freed, s->bytes_allocated);
	if (s->frees <= s->allocs && s->bytes_freed <= s->bytes_allocated) {
		if (r->reused_live) {
			LE(c, W("objects live at the end within allocated less freed"), s->live_objects_end,
			   s->allocs - s->frees);
			LE(c, W("bytes live at the end within allocated less freed"), s->live_bytes_end,
			   s->bytes_allocated - s->bytes_freed);
		} else {
			EQ(c, W("objects live at the end = allocated - freed"), s->live_objects_end, s->allocs - s->frees);
			EQ(c, W("bytes live at the end = allocated - freed"), s->live_bytes_end,
			   s->bytes_allocated - s->bytes_freed);
		}
	}
	LE(c, W("peak within bytes allocated"), s->peak_bytes, s->bytes_allocated);
	LE(c, W("objects at the peak within allocations"), s->peak_objects, s->allocs);
	if (s->peak_bytes && !s->peak_objects)
		bad(c, "space %u: a peak of %" PRIu64 " bytes in no object", i, s->peak_bytes);
	LE(c, W("peak time within the trace"), s->peak_ns, r->duration_ns);
	if (!r->has_window) {
		LE(c, W("live at the end within the peak"), s->live_bytes_end, s->peak_bytes);
		if (s->reserved_peak && !s->over_reserved)
			LE(c, W("allocated within reserved (segments)"), s->pool_allocs ? s->pool_peak_bytes : s->peak_bytes,
			   s->reserved_peak);
	}
	LE(c, W("pool and other peaks within their sum"), s->pool_peak_bytes, s->peak_bytes + s->other_peak_bytes);
#undef W
}

static void check_classes(chk *c, const stp_det_result *r, const stp_det_space *s)
{
	uint64_t o = 0, b = 0, p = 0;
	for (unsigned k = 0; k < STP_CLASS_COUNT; k++) {
		o += r->class_objects[k];
		b += r->class_bytes[k];
		p += r->peak_class_bytes[k];
	}
	/* a folded iteration's allocations are counters, in no class; a peak
	 * inside one is its temporaries over the objects then live */
	EQ(c, "classes' objects = the analyzed space's allocations (less folded)", o + s->folded_allocs, s->allocs);
	EQ(c, "classes' bytes = the analyzed space's bytes allocated (less folded)", b + s->folded_bytes, s->bytes_allocated);
	if (s->folded_allocs)
		LE(c, "classes' bytes live at the peak within the analyzed space's peak", p, s->peak_bytes);
	else
		EQ(c, "classes' bytes live at the peak = the analyzed space's peak", p, s->peak_bytes);
}

static void check_sites(chk *c, const stp_det *d, const stp_det_result *r, const stp_det_space *s)
{
	uint64_t allocs = 0, bytes = 0, peak = 0, peak_obj = 0, end = 0, end_obj = 0;
	int folded = s->folded_allocs != 0;
	for (uint32_t i = 0; i < r->nsites; i++) {
		stp_det_site x;
		stp_det_site_get(d, i, &x);
		allocs += x.allocs;
		bytes += x.bytes_allocated;
		peak += x.peak_bytes;
		peak_obj += x.peak_objects;
		end += x.end_bytes;
		end_obj += x.end_objects;
		uint64_t co = 0, cb = 0, cp = 0, lt = 0, ll = 0;
		for (unsigned k = 0; k < STP_CLASS_COUNT; k++) {
			co += x.class_objects[k];
			cb += x.class_bytes[k];
			cp += x.peak_class_bytes[k];
		}
		for (unsigned k = 0; k < STP_DET_TIME_BUCKETS; k++)
			lt += x.life_time[k];
		for (unsigned k = 0; k < STP_DET_LOGICAL_BUCKETS; k++)
			ll += x.life_logical[k];
		char w[96];
		/* (the sampled heap's sites count a folded iteration's
		 * allocations, which have no class or lifetime) */
		int off = folded ? co > x.allocs || cb > x.bytes_allocated || cp > x.peak_bytes || lt > x.allocs || ll > x.allocs
		                 : co != x.allocs || cb != x.bytes_allocated || cp != x.peak_bytes || lt != x.allocs ||
		                           ll != x.allocs;
		if (off) {
			snprintf(w, sizeof w, "site #%u: its classes and lifetimes sum to its objects", i + 1);
			bad(c, "%s: objects %" PRIu64 " / %" PRIu64 ", bytes %" PRIu64 " / %" PRIu64 ", at the peak %" PRIu64
			       " / %" PRIu64 ", lifetimes %" PRIu64 " and %" PRIu64,
			    w, co, x.allocs, cb, x.bytes_allocated, cp, x.peak_bytes, lt, ll);
		}
		if (x.peak_bytes > x.bytes_allocated || x.frees > x.allocs || x.end_objects > x.allocs - x.frees ||
		    x.peak_objects > x.allocs || x.max_size > x.bytes_allocated) {
			snprintf(w, sizeof w, "site #%u: peak, frees and live within its allocations", i + 1);
			bad(c, "%s (allocs %" PRIu64 ", frees %" PRIu64 ", live at the end %" PRIu64 ", bytes %" PRIu64
			       ", at the peak %" PRIu64 ")",
			    w, x.allocs, x.frees, x.end_objects, x.bytes_allocated, x.peak_bytes);
		}
		if (i && x.peak_bytes) {
			stp_det_site prev;
			stp_det_site_get(d, i - 1, &prev);
			LE(c, "sites in order of bytes live at the peak", x.peak_bytes, prev.peak_bytes);
		}
	}
	if (folded) {
		LE(c, "call sites' allocations within the analyzed space's", allocs, s->allocs);
		LE(c, "the analyzed space's allocations within the call sites' + folded", s->allocs, allocs + s->folded_allocs);
		LE(c, "call sites' bytes allocated within the analyzed space's", bytes, s->bytes_allocated);
		LE(c, "the analyzed space's bytes within the call sites' + folded", s->bytes_allocated,
		   bytes + s->folded_bytes);
		LE(c, "call sites' bytes live at the peak within the analyzed space's peak", peak, s->peak_bytes);
		LE(c, "call sites' objects live at the peak within the analyzed space's", peak_obj, s->peak_objects);
	} else {
		EQ(c, "call sites' allocations = the analyzed space's", allocs, s->allocs);
		EQ(c, "call sites' bytes allocated = the analyzed space's", bytes, s->bytes_allocated);
		EQ(c, "call sites' bytes live at the peak = the analyzed space's peak", peak, s->peak_bytes);
		EQ(c, "call sites' objects live at the peak = the analyzed space's", peak_obj, s->peak_objects);
	}
	EQ(c, "call sites' bytes live at the end = the analyzed space's", end, s->live_bytes_end);
	EQ(c, "call sites' objects live at the end = the analyzed space's", end_obj, s->live_objects_end);
}

static void check_findings(chk *c, const stp_det *d, const stp_det_result *r, const stp_det_space *s)
{
	uint64_t leaked = 0;
	for (uint32_t i = 0; i < r->nfindings; i++) {
		const stp_det_finding *f = &r->findings[i];
		if (f->site >= r->nsites) {
			bad(c, "finding %u names site #%u of %u", i + 1, f->site + 1, r->nsites);
			continue;
		}
		stp_det_site x;
		stp_det_site_get(d, f->site, &x);
		char w[64];
		snprintf(w, sizeof w, "finding %u: objects within its site's", i + 1);
		LE(c, w, f->objects, x.allocs);
		snprintf(w, sizeof w, "finding %u: bytes within its site's", i + 1);
		LE(c, w, f->bytes, x.bytes_allocated);
		if (!f->objects || f->waste_byte_ns < 0)
			bad(c, "finding %u: %" PRIu64 " objects, waste %g", i + 1, f->objects, f->waste_byte_ns);
		if (f->pattern == STP_PAT_LEAK) /* (not those freed after the loop) */
			leaked += f->objects - f->leak_freed_after;
	}
	if (!r->has_window) {
		LE(c, "leaks and objects set aside within the objects live at the end", leaked + r->leaks_set_aside,
		   s->live_objects_end);
		LE(c, "bytes set aside within the bytes live at the end", r->leaks_set_aside_bytes, s->live_bytes_end);
	}
}

static void check_timeline(chk *c, const stp_det_result *r, const stp_det_space *s)
{
	const stp_det_timeline *t = &r->timeline;
	uint64_t allocs = 0;
	for (uint32_t k = 0; k < t->niterations; k++) {
		const stp_det_iteration *it = &t->iterations[k];
		char w[80];
		snprintf(w, sizeof w, "iteration %u: begins before it ends", k);
		LE(c, w, it->begin_ns, it->end_ns);
		snprintf(w, sizeof w, "iteration %u: within the trace", k);
		LE(c, w, it->end_ns, r->duration_ns);
		if (!r->has_window) {
			snprintf(w, sizeof w, "iteration %u: its peak within the analyzed space's", k);
			LE(c, w, it->peak_bytes, s->peak_bytes);
		}
		if (k) {
			snprintf(w, sizeof w, "iteration %u: after the one before", k);
			LE(c, w, t->iterations[k - 1].end_seq, it->begin_seq);
		}
		if (it->first_phase + it->nphases > t->nphases)
			bad(c, "iteration %u: phases %u..%u of %u", k, it->first_phase, it->first_phase + it->nphases, t->nphases);
		allocs += it->allocs;
	}
	LE(c, "iterations' allocations within the analyzed space's", allocs, s->allocs);
	if (t->steady >= (int32_t)t->niterations)
		bad(c, "steady iteration %d of %u", t->steady, t->niterations);
	for (uint32_t i = 0; i < t->nphases; i++)
		if (t->phases[i].begin_ns > t->phases[i].end_ns || t->phases[i].end_ns > r->duration_ns)
			bad(c, "phase %u (%s): from %" PRIu64 " to %" PRIu64 " ns in a trace of %" PRIu64 " ns", i,
			    t->phases[i].name ? t->phases[i].name : "?", t->phases[i].begin_ns, t->phases[i].end_ns,
			    r->duration_ns);
	if (!r->has_window) {
		uint64_t top = 0;
		for (uint32_t i = 0; i < r->nseries; i++)
			if (r->series[i].live_bytes > top)
				top = r->series[i].live_bytes;
		if (r->nseries)
			EQ(c, "the memory series' highest = the analyzed space's peak", top, s->peak_bytes);
	}
}

static void check_models(chk *c, const stp_det_result *r)
{
	if (!r->sim)
		return;
	for (size_t i = 0; i < r->sim->ndevices; i++) {
		const allocsim_device_report *dr = &r->sim->devices[i];
		for (size_t k = 0; k < dr->nresults; k++) {
			const allocsim_result *m = &dr->results[k];
			if (m->peak_allocated > m->peak_reserved)
				bad(c, "model %zu of device %d: M_a %" PRIu64 " > M_r %" PRIu64, k, dr->device, m->peak_allocated,
				    m->peak_reserved);
		}
		const allocsim_actual *a = &dr->actual;
		/* (XLA's figures are samples, its peaks taken apart) */
		if (a->present && !a->xla && !a->over_reserved && a->peak_allocated > a->peak_reserved)
			bad(c, "device %d: actual M_a %" PRIu64 " > M_r %" PRIu64 " with no inconsistency said", dr->device,
			    a->peak_allocated, a->peak_reserved);
	}
}

static void check_modules(chk *c, stp_det *d, const stp_det_space *s)
{
	const stp_det_module *m;
	uint32_t n = stp_det_modules(d, &m);
	if (!n)
		return;
	uint64_t allocs = 0, bytes = 0;
	for (uint32_t i = 0; i < n; i++) {
		allocs += m[i].allocs;
		bytes += m[i].bytes;
	}
	/* (a folded iteration's allocations have no call path) */
	EQ(c, "bytes by module: allocations = the analyzed space's (less folded)", allocs + s->folded_allocs, s->allocs);
	EQ(c, "bytes by module: bytes = the analyzed space's (less folded)", bytes + s->folded_bytes, s->bytes_allocated);
}

uint32_t stp_det_check(stp_det *d, char *buf, size_t len)
{
	chk c = {.buf = buf, .len = len};
	if (buf && len)
		buf[0] = 0;
	const stp_det_result *r = &d->res;
	for (uint32_t i = 0; i < r->nspaces; i++)
		check_space(&c, r, i);
	if (r->primary < 0 || (uint32_t)r->primary >= r->nspaces)
		return c.n;
	const stp_det_space *s = &r->spaces[r->primary];
	check_classes(&c, r, s);
	check_sites(&c, d, r, s);
	check_findings(&c, d, r, s);
	check_timeline(&c, r, s);
	check_models(&c, r);
	check_modules(&c, d, s);
	return c.n;
}
