/*
 * report_text.c - the text report: what a terminal user reads first.
 * Sections in order: the trace (and whether it is whole), memory per space
 * with the peak and where it fell, iterations and phases, classes, the top
 * call sites by bytes live at the peak with their call paths, then the
 * findings, worst (most bytes x time wasted) first, and the patterns the
 * trace cannot show.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "report_fmt.h"
#include "report_internal.h"
#include "stprof/report.h"

/* this report and the ranks' start so (stprof/outfile.h) */
const stp_outkind stp_outkind_report_text = {"stprof text report", "stprof report: ", 15, NULL};

void stp_report_options_default(stp_report_options *o)
{
	memset(o, 0, sizeof *o);
	o->top = 10;
	o->frames = 4;
	o->width = 100;
	o->viewer_objects = 1000000;
	o->viewer_accesses = 32;
}

/* The path of a site, as many frames as asked; below it, the line of an
 * installed package's model it went through (a Hugging Face model run
 * from the user's trainer.train(): stp_det_site_package_line).  The sites
 * [lo, hi) are the others of its table: a path that reads as one of theirs
 * gets the frame that tells them apart (the nearest 32 on either side are
 * compared). */
static void print_path(stp_det *d, FILE *f, uint32_t site, unsigned nframes, const char *indent, uint32_t lo,
                       uint32_t hi)
{
	stp_det_frame fr[REPORT_MAX_FRAMES], other[REPORT_MAX_FRAMES];
	if (nframes > REPORT_MAX_FRAMES)
		nframes = REPORT_MAX_FRAMES;
	uint32_t n = stp_det_site_frames(d, site, fr, nframes ? nframes : 1);
	char b[512], t[512];
	if (!n) {
		fprintf(f, "%s(no call path recorded)\n", indent);
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%s%s %s\n", indent, i ? "<-" : "at", stp_det_frame_text(&fr[i], b, sizeof b));
	/* a library's model (transformers, timm...) run from one line of the
	 * user's: the line in the model that made it */
	stp_det_frame pkg;
	char in[512] = "";
	if (stp_det_site_package_line(d, site, &pkg)) {
		stp_det_frame_text(&pkg, in, sizeof in);
		fprintf(f, "%s   (in %s)\n", indent, in);
	}
	if (site > lo + 32)
		lo = site - 32;
	if (hi > site + 33)
		hi = site + 33;
	for (uint32_t j = lo; j < hi; j++) {
		if (j == site)
			continue;
		uint32_t m = stp_det_site_frames(d, j, other, nframes ? nframes : 1), i = 0;
		for (; m == n && i < n; i++)
			if (strcmp(stp_det_frame_text(&fr[i], b, sizeof b), stp_det_frame_text(&other[i], t, sizeof t)))
				break;
		if (m != n || i < n)
			continue;
		stp_det_frame diff;
		if (stp_det_site_difference(d, site, j, &diff) && strcmp(stp_det_frame_text(&diff, b, sizeof b), in))
			fprintf(f, "%s   (through %s)\n", indent, b);
		break;
	}
}

/* One line for each reason some of the sites [0, rows) show no line of
 * the program (most bytes first; at most three). */
void report_text_no_line(stp_det *d, const stp_det_result *r, uint32_t rows, FILE *f, const char *indent)
{
	const char *why[3] = {0};
	uint64_t bytes[3] = {0}, total = 0;
	uint32_t sites[3] = {0}, nwhy = 0;
	for (uint32_t i = 0; i < rows && i < r->nsites; i++) {
		stp_det_site s;
		stp_det_site_get(d, i, &s);
		total += s.peak_bytes;
		const char *w = stp_det_site_no_line(d, i);
		if (!w)
			continue;
		uint32_t k = 0;
		while (k < nwhy && strcmp(why[k], w))
			k++;
		if (k == nwhy && nwhy == 3)
			continue;
		if (k == nwhy)
			why[nwhy++] = w;
		bytes[k] += s.peak_bytes;
		sites[k]++;
	}
	for (uint32_t k = 0; k < nwhy; k++) {
		char b[64];
		fprintf(f, "%s(no line of the program for %u of these sites, %s at the peak", indent, sites[k],
		        rf_bytes(bytes[k], b, sizeof b));
		if (total)
			fprintf(f, ", %.1f%%", 100.0 * (double)bytes[k] / (double)total);
		fprintf(f, ": %s)\n", why[k]);
	}
}

static void section_trace(stp_det *d, const stp_det_result *r, FILE *f)
{
	char b1[64], b2[64], b3[512];
	fprintf(f, "stprof report: %s\n", r->path);
	if (r->command[0]) {
		fprintf(f, "  command   %s", r->command);
		/* an imported snapshot names no process */
		const char *sep = r->pid || r->rank >= 0 ? " (" : "";
		if (r->pid)
			fprintf(f, "%spid %u", sep, r->pid), sep = ", ";
		if (r->rank >= 0)
			fprintf(f, "%srank %d", sep, r->rank);
		if (r->rank >= 0 && r->world_size >= 0)
			fprintf(f, " of %d", r->world_size);
		if (r->rank >= 0 && r->local_rank >= 0)
			fprintf(f, ", local rank %d", r->local_rank);
		fputs(r->pid || r->rank >= 0 ? ")\n" : "\n", f);
	}
	fprintf(f, "  trace     %s\n", rf_end(r, b3, sizeof b3));
	if (r->error)
		fprintf(f, "  ERROR     %s\n            (events before the damage are reported)\n", r->error);
	fprintf(f, "  events    %s over %s: %s allocs, %s frees, %s API, %s markers\n", rf_count(r->events, b1, sizeof b1),
	        rf_ns(r->duration_ns, b2, sizeof b2), rf_count(r->by_type[STP_EV_ALLOC], b3, 64),
	        rf_count(r->by_type[STP_EV_FREE], b3 + 64, 64), rf_count(r->api_events, b3 + 128, 64),
	        rf_count(r->marker_events, b3 + 192, 64));
	if (r->lost_events)
		fprintf(f, "  WARNING   %s events were lost while recording\n", rf_count(r->lost_events, b1, sizeof b1));
	if (r->has_window) {
		char w1[64], w2[64];
		rf_ns(r->window_begin_ns, w1, sizeof w1);
		if (r->window_end_ns == UINT64_MAX)
			snprintf(w2, sizeof w2, "the end");
		else
			rf_ns(r->window_end_ns, w2, sizeof w2);
		fprintf(f, "  window    %s to %s: the peak, the call sites live at it and the findings are\n"
		           "            this window's; classes, totals and allocator models the whole trace's\n",
		        w1, w2);
	}
	if (r->unknown_frees)
		fprintf(f, "  note      %s frees of addresses not allocated in the trace (ignored)\n",
		        rf_count(r->unknown_frees, b1, sizeof b1));
	if (r->reused_live)
		fprintf(f, "  note      %s allocations at an address still live (a lost free; the old object ends there)\n",
		        rf_count(r->reused_live, b1, sizeof b1));
	if (r->small_ignored)
		fprintf(f, "  note      %s allocations under --min-size ignored\n", rf_count(r->small_ignored, b1, sizeof b1));
	if (r->huge_ignored)
		fprintf(f, "  note      %s allocations of an impossible size (over 64 PiB) ignored\n",
		        rf_count(r->huge_ignored, b1, sizeof b1));
	if (r->segments_dropped)
		fprintf(f, "  note      an inconsistent snapshot: %s allocations lay outside its segments, which are not\n"
		           "            the allocator's whole state; they were dropped at import (no reserved bytes or efficiency)\n",
		        rf_count(r->segments_dropped, b1, sizeof b1));
	fputc('\n', f);
}

/* One refused request: what it asked for, when (and in which iteration),
 * then what was live (and reserved) and its line, two lines. */
static void refusal_lines(stp_det *d, const stp_det_result *r, const stp_det_refusal *x, FILE *f)
{
	char b[3][64], at[1100] = "", t0[512], t1[512], when[64] = "";
	stp_det_frame fr[2];
	uint32_t n = x->stack ? stp_det_stack_frames(d, x->stack, fr, 2) : 0;
	if (n)
		snprintf(at, sizeof at, ", at %s%s%s", stp_det_frame_text(&fr[0], t0, sizeof t0), n > 1 ? " <- " : "",
		         n > 1 ? stp_det_frame_text(&fr[1], t1, sizeof t1) : "");
	const stp_det_timeline *t = &r->timeline;
	for (uint32_t i = 0; i < t->niterations; i++)
		if (t->iterations[i].begin_seq <= x->seq && x->seq < t->iterations[i].end_seq)
			snprintf(when, sizeof when, " (iteration %" PRId64 ")", t->iterations[i].index);
	fprintf(f, "asked for %s at %s%s\n", rf_bytes(x->bytes, b[0], 64), rf_ns(x->ns, b[1], 64), when);
	if (x->reserved) /* the allocator's segments: what it held, free or not */
		fprintf(f, "            with %s live of %s reserved%s\n", rf_bytes(x->live, b[0], 64),
		        rf_bytes(x->reserved, b[2], 64), at);
	else
		fprintf(f, "            with %s live%s\n", rf_bytes(x->live, b[0], 64), at);
}

/* The allocator models' answer for a device's first refused request
 * (allocsim_device_report.refusal_probes), when it names a setting or no
 * model serves it. */
static void refused_models(const stp_det_result *r, const stp_det_space *s, FILE *f)
{
	char b[3][64], conf[256];
	for (size_t i = 0; i < r->sim->ndevices; i++) {
		const allocsim_device_report *dr = &r->sim->devices[i];
		int fix = dr->device == s->device && !dr->host_fallback ? allocsim_refusal_fix(dr, conf, sizeof conf) : -1;
		if (fix == -1)
			continue;
		fprintf(f, "            the models, within %s%s%s: ", dr->refusal_capacity_given ? "--capacity " : "the ",
		        rf_bytes(dr->refusal_capacity, b[0], 64), dr->refusal_capacity_given ? "" : " the device had given");
		const allocsim_refusal_probe *as_run = &dr->refusal_probes[0];
		if (fix >= 0)
			fprintf(f, "PyTorch's allocator as run\n"
			           "            refuses it too (%s free in its segments, the largest block %s),\n"
			           "            with PYTORCH_ALLOC_CONF=%s it serves it\n",
			        rf_bytes(as_run->free_bytes, b[1], 64), rf_bytes(as_run->largest_free, b[2], 64), conf);
		else if (dr->refusal_capacity_given)
			fprintf(f, "none serves it: no setting\n"
			           "            helps; it needs fewer bytes live or a smaller request\n");
		else
			fprintf(f, "none serves it\n"
			           "            (the device may have had up to the request more: --capacity decides)\n");
	}
}

/* A space's requests refused for want of memory (REFUSED events): how
 * many, the first and, when it asked for other bytes or from another
 * path (a batch-size finder's refusals, then the error that ended the
 * run), the last. */
static void memory_refused(stp_det *d, const stp_det_result *r, const stp_det_space *s, FILE *f)
{
	char b[64];
	fprintf(f, "  refused   %s request%s for want of memory; the first ", rf_count(s->refused, b, sizeof b),
	        s->refused == 1 ? "" : "s");
	refusal_lines(d, r, &s->refused_first, f);
	if (s->refused > 1 && (s->refused_last.bytes != s->refused_first.bytes ||
	                       s->refused_last.stack != s->refused_first.stack)) {
		fputs("            the last ", f);
		refusal_lines(d, r, &s->refused_last, f);
	}
	if (r->sim && s->kind == STP_MEM_DEVICE)
		refused_models(r, s, f);
}

/* Requests the allocator served only after its own attempt was refused
 * (stp_det_space.retried): it freed its cached segments and asked again,
 * which costs a device synchronization and the cache. */
static void memory_retried(stp_det *d, const stp_det_result *r, const stp_det_space *s, FILE *f)
{
	char b[2][64];
	if (s->retried) {
		fprintf(f, "  retried   %s request%s served only after the allocator's own request for memory was\n"
		           "            refused and it freed its cached segments to ask again (each time it waits for\n"
		           "            the device and loses its cache); the first ",
		        rf_count(s->retried, b[0], 64), s->retried == 1 ? "" : "s");
		refusal_lines(d, r, &s->retried_first, f);
	}
	if (s->retry_unknown)
		fprintf(f, "%s%s %srequest%s had the allocator's own request refused; the trace ends before\n"
		           "            it served or refused %s%s\n",
		        s->retried ? "            (" : "  retried   ", rf_count(s->retry_unknown, b[1], 64),
		        s->retried ? "more " : "", s->retry_unknown == 1 ? "" : "s", s->retry_unknown == 1 ? "it" : "them",
		        s->retried ? ")" : "");
}

static void section_memory(stp_det *d, const stp_det_result *r, FILE *f)
{
	char b[6][64];
	if (!r->nspaces) {
		fprintf(f, "Memory: no allocations in the trace.\n\n");
		return;
	}
	for (uint32_t i = 0; i < r->nspaces; i++) {
		const stp_det_space *s = &r->spaces[i];
		fprintf(f, "Memory (%s)%s\n", rf_space(s, b[0], sizeof b[0]), (int32_t)i == r->primary && r->nspaces > 1 ? ", analyzed in depth" : "");
		fprintf(f, "  objects   %s allocated (%s), %s freed, %s %s (%s)\n",
		        rf_count(s->allocs, b[1], 64), rf_bytes(s->bytes_allocated, b[2], 64), rf_count(s->frees, b[3], 64),
		        rf_count(s->live_objects_end, b[4], 64),
		        r->whole && r->end_reason == STP_END_SNAPSHOT ? "live at the snapshot" : "still live at the end",
		        rf_bytes(s->live_bytes_end, b[5], 64));
		if (s->sample_interval) {
			/* one standard error of a byte sum B under Poisson sampling
			 * at interval R is at most sqrt(R * B) (docs/record.md) */
			double se = s->peak_bytes ? sqrt((double)s->sample_interval / (double)s->peak_bytes) : 0;
			fprintf(f, "  sampled   %s of them stand for about %s allocations (host-heap sampling: one per %s\n"
			        "            allocated below %s, every larger one, every one in the loop's first iterations);\n"
			        "            bytes are estimates (the peak within about %.1f%%, one standard error;\n"
			        "            stprof record --full records every allocation)\n",
			        rf_count(s->sampled_allocs, b[1], 64), rf_count((uint64_t)(s->est_allocs + 0.5), b[2], 64),
			        rf_bytes(s->sample_interval, b[3], 64), rf_bytes(s->sample_interval, b[4], 64), 100.0 * se);
		}
		if (r->has_window && !s->peak_bytes) /* not "0 B live in 0 objects at 0 ns" */
			fprintf(f, "  peak      none: nothing of this space was live in the window");
		else
			fprintf(f, "  peak      %s live in %s %sobjects at %s%s", rf_bytes(s->peak_bytes, b[1], 64),
			        rf_count(s->peak_objects, b[2], 64), s->sample_interval ? "recorded " : "",
			        rf_ns(s->peak_ns, b[3], 64), s->peak_at_window_begin ? ", when the window opened" : "");
		if ((int32_t)i == r->primary && s->peak_bytes) {
			char w[256];
			if (*rf_peak_where(r, w, sizeof w))
				fprintf(f, " (%s)", w);
		}
		fprintf(f, "\n");
		if (s->peak_like >= 0 && s->peak_bytes)
			fprintf(f, "            in an iteration kept as counters: its objects are those of iteration %" PRId64
			           ", which it repeats,\n            at that one's highest (%s)\n",
			        s->peak_like, rf_bytes(s->peak_like_bytes, b[1], 64));
		/* PyTorch's allocator recorded: its segments hold its tensors, not
		 * what other libraries took with cudaMalloc themselves */
		int split = s->pool_allocs && s->other_allocs;
		if (s->reserved_peak && s->over_reserved)
			fprintf(f, "  reserved  %s at most (allocator segments); efficiency not given: %s allocations took\n"
			           "            the bytes allocated above the segments' (they are not the allocator's whole state)\n",
			        rf_bytes(s->reserved_peak, b[1], 64), rf_count(s->over_reserved, b[2], 64));
		else if (s->reserved_peak)
			fprintf(f, "  reserved  %s at most (allocator segments); efficiency %.1f%%%s\n",
			        rf_bytes(s->reserved_peak, b[1], 64),
			        100.0 * (double)(s->pool_allocs ? s->pool_peak_bytes : s->peak_bytes) / (double)s->reserved_peak,
			        s->pool_allocs ? " (tensor peak over it)" : "");
		if (split)
			fprintf(f, "  outside   %s allocations (%s) not by the framework's allocator (cuBLAS's workspaces, ...): "
			           "%s live at most; tensors %s at most\n",
			        rf_count(s->other_allocs, b[1], 64), rf_bytes(s->other_bytes_allocated, b[2], 64),
			        rf_bytes(s->other_peak_bytes, b[3], 64), rf_bytes(s->pool_peak_bytes, b[4], 64));
		if (s->refused)
			memory_refused(d, r, s, f);
		if (s->retried || s->retry_unknown)
			memory_retried(d, r, s, f);
	}
	fputc('\n', f);
}

/* What the collector folded: how many iterations, what they stand for,
 * which ones were written in full (ranges, the first few). */
static void section_folded(const stp_det_result *r, FILE *f)
{
	const stp_det_timeline *t = &r->timeline;
	char b[3][64], full[256] = "", likes[128] = "";
	size_t n = 0, nl = 0;
	unsigned ranges = 0, nlikes = 0;
	int64_t seen[4];
	for (uint32_t i = 0; i < t->niterations; i++) {
		const stp_det_iteration *it = &t->iterations[i];
		if (it->folded) {
			int known = 0;
			for (unsigned k = 0; k < nlikes && k < 4; k++)
				known |= seen[k] == it->like;
			if (!known && nlikes < 4) {
				seen[nlikes++] = it->like;
				nl += (size_t)snprintf(likes + nl, sizeof likes - nl, "%s%" PRId64, nlikes > 1 ? ", " : "", it->like);
			}
			continue;
		}
		uint32_t j = i;
		while (j + 1 < t->niterations && !t->iterations[j + 1].folded)
			j++;
		if (ranges++ < 8 && n < sizeof full - 40) {
			if (j > i)
				n += (size_t)snprintf(full + n, sizeof full - n, "%s%" PRId64 "-%" PRId64, ranges > 1 ? ", " : "",
				                      it->index, t->iterations[j].index);
			else
				n += (size_t)snprintf(full + n, sizeof full - n, "%s%" PRId64, ranges > 1 ? ", " : "", it->index);
		}
		i = j;
	}
	if (ranges > 8 && n < sizeof full - 8)
		snprintf(full + n, sizeof full - n, ", ...");
	fprintf(f, "  folded    %s steady iterations kept as counters by the collector, each like iteration%s %s\n"
	        "            (%s events, %s allocations: in the totals, not in the call sites, classes and\n"
	        "            findings); every event of iterations %s (stprof record --full keeps all)\n",
	        rf_count(r->folded_iterations, b[0], 64), nlikes > 1 ? "s" : "", likes,
	        rf_count(r->folded_events, b[1], 64), rf_count(r->folded_allocs, b[2], 64), full);
}

static void section_timeline(const stp_det_result *r, FILE *f)
{
	const stp_det_timeline *t = &r->timeline;
	char b[3][64];
	if (!t->niterations) {
		fprintf(f, "Iterations: none (%s).\n  Classes need iterations: in Python each optimizer step marks one (a loop\n"
		           "  without an optimizer calls stprof.step()); in C, stprof_iteration_begin/end.\n\n",
		        t->method);
		return;
	}
	fprintf(f, "Iterations: %u %s (confidence %.0f%%)\n", t->niterations,
	        t->iter_source == STP_DET_SRC_MARKERS ? "from markers" : "detected from the allocations",
	        t->confidence * 100);
	fprintf(f, "  how       %s\n", t->method);
	if (t->steady >= 0) {
		const stp_det_iteration *it = &t->iterations[t->steady];
		uint32_t nlike;
		uint64_t med;
		int median = report_steady_median(t, &nlike, &med);
		/* a detailed iteration's time is the recording's: the median's first */
		fprintf(f, "  steady    iteration %" PRId64 ": ", it->index);
		if (!it->detail || !median)
			fprintf(f, "%s%s, ", rf_ns(it->end_ns - it->begin_ns, b[0], 64),
			        it->detail ? " recorded in full detail" : "");
		fprintf(f, "%s allocations, peak %s (%s)\n", rf_count(it->allocs, b[1], 64),
		        rf_bytes(it->peak_bytes, b[2], 64), t->steady_why);
		if (median)
			fprintf(f, "            %s iterations with its allocation count: median %s\n", rf_count(nlike, b[0], 64),
			        rf_ns(med, b[1], 64));
		if (median && it->detail)
			fprintf(f, "            (iteration %" PRId64 " itself: %s, recorded in full detail, as the loop's first "
			           "iterations are; the median leaves those out)\n",
			        it->index, rf_ns(it->end_ns - it->begin_ns, b[0], 64));
		if (it->nphases) {
			fprintf(f, "  phases   ");
			for (uint32_t i = 0; i < it->nphases && i < 12; i++) {
				const stp_det_phase *p = &t->phases[it->first_phase + i];
				fprintf(f, " %s", p->name);
				if (p->micro_batch)
					fprintf(f, "[%" PRId64 "]", p->micro_batch);
				if (p->inner) /* nested phases make no window of their own */
					fprintf(f, " (+%s)", p->inner);
			}
			fprintf(f, "%s (%s)\n", it->nphases > 12 ? " ..." : "", stp_det_source_name(t->phase_source));
		}
	}
	if (r->folded_iterations)
		section_folded(r, f);
	fputc('\n', f);
}

static void section_classes(const stp_det_result *r, FILE *f)
{
	char b[4][64];
	uint64_t tot = 0, totp = 0;
	for (unsigned c = 0; c < STP_CLASS_COUNT; c++)
		tot += r->class_bytes[c], totp += r->peak_class_bytes[c];
	if (!tot || tot == r->class_bytes[STP_CLASS_UNCLASSIFIED])
		return; /* no iterations: no classes */
	/* the classes are the analyzed space's objects (they sum to its figures) */
	char sp[64] = "", head[96] = "Classes";
	if (r->primary >= 0 && r->nspaces > 1)
		snprintf(head, sizeof head, "Classes (%s)", rf_space(&r->spaces[r->primary], sp, sizeof sp));
	fprintf(f, "%-17s objects   bytes allocated    live at peak\n", head);
	for (unsigned c = 0; c < STP_CLASS_COUNT; c++) {
		if (!r->class_objects[c])
			continue;
		fprintf(f, "  %-12s %12s %12s %5.1f%% %10s %5.1f%%\n", stp_det_class_name(c),
		        rf_count(r->class_objects[c], b[0], 64), rf_bytes(r->class_bytes[c], b[1], 64),
		        100.0 * (double)r->class_bytes[c] / (double)tot, rf_bytes(r->peak_class_bytes[c], b[2], 64),
		        totp ? 100.0 * (double)r->peak_class_bytes[c] / (double)totp : 0.0);
	}
	fputc('\n', f);
}

static void section_sites(stp_det *d, const stp_det_result *r, const stp_report_options *o, FILE *f)
{
	if (!r->nsites || r->primary < 0)
		return;
	char b[4][64], sp[32];
	fprintf(f, "Top call sites by bytes live at the peak (%s)\n", rf_space(&r->spaces[r->primary], sp, sizeof sp));
	/* the wrappers named are those a user can act on: the framework's
	 * (a CUDA runtime linked into the program, the driver's, the
	 * sanitizer's) are folded out of every path anyway, and the header
	 * would show them after all */
	stp_det_frame w[8];
	uint32_t nall = stp_det_wrappers(d, w, 8), nw = 0;
	for (uint32_t i = 0; i < nall; i++)
		if (!stp_det_frame_hidden(d, w[i].ip))
			w[nw++] = w[i];
	if (nw) {
		char t[512];
		fprintf(f, "  (paths are shown below the allocation wrapper%s these sites go through: ", nw > 1 ? "s" : "");
		for (uint32_t i = 0; i < nw; i++)
			fprintf(f, "%s%s", i ? " <- " : "", stp_det_frame_text(&w[i], t, sizeof t));
		fprintf(f, ")\n");
	}
	if (o->group) {
		report_text_grouped(d, r, o, f);
		return;
	}
	fprintf(f, "   #   live@peak  objects    allocs  bytes allocated  class\n");
	uint32_t rows = 0; /* the sites listed: 0 .. rows-1 */
	while (rows < r->nsites && rows < o->top) {
		stp_det_site site;
		stp_det_site_get(d, rows, &site);
		if (!site.peak_bytes && rows)
			break;
		rows++;
	}
	unsigned shown = 0, nlib = 0;
	uint64_t lib_bytes = 0;
	for (uint32_t i = 0; i < r->nsites && shown < o->top; i++) {
		stp_det_site site;
		stp_det_site_get(d, i, &site);
		const stp_det_site *s = &site;
		if (!s->peak_bytes && shown)
			break;
		shown++;
		/* a library's own buffer (cuBLAS's workspace) is not the
		 * program's: said in the class column, counted below */
		int lib = stp_det_site_library(d, i);
		nlib += lib;
		lib_bytes += lib ? s->peak_bytes : 0;
		fprintf(f, "  %2u %11s %8s %9s %16s  %s\n", shown, rf_bytes(s->peak_bytes, b[0], 64),
		        rf_count(s->peak_objects, b[1], 64), rf_count(s->allocs, b[2], 64),
		        rf_bytes(s->bytes_allocated, b[3], 64), lib ? "library" : stp_det_class_name(s->dominant));
		print_path(d, f, i, o->frames, "      ", 0, rows);
	}
	if (r->nsites > shown)
		fprintf(f, "  (%u more call sites; --top N shows more, --group function|line|module sums them)\n",
		        r->nsites - shown);
	if (nlib)
		fprintf(f, "  (%u of these sites, %s at the peak, are a library's own buffers, not the program's: cuBLAS's\n"
		           "   or cuDNN's workspaces and the like, made at the line whose call first needed them (one per\n"
		           "   thread and stream) and kept by the library for the process)\n",
		        nlib, rf_bytes(lib_bytes, b[0], 64));
	report_text_no_line(d, r, rows, f, "  ");
	fputc('\n', f);
}

/* Bytes by module (module markers: the Python shim's nn.Module names). */
static void section_modules(stp_det *d, const stp_det_result *r, const stp_report_options *o, FILE *f)
{
	const stp_det_module *m;
	uint32_t n = stp_det_modules(d, &m);
	if (!n || r->primary < 0)
		return;
	char b[2][64], sp[32];
	const stp_det_space *s = &r->spaces[r->primary];
	fprintf(f, "Bytes by module, allocated while it ran or by its backward (%s)\n", rf_space(s, sp, sizeof sp));
	if (s->folded_allocs) /* a folded iteration keeps no module markers */
		fprintf(f, "  (iterations written in full and what lies outside them; the %s allocations\n"
		           "  of folded iterations repeat them)\n",
		        rf_count(s->folded_allocs, b[0], 64));
	fprintf(f, "     bytes allocated    allocs  module\n");
	uint32_t i = 0;
	for (; i < n && i < o->top; i++)
		fprintf(f, "  %18s %9s  %s\n", rf_bytes(m[i].bytes, b[0], 64), rf_count(m[i].allocs, b[1], 64), m[i].name);
	if (n > i)
		fprintf(f, "  (%u more modules; --top N shows more)\n", n - i);
	fputc('\n', f);
}

/* How the accesses were recorded, and what that leaves out. */
static void accesses_line(const stp_det_result *r, FILE *f)
{
	char b[4][64];
	const __typeof__(r->acc) *a = &r->acc;
	if (a->sanitizer == 1) {
		fprintf(f, "  accesses: exact (Compute Sanitizer): %s kernel launches, %s with the objects they touched",
		        rf_count(a->launches, b[0], 64), a->sampled == a->launches ? "all" : rf_count(a->sampled, b[1], 64));
		if (a->timed < a->sampled)
			fprintf(f, ";\n    %s without device times (their host launch times instead)",
			        rf_count(a->sampled - a->timed, b[2], 64));
		fprintf(f, ";\n    no CUPTI under it (one tools subscription per process): copies and sets carry host "
		           "times\n");
		if (a->unread || a->dropped)
			fprintf(f, "    lost: %s launches whose accesses could not be read back, %s objects past an event's "
			           "range limit\n", rf_count(a->unread, b[0], 64), rf_count(a->dropped, b[1], 64));
		if (a->unplaced)
			fprintf(f, "    %s launches made accesses stprof could not place (TMA tensor maps it could not read): "
			           "%s objects live then are not judged\n", rf_count(a->unplaced, b[0], 64),
			        rf_count(a->unsure_objects, b[1], 64));
	} else if (a->sanitizer < 0) {
		fprintf(f, "  accesses: --accesses=exact could not start (stprof.sanitizer %d: docs/accesses.md)\n",
		        (int)a->sanitizer);
	}
}

static void section_findings(stp_det *d, const stp_det_result *r, const stp_report_options *o, FILE *f)
{
	char b[4][64], sug[1024];
	fprintf(f, "Findings, worst first (bytes x time wasted)\n");
	accesses_line(r, f);
	if (r->nfindings)
		fprintf(f, "  (waste: bytes held needlessly times for how long, e.g. 2 MiB*s = 2 MiB for a\n"
		           "  second; distance: how far the object sits from where it should be, in %s\n"
		           "  run in between, or for late frees in segments, the stretches between phase boundaries)\n",
		        r->logical_unit);
	if (!r->nfindings)
		fprintf(f, "  none\n");
	for (uint32_t i = 0; i < r->nfindings && i < o->top; i++) {
		const stp_det_finding *x = &r->findings[i];
		fprintf(f, "  %u. %s: %s object%s, %s, waste %s", i + 1, stp_det_pattern_title(x->pattern),
		        rf_count(x->objects, b[0], 64), x->objects == 1 ? "" : "s", rf_bytes(x->bytes, b[1], 64),
		        rf_byte_time(x->waste_byte_ns, b[2], 64));
		if (x->pattern == STP_PAT_DEAD_WRITE)
			fprintf(f, ", up to %" PRIu64 " unread write%s per object", x->max_distance,
			        x->max_distance == 1 ? "" : "s");
		else if (x->pattern == STP_PAT_OVERALLOC)
			fprintf(f, ", %" PRIu64 "%% of it never touched", x->worst.size ? 100 - 100 * x->worst.used_bytes /
			                                                                        x->worst.size : 0);
		else if (x->pattern == STP_PAT_STRUCTURED)
			fprintf(f, ", %" PRIu64 " %s, each its own part", x->worst.distance, r->logical_unit);
		else if (x->pattern == STP_PAT_NONUNIFORM)
			fprintf(f, ", %" PRIu64 "%% of it touched by %" PRIu64 " %s, the rest by %.1f",
			        x->worst.size ? (100 * x->worst.used_bytes + x->worst.size - 1) / x->worst.size : 0,
			        x->worst.hot_apis, r->logical_unit, x->worst.cold_apis);
		else if (x->max_distance && x->pattern != STP_PAT_LEAK)
			fprintf(f, ", distance %" PRIu64 " %s", x->max_distance,
			        x->pattern == STP_PAT_LATE_FREE ? "segments" : r->logical_unit);
		fputc('\n', f);
		print_path(d, f, x->site, o->frames, "       ", 0, 0);
		fprintf(f, "       -> %s\n", stp_det_suggestion(d, x, sug, sizeof sug));
	}
	if (r->nfindings > o->top)
		fprintf(f, "  (%u more findings; --top N shows more)\n", r->nfindings - o->top);
	if (r->nexpected) {
		/* what the structure explains: one line each, apart */
		fprintf(f, "  expected, not counted as findings (%u):\n", r->nexpected);
		for (uint32_t i = 0; i < r->nexpected && i < o->top; i++) {
			const stp_det_finding *x = &r->expected[i];
			char where[256];
			fprintf(f, "    %s: %s object%s, %s at %s\n      (%s)\n", stp_det_pattern_title(x->pattern),
			        rf_count(x->objects, b[0], 64), x->objects == 1 ? "" : "s", rf_bytes(x->bytes, b[1], 64),
			        stp_det_site_where(d, x->site, where, sizeof where), stp_det_expect_text(x->expected));
		}
		if (r->nexpected > o->top)
			fprintf(f, "    (%u more; --top N shows more)\n", r->nexpected - o->top);
	}
	if (r->leaks_set_aside)
		fprintf(f, "  set aside: %s never-freed object%s (%s) not judged leaks: %s\n",
		        rf_count(r->leaks_set_aside, b[0], 64), r->leaks_set_aside == 1 ? "" : "s",
		        rf_bytes(r->leaks_set_aside_bytes, b[1], 64),
		        r->timeline.niterations
		            ? "their sites do not keep leaking from iteration\n    to iteration (caches filled once, "
		              "libc's and the interpreter's lifetime buffers, teardown)"
		            : "host memory live at exit, without iterations to\n    tell a leak from libc's and the "
		              "interpreter's lifetime buffers");
	int any = 0;
	for (unsigned p = 0; p < STP_PAT_COUNT; p++)
		if (!r->pattern_available[p] && p != STP_PAT_LATE_FREE) {
			fprintf(f, "%s%s", any ? ", " : "  unavailable: ", stp_det_pattern_name(p));
			any = 1;
		}
	if (any)
		fprintf(f, "\n    (the trace has no API access events: these patterns are not guessed)\n");
	if (!r->pattern_available[STP_PAT_LATE_FREE] && !r->have_accesses)
		fprintf(f, "  unavailable: late-free (it needs iterations)\n");
}

/* A CPU-only trace: the models replayed host allocations as a what-if; a
 * few lines say what they found, --models-detail prints all of it. */
/* What a what-if replayed: a PyTorch CPU run's tensors (all of them), or
 * the host heap's allocations of at least sim_min_size. */
static int models_on_tensors(const stp_det_result *r) { return r->primary >= 0 && r->spaces[r->primary].tensors; }

static void models_summary(const stp_det_result *r, FILE *f)
{
	char b[3][64];
	int xla = r->sim->ndevices && r->sim->devices[0].xla;
	int tensors = models_on_tensors(r);
	fprintf(f, "\nAllocator models (what-if: these %s on a GPU; docs/allocator-models.md)\n",
	        xla ? "JAX CPU buffers" : tensors ? "CPU tensors" : "host allocations");
	for (size_t i = 0; i < r->sim->ndevices; i++) {
		const allocsim_device_report *dr = &r->sim->devices[i];
		if (dr->xla)
			fprintf(f, "  %s buffers replayed; peak reserved by model\n", rf_count(r->sim_fed_allocs, b[0], 64));
		else if (tensors)
			fprintf(f, "  %s CPU tensor allocations replayed; peak reserved by model\n",
			        rf_count(r->sim_fed_allocs, b[0], 64));
		else
			fprintf(f, "  %s host allocations of %s or more replayed; peak reserved by model\n",
			        rf_count(r->sim_fed_allocs, b[0], 64), rf_bytes(r->sim_min_size, b[1], 64));
		fprintf(f, "  (reserved: what the allocator would hold from the device; used: the share of it\n"
		           "  the program's objects fill at that peak):\n");
		for (size_t k = 0; k < dr->nresults; k++)
			fprintf(f, "    %-40s %10s reserved, %5.1f%% used\n", dr->results[k].label,
			        rf_bytes(dr->results[k].peak_reserved, b[2], 64), 100 * dr->results[k].efficiency);
	}
	fprintf(f, "  (--models-detail: the full tables, the worst moment and the recommended settings;\n"
	           "  --no-models: none of it)\n");
}

static void section_models(stp_det *d, const stp_det_result *r, const stp_report_options *o, FILE *f)
{
	char b[3][64];
	if (r->sim_error) {
		fprintf(f, "\nAllocator models: not run (%s)\n", r->sim_error);
		return;
	}
	if (!r->sim)
		return;
	if (r->sim_host && r->sim->ndevices && !o->models_detail) {
		models_summary(r, f);
		return;
	}
	fprintf(f, "\nAllocator models (docs/allocator-models.md)\n");
	fprintf(f, "  (M_a: the most bytes allocated at once, rounded as the allocator rounds them;\n"
	           "  M_r: the most bytes reserved from the device; E = M_a / M_r, the efficiency;\n"
	           "  1-E: fragmentation; segs: device allocations (cudaMalloc calls or mappings))\n");
	if (!r->sim->ndevices)
		fprintf(f, "  no allocations to replay\n");
	else if (r->sim_host && r->sim->devices[0].xla)
		fprintf(f, "  fed       %s of JAX's CPU buffers, as if they were a GPU's\n", rf_count(r->sim_fed_allocs, b[0], 64));
	else if (r->sim_host && models_on_tensors(r))
		fprintf(f, "  fed       %s CPU tensor allocations, every size (what-if: as if made on a GPU)\n",
		        rf_count(r->sim_fed_allocs, b[0], 64));
	else if (r->sim_host)
		fprintf(f, "  fed       %s host allocations of %s or more; %s smaller ones left out\n"
		           "            (interpreter and library objects a GPU allocator never sees; --sim-min-size)\n",
		        rf_count(r->sim_fed_allocs, b[0], 64), rf_bytes(r->sim_min_size, b[1], 64),
		        rf_count(r->sim_skipped, b[2], 64));
	else {
		int actual = 0, xla = 0;
		for (size_t i = 0; i < r->sim->ndevices; i++) {
			actual |= r->sim->devices[i].actual.present;
			xla |= r->sim->devices[i].xla;
		}
		fprintf(f, "  fed       %s device allocations%s\n", rf_count(r->sim_fed_allocs, b[0], 64),
		        actual && xla ? "; XLA's own statistics (memory_stats) give the actual figures"
		        : actual      ? "; the allocator's segment events give the actual figures"
		        : xla         ? " (no XLA statistics in the trace: no actual figures)"
		                      : " (no segment events in the trace: no actual figures)");
		if (r->sim_skipped_other)
			fprintf(f, "            (%s; %s made by other libraries with cudaMalloc left out)\n",
			        xla ? "JAX's buffers" : "PyTorch's allocator's", rf_count(r->sim_skipped_other, b[0], 64));
	}
	if (r->sim->ndevices)
		allocsim_report_print(f, r->sim, stp_det_stack_name, d);
}

int stp_report_text(stp_det *d, const stp_report_options *o, FILE *f)
{
	stp_report_options def;
	if (!o) {
		stp_report_options_default(&def);
		o = &def;
	}
	const stp_det_result *r = stp_det_result_of(d);
	section_trace(d, r, f);
	section_memory(d, r, f);
	section_timeline(r, f);
	section_classes(r, f);
	section_sites(d, r, o, f);
	section_modules(d, r, o, f);
	section_findings(d, r, o, f);
	section_models(d, r, o, f);
	report_children_text(o->children, f);
	if (o->lifetimes && stp_report_lifetimes_text(o->lifetimes, f) < 0)
		return -1;
	fflush(f);
	return ferror(f) ? -1 : 0;
}
