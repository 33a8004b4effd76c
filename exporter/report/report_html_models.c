/*
 * report_html_models.c - the "Allocator models" section of the HTML
 * report: what was fed, then per device the table of models (M_a, M_r, E,
 * fragmentation, segments, OOMs) with the actual figures when the trace has
 * segment events, an SVG plot of allocated (dashed) and reserved (solid)
 * bytes over time for each model, the worst moment (free bytes by segment,
 * the call sites that split them) and the recommended settings.  Text from
 * the trace is escaped; no script, no network.
 */
#include <inttypes.h>
#include <string.h>

#include "report_fmt.h"
#include "report_internal.h"

static const char *const model_color[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                          "#9c755f", "#76b7b2", "#edc948"};
#define NCOLORS (sizeof model_color / sizeof *model_color)

static uint64_t rel(uint64_t t, uint64_t t0) { return t > t0 ? t - t0 : 0; }

/* whether the actual allocator's M_a is known: segment events always tell
 * it; XLA's statistics only with peak_bytes_in_use */
static int ac_measured(const allocsim_actual *ac) { return !ac->xla || ac->peak_allocated; }

static void site_cell(stp_det *d, FILE *f, uint32_t stack)
{
	char b[512];
	const char *n = stack ? stp_det_stack_name(d, stack, b, sizeof b) : NULL;
	rf_html(f, n ? n : stack ? "(unknown stack)" : "(none)");
}

/* 1 when two models' series are the same, point for point. */
static int same_series(const allocsim_result *a, const allocsim_result *b)
{
	if (a->nseries != b->nseries)
		return 0;
	for (size_t i = 0; i < a->nseries; i++)
		if (a->series[i].time != b->series[i].time || a->series[i].reserved != b->series[i].reserved ||
		    a->series[i].allocated != b->series[i].allocated)
			return 0;
	return 1;
}

static void plot(const stp_det_result *r, const allocsim_device_report *dr, uint64_t t0, FILE *f)
{
	const int W = 960, H = 300, L = 70, R = 20, T = 14, B = 36;
	uint64_t ymax = 1, tmax = r->duration_ns ? r->duration_ns : 1;
	for (size_t m = 0; m < dr->nresults; m++)
		for (size_t i = 0; i < dr->results[m].nseries; i++) {
			const allocsim_sample *s = &dr->results[m].series[i];
			if (s->reserved > ymax)
				ymax = s->reserved;
			if (s->allocated > ymax)
				ymax = s->allocated;
		}
	uint64_t ystep = rf_axis_bytes(ymax, 5, &ymax);
	double sx = (double)(W - L - R) / (double)tmax, sy = (double)(H - T - B) / (double)ymax;
	char b[64];
	/* a model whose series is the same as an earlier one's is drawn a few
	 * pixels higher, and the legend says so: no series hides another */
	size_t dup_of[16], lift[16];
	for (size_t m = 0; m < dr->nresults && m < 16; m++) {
		dup_of[m] = m;
		lift[m] = 0;
		for (size_t k = 0; k < m && dup_of[m] == m; k++)
			if (same_series(&dr->results[k], &dr->results[m])) {
				dup_of[m] = dup_of[k];
				for (size_t q = 0; q < m; q++)
					lift[m] += dup_of[q] == dup_of[k] || q == dup_of[k];
			}
	}
	fprintf(f, "<svg class=models width=%d height=%d viewBox='0 0 %d %d' role=img>\n", W, H, W, H);
	fprintf(f, "<line x1=%d y1=%d x2=%d y2=%d stroke='#888'/>\n", L, H - B, W - R, H - B);
	fprintf(f, "<line x1=%d y1=%d x2=%d y2=%d stroke='#888'/>\n", L, T, L, H - B);
	rf_svg_yticks(f, ymax, ystep, sy, L, W - R, H - B);
	for (int k = 0; k <= 8; k++) {
		uint64_t x = tmax / 8 * (uint64_t)k;
		fprintf(f, "<text x=%.1f y=%d text-anchor=%s>%s</text>\n", L + (double)x * sx, H - B + 14, k == 8 ? "end" : "middle",
		        rf_ns(x, b, sizeof b));
	}
	fprintf(f, "<text x=%d y=%d text-anchor=middle>time since the trace started</text>\n", (L + W - R) / 2, H - 4);
	/* reserved solid, allocated dashed; steps (a value holds until the next sample) */
	for (size_t m = dr->nresults; m-- > 0;) { /* the reference (as run) on top */
		const allocsim_result *res = &dr->results[m];
		double up = m < 16 ? 2.5 * (double)lift[m] : 0;
		for (int alloc = 1; alloc >= 0; alloc--) {
			fprintf(f, "<polyline class=%s fill=none stroke='%s' stroke-width=1.5%s transform='translate(0,%.1f)' "
			           "points='",
			        alloc ? "model-allocated" : "model-reserved", model_color[m % NCOLORS],
			        alloc ? " stroke-dasharray='5,3'" : "", -up);
			double prev = H - B;
			for (size_t i = 0; i < res->nseries; i++) {
				const allocsim_sample *s = &res->series[i];
				double x = L + (double)rel(s->time, t0) * sx;
				double y = H - B - (double)(alloc ? s->allocated : s->reserved) * sy;
				fprintf(f, "%.1f,%.1f %.1f,%.1f ", x, prev, x, y);
				prev = y;
			}
			fprintf(f, "%.1f,%.1f'/>\n", (double)(W - R), prev);
		}
	}
	fputs("</svg>\n<p>", f);
	for (size_t m = 0; m < dr->nresults; m++) {
		fprintf(f, "<span class=sw style='background:%s'></span>", model_color[m % NCOLORS]);
		rf_html(f, dr->results[m].label);
		if (m < 16 && dup_of[m] != m) {
			fputs(" <span class=same>(the same as ", f);
			rf_html(f, dr->results[dup_of[m]].label);
			fprintf(f, "; drawn %.1f px higher)</span>", 2.5 * (double)lift[m]);
		}
	}
	fputs("<br>solid: reserved from the device; dashed: allocated (after the model's rounding)</p>\n", f);
}

/* The first refused request, tried on each model within the capacity. */
static void refusal(const allocsim_device_report *dr, uint64_t t0, FILE *f)
{
	char b[3][64], conf[256];
	fprintf(f, "<h3>The request refused at %s (%s), tried on each model within %s%s</h3>\n<table>"
	           "<tr><th>model</th><th>the request</th><th>reserved</th><th>free</th><th>largest free block</th></tr>\n",
	        rf_ns(dr->refusal_time > t0 ? dr->refusal_time - t0 : 0, b[0], 64), rf_bytes(dr->refusal_size, b[1], 64),
	        rf_bytes(dr->refusal_capacity, b[2], 64),
	        dr->refusal_capacity_given ? " (--capacity)" : " (the most the allocator had reserved before it)");
	for (size_t k = 0; k < dr->nresults; k++) {
		const allocsim_refusal_probe *p = &dr->refusal_probes[k];
		fputs("<tr><td class=path>", f);
		rf_html(f, dr->results[k].label);
		if (p->ooms_before) {
			fprintf(f, "</td><td colspan=4>runs out before it (%s request%s refused)</td></tr>\n",
			        rf_count(p->ooms_before, b[0], 64), p->ooms_before == 1 ? "" : "s");
			continue;
		}
		fprintf(f, "</td><td>%s</td><td class=n>%s</td><td class=n>%s</td><td class=n>%s</td></tr>\n",
		        p->served ? "serves it" : "refuses it too", rf_bytes(p->reserved, b[0], 64),
		        rf_bytes(p->free_bytes, b[1], 64), rf_bytes(p->largest_free, b[2], 64));
	}
	fputs("</table>\n", f);
	int fix = allocsim_refusal_fix(dr, conf, sizeof conf);
	if (fix >= 0) {
		fputs("<p><b>PYTORCH_ALLOC_CONF=", f);
		rf_html(f, conf);
		fputs("</b> would have served it.</p>\n", f);
	} else if (fix == ALLOCSIM_REFUSAL_NONE) {
		fputs(dr->refusal_capacity_given
		          ? "<p>No model serves it: no setting helps; it needs fewer bytes live or a smaller request.</p>\n"
		          : "<p>No model serves it within this; the device may have had up to the request more "
		            "(<code>--capacity</code> decides).</p>\n",
		      f);
	}
}

static void worst(stp_det *d, const allocsim_device_report *dr, uint64_t t0, FILE *f)
{
	const allocsim_snapshot *s = &dr->worst;
	char b[6][64];
	fputs("<h3>Worst moment: ", f);
	rf_html(f, dr->nresults ? dr->results[0].label : "");
	fputs(" at its peak reserved</h3>\n", f);
	fprintf(f, "<p>At %s: reserved %s, allocated %s, <b>free %s</b> in %s blocks (largest %s).", rf_ns(rel(s->time, t0), b[0], 64),
	        rf_bytes(s->reserved, b[1], 64), rf_bytes(s->allocated, b[2], 64), rf_bytes(s->free_bytes, b[3], 64),
	        rf_count(s->free_blocks, b[4], 64), rf_bytes(s->largest_free, b[5], 64));
	if (s->request_size) {
		fprintf(f, " Request being served: %s from ", rf_bytes(s->request_size, b[0], 64));
		site_cell(d, f, s->request_stack);
		fputc('.', f);
	}
	fputs("</p>\n<table><tr><th>segment</th><th>size</th><th>allocated</th><th>free</th><th>largest free</th>"
	      "<th>free blocks: size, split off by</th></tr>\n",
	      f);
	size_t shown = 0;
	for (size_t i = 0; i < s->nsegments && shown < 8; i++) {
		const allocsim_segment_info *g = &s->segments[i];
		if (!g->free_bytes)
			break;
		shown++;
		fprintf(f, "<tr><td>0x%" PRIx64 "%s%s</td><td class=n>%s</td><td class=n>%s</td><td class=n>%s</td>"
		           "<td class=n>%s</td><td class=path>",
		        g->addr, g->small_pool ? " small" : "", g->expandable ? " expandable" : "", rf_bytes(g->size, b[0], 64),
		        rf_bytes(g->allocated, b[1], 64), rf_bytes(g->free_bytes, b[2], 64), rf_bytes(g->largest_free, b[3], 64));
		unsigned nb = 0;
		for (uint32_t k = g->first_block; k < g->first_block + g->nblocks; k++) {
			const allocsim_block_info *bl = &s->blocks[k];
			if (bl->state != ALLOCSIM_BLOCK_FREE)
				continue;
			if (++nb > 3) {
				fputs("<br>...", f);
				break;
			}
			fprintf(f, "%s%s at +%s", nb > 1 ? "<br>" : "", rf_bytes(bl->size, b[0], 64),
			        rf_bytes(bl->addr - g->addr, b[1], 64));
			if (bl->split_stack) {
				fputs(", split off by ", f);
				site_cell(d, f, bl->split_stack);
			}
		}
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
	if (!s->nsites)
		return;
	fputs("<table style='margin-top:12px'><tr><th>call site</th><th>free bytes it split off</th><th>live bytes pinning fragmented "
	      "segments</th><th>splits</th></tr>\n",
	      f);
	for (size_t i = 0; i < s->nsites && i < 8; i++) {
		const allocsim_site *t = &s->sites[i];
		if (!t->split_free_bytes && !t->pinning_bytes && !t->splits)
			break;
		fputs("<tr><td class=path>", f);
		site_cell(d, f, t->stack);
		fprintf(f, "</td><td class=n>%s</td><td class=n>%s</td><td class=n>%s</td></tr>\n",
		        rf_bytes(t->split_free_bytes, b[0], 64), rf_bytes(t->pinning_bytes, b[1], 64),
		        rf_count(t->splits, b[2], 64));
	}
	fputs("</table>\n", f);
}

void report_html_models(stp_det *d, FILE *f)
{
	const stp_det_result *r = stp_det_result_of(d);
	char b[6][64];
	if (!r->sim && !r->sim_error)
		return;
	fputs("<h2>Allocator models</h2>\n", f);
	if (!r->sim) {
		fputs("<p class=warn>Not run: ", f);
		rf_html(f, r->sim_error);
		fputs("</p>\n", f);
		return;
	}
	const allocsim_report *sr = r->sim;
	if (!sr->ndevices) {
		fputs("<p>No allocations to replay.</p>\n", f);
		return;
	}
	if (r->sim_host && r->primary >= 0 && r->spaces[r->primary].tensors)
		fprintf(f, "<p class=warn>No device allocations in this trace: its CPU tensors (%s allocations, every "
		           "size) are replayed as if they were made on a GPU (what-if).</p>\n",
		        rf_count(r->sim_fed_allocs, b[1], 64));
	else if (r->sim_host)
		fprintf(f, "<p class=warn>No device allocations in this trace: the host heap's allocations of %s or more "
		           "(%s; %s smaller ones left out) are replayed as if they were made on a GPU (what-if).</p>\n",
		        rf_bytes(r->sim_min_size, b[0], 64), rf_count(r->sim_fed_allocs, b[1], 64),
		        rf_count(r->sim_skipped, b[2], 64));
	for (size_t i = 0; i < sr->ndevices; i++) {
		const allocsim_device_report *dr = &sr->devices[i];
		if (dr->device >= 0)
			fprintf(f, "<h3>Device %d: %s allocations</h3>\n", dr->device, rf_count(dr->allocs, b[0], 64));
		fputs("<table><tr><th>model</th><th>M_a (peak allocated)</th><th>M_r (peak reserved)</th><th>E = "
		      "M_a/M_r</th><th>fragmentation 1&minus;E</th><th>segments</th><th>OOMs</th></tr>\n",
		      f);
		for (size_t k = 0; k < dr->nresults; k++) {
			const allocsim_result *res = &dr->results[k];
			fprintf(f, "<tr class=model><td><span class=sw style='background:%s'></span>", model_color[k % NCOLORS]);
			rf_html(f, res->label);
			fprintf(f, "</td><td class=n>%s</td><td class=n>%s</td><td class=n>%.1f%%</td><td class=n>%.1f%%</td>"
			           "<td class=n>%s</td><td class=n>%s</td></tr>\n",
			        rf_bytes(res->peak_allocated, b[0], 64), rf_bytes(res->peak_reserved, b[1], 64),
			        100 * res->efficiency, 100 * res->fragmentation, rf_count(res->segment_allocs, b[2], 64),
			        rf_count(res->ooms, b[3], 64));
		}
		if (dr->actual.present && dr->actual.over_reserved) {
			fprintf(f, "<tr><td><b>actual</b> (segment events)</td><td colspan=6>not given: %s allocations took the "
			           "bytes allocated above the bytes the segment events reserve (the segments are not the "
			           "allocator's whole state)</td></tr>\n",
			        rf_count(dr->actual.over_reserved, b[0], 64));
		} else if (dr->actual.present && ac_measured(&dr->actual)) {
			const allocsim_actual *ac = &dr->actual;
			fprintf(f, "<tr><td><b>actual</b> (%s)</td><td class=n>%s</td><td class=n>%s</td>"
			           "<td class=n>%.1f%%</td><td class=n>%.1f%%</td><td class=n>%s</td><td></td></tr>\n",
			        ac->xla ? "XLA's statistics" : "segment events", rf_bytes(ac->peak_allocated, b[0], 64),
			        rf_bytes(ac->peak_reserved, b[1], 64), 100 * ac->efficiency, 100 * (1 - ac->efficiency),
			        rf_count(ac->segment_reserves, b[2], 64));
		} else if (dr->actual.present) { /* XLA without peak_bytes_in_use: M_a and E unknown, not 0 */
			fprintf(f, "<tr><td><b>actual</b> (XLA's statistics)</td><td class=n>&ndash;</td><td class=n>%s</td>"
			           "<td class=n>&ndash;</td><td class=n>&ndash;</td><td class=n>%s</td><td></td></tr>\n",
			        rf_bytes(dr->actual.peak_reserved, b[1], 64), rf_count(dr->actual.segment_reserves, b[2], 64));
		}
		fputs("</table>\n", f);
		if (dr->actual.present && !dr->actual.over_reserved && dr->nresults && ac_measured(&dr->actual))
			fprintf(f, "<p>Model error against the actual allocator: M_a %+.1f%%, M_r %+.1f%% (%s).</p>\n",
			        100 * dr->actual.allocated_error, 100 * dr->actual.reserved_error, dr->results[0].label);
		else if (dr->actual.present && dr->nresults)
			fprintf(f, "<p>Model error against the actual allocator: M_r %+.1f%% (%s); M_a not measured (XLA gave no "
			           "peak_bytes_in_use).</p>\n",
			        100 * dr->actual.reserved_error, dr->results[0].label);
		if (dr->actual.xla && dr->actual.in_use_samples)
			fprintf(f, "<p>Bytes in use at XLA's %" PRIu64 " samples: the model within %.1f%% of XLA's.</p>\n",
			        dr->actual.in_use_samples, 100 * dr->actual.in_use_error);
		plot(r, dr, sr->start_time, f);
		if (dr->has_worst)
			worst(d, dr, sr->start_time, f);
		if (dr->nrecs) {
			fputs(dr->xla ? "<h3>XLA_PYTHON_CLIENT_* settings (simulated)</h3>\n<table><tr><th>setting</th><th>peak "
			              : "<h3>Recommended settings (simulated)</h3>\n<table><tr><th>PYTORCH_ALLOC_CONF</th><th>peak "
			      "reserved</th><th>change</th><th>E</th><th>OOMs</th></tr>\n",
			      f);
			for (size_t k = 0; k < dr->nrecs; k++) {
				const allocsim_recommendation *rc = &dr->recs[k];
				int64_t dlt = rc->reserved_delta;
				fputs("<tr class=rec><td class=path>", f);
				rf_html(f, rc->settings);
				fprintf(f, "</td><td class=n>%s</td><td class=n>%s%s</td><td class=n>%.1f%% (%+.1f)</td>"
				           "<td class=n>%s</td></tr>\n",
				        rf_bytes(rc->peak_reserved, b[0], 64), dlt < 0 ? "&minus;" : "+",
				        rf_bytes(dlt < 0 ? (uint64_t)-dlt : (uint64_t)dlt, b[1], 64), 100 * rc->efficiency,
				        100 * rc->efficiency_delta, rf_count(rc->ooms, b[2], 64));
			}
			fputs("</table>\n", f);
		} else if (dr->recommend_tried) {
			fputs("<p>Recommended settings: none of the candidates lowers the peak reserved.</p>\n", f);
		}
		if (dr->has_refusal)
			refusal(dr, sr->start_time, f);
	}
}
