/*
 * report_ranks_text.c - stp_report_ranks_text(): the report on several
 * traces of one run for a terminal: a row per rank (peak live bytes,
 * reserved, when, in which iteration and phase, iterations), the traces
 * that are not ranks, then the merged view: which rank peaks and by how
 * much, the call sites and the phases whose bytes differ most between it
 * and the others (report_ranks.h says how they are matched).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_fmt.h"
#include "report_ranks.h"
#include "stprof/report.h"

/* Columns per rank in the difference tables; more ranks: min, mean, max. */
#define RK_TEXT_COLS 8

static const char *sbytes(double v, char *buf, size_t len)
{
	char b[64];
	snprintf(buf, len, "%s%s", v < 0 ? "-" : "+", rf_bytes((uint64_t)llround(fabs(v)), b, sizeof b));
	return buf;
}

static void trace_row(const rk_merge *m, size_t i, FILE *f)
{
	const rk_trace *t = &m->t[i];
	char l[64], b[4][64], w[160] = "";
	if (t->peak_iteration >= 0 || t->peak_phase)
		snprintf(w, sizeof w, "%s%s%s%s", t->peak_iteration >= 0 ? "iteration " : "",
		         t->peak_iteration >= 0 ? rf_count((uint64_t)t->peak_iteration, b[3], 64) : "",
		         t->peak_phase && t->peak_iteration >= 0 ? ", " : "", t->peak_phase ? t->peak_phase : "");
	fprintf(f, "  %-16s %-12s %10s %10s %10s  %-24s %5u  %s\n", rk_label(m, i, l, sizeof l), t->space,
	        t->sp ? rf_bytes(t->sp->peak_bytes, b[0], 64) : "-",
	        t->sp && t->sp->reserved_peak ? rf_bytes(t->sp->reserved_peak, b[1], 64) : "-",
	        t->sp ? rf_ns(t->sp->peak_ns, b[2], 64) : "-", *w ? w : "-", t->iterations, rk_base(t->r->path));
}

static void diff_table(const rk_merge *m, const rk_row *rows, size_t n, unsigned top, const char *what, FILE *f)
{
	char b[64], l[64];
	int cols = m->ncmp <= RK_TEXT_COLS;
	fprintf(f, "  %12s", "difference");
	if (cols)
		for (size_t k = 0; k < m->ncmp; k++)
			fprintf(f, " %10s", rk_label(m, m->cmp[k], l, sizeof l));
	else
		fprintf(f, " %10s %10s %10s %10s", rk_label(m, m->cmp[m->peak], l, sizeof l), "min", "mean", "max");
	fprintf(f, "  %s\n", what);
	size_t shown = 0;
	for (size_t i = 0; i < n && shown < top; i++) {
		const rk_row *r = &rows[i];
		if (llround(r->diff) == 0)
			break; /* sorted by |diff|: the rest are the same on every rank */
		fprintf(f, "  %12s", sbytes(r->diff, b, sizeof b));
		if (cols) {
			for (size_t k = 0; k < m->ncmp; k++)
				fprintf(f, " %10s", rf_bytes(r->bytes[k], b, sizeof b));
		} else {
			uint64_t mn = UINT64_MAX, mx = 0;
			double s = 0;
			for (size_t k = 0; k < m->ncmp; k++) {
				mn = r->bytes[k] < mn ? r->bytes[k] : mn;
				mx = r->bytes[k] > mx ? r->bytes[k] : mx;
				s += (double)r->bytes[k];
			}
			fprintf(f, " %10s", rf_bytes(r->bytes[m->peak], b, sizeof b));
			fprintf(f, " %10s", rf_bytes(mn, b, sizeof b));
			fprintf(f, " %10s", rf_bytes((uint64_t)llround(s / (double)m->ncmp), b, sizeof b));
			fprintf(f, " %10s", rf_bytes(mx, b, sizeof b));
		}
		fprintf(f, "  %s\n", r->name);
		shown++;
	}
	if (!shown)
		fprintf(f, "  (the same on every rank)\n");
	else if (shown < n && llround(rows[shown].diff) != 0)
		fprintf(f, "  (%zu more that differ; --top N shows more)\n", n - shown);
}

static void merged(const rk_merge *m, const stp_report_options *o, FILE *f)
{
	char l[64], b[4][64];
	const rk_trace *p = &m->t[m->cmp[m->peak]], *lo = &m->t[m->cmp[m->lowest]];
	uint64_t pk = p->sp ? p->sp->peak_bytes : 0;
	fprintf(f, "\nMerged view (%s%s)\n", p->space, m->mixed_spaces ? "; the ranks analyzed different spaces" : "");
	if (m->mixed_spaces)
		fprintf(f, "  note      the ranks' deepest-analyzed spaces differ (see the table): --space to choose one\n");
	if (pk == 0) {
		fprintf(f, "  no rank has allocations in its analyzed space\n");
		return;
	}
	fprintf(f, "  peak      %s peaks: %s at %s", rk_label(m, m->cmp[m->peak], l, sizeof l), rf_bytes(pk, b[0], 64),
	        rf_ns(p->sp->peak_ns, b[1], 64));
	if (p->peak_iteration >= 0)
		fprintf(f, " (iteration %lld%s%s)", (long long)p->peak_iteration, p->peak_phase ? ", " : "",
		        p->peak_phase ? p->peak_phase : "");
	else if (p->peak_phase)
		fprintf(f, " (phase %s)", p->peak_phase);
	fputc('\n', f);
	double above = (double)pk - m->others_mean;
	fprintf(f, "  by        %s above the mean of the other %s (%s)", sbytes(above, b[0], 64),
	        m->ncmp == 2 ? (m->have_ranks ? "rank" : "process") : (m->have_ranks ? "ranks" : "processes"),
	        rf_bytes((uint64_t)llround(m->others_mean), b[1], 64));
	if (m->others_mean > 0)
		fprintf(f, ", %.2fx", (double)pk / m->others_mean);
	if (m->ncmp > 2)
		fprintf(f, "; lowest %s with %s", rk_label(m, m->cmp[m->lowest], l, sizeof l),
		        rf_bytes(lo->sp ? lo->sp->peak_bytes : 0, b[2], 64));
	fputc('\n', f);
	if (above == 0) {
		fprintf(f, "  every rank peaks at the same bytes\n");
		return;
	}
	fprintf(f, "\nCall sites whose bytes live at each rank's peak differ most (%s minus the mean of the\n"
	           "others; sites matched by their first frame)\n",
	        rk_label(m, m->cmp[m->peak], l, sizeof l));
	diff_table(m, m->sites, m->nsites, o->top, "site", f);
	if (m->sites_cut)
		fprintf(f, "  (a rank had more than %u call sites live at its peak: the smallest were not matched)\n",
		        RK_SITES_PER_RANK);
	if (m->nphases) {
		fprintf(f, "\nPeak live bytes during each phase (the highest of its windows, from each rank's memory\n"
		           "series: the samples inside them%s)\n",
		        m->phases_coarse ? "; some windows are shorter than a sample, their values are coarse" : "");
		diff_table(m, m->phases, m->nphases, o->top, "phase", f);
	}
}

int stp_report_ranks_text(stp_det *const *d, size_t n, const stp_report_options *o, FILE *f)
{
	stp_report_options def;
	if (!o) {
		stp_report_options_default(&def);
		o = &def;
	}
	rk_merge m;
	if (rk_merge_build(&m, d, n) < 0)
		return -1;
	int32_t world = -1;
	for (size_t i = 0; i < n; i++)
		if (m.t[i].r->world_size > world)
			world = m.t[i].r->world_size;
	fprintf(f, "stprof report: %zu trace%s, %zu %s", n, n == 1 ? "" : "s", m.ncmp,
	        m.have_ranks ? (m.ncmp == 1 ? "rank" : "ranks") : (m.ncmp == 1 ? "process" : "processes"));
	if (world >= 0)
		fprintf(f, " (world size %d)", world);
	fputc('\n', f);
	if (world > 0 && m.have_ranks && (size_t)world != m.ncmp)
		fprintf(f, "  note      %zu rank%s here out of a world of %d (the others ran elsewhere or wrote no trace)\n",
		        m.ncmp, m.ncmp == 1 ? "" : "s", world);
	fprintf(f, "\n  %-16s %-12s %10s %10s %10s  %-24s %5s  %s\n", "", "space",
	        "peak live", "reserved", "at", "iteration, phase", "iters", "trace");
	for (size_t k = 0; k < m.ncmp; k++)
		trace_row(&m, m.cmp[k], f);
	for (size_t i = 0; i < n; i++) {
		const rk_trace *t = &m.t[i];
		if (t->role == RK_RANK)
			continue;
		char b[64];
		fprintf(f, "  %s %s (pid %u): %s; peak %s (%s)\n",
		        t->role == RK_OTHER ? "not a rank:" : "earlier image of its rank:", rk_base(t->r->path), t->r->pid,
		        t->r->command[0] ? t->r->command : "?", t->sp ? rf_bytes(t->sp->peak_bytes, b, sizeof b) : "-",
		        t->space);
	}
	for (size_t i = 0; i < n; i++)
		if (!m.t[i].r->whole)
			fprintf(f, "  note      %s has no end record (the process was killed, or is still running)\n",
			        rk_base(m.t[i].r->path));
	if (m.ncmp < 2)
		fprintf(f, "\n  one %s: nothing to compare\n", m.have_ranks ? "rank" : "process");
	else
		merged(&m, o, f);
	fprintf(f, "\nOne trace in full: stprof report %s\n", m.ncmp ? m.t[m.cmp[m.peak == SIZE_MAX ? 0 : m.peak]].r->path
	                                                              : m.t[0].r->path);
	rk_merge_free(&m);
	return ferror(f) ? -1 : 0;
}
