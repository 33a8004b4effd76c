/*
 * perfetto_detector.c - the detector's results as the exporter's extension
 * points (stp_export_detector_attach): each object's class (lanes are
 * grouped by it) and patterns, symbols through the detector's symbolizer,
 * one instant per finding with its suggestion, and per allocator model the
 * reserved bytes (on the y axis of the memory space the model was fed from)
 * and, for the model as run, the fragmentation ratio 1 - allocated/reserved.
 *
 * Data flows one way: the detector's result is read, never changed (the
 * object lookups move a cursor inside it).  The bridge owns the findings'
 * strings and the series' points until stp_export_detector_free().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/perfetto.h"

struct stp_export_detector {
	stp_det *const *dets;
	size_t ndets;
	stp_export_finding *findings;
	size_t nfindings;
	char **strs;
	size_t nstrs, strs_cap;
	stp_export_series *series;
	size_t nseries;
	stp_export_point **points;
	size_t npoints_arrays;
	/* the caller's progress callback and its context (ctx is now ours) */
	void (*progress)(void *ctx, uint32_t trace, uint64_t done, uint64_t total);
	void *progress_ctx;
};

static void progress(void *ctx, uint32_t trace, uint64_t done, uint64_t total)
{
	stp_export_detector *x = ctx;
	x->progress(x->progress_ctx, trace, done, total);
}

static stp_det *det_of(const stp_export_detector *x, uint32_t trace)
{
	return trace < x->ndets ? x->dets[trace] : NULL;
}

static const char *classify(void *ctx, const stp_export_object *obj)
{
	stp_det *d = det_of(ctx, obj->trace);
	int c = d ? stp_det_object_info(d, obj->alloc_seq, NULL) : -1;
	return c < 0 ? NULL : stp_det_class_name((unsigned)c);
}

static size_t patterns(void *ctx, const stp_export_object *obj, const char **names, size_t max)
{
	stp_det *d = det_of(ctx, obj->trace);
	unsigned pm = 0;
	if (!d || stp_det_object_info(d, obj->alloc_seq, &pm) < 0)
		return 0;
	size_t n = 0;
	for (unsigned p = 0; p < STP_PAT_COUNT && n < max; p++)
		if (pm >> p & 1)
			names[n++] = stp_det_pattern_name(p);
	return n;
}

static int symbolize(void *ctx, uint32_t trace, uint64_t ip, stp_export_frame *out)
{
	stp_det *d = det_of(ctx, trace);
	if (!d)
		return 0;
	stp_det_frame f;
	stp_det_resolve(d, ip, 1, &f); /* call-path frames are return addresses */
	if (!f.function)
		return 0;
	out->function = f.function;
	out->file = f.file;
	out->line = f.line;
	return 1;
}

static int hide_frame(void *ctx, uint32_t trace, uint64_t ip)
{
	stp_det *d = det_of(ctx, trace);
	return d && stp_det_frame_hidden(d, ip);
}

/* The folded path (the user's line first, the operator beside it, then its
 * callers), as the report shows it. */
static size_t path_text(void *ctx, uint32_t trace, uint32_t stack, char *buf, size_t len)
{
	stp_det *d = det_of(ctx, trace);
	stp_det_frame fr[12];
	uint32_t n = d ? stp_det_stack_frames(d, stack, fr, 12) : 0;
	size_t k = 0;
	for (uint32_t i = 0; i < n && k + 1 < len; i++) {
		char t[512];
		int w = snprintf(buf + k, len - k, "%s%s", i ? " <- " : "", stp_det_frame_text(&fr[i], t, sizeof t));
		if (w < 0)
			break;
		k += (size_t)w < len - k ? (size_t)w : len - k - 1;
	}
	return k;
}

static char *keep(stp_export_detector *x, const char *s)
{
	if (x->nstrs == x->strs_cap) {
		size_t nc = x->strs_cap ? x->strs_cap * 2 : 64;
		char **n = realloc(x->strs, nc * sizeof *n);
		if (!n)
			return NULL;
		x->strs = n;
		x->strs_cap = nc;
	}
	char *c = strdup(s);
	if (c)
		x->strs[x->nstrs++] = c;
	return c;
}

static int add_findings(stp_export_detector *x, uint32_t trace, stp_det *d)
{
	const stp_det_result *r = stp_det_result_of(d);
	if (!r->nfindings)
		return 0;
	stp_export_finding *n = realloc(x->findings, (x->nfindings + r->nfindings) * sizeof *n);
	if (!n)
		return -1;
	x->findings = n;
	for (uint32_t i = 0; i < r->nfindings; i++) {
		const stp_det_finding *f = &r->findings[i];
		char sug[1024], where[512], detail[800];
		stp_det_suggestion(d, f, sug, sizeof sug);
		stp_det_site_where(d, f->site, where, sizeof where);
		snprintf(detail, sizeof detail, "%llu object%s at %s", (unsigned long long)f->objects,
		         f->objects == 1 ? "" : "s", where);
		const char *s1 = keep(x, sug), *s2 = keep(x, detail);
		if (!s1 || !s2)
			return -1;
		/* the worst instance's wasted interval starts here */
		uint64_t at = f->worst.at_ns ? f->worst.at_ns : f->worst.alloc_ns;
		x->findings[x->nfindings++] = (stp_export_finding){
			.trace = trace,
			.time_ns = r->t0_ns + at,
			.name = stp_det_pattern_title(f->pattern),
			.suggestion = s1,
			.detail = s2,
			.bytes = f->bytes,
			.object_seq = f->worst.alloc_seq ? (int64_t)f->worst.alloc_seq : -1,
		};
	}
	return 0;
}

static stp_export_point *points_new(stp_export_detector *x, size_t n)
{
	stp_export_point **a = realloc(x->points, (x->npoints_arrays + 1) * sizeof *a);
	if (!a)
		return NULL;
	x->points = a;
	stp_export_point *p = malloc((n ? n : 1) * sizeof *p);
	if (p)
		x->points[x->npoints_arrays++] = p;
	return p;
}

static int add_series(stp_export_detector *x, uint32_t trace, stp_det *d)
{
	const stp_det_result *r = stp_det_result_of(d);
	if (!r->sim)
		return 0;
	for (size_t i = 0; i < r->sim->ndevices; i++) {
		const allocsim_device_report *dr = &r->sim->devices[i];
		char sp[32], name[160];
		/* the host what-if of a CPU run replays its framework's buffers
		 * (the space analyzed in depth): drawn on their axis (JAX's or
		 * PyTorch's CPU tensors'), named as the report names them, not on
		 * the interpreter heap's */
		int tensors = dr->host_fallback && r->primary >= 0 && r->spaces[r->primary].tensors;
		int32_t dev = dr->device < 0 && dr->xla ? STP_EXPORT_DEV_JAX
		              : tensors                 ? r->spaces[r->primary].device
		                                        : dr->device;
		stp_export_space_name(dr->device < 0 ? STP_MEM_HOST : STP_MEM_DEVICE, dev, sp, sizeof sp);
		const char *space = keep(x, sp);
		if (!space)
			return -1;
		for (size_t m = 0; m < dr->nresults; m++) {
			const allocsim_result *res = &dr->results[m];
			if (!res->nseries)
				continue;
			for (int frag = 0; frag < (m == 0 ? 2 : 1); frag++) {
				stp_export_series *ns = realloc(x->series, (x->nseries + 1) * sizeof *ns);
				if (!ns)
					return -1;
				x->series = ns;
				stp_export_point *pt = points_new(x, res->nseries);
				if (!pt)
					return -1;
				for (size_t k = 0; k < res->nseries; k++) {
					const allocsim_sample *s = &res->series[k];
					pt[k].time_ns = s->time;
					pt[k].value = !frag ? (double)s->reserved
					              : s->reserved ? 1.0 - (double)s->allocated / (double)s->reserved
					                            : 0.0;
				}
				snprintf(name, sizeof name, "%s (sim: %s%s)", frag ? "fragmentation" : "reserved", res->label,
				         !dr->host_fallback ? "" : tensors ? ", CPU tensors what-if" : ", host what-if");
				const char *nm = keep(x, name);
				if (!nm)
					return -1;
				x->series[x->nseries++] = (stp_export_series){.trace = trace,
				                                              .space = space,
				                                              .name = nm,
				                                              .unit = frag ? STP_UNIT_RATIO : STP_UNIT_BYTES,
				                                              .points = pt,
				                                              .npoints = res->nseries};
			}
		}
	}
	return 0;
}

stp_export_detector *stp_export_detector_attach(stp_det *const *dets, size_t ndets, stp_export_opts *o)
{
	stp_export_detector *x = calloc(1, sizeof *x);
	if (!x)
		return NULL;
	x->dets = dets;
	x->ndets = ndets;
	for (size_t i = 0; i < ndets; i++) {
		if (!dets[i])
			continue;
		if (add_findings(x, (uint32_t)i, dets[i]) < 0 || add_series(x, (uint32_t)i, dets[i]) < 0) {
			stp_export_detector_free(x);
			return NULL;
		}
	}
	x->progress = o->progress;
	x->progress_ctx = o->ctx;
	if (o->progress)
		o->progress = progress;
	o->ctx = x;
	o->classify = classify;
	o->patterns = patterns;
	o->symbolize = symbolize;
	o->hide_frame = hide_frame;
	o->path_text = path_text;
	o->findings = x->findings;
	o->nfindings = x->nfindings;
	o->series = x->series;
	o->nseries = x->nseries;
	return x;
}

void stp_export_detector_free(stp_export_detector *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->nstrs; i++)
		free(x->strs[i]);
	free(x->strs);
	for (size_t i = 0; i < x->npoints_arrays; i++)
		free(x->points[i]);
	free(x->points);
	free(x->findings);
	free(x->series);
	free(x);
}
