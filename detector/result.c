/*
 * result.c - the public result built after pass 2: counts from the reader,
 * window times, where the peak fell, call sites compacted and sorted by
 * bytes live at the peak, findings sorted by waste; and the accessors that
 * turn stacks into frames, names and suggestions.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "det.h"

static uint64_t cut_time(const stp_det *d, uint64_t seq, uint64_t fallback)
{
	uint32_t i = det_count_le(d->cuts, d->ncuts, seq);
	if (i && d->cuts[i - 1] == seq && d->cut_ns[i - 1] != UINT64_MAX)
		return d->cut_ns[i - 1];
	return fallback;
}

static int cmp_findings(const void *a, const void *b)
{
	const stp_det_finding *x = a, *y = b;
	if (x->waste_byte_ns != y->waste_byte_ns)
		return x->waste_byte_ns > y->waste_byte_ns ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->pattern != y->pattern)
		return x->pattern < y->pattern ? -1 : 1;
	return x->site < y->site ? -1 : x->site > y->site;
}

int det_build_result(stp_det *d)
{
	stp_det_result *r = &d->res;
	r->path = d->opt.name ? d->opt.name : d->path;
	r->command = d->command ? d->command : "";
	r->error = d->error;
	r->events = d->stats.events;
	memcpy(r->by_type, d->stats.by_type, sizeof r->by_type);
	r->api_events = d->stats.by_type[STP_EV_API];
	r->lost_events = d->stats.lost_events;
	r->duration_ns = d->end_ns;
	r->t0_ns = d->t0;
	r->whole = d->stats.whole;
	r->end_reason = d->stats.end_reason;
	r->end_value = d->stats.end_value;
	r->nspaces = d->nspaces;
	r->spaces = d->spaces;
	r->have_accesses = d->have_ranges;
	r->logical_unit = d->have_ranges ? det_access_unit(d) : "events";
	r->acc.apis = det_access_napi(d);

	/* window times detected in pass 1 without times come from the cuts */
	for (uint32_t k = 0; k < d->niters; k++) {
		stp_det_iteration *it = &d->iters[k];
		if (it->begin_ns == UINT64_MAX)
			it->begin_ns = cut_time(d, it->begin_seq, d->end_ns);
		if (it->end_ns == UINT64_MAX)
			it->end_ns = cut_time(d, it->end_seq, d->end_ns);
	}
	for (uint32_t i = 0; i < d->nphases; i++) {
		stp_det_phase *p = &d->phases[i];
		if (p->begin_ns == UINT64_MAX)
			p->begin_ns = cut_time(d, p->begin_seq, d->end_ns);
		if (p->end_ns == UINT64_MAX)
			p->end_ns = cut_time(d, p->end_seq, d->end_ns);
		if (p->end_ns < p->begin_ns) /* clocks out of order between threads: no negative length */
			p->end_ns = p->begin_ns;
	}
	for (uint32_t k = 0; k < d->niters; k++)
		if (d->iters[k].end_ns < d->iters[k].begin_ns)
			d->iters[k].end_ns = d->iters[k].begin_ns;
	if (r->primary >= 0) {
		uint64_t ps = d->spaces[r->primary].peak_seq;
		for (uint32_t k = 0; k < d->niters; k++)
			if (d->iters[k].begin_seq <= ps && ps < d->iters[k].end_seq)
				r->peak_iteration = (int32_t)k;
		for (uint32_t i = 0; i < d->nphases; i++)
			if (d->phases[i].begin_seq <= ps && ps < d->phases[i].end_seq)
				r->peak_phase = (int32_t)i;
	}

	/* sites: dominant class, then sorted in place (out_index: old -> new);
	 * findings point at the new order */
	uint32_t *perm = malloc((d->nsites ? d->nsites : 1) * sizeof *perm);
	uint32_t *pos = malloc((d->nsites ? d->nsites : 1) * sizeof *pos);
	if (!perm || !pos) {
		free(perm);
		free(pos);
		return -1;
	}
	for (uint32_t i = 0; i < d->nsites; i++) {
		det_site_rec *s = &d->spub[i];
		unsigned best = s->one_class < STP_CLASS_COUNT ? s->one_class : STP_CLASS_UNCLASSIFIED;
		if (s->cold) {
			const uint64_t *cb = d->cold[s->cold - 1].class_bytes;
			best = 0;
			for (unsigned c = 1; c < STP_CLASS_COUNT; c++)
				if (cb[c] > cb[best])
					best = c;
		}
		s->dominant = (uint8_t)best;
		perm[i] = i;
	}
	/* by peak_bytes, then bytes_allocated (both descending), then stack:
	 * three stable radix sorts, least significant key first */
	uint64_t *key = malloc((d->nsites ? d->nsites : 1) * sizeof *key);
	if (!key) {
		free(perm);
		free(pos);
		return -1;
	}
	for (int pass = 0; pass < 3; pass++) {
		for (uint32_t i = 0; i < d->nsites; i++) {
			const det_site_rec *x = &d->spub[perm[i]];
			key[i] = pass == 0 ? x->stack : pass == 1 ? ~x->bytes_allocated : ~x->peak_bytes;
		}
		if (det_radix_kv(key, perm, d->nsites) < 0) {
			free(key);
			free(perm);
			free(pos);
			return -1;
		}
	}
	free(key);
	/* the records stay where they are: site_order maps the sorted index to
	 * the record, out_index the record to the sorted index */
	for (uint32_t i = 0; i < d->nsites; i++)
		d->sites[perm[i]].out_index = i;
	free(pos);
	d->site_order = perm;
	r->nsites = d->nsites;

	d->out_findings = malloc((d->nfacc ? d->nfacc : 1) * sizeof *d->out_findings);
	if (!d->out_findings)
		return -1;
	/* the actionable ones first, those the structure explains after them:
	 * a library's own buffers and a DataLoader's batches are known by their
	 * call path (once per site) */
	uint8_t *lib = calloc(d->nsites ? d->nsites : 1, 1); /* 0 unknown, 1 no, 2 library, 3 loader */
	uint32_t nact = 0, nexp = 0;
	for (uint32_t pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < d->nfacc; i++) {
			stp_det_finding f = d->facc[i].f;
			if (lib && !lib[f.site])
				lib[f.site] = det_site_is_library(d, d->spub[f.site].stack)  ? 2
				              : det_site_is_loader(d, d->spub[f.site].stack) ? 3
				                                                             : 1;
			if (lib && lib[f.site] == 2)
				f.expected = STP_EXPECT_LIBRARY;
			else if (lib && lib[f.site] == 3 && f.expected == STP_EXPECT_NONE)
				f.expected = STP_EXPECT_LOADER;
			if ((f.expected != STP_EXPECT_NONE) != pass)
				continue;
			if (pass) {
				r->expect_objects[f.expected] += f.objects;
			} else {
				r->pattern_objects[f.pattern] += f.objects;
				r->pattern_waste[f.pattern] += f.waste_byte_ns;
			}
			f.site = d->sites[f.site].out_index;
			if (f.worst.other_site != UINT32_MAX)
				f.worst.other_site = d->sites[f.worst.other_site].out_index;
			d->out_findings[pass ? nact + nexp++ : nact++] = f;
		}
	free(lib);
	qsort(d->out_findings, nact, sizeof *d->out_findings, cmp_findings);
	qsort(d->out_findings + nact, nexp, sizeof *d->out_findings, cmp_findings);
	r->findings = d->out_findings;
	r->nfindings = nact;
	r->expected = d->out_findings + nact;
	r->nexpected = nexp;
	r->has_window = d->opt.has_window;
	r->window_begin_ns = d->opt.window_begin_ns;
	r->window_end_ns = d->opt.window_end_ns;
	if (d->opt.has_window) { /* the findings whose worst instance overlaps the window */
		uint32_t k = 0;
		for (uint32_t i = 0; i < d->nfacc; i++) {
			const stp_det_instance *w = &d->out_findings[i].worst;
			uint64_t until = w->until_ns > w->at_ns ? w->until_ns : w->at_ns + 1;
			if (w->at_ns < d->opt.window_end_ns && until > d->opt.window_begin_ns)
				d->out_findings[k++] = d->out_findings[i];
		}
		r->nfindings = k;
	}
	for (unsigned p = 0; p < STP_PAT_COUNT; p++)
		r->pattern_available[p] = 1;
	if (!d->have_ranges) {
		r->pattern_available[STP_PAT_OVERALLOC] = 0;
		r->pattern_available[STP_PAT_STRUCTURED] = 0;
		r->pattern_available[STP_PAT_NONUNIFORM] = 0;
		r->pattern_available[STP_PAT_EARLY_ALLOC] = 0;
		r->pattern_available[STP_PAT_LATE_DEALLOC] = 0;
		r->pattern_available[STP_PAT_REDUNDANT_ALLOC] = 0;
		r->pattern_available[STP_PAT_UNUSED_ALLOC] = 0;
		r->pattern_available[STP_PAT_TEMP_IDLE] = 0;
		r->pattern_available[STP_PAT_DEAD_WRITE] = 0;
	}
	if (!d->niters)
		r->pattern_available[STP_PAT_LATE_FREE] = 0;
	r->series = d->series;
	r->nseries = d->nseries;
	return 0;
}

void stp_det_site_get(const stp_det *d, uint32_t site, stp_det_site *out)
{
	memset(out, 0, sizeof *out);
	if (site >= d->res.nsites)
		return;
	const det_site_rec *s = &d->spub[d->site_order[site]];
	out->stack = s->stack;
	out->kind = s->kind;
	out->dominant = s->dominant;
	out->allocs = s->allocs;
	out->frees = s->frees;
	out->bytes_allocated = s->bytes_allocated;
	out->max_size = s->max_size;
	out->peak_bytes = s->peak_bytes;
	out->peak_objects = s->peak_objects;
	out->end_bytes = s->end_bytes;
	out->end_objects = s->end_objects;
	out->byte_ns = s->byte_ns;
	if (s->cold) {
		const det_site_cold *k = &d->cold[s->cold - 1];
		memcpy(out->class_objects, k->class_objects, sizeof out->class_objects);
		memcpy(out->class_bytes, k->class_bytes, sizeof out->class_bytes);
		memcpy(out->peak_class_bytes, k->peak_class_bytes, sizeof out->peak_class_bytes);
		memcpy(out->life_time, k->life_time, sizeof out->life_time);
		memcpy(out->life_logical, k->life_logical, sizeof out->life_logical);
	} else if (s->one_class < STP_CLASS_COUNT) {
		out->class_objects[s->one_class] = 1;
		out->class_bytes[s->one_class] = s->one_size;
		if (s->one_at_peak)
			out->peak_class_bytes[s->one_class] = s->one_size;
		out->life_time[s->one_tb] = 1;
		out->life_logical[s->one_lb] = 1;
	}
}

uint32_t stp_det_site_stack(const stp_det *d, uint32_t site)
{
	return site < d->res.nsites ? d->spub[d->site_order[site]].stack : 0;
}

/* ------------------------------------------------------------ frames */

/* The frames [from, n) of a path with inlined calls apart
 * (det_frames_resolve_inline), into out; returns how many. */
static uint32_t expand_inline(stp_det *d, const stp_det_frame *in, uint32_t from, uint32_t n, stp_det_frame *out,
                              uint32_t max)
{
	uint32_t m = 0;
	for (uint32_t i = from; i < n && m < max; i++) {
		if (in[i].function && strstr(in[i].function, " (inlined into "))
			m += det_frames_resolve_inline(d->frames, in[i].ip, 1, out + m, max - m);
		else
			out[m++] = in[i];
	}
	return m;
}

/* The frames of a stack after the profiler's and allocator's own. */
static uint32_t raw_frames(stp_det *d, uint32_t stack, stp_det_frame *out, uint32_t max)
{
	uint32_t n = 0, depth = 0, skipping = 1, parent, nfirst = 0;
	uint64_t ip;
	stp_det_frame first[4];
	while (stack && stp_reader_stack_node(d->rd, stack, &parent, &ip) == 0 && n < max) {
		stp_det_frame fr;
		det_frames_resolve(d->frames, ip, 1, &fr); /* every recorded frame is a return address: the collector unwinds from inside its hooks */
		depth++;
		stack = parent;
		if (skipping && det_frames_is_plumbing(&fr)) {
			if (nfirst < 4)
				first[nfirst++] = fr;
			continue;
		}
		skipping = 0;
		out[n++] = fr;
	}
	/* a path made of plumbing only: show it rather than nothing */
	for (uint32_t i = 0; !n && i < nfirst && i < max; i++)
		out[i] = first[i], n = i + 1;
	return n;
}

/* Wrappers: depth by depth, the frame that at least 80% of the call sites
 * (5 or more, each with a frame beyond it) share with the same frames
 * before it, and that each of the 10 top sites shares too (the report
 * shows those below the wrappers, so it must not name frames they do not
 * go through): train_alloc <- tensor_alloc in a program that allocates
 * everything through them. */
static int prefix_matches(const stp_det *d, const stp_det_frame *f, uint32_t k)
{
	for (uint32_t j = 0; j < k; j++)
		if (f[j].ip != d->wrap_ip[j])
			return 0;
	return 1;
}

static void find_wrappers(stp_det *d)
{
	d->wrap_done = 1;
	uint32_t ns = d->res.nsites;
	if (ns < 5 || !d->rd)
		return;
	if (ns > 2000) /* the top sites (by bytes at the peak) are enough */
		ns = 2000;
	stp_det_frame *fr = malloc((size_t)ns * 9 * sizeof *fr);
	uint32_t *nf = malloc(ns * sizeof *nf);
	if (!fr || !nf) {
		free(fr);
		free(nf);
		return;
	}
	for (uint32_t i = 0; i < ns; i++)
		nf[i] = raw_frames(d, d->spub[d->site_order[i]].stack, fr + (size_t)i * 9, 9);
	for (uint32_t k = 0; k < 8; k++) {
		/* the most common frame at depth k among sites matching so far */
		uint64_t best = 0;
		uint32_t best_n = 0, eligible = 0;
		for (uint32_t i = 0; i < ns; i++) {
			if (nf[i] < k + 2)
				continue;
			int match = 1;
			for (uint32_t j = 0; j < k && match; j++)
				match = fr[(size_t)i * 9 + j].ip == d->wrap_ip[j];
			if (!match)
				continue;
			eligible++;
			uint64_t ip = fr[(size_t)i * 9 + k].ip;
			if (ip == best)
				continue;
			uint32_t c = 0;
			for (uint32_t q = 0; q < ns; q++)
				c += nf[q] >= k + 2 && fr[(size_t)q * 9 + k].ip == ip && prefix_matches(d, fr + (size_t)q * 9, k);
			if (c > best_n)
				best_n = c, best = ip;
			if (i > 64)
				break; /* the majority frame shows up among the first few */
		}
		if (!eligible || best_n * 5 < ns * 4)
			break;
		int top_ok = 1;
		for (uint32_t i = 0; i < ns && i < 10 && top_ok; i++)
			top_ok = nf[i] >= k + 2 && fr[(size_t)i * 9 + k].ip == best && prefix_matches(d, fr + (size_t)i * 9, k);
		if (!top_ok)
			break;
		d->wrap_ip[k] = best;
		d->wrap_n = k + 1;
	}
	free(fr);
	free(nf);
}

uint32_t stp_det_wrappers(stp_det *d, stp_det_frame *out, uint32_t max)
{
	if (!d->wrap_done)
		find_wrappers(d);
	uint32_t n = 0;
	for (; n < d->wrap_n && n < max; n++)
		det_frames_resolve(d->frames, d->wrap_ip[n], 1, &out[n]);
	return n;
}

int stp_det_site_library(stp_det *d, uint32_t site)
{
	if (site >= d->res.nsites || !d->rd)
		return 0;
	return det_site_is_library(d, d->spub[d->site_order[site]].stack);
}

uint32_t stp_det_site_frames(stp_det *d, uint32_t site, stp_det_frame *out, uint32_t max)
{
	if (site >= d->res.nsites || !d->rd || !max)
		return 0;
	return stp_det_stack_frames(d, d->spub[d->site_order[site]].stack, out, max);
}

int stp_det_frame_hidden(stp_det *d, uint64_t ip)
{
	if (d->opt.all_frames)
		return 0;
	stp_det_frame f;
	det_frames_resolve(d->frames, ip, 1, &f);
	if (STP_IS_PYFRAME(ip)) /* lines of Python are kept, but the import machinery's */
		return f.file && !strncmp(f.file, "<frozen ", 8);
	return det_frame_is_framework(&f);
}

uint32_t stp_det_stack_frames(stp_det *d, uint32_t stack, stp_det_frame *out, uint32_t max)
{
	if (!d->rd || !max)
		return 0;
	if (!d->wrap_done)
		find_wrappers(d);
	stp_det_frame tmp[96];
	uint32_t n = raw_frames(d, stack, tmp, 96);
	uint32_t skip = 0;
	while (skip < d->wrap_n && skip + 1 < n && tmp[skip].ip == d->wrap_ip[skip])
		skip++;
	if (!d->opt.all_frames) {
		stp_det_frame x[128];
		uint32_t nx = expand_inline(d, tmp, skip, n, x, 128);
		return det_fold_frames(d->frames, x, nx, out, max);
	}
	/* the user's own Python line first, the native frames below it */
	uint32_t user = n;
	for (uint32_t i = skip; i < n && user == n; i++)
		if (det_frame_is_user_python(&tmp[i]))
			user = i;
	uint32_t m = 0;
	if (user < n && m < max)
		out[m++] = tmp[user];
	for (uint32_t i = skip; i < n && m < max; i++)
		if (i != user)
			out[m++] = tmp[i];
	return m;
}

const char *stp_det_site_no_line(stp_det *d, uint32_t site)
{
	if (site >= d->res.nsites || !d->rd)
		return NULL;
	uint32_t stack = d->spub[d->site_order[site]].stack, parent, depth = 0, py = 0, interp = 0;
	uint64_t ip;
	if (!stack)
		return "no call path was recorded (STPROF_DEPTH=0, or none could be unwound)";
	stp_det_frame fr[2];
	int all = d->opt.all_frames;
	d->opt.all_frames = 0; /* the folded view starts at the user's frame, if any */
	uint32_t nf = stp_det_site_frames(d, site, fr, 1);
	d->opt.all_frames = all;
	if (nf == 1 && stp_det_frame_is_user(&fr[0]))
		return NULL;
	for (uint32_t s = stack; s && stp_reader_stack_node(d->rd, s, &parent, &ip) == 0; s = parent) {
		depth++;
		if (STP_IS_PYFRAME(ip))
			py++;
		else if (det_frames_module_class(d->frames, ip) & DET_MOD_INTERPRETER)
			interp++;
	}
	if (py)
		return "made by library code that no line of the program called (a DataLoader worker's collate, "
		       "a thread a library started)";
	const stp_det_space *sp = d->res.primary >= 0 ? &d->res.spaces[d->res.primary] : NULL;
	if (interp && sp && sp->device == -1 && !sp->tensors)
		return "host-heap paths are native frames up to the interpreter (Python lines are recorded for "
		       "tensors: --space tensors)";
	if (interp)
		return "its thread's Python frames could not be read (a Python whose frames stprof reads only with "
		       "the GIL, which another thread held: docs/python.md)";
	if (d->has_python_frames < 0) {
		/* does any top site carry Python frames (a Python program)? */
		d->has_python_frames = 0;
		for (uint32_t i = 0; i < d->res.nsites && i < 200 && !d->has_python_frames; i++)
			for (uint32_t s = d->spub[d->site_order[i]].stack;
			     s && stp_reader_stack_node(d->rd, s, &parent, &ip) == 0; s = parent)
				if (STP_IS_PYFRAME(ip)) {
					d->has_python_frames = 1;
					break;
				}
	}
	if (d->has_python_frames)
		return "made on a thread that runs no Python code (PyTorch's autograd threads run the backward "
		       "of GPU tensors; a C++ thread)";
	if (depth >= 32)
		return "its recorded path ends inside the framework (raise STPROF_DEPTH: frames per call path)";
	return "no frame of the program in its path (all of it the runtime's, the driver's or a library's)";
}

/* The index of the user's frame in a path with inlined calls apart: its
 * Python line, else (a native program) its first frame of its own, as the
 * folded view picks it (n when none). */
static uint32_t user_index(const stp_det_frame *f, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (det_frame_is_user_python(&f[i]))
			return i;
	for (uint32_t i = 0; i < n; i++)
		if (STP_IS_PYFRAME(f[i].ip))
			return n; /* Python, none of it the user's */
	for (uint32_t i = 0; i < n; i++)
		if (stp_det_frame_is_user(&f[i]))
			return i;
	return n;
}

static int same_frame(const stp_det_frame *a, const stp_det_frame *b)
{
	if (a->ip == b->ip && (a->function == b->function || (a->function && b->function && !strcmp(a->function, b->function))))
		return 1;
	char x[512], y[512];
	return !strcmp(stp_det_frame_text(a, x, sizeof x), stp_det_frame_text(b, y, sizeof y));
}

/* Two native frames of one named function (at other offsets in it). */
static int same_function(const stp_det_frame *a, const stp_det_frame *b)
{
	return !STP_IS_PYFRAME(a->ip) && !STP_IS_PYFRAME(b->ip) && a->function && b->function &&
	       !strcmp(a->function, b->function);
}

/* A frame inside the CUDA driver, runtime, sanitizer or CUPTI: where two
 * paths of a native program part there, the program cannot tell (a
 * driver's internal path), and naming it would show the frames the folded
 * view hides from CUDA programs. */
static int cuda_internal(const stp_det_frame *f)
{
	if (STP_IS_PYFRAME(f->ip) || !f->module)
		return 0;
	const char *b = strrchr(f->module, '/');
	b = b ? b + 1 : f->module;
	return !strncmp(b, "libcuda.so", 10) || !strncmp(b, "libcudart", 9) || !strncmp(b, "libsanitizer", 12) ||
	       !strncmp(b, "libcupti", 8) || (f->file && !strcmp(strrchr(f->file, '/') ? strrchr(f->file, '/') + 1 : f->file,
	                                                           "cuda_runtime.h"));
}

int stp_det_site_package_line(stp_det *d, uint32_t site, stp_det_frame *out)
{
	if (site >= d->res.nsites || !d->rd)
		return 0;
	stp_det_frame r[96], a[128];
	uint32_t n = raw_frames(d, d->spub[d->site_order[site]].stack, r, 96);
	n = expand_inline(d, r, 0, n, a, 128);
	uint32_t u = user_index(a, n);
	for (uint32_t k = 0; k < u && u < n; k++)
		if (det_frame_is_package_python(&a[k])) {
			*out = a[k];
			return 1;
		}
	return 0;
}

/* Whether x (of one path) against y (the other's, at the same place) tells
 * the two apart: not the same frame, not inside CUDA's libraries in a
 * native program, and unless any, of another function. */
static int tells_apart(const stp_det_frame *x, const stp_det_frame *y, int native, int any)
{
	return !same_frame(x, y) && !(native && cuda_internal(x)) && (any || !same_function(x, y));
}

int stp_det_site_difference(stp_det *d, uint32_t site, uint32_t other, stp_det_frame *out)
{
	if (site >= d->res.nsites || other >= d->res.nsites || !d->rd)
		return 0;
	stp_det_frame ra[96], rb[96], a[128], b[128];
	uint32_t na = raw_frames(d, d->spub[d->site_order[site]].stack, ra, 96);
	uint32_t nb = raw_frames(d, d->spub[d->site_order[other]].stack, rb, 96);
	na = expand_inline(d, ra, 0, na, a, 128);
	nb = expand_inline(d, rb, 0, nb, b, 128);
	uint32_t ua = user_index(a, na), ub = user_index(b, nb);
	int native = ua < na && !STP_IS_PYFRAME(a[ua].ip);
	if (ua == na || ub == nb) /* no user line: from the innermost frame */
		ua = ub = 0;
	/* inward from the user's line (the library lines it went through),
	 * then outward (its callers); first a frame of another function (one
	 * that differs only in its offset, a dispatcher's wrapper calling the
	 * operator's meta function in one path and its kernel in the other,
	 * says less than the functions it called), then any */
	int found = 0;
	for (int any = 0; any < 2 && !found; any++) {
		for (uint32_t k = 1; k <= ua && k <= ub && !found; k++)
			if (tells_apart(&a[ua - k], &b[ub - k], native, any))
				*out = a[ua - k], found = 1;
		for (uint32_t k = 1; ua + k < na && ub + k < nb && !found; k++)
			if (tells_apart(&a[ua + k], &b[ub + k], native, any))
				*out = a[ua + k], found = 1;
	}
	if (found && out->function && !STP_IS_PYFRAME(out->ip) && !d->opt.all_frames) {
		char t[512];
		det_short_name(out->function, t, sizeof t);
		const char *k = det_frames_intern(d->frames, t);
		if (k)
			out->function = k;
	}
	return found;
}

void stp_det_resolve(stp_det *d, uint64_t ip, int caller, stp_det_frame *out)
{
	det_frames_resolve(d->frames, ip, caller, out);
}

const char *stp_det_frame_text(const stp_det_frame *f, char *buf, size_t len)
{
	const char *m = f->module && *f->module ? f->module : NULL;
	const char *b = m ? strrchr(m, '/') : NULL;
	b = b ? b + 1 : m;
	if (STP_IS_PYFRAME(f->ip) && f->file) {
		const char *fb = strrchr(f->file, '/');
		snprintf(buf, len, "%s:%u in %s", fb ? fb + 1 : f->file, f->line, f->function ? f->function : "?");
	} else if (STP_IS_PYFRAME(f->ip)) {
		snprintf(buf, len, "(python frame)");
	} else if (f->function && (!f->module || !*f->module) && !f->file) {
		snprintf(buf, len, "%s", f->function);
	} else if (f->function && f->file && f->line) {
		const char *fb = strrchr(f->file, '/');
		snprintf(buf, len, "%s (%s:%u)", f->function, fb ? fb + 1 : f->file, f->line);
	} else if (f->function && b)
		snprintf(buf, len, "%s (%s+0x%" PRIx64 ")", f->function, b, f->offset);
	else if (f->function)
		snprintf(buf, len, "%s", f->function);
	else if (b)
		snprintf(buf, len, "%s+0x%" PRIx64, b, f->offset);
	else
		snprintf(buf, len, "0x%" PRIx64, f->ip);
	if (f->op) {
		size_t k = strlen(buf);
		if (k < len)
			snprintf(buf + k, len - k, " (%s)", f->op);
	}
	return buf;
}

const char *stp_det_site_where(stp_det *d, uint32_t site, char *buf, size_t len)
{
	stp_det_frame f;
	if (stp_det_site_frames(d, site, &f, 1) == 0) {
		snprintf(buf, len, "(no call path)");
		return buf;
	}
	return stp_det_frame_text(&f, buf, len);
}

/* ------------------------------------------------------------ names */

const char *stp_det_class_name(unsigned c)
{
	static const char *const n[] = {"persistent", "scoped", "transient", "init-only",
	                                "leaked", "live-at-end", "unclassified"};
	return c < STP_CLASS_COUNT ? n[c] : "?";
}

const char *stp_det_pattern_name(unsigned p)
{
	static const char *const n[] = {"early-allocation", "late-deallocation", "redundant-allocation",
	                                "unused-allocation", "memory-leak", "temporary-idleness",
	                                "dead-write", "late-free", "overallocation", "structured-access",
	                                "non-uniform-frequency"};
	return p < STP_PAT_COUNT ? n[p] : "?";
}

const char *stp_det_pattern_title(unsigned p)
{
	static const char *const n[] = {"Early allocation", "Late deallocation", "Redundant allocation",
	                                "Unused allocation", "Memory leak", "Temporary idleness",
	                                "Dead write", "Late free (host heuristic)", "Overallocation",
	                                "Structured access", "Non-uniform access frequency"};
	return p < STP_PAT_COUNT ? n[p] : "?";
}

const char *stp_det_source_name(unsigned s)
{
	static const char *const n[] = {"none", "markers", "detected"};
	return s <= STP_DET_SRC_DETECTED ? n[s] : "?";
}

/* A rate of bytes (per iteration), 3 significant digits: "4 KiB". */
static const char *fmt_rate_bytes(double v, char *b, size_t n)
{
	if (v >= 1024.0 * 1024.0 * 1024.0)
		snprintf(b, n, "%.3g GiB", v / (1024.0 * 1024.0 * 1024.0));
	else if (v >= 1024.0 * 1024.0)
		snprintf(b, n, "%.3g MiB", v / (1024.0 * 1024.0));
	else if (v >= 1024.0)
		snprintf(b, n, "%.3g KiB", v / 1024.0);
	else
		snprintf(b, n, "%.0f B", v);
	return b;
}

static const char *fmt_ns(uint64_t ns, char *b, size_t n)
{
	if (ns >= 1000000000ull)
		snprintf(b, n, "%.3g s", ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(b, n, "%.3g ms", ns / 1e6);
	else if (ns >= 1000ull)
		snprintf(b, n, "%.3g us", ns / 1e3);
	else
		snprintf(b, n, "%" PRIu64 " ns", ns);
	return b;
}

static const char *fmt_bytes(uint64_t b, char *buf, size_t n)
{
	if (b >= (1ull << 30))
		snprintf(buf, n, "%.1f GiB", b / (double)(1ull << 30));
	else if (b >= (1ull << 20))
		snprintf(buf, n, "%.1f MiB", b / (double)(1ull << 20));
	else if (b >= (1ull << 10))
		snprintf(buf, n, "%.1f KiB", b / (double)(1ull << 10));
	else
		snprintf(buf, n, "%" PRIu64 " B", b);
	return buf;
}

/* " (12 kernels, in forward of iteration 3)" */
static const char *apart(stp_det *d, const stp_det_instance *w, char *buf, size_t len)
{
	char where[160];
	stp_det_span_text(d, w->at_seq, w->until_seq, where, sizeof where);
	snprintf(buf, len, "%" PRIu64 " %s%s%s", w->distance, d->res.logical_unit, where[0] ? ", " : "", where);
	return buf;
}

const char *stp_det_suggestion(stp_det *d, const stp_det_finding *f, char *buf, size_t len)
{
	const stp_det_instance *w = &f->worst;
	char t[32], where[256], ap[224], b1[32], b2[32];
	uint64_t span = w->until_ns > w->at_ns ? w->until_ns - w->at_ns : 0;
	switch (f->pattern) {
	case STP_PAT_EARLY_ALLOC:
		snprintf(buf, len, "Allocate it just before its first use: it sat unused for %s (%s) after allocation.",
		         fmt_ns(span, t, sizeof t), apart(d, w, ap, sizeof ap));
		break;
	case STP_PAT_LATE_DEALLOC:
		snprintf(buf, len, "Free it right after its last use: it stayed allocated for %s (%s) after its last "
		         "access.", fmt_ns(span, t, sizeof t), apart(d, w, ap, sizeof ap));
		break;
	case STP_PAT_REDUNDANT_ALLOC:
		if (w->other_site != UINT32_MAX)
			stp_det_site_where(d, w->other_site, where, sizeof where);
		else
			snprintf(where, sizeof where, "another site");
		snprintf(buf, len, "Reuse the buffer allocated at %s (%" PRIu64 " bytes, done with %" PRIu64 " %s "
		         "earlier) instead of allocating a new one of similar size.", where, w->other_size, w->distance,
		         d->res.logical_unit);
		break;
	case STP_PAT_UNUSED_ALLOC:
		snprintf(buf, len, "Nothing ever touched it (%" PRIu64 " %s ran while it lived): remove the allocation.",
		         w->distance, d->res.logical_unit);
		break;
	case STP_PAT_LEAK: {
		char grow[240] = "";
		if (f->leak_iters >= 2) {
			int64_t span_it = f->leak_last_iter - f->leak_first_iter;
			uint64_t every = (uint64_t)span_it / (f->leak_iters - 1);
			char every_s[48] = "";
			if (every > 1)
				snprintf(every_s, sizeof every_s, ", about every %" PRIu64 " iterations", every);
			char per[32];
			snprintf(grow, sizeof grow, " It grows from iteration %" PRId64 " to %" PRId64 ": kept in %u "
			         "iterations%s, %s per iteration on average.", f->leak_first_iter, f->leak_last_iter,
			         f->leak_iters, every_s, fmt_rate_bytes((double)f->bytes / (double)(span_it + 1), per, sizeof per));
		}
		uint64_t never = f->objects - (f->leak_freed_after < f->objects ? f->leak_freed_after : f->objects);
		if (!f->leak_freed_after)
			snprintf(buf, len, "Never freed: %" PRIu64 " object%s from this call site %s still live at the end.%s "
			         "Free each one when its last user is done with it.", f->objects, f->objects == 1 ? "" : "s",
			         f->objects == 1 ? "is" : "are", grow);
		else
			snprintf(buf, len, "Kept past the loop: %" PRIu64 " object%s from this call site outlived the last "
			         "iteration (%" PRIu64 " freed only at exit, %" PRIu64 " never).%s Drop each reference "
			         "(a list, a dict, a tensor holding its graph) when its last user is done with it.",
			         f->objects, f->objects == 1 ? "" : "s", f->leak_freed_after, never, grow);
		break;
	}
	case STP_PAT_TEMP_IDLE:
		snprintf(buf, len, "Idle for %s (%s) between two uses: offload it to host memory or recompute "
		         "it, or move the two uses closer together.", fmt_ns(span, t, sizeof t), apart(d, w, ap, sizeof ap));
		break;
	case STP_PAT_DEAD_WRITE:
		stp_det_span_text(d, w->at_seq, w->until_seq, where, sizeof where);
		snprintf(buf, len, "%" PRIu64 " write%s to it %s never read (overwritten, or freed unread%s%s): "
		         "remove the write%s nobody reads.", w->distance, w->distance == 1 ? "" : "s",
		         w->distance == 1 ? "was" : "were", where[0] ? ", " : "", where, w->distance == 1 ? "" : "s");
		break;
	case STP_PAT_LATE_FREE:
		snprintf(buf, len, "Freed %s after most objects allocated in the same phase were gone (%" PRIu64
		         " timeline segments later than the other call sites' objects): free it at the end of the phase that last uses it.",
		         fmt_ns(span, t, sizeof t), w->distance);
		break;
	case STP_PAT_OVERALLOC:
		snprintf(buf, len, "Only %s of its %s were ever touched (bytes %" PRIu64 " to %" PRIu64 " at most): "
		         "allocate what is used, or free the rest.", fmt_bytes(w->used_bytes, b1, sizeof b1),
		         fmt_bytes(w->size, b2, sizeof b2), w->used_lo, w->used_hi);
		break;
	case STP_PAT_STRUCTURED:
		snprintf(buf, len, "Each of %" PRIu64 " %s touched its own part of it and no part was touched twice "
		         "(the largest part %s of %s): allocate one buffer of the largest part and reuse it for "
		         "each, or allocate each part just before its use and free it after.", w->distance,
		         d->res.logical_unit, fmt_bytes(w->used_bytes, b1, sizeof b1), fmt_bytes(w->size, b2, sizeof b2));
		break;
	case STP_PAT_NONUNIFORM:
		snprintf(buf, len, "Bytes %" PRIu64 " to %" PRIu64 " (%s of %s) were touched by %" PRIu64 " %s, the "
		         "rest by %.1f on average: keep the hot part in a buffer of its own (shared memory, or an "
		         "L2-persisting window) and allocate the cold part only around its uses.", w->used_lo, w->used_hi,
		         fmt_bytes(w->used_bytes, b1, sizeof b1), fmt_bytes(w->size, b2, sizeof b2), w->hot_apis,
		         d->res.logical_unit, w->cold_apis);
		break;
	default:
		snprintf(buf, len, "-");
	}
	return buf;
}
