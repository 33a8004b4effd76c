/*
 * report_ranks_html.c - stp_report_ranks_html(): the report on several
 * traces of one run as one self-contained page (inline CSS and SVG, no
 * script): the table of ranks, each rank's live bytes over time on one
 * plot (times since each trace's own first event), and the merged view's
 * tables of call sites and phases that differ (report_ranks.h).  Every
 * text from a trace is escaped.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_fmt.h"
#include "report_ranks.h"
#include "stprof/report.h"
#include "viewer.h"

static const char *const color[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                    "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac"};
#define NCOLOR (sizeof color / sizeof color[0])
/* Ranks drawn on the plot (the peaking one always among them). */
#define RK_PLOT_MAX 16u

static void table(const rk_merge *m, FILE *f)
{
	char l[64], b[4][64];
	fputs("<table>\n<tr><th></th><th>space</th><th>peak live</th><th>reserved</th><th>at</th>"
	      "<th>iteration, phase</th><th>iterations</th><th>trace</th></tr>\n", f);
	for (size_t k = 0; k < m->ncmp; k++) {
		const rk_trace *t = &m->t[m->cmp[k]];
		fprintf(f, "<tr%s><td>", k == m->peak ? " style='font-weight:bold'" : "");
		rf_html(f, rk_label(m, m->cmp[k], l, sizeof l));
		fputs("</td><td>", f);
		rf_html(f, t->space);
		fprintf(f, "</td><td class=n>%s</td><td class=n>%s</td><td class=n>%s</td><td>",
		        t->sp ? rf_bytes(t->sp->peak_bytes, b[0], 64) : "-",
		        t->sp && t->sp->reserved_peak ? rf_bytes(t->sp->reserved_peak, b[1], 64) : "-",
		        t->sp ? rf_ns(t->sp->peak_ns, b[2], 64) : "-");
		if (t->peak_iteration >= 0)
			fprintf(f, "iteration %" PRId64 "%s", t->peak_iteration, t->peak_phase ? ", " : "");
		if (t->peak_phase)
			rf_html(f, t->peak_phase);
		fprintf(f, "</td><td class=n>%u</td><td class=path>", t->iterations);
		rf_html(f, t->r->path);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
	for (size_t i = 0; i < m->n; i++) {
		const rk_trace *t = &m->t[i];
		if (t->role == RK_RANK)
			continue;
		fprintf(f, "<p>%s <span class=path>", t->role == RK_OTHER ? "Not a rank:" : "Earlier image of its rank:");
		rf_html(f, t->r->path);
		fprintf(f, "</span> (pid %u) ", t->r->pid);
		rf_html(f, t->r->command);
		fprintf(f, "; peak %s (", t->sp ? rf_bytes(t->sp->peak_bytes, b[0], 64) : "-");
		rf_html(f, t->space);
		fputs(")</p>\n", f);
	}
}

static void plot(const rk_merge *m, FILE *f)
{
	const int W = 960, H = 300, L = 70, R = 20, T = 14, B = 36;
	uint64_t ymax = 1, tmax = 1;
	size_t nplot = m->ncmp < RK_PLOT_MAX ? m->ncmp : RK_PLOT_MAX;
	for (size_t k = 0; k < nplot; k++) {
		const stp_det_result *r = m->t[m->cmp[k]].r;
		for (uint32_t i = 0; i < r->nseries; i++)
			ymax = r->series[i].live_bytes > ymax ? r->series[i].live_bytes : ymax;
		tmax = r->duration_ns > tmax ? r->duration_ns : tmax;
	}
	uint64_t ystep = rf_axis_bytes(ymax, 5, &ymax);
	double sx = (double)(W - L - R) / (double)tmax, sy = (double)(H - T - B) / (double)ymax;
	fputs("<h2>Live bytes over time, per rank</h2>\n", f);
	fprintf(f, "<svg id=ranks width=%d height=%d viewBox='0 0 %d %d' role=img>\n", W, H, W, H);
	fprintf(f, "<line x1=%d y1=%d x2=%d y2=%d stroke='#888'/>\n", L, H - B, W - R, H - B);
	fprintf(f, "<line x1=%d y1=%d x2=%d y2=%d stroke='#888'/>\n", L, T, L, H - B);
	rf_svg_yticks(f, ymax, ystep, sy, L, W - R, H - B);
	char b[64], l[64];
	for (int k = 0; k <= 8; k++)
		fprintf(f, "<text x=%.1f y=%d text-anchor=middle>%s</text>\n", L + (double)(W - L - R) * k / 8.0, H - B + 14,
		        rf_ns((uint64_t)((double)tmax * k / 8.0), b, sizeof b));
	fprintf(f, "<text x=%d y=%d text-anchor=middle>time since each trace started</text>\n", (L + W - R) / 2, H - 4);
	for (size_t k = 0; k < nplot; k++) {
		const stp_det_result *r = m->t[m->cmp[k]].r;
		fprintf(f, "<polyline fill=none stroke='%s' stroke-width=%s points='", color[k % NCOLOR],
		        k == m->peak ? "2.5" : "1.2");
		for (uint32_t i = 0; i < r->nseries; i++)
			fprintf(f, "%.1f,%.1f ", L + (double)r->series[i].t_ns * sx,
			        H - B - (double)r->series[i].live_bytes * sy);
		fputs("'/>\n", f);
	}
	fputs("</svg>\n<p>", f);
	for (size_t k = 0; k < nplot; k++) {
		fprintf(f, "<span class=sw style='background:%s'></span>", color[k % NCOLOR]);
		rf_html(f, rk_label(m, m->cmp[k], l, sizeof l));
	}
	if (nplot < m->ncmp)
		fprintf(f, " (the first %zu of %zu ranks)", nplot, m->ncmp);
	fputs("</p>\n", f);
}

/* The interactive viewer of the compared ranks side by side (at most
 * RK_PLOT_MAX, the peaking one among them). */
static void viewer(const rk_merge *m, const stp_report_options *o, FILE *f)
{
	stp_det *d[RK_PLOT_MAX];
	size_t n = 0;
	for (size_t k = 0; k < m->ncmp && n < RK_PLOT_MAX - 1; k++)
		d[n++] = m->t[m->cmp[k]].d;
	if (m->ncmp > RK_PLOT_MAX - 1) /* the last place: the rank that peaks, when it is not in yet */
		d[n++] = m->t[m->cmp[m->peak != SIZE_MAX && m->peak >= RK_PLOT_MAX - 1 ? m->peak : RK_PLOT_MAX - 1]].d;
	report_html_viewer(d, n, o, f);
	if (n < m->ncmp)
		fprintf(f, "<p>The viewer shows %zu of the %zu ranks (the first ones and the one that peaks).</p>\n", n,
		        m->ncmp);
}

static void rows(const rk_merge *m, const rk_row *v, size_t n, unsigned top, const char *what, FILE *f)
{
	char l[64], b[64];
	fprintf(f, "<table>\n<tr><th class=n>difference</th>");
	for (size_t k = 0; k < m->ncmp; k++) {
		fputs("<th class=n>", f);
		rf_html(f, rk_label(m, m->cmp[k], l, sizeof l));
		fputs("</th>", f);
	}
	fprintf(f, "<th>%s</th></tr>\n", what);
	size_t shown = 0;
	for (size_t i = 0; i < n && shown < top && llround(v[i].diff) != 0; i++, shown++) {
		fprintf(f, "<tr><td class=n>%s%s</td>", v[i].diff < 0 ? "-" : "+",
		        rf_bytes((uint64_t)llround(fabs(v[i].diff)), b, sizeof b));
		for (size_t k = 0; k < m->ncmp; k++)
			fprintf(f, "<td class=n>%s</td>", rf_bytes(v[i].bytes[k], b, sizeof b));
		fputs("<td class=path>", f);
		rf_html(f, v[i].name);
		fputs("</td></tr>\n", f);
	}
	if (!shown)
		fprintf(f, "<tr><td colspan=%zu>the same on every rank</td></tr>\n", m->ncmp + 2);
	fputs("</table>\n", f);
}

int stp_report_ranks_html(stp_det *const *d, size_t n, const stp_report_options *o, FILE *f)
{
	stp_report_options def;
	if (!o) {
		stp_report_options_default(&def);
		o = &def;
	}
	rk_merge m;
	if (rk_merge_build(&m, d, n) < 0)
		return -1;
	char l[64], b[3][64];
	fputs("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\n<title>stprof report: ranks</title>\n"
	      "<style>\nbody{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:1000px;color:#222;"
	      "padding:0 16px}\nh1{font-size:22px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}\n"
	      "table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:3px 8px;border-bottom:1px solid "
	      "#eee}th{background:#f6f6f6}.n{text-align:right;white-space:nowrap}\n"
	      ".path{font:12px ui-monospace,monospace;color:#555}.sw{display:inline-block;width:10px;height:10px;"
	      "margin:0 4px 0 12px}\nsvg text{font:11px system-ui,sans-serif;fill:#333}\n</style>\n</head><body>\n", f);
	fprintf(f, "<h1>stprof report: %zu %s</h1>\n", m.ncmp,
	        m.have_ranks ? (m.ncmp == 1 ? "rank" : "ranks") : (m.ncmp == 1 ? "process" : "processes"));
	table(&m, f);
	viewer(&m, o, f);
	if (m.ncmp >= 2) {
		const rk_trace *p = &m.t[m.cmp[m.peak]];
		uint64_t pk = p->sp ? p->sp->peak_bytes : 0;
		plot(&m, f);
		fputs("<h2>Merged view</h2>\n<p><b>", f);
		rf_html(f, rk_label(&m, m.cmp[m.peak], l, sizeof l));
		fprintf(f, "</b> peaks: <b>%s</b> at %s, %s%s above the mean of the others (%s)", rf_bytes(pk, b[0], 64),
		        p->sp ? rf_ns(p->sp->peak_ns, b[1], 64) : "-", (double)pk < m.others_mean ? "-" : "",
		        rf_bytes((uint64_t)llround(fabs((double)pk - m.others_mean)), b[2], 64),
		        rf_bytes((uint64_t)llround(m.others_mean), b[1], 64));
		fputs(m.mixed_spaces ? "; the ranks analyzed different spaces.</p>\n" : ".</p>\n", f);
		fputs("<h3>Call sites whose bytes live at each rank's peak differ most</h3>\n", f);
		rows(&m, m.sites, m.nsites, o->top, "site (first frame)", f);
		if (m.nphases) {
			fputs("<h3>Peak live bytes during each phase</h3>\n", f);
			rows(&m, m.phases, m.nphases, o->top, "phase", f);
		}
	}
	fputs("</body></html>\n", f);
	rk_merge_free(&m);
	return ferror(f) ? -1 : 0;
}
