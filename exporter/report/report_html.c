/*
 * report_html.c - the HTML report: one self-contained page (inline CSS and
 * SVG, no script, no network) with
 *   - the summary (trace, memory per space, peak, iterations, warnings);
 *   - memory over time: live bytes and, when the trace has allocator
 *     segments, reserved bytes; iterations shaded, the peak marked;
 *   - the class breakdown: bytes allocated and bytes live at the peak;
 *   - the top call sites by bytes live at the peak, coloured by class;
 *   - the findings, worst first, with call paths and suggestions;
 *   - the allocator models (report_html_models.c).
 * Every text from the trace is escaped.
 */
#include <inttypes.h>
#include <string.h>

#include "report_fmt.h"
#include "report_internal.h"
#include "stprof/report.h"
#include "viewer.h"

/* this report and the ranks' start so */
#define HTML_HEAD "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\n<title>stprof report"
const stp_outkind stp_outkind_report_html = {"stprof HTML report", HTML_HEAD, sizeof HTML_HEAD - 1, NULL};

static const char *const class_color[STP_CLASS_COUNT] = {"#4e79a7", "#f28e2b", "#59a14f", "#bab0ac",
                                                         "#e15759", "#b07aa1", "#9c755f"};

static void css(FILE *f)
{
	fputs("<style>\n"
	      "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1000px;"
	      "color:#222;padding:0 16px}\n"
	      "h1{font-size:22px;margin:0 0 4px}h3{font-size:15px;margin:18px 0 6px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}\n"
	      "table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:3px 8px;vertical-align:top;"
	      "border-bottom:1px solid #eee}th{background:#f6f6f6}td.n{text-align:right;white-space:nowrap}\n"
	      ".warn{background:#fff3cd;border:1px solid #e0c060;padding:8px 12px;margin:10px 0}\n"
	      ".err{background:#f8d7da;border:1px solid #d08080;padding:8px 12px;margin:10px 0}\n"
	      ".path{font:12px ui-monospace,monospace;color:#555}.sug{color:#245}\n"
	      "svg text{font:11px system-ui,sans-serif;fill:#333}.sw{display:inline-block;width:10px;height:10px;"
	      "margin:0 4px 0 12px}\n"
	      "</style>\n",
	      f);
}

static void summary(stp_det *d, const stp_det_result *r, FILE *f)
{
	char b[6][96], e[512];
	fputs("<h1>stprof report</h1>\n<table>\n<tr><th>trace</th><td>", f);
	rf_html(f, r->path);
	fputs("</td></tr>\n", f);
	if (r->command[0]) {
		fputs("<tr><th>command</th><td>", f);
		rf_html(f, r->command);
		if (r->pid) /* an imported snapshot names no process */
			fprintf(f, " (pid %u)", r->pid);
		fputs("</td></tr>\n", f);
	}
	fprintf(f, "<tr><th>events</th><td>%s over %s</td></tr>\n", rf_count(r->events, b[0], 96),
	        rf_ns(r->duration_ns, b[1], 96));
	for (uint32_t i = 0; i < r->nspaces; i++) {
		const stp_det_space *s = &r->spaces[i];
		fprintf(f, "<tr><th>%s%s</th><td>%s objects allocated (%s), %s freed, %s still live at the end (%s); "
		           "<b>peak %s</b> at %s",
		        rf_space(s, b[0], 96), (int32_t)i == r->primary && r->nspaces > 1 ? "<br>(analyzed in depth)" : "", rf_count(s->allocs, b[1], 96), rf_bytes(s->bytes_allocated, b[2], 96),
		        rf_count(s->frees, b[3], 96), rf_count(s->live_objects_end, b[4], 96),
		        rf_bytes(s->live_bytes_end, b[5], 96), rf_bytes(s->peak_bytes, e, 96), rf_ns(s->peak_ns, e + 96, 96));
		if ((int32_t)i == r->primary && *rf_peak_where(r, e, sizeof e)) {
			fputs(" (", f);
			rf_html(f, e);
			fputc(')', f);
		}
		if (s->peak_like >= 0 && s->peak_bytes)
			fprintf(f, ", in an iteration kept as counters: its objects are those of iteration %" PRId64
			           ", which it repeats, at that one's highest (%s)",
			        s->peak_like, rf_bytes(s->peak_like_bytes, b[1], 96));
		if (s->reserved_peak)
			fprintf(f, "; reserved at most %s", rf_bytes(s->reserved_peak, b[1], 96));
		if (s->reserved_peak && s->over_reserved)
			fprintf(f, " (efficiency not given: %s allocations took the bytes allocated above the segments', "
			           "which are not the allocator's whole state)",
			        rf_count(s->over_reserved, b[1], 96));
		if (s->refused) { /* requests refused for want of memory: the first */
			stp_det_frame fr;
			fprintf(f, "; <b>%s request%s refused</b> for want of memory, the first of %s at %s with %s live",
			        rf_count(s->refused, b[1], 96), s->refused == 1 ? "" : "s",
			        rf_bytes(s->refused_first.bytes, b[2], 96), rf_ns(s->refused_first.ns, b[3], 96),
			        rf_bytes(s->refused_first.live, b[4], 96));
			if (s->refused_first.stack && stp_det_stack_frames(d, s->refused_first.stack, &fr, 1)) {
				fputs(", at ", f);
				rf_html(f, stp_det_frame_text(&fr, e, sizeof e));
			}
		}
		if (s->retried) /* served after the allocator's own request was refused */
			fprintf(f, "; %s request%s served only after the allocator freed its cache to ask again",
			        rf_count(s->retried, b[1], 96), s->retried == 1 ? "" : "s");
		fputs("</td></tr>\n", f);
	}
	const stp_det_timeline *t = &r->timeline;
	fprintf(f, "<tr><th>iterations</th><td>%u from %s (confidence %.0f%%): ", t->niterations,
	        stp_det_source_name(t->iter_source), t->confidence * 100);
	rf_html(f, t->method);
	if (t->steady >= 0) {
		fprintf(f, "; steady state: iteration %" PRId64 " (", t->iterations[t->steady].index);
		rf_html(f, t->steady_why);
		fputc(')', f);
		uint32_t nlike;
		uint64_t med;
		if (report_steady_median(t, &nlike, &med))
			fprintf(f, "; %s iterations with its allocation count: median %s", rf_count(nlike, b[0], 96),
			        rf_ns(med, b[1], 96));
	}
	fputs("</td></tr>\n</table>\n", f);
	if (!r->whole)
		fprintf(f, "<p class=warn>%s</p>\n", rf_end(r, e, sizeof e));
	if (r->error) {
		fputs("<p class=err>The trace is damaged: ", f);
		rf_html(f, r->error);
		fputs(". Everything before the damage is reported.</p>\n", f);
	}
	if (r->lost_events)
		fprintf(f, "<p class=warn>%s events were lost while recording.</p>\n", rf_count(r->lost_events, e, 64));
	if (r->segments_dropped)
		fprintf(f, "<p class=warn>An inconsistent snapshot: %s allocations lay outside its segments, which are not "
		           "the allocator's whole state; they were dropped at import (no reserved bytes or efficiency).</p>\n",
		        rf_count(r->segments_dropped, e, 64));
	(void)d;
}

/* a "nice" axis step for a range */
static double nice_step(double range, int ticks)
{
	double raw = range / ticks, p = 1;
	while (p * 10 <= raw)
		p *= 10;
	while (p > raw && p > 1e-12)
		p /= 10;
	double m = raw / p;
	return p * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10);
}

static void memory_plot(const stp_det_result *r, FILE *f)
{
	const int W = 960, H = 300, L = 70, R = 20, T = 14, B = 36;
	uint64_t ymax = 1, tmax = r->duration_ns ? r->duration_ns : 1;
	int have_res = 0;
	for (uint32_t i = 0; i < r->nseries; i++) {
		if (r->series[i].live_bytes > ymax)
			ymax = r->series[i].live_bytes;
		if (r->series[i].reserved_bytes > ymax)
			ymax = r->series[i].reserved_bytes;
		have_res |= r->series[i].reserved_bytes != 0;
	}
	uint64_t ystep = rf_axis_bytes(ymax, 5, &ymax);
	double sx = (double)(W - L - R) / (double)tmax, sy = (double)(H - T - B) / (double)ymax;
	fputs("<h2>Memory over time</h2>\n", f);
	fprintf(f, "<svg id=memory width=%d height=%d viewBox='0 0 %d %d' role=img>\n", W, H, W, H);
	/* iterations, shaded one in two */
	const stp_det_timeline *t = &r->timeline;
	if (t->niterations <= 400)
		for (uint32_t k = 0; k < t->niterations; k += 2) {
			const stp_det_iteration *it = &t->iterations[k];
			uint64_t e = it->end_ns > tmax ? tmax : it->end_ns;
			fprintf(f, "<rect x=%.1f y=%d width=%.1f height=%d fill='#f0f0f6'><title>iteration %" PRId64
			           "</title></rect>\n",
			        L + it->begin_ns * sx, T, (double)(e > it->begin_ns ? e - it->begin_ns : 0) * sx, H - T - B,
			        it->index);
		}
	/* axes and ticks */
	char b[64];
	fprintf(f, "<line x1=%d y1=%d x2=%d y2=%d stroke='#888'/>\n", L, H - B, W - R, H - B);
	fprintf(f, "<line x1=%d y1=%d x2=%d y2=%d stroke='#888'/>\n", L, T, L, H - B);
	rf_svg_yticks(f, ymax, ystep, sy, L, W - R, H - B);
	double xs = nice_step((double)tmax, 8);
	/* by count: x += xs stops moving x when tmax is near 2^64 */
	for (int k = 0; k <= 64; k++) {
		double x = k * xs;
		if (x > (double)tmax * 1.0001)
			break;
		fprintf(f, "<text x=%.1f y=%d text-anchor=middle>%s</text>\n", L + x * sx, H - B + 14,
		        rf_ns((uint64_t)x, b, sizeof b));
	}
	fprintf(f, "<text x=%d y=%d text-anchor=middle>time since the trace started</text>\n", (L + W - R) / 2, H - 4);
	/* lines */
	for (int which = have_res ? 1 : 0; which >= 0; which--) {
		fprintf(f, "<polyline class=%s fill=none stroke='%s' stroke-width=1.5 points='", which ? "reserved" : "live",
		        which ? "#f28e2b" : "#4e79a7");
		for (uint32_t i = 0; i < r->nseries; i++) {
			uint64_t v = which ? r->series[i].reserved_bytes : r->series[i].live_bytes;
			fprintf(f, "%.1f,%.1f ", L + r->series[i].t_ns * sx, H - B - v * sy);
		}
		fputs("'/>\n", f);
	}
	if (r->primary >= 0) {
		const stp_det_space *s = &r->spaces[r->primary];
		double px = L + s->peak_ns * sx, py = H - B - s->peak_bytes * sy;
		/* the label above the point, in the headroom the axis leaves, on a
		 * white backing so the curve never runs through it */
		double ly = py - 9 < T + 10 ? T + 10 : py - 9;
		fprintf(f, "<circle cx=%.1f cy=%.1f r=4 fill='#e15759'/><text class=peak x=%.1f y=%.1f %s "
		           "paint-order=stroke stroke='#fff' stroke-width=4>peak %s</text>\n",
		        px, py, px + (px > W / 2 ? -8 : 8), ly, px > W / 2 ? "text-anchor=end" : "",
		        rf_bytes(s->peak_bytes, b, sizeof b));
	}
	fputs("</svg>\n<p><span class=sw style='background:#4e79a7'></span>live bytes", f);
	if (have_res)
		fputs("<span class=sw style='background:#f28e2b'></span>reserved by the allocator (segments)", f);
	if (t->niterations)
		fputs("<span class=sw style='background:#f0f0f6;border:1px solid #ccc'></span>every other iteration", f);
	fputs("</p>\n", f);
}

static void class_plot(const stp_det_result *r, FILE *f)
{
	uint64_t ta = 0, tp = 0;
	for (unsigned c = 0; c < STP_CLASS_COUNT; c++)
		ta += r->class_bytes[c], tp += r->peak_class_bytes[c];
	if (!ta)
		return;
	const int W = 960, L = 130, BW = W - L - 20, BH = 26;
	char b[64];
	fputs("<h2>Lifetime classes</h2>\n", f);
	fprintf(f, "<svg id=classes width=%d height=%d viewBox='0 0 %d %d' role=img>\n", W, 2 * BH + 30, W, 2 * BH + 30);
	for (int row = 0; row < 2; row++) {
		const uint64_t *v = row ? r->peak_class_bytes : r->class_bytes;
		uint64_t tot = row ? tp : ta;
		int y = 8 + row * (BH + 12);
		fprintf(f, "<text x=%d y=%d text-anchor=end>%s</text>\n", L - 6, y + BH / 2 + 4,
		        row ? "live at the peak" : "bytes allocated");
		double x = L;
		for (unsigned c = 0; c < STP_CLASS_COUNT && tot; c++) {
			if (!v[c])
				continue;
			double w = (double)BW * (double)v[c] / (double)tot;
			fprintf(f, "<rect class=cls x=%.1f y=%d width=%.1f height=%d fill='%s'><title>%s: %s (%.1f%%)</title></rect>\n",
			        x, y, w, BH, class_color[c], stp_det_class_name(c), rf_bytes(v[c], b, sizeof b),
			        100.0 * (double)v[c] / (double)tot);
			if (w > 60)
				fprintf(f, "<text x=%.1f y=%d style='fill:#fff'>%s %.0f%%</text>\n", x + 4, y + BH / 2 + 4,
				        stp_det_class_name(c), 100.0 * (double)v[c] / (double)tot);
			x += w;
		}
	}
	fputs("</svg>\n<p>", f);
	for (unsigned c = 0; c < STP_CLASS_COUNT; c++)
		if (r->class_objects[c])
			fprintf(f, "<span class=sw style='background:%s'></span>%s: %s objects, %s", class_color[c],
			        stp_det_class_name(c), rf_count(r->class_objects[c], b, 32), rf_bytes(r->class_bytes[c], b + 32, 32));
	fputs("</p>\n", f);
}

static void path_html(stp_det *d, FILE *f, uint32_t site, unsigned frames)
{
	stp_det_frame fr[REPORT_MAX_FRAMES];
	uint32_t n = stp_det_site_frames(d, site, fr, frames > REPORT_MAX_FRAMES ? REPORT_MAX_FRAMES : (frames ? frames : 1));
	char t[512];
	fputs("<div class=path>", f);
	if (!n)
		fputs("(no call path recorded)", f);
	for (uint32_t i = 0; i < n; i++) {
		fputs(i ? "<br>&larr; " : "", f);
		rf_html(f, stp_det_frame_text(&fr[i], t, sizeof t));
	}
	stp_det_frame pkg; /* a library's model run from the user's line */
	if (stp_det_site_package_line(d, site, &pkg)) {
		fputs("<br>&nbsp;&nbsp;(in ", f);
		rf_html(f, stp_det_frame_text(&pkg, t, sizeof t));
		fputs(")", f);
	}
	fputs("</div>", f);
}

static void sites_plot(stp_det *d, const stp_det_result *r, const stp_report_options *o, FILE *f)
{
	if (!r->nsites || r->primary < 0)
		return;
	unsigned n = 0;
	stp_det_site site;
	while (n < r->nsites && n < o->top && (stp_det_site_get(d, n, &site), site.peak_bytes || !n))
		n++;
	stp_det_site_get(d, 0, &site);
	uint64_t mx = site.peak_bytes ? site.peak_bytes : 1;
	const int W = 960, L = 330, BH = 18, H = (int)n * (BH + 6) + 10;
	char b[64], t[512];
	fputs("<h2>Top call sites by bytes live at the peak</h2>\n", f);
	fprintf(f, "<svg id=sites width=%d height=%d viewBox='0 0 %d %d' role=img>\n", W, H, W, H);
	for (unsigned i = 0; i < n; i++) {
		stp_det_site_get(d, i, &site);
		const stp_det_site *s = &site;
		int y = 6 + (int)i * (BH + 6);
		double w = (double)(W - L - 90) * (double)s->peak_bytes / (double)mx;
		stp_det_site_where(d, i, t, sizeof t);
		if (strlen(t) > 52)
			strcpy(t + 49, "...");
		fprintf(f, "<text x=%d y=%d text-anchor=end>", L - 6, y + BH - 5);
		rf_html(f, t);
		fprintf(f, "</text><rect class=site x=%d y=%d width=%.1f height=%d fill='%s'><title>%s</title></rect>"
		           "<text x=%.1f y=%d>%s</text>\n",
		        L, y, w < 1 ? 1 : w, BH, class_color[s->dominant], stp_det_class_name(s->dominant), L + w + 6,
		        y + BH - 5, rf_bytes(s->peak_bytes, b, sizeof b));
	}
	fputs("</svg>\n<table><tr><th>#</th><th>live at peak</th><th>objects</th><th>allocations</th><th>class</th>"
	      "<th>call path</th></tr>\n",
	      f);
	for (unsigned i = 0; i < n; i++) {
		stp_det_site_get(d, i, &site);
		const stp_det_site *s = &site;
		fprintf(f, "<tr data-stp-site=%u><td class=n>%u</td><td class=n>%s</td><td class=n>%s</td><td class=n>%s</td>"
		           "<td>%s</td><td>",
		        i, i + 1, rf_bytes(s->peak_bytes, b, 32), rf_count(s->peak_objects, b + 32, 32),
		        rf_count(s->allocs, t, 64),
		        stp_det_site_library(d, i) ? "library (its own buffer)" : stp_det_class_name(s->dominant));
		path_html(d, f, i, o->frames);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static void findings(stp_det *d, const stp_det_result *r, const stp_report_options *o, FILE *f)
{
	char b[3][64], sug[1024];
	fputs("<h2>Findings, worst first</h2>\n", f);
	if (!r->nfindings)
		fputs("<p>None.</p>\n", f);
	else
		fputs("<table><tr><th>pattern</th><th>objects</th><th>bytes</th><th>waste (bytes&times;time)</th>"
		      "<th>where and what to do</th></tr>\n",
		      f);
	for (uint32_t i = 0; i < r->nfindings && i < o->top; i++) {
		const stp_det_finding *x = &r->findings[i];
		fprintf(f, "<tr class=finding data-stp-finding=%u><td>%s</td><td class=n>%s</td><td class=n>%s</td>"
		           "<td class=n>%s</td><td>",
		        i, stp_det_pattern_title(x->pattern), rf_count(x->objects, b[0], 64), rf_bytes(x->bytes, b[1], 64),
		        rf_byte_time(x->waste_byte_ns, b[2], 64));
		path_html(d, f, x->site, o->frames);
		fputs("<div class=sug>", f);
		rf_html(f, stp_det_suggestion(d, x, sug, sizeof sug));
		fputs("</div></td></tr>\n", f);
	}
	if (r->nfindings)
		fputs("</table>\n", f);
	if (r->nfindings > o->top)
		fprintf(f, "<p>%u more findings are in the JSON report.</p>\n", r->nfindings - o->top);
	int any = 0;
	for (unsigned p = 0; p < STP_PAT_COUNT; p++)
		if (!r->pattern_available[p])
			fprintf(f, "%s%s", any++ ? ", " : "<p>Not available for this trace (not guessed): ", stp_det_pattern_title(p));
	if (any)
		fputs(".</p>\n", f);
}

int stp_report_html(stp_det *d, const stp_report_options *o, FILE *f)
{
	stp_report_options def;
	if (!o) {
		stp_report_options_default(&def);
		o = &def;
	}
	const stp_det_result *r = stp_det_result_of(d);
	fputs("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\n<title>stprof report: ", f);
	rf_html(f, r->path);
	fputs("</title>\n", f);
	css(f);
	fputs("</head><body>\n", f);
	summary(d, r, f);
	report_html_viewer(&d, 1, o, f);
	memory_plot(r, f);
	class_plot(r, f);
	sites_plot(d, r, o, f);
	findings(d, r, o, f);
	report_html_models(d, f);
	report_children_html(o->children, f);
	fputs("<p style='color:#888;margin-top:30px'>Generated by stprof report. Definitions: docs/report.md.</p>\n"
	      "</body></html>\n",
	      f);
	fflush(f);
	return ferror(f) ? -1 : 0;
}
