/*
 * report_ranks_json.c - stp_report_ranks_json(): the report on several
 * traces of one run as one JSON object, schema "stprof-report-ranks"
 * (docs/report-json.md, "Several ranks"): a row per trace and the merged
 * view of report_ranks.h.  Rows of the merged view are bounded by --top.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_fmt.h"
#include "report_ranks.h"
#include "stprof/report.h"

static const char *role_name(int role)
{
	return role == RK_RANK ? "rank" : role == RK_OTHER ? "other" : "earlier-image";
}

static void trace_obj(const rk_merge *m, size_t i, FILE *f)
{
	const rk_trace *t = &m->t[i];
	fputs("{\"path\":", f);
	rf_json_str(f, t->r->path);
	fputs(",\"command\":", f);
	rf_json_str(f, t->r->command);
	fprintf(f, ",\"pid\":%u,", t->r->pid);
	rf_json_rank(f, t->r);
	fprintf(f, ",\"role\":\"%s\",\"whole\":%s,\"error\":", role_name(t->role), t->r->whole ? "true" : "false");
	if (t->r->error)
		rf_json_str(f, t->r->error);
	else
		fputs("null", f);
	fputs(",\"space\":", f);
	if (t->sp)
		rf_json_str(f, t->space);
	else
		fputs("null", f);
	fprintf(f, ",\"peak_bytes\":%" PRIu64 ",\"peak_ns\":%" PRIu64 ",\"reserved_peak\":%" PRIu64 ",\"peak_iteration\":",
	        t->sp ? t->sp->peak_bytes : 0, t->sp ? t->sp->peak_ns : 0, t->sp ? t->sp->reserved_peak : 0);
	if (t->peak_iteration >= 0)
		fprintf(f, "%" PRId64, t->peak_iteration);
	else
		fputs("null", f);
	fputs(",\"peak_phase\":", f);
	if (t->peak_phase)
		rf_json_str(f, t->peak_phase);
	else
		fputs("null", f);
	fprintf(f, ",\"iterations\":%u,\"duration_ns\":%" PRIu64 "}", t->iterations, t->r->duration_ns);
}

static void rows(const rk_merge *m, const rk_row *v, size_t n, unsigned top, const char *key, FILE *f)
{
	fprintf(f, ",\n  \"%s\":[", key);
	size_t shown = 0;
	for (size_t i = 0; i < n && shown < top; i++) {
		if (llround(v[i].diff) == 0)
			break;
		fputs(shown++ ? ",\n    {\"name\":" : "\n    {\"name\":", f);
		rf_json_str(f, v[i].name);
		fputs(",\"bytes\":[", f);
		for (size_t k = 0; k < m->ncmp; k++)
			fprintf(f, "%s%" PRIu64, k ? "," : "", v[i].bytes[k]);
		fprintf(f, "],\"mean_others\":%.0f,\"difference\":%.0f}", v[i].mean_others, v[i].diff);
	}
	size_t differ = 0;
	for (size_t i = 0; i < n && llround(v[i].diff) != 0; i++)
		differ++;
	fprintf(f, "],\n  \"%s_differing\":%zu", key, differ);
}

int stp_report_ranks_json(stp_det *const *d, size_t n, const stp_report_options *o, FILE *f)
{
	stp_report_options def;
	if (!o) {
		stp_report_options_default(&def);
		o = &def;
	}
	rk_merge m;
	if (rk_merge_build(&m, d, n) < 0)
		return -1;
	fputs("{\"schema\":\"stprof-report-ranks\",\"version\":1,\n\"traces\":[", f);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",\n  " : "\n  ", f);
		trace_obj(&m, i, f);
	}
	fputs("],\n\"compared\":[", f);
	for (size_t k = 0; k < m.ncmp; k++)
		fprintf(f, "%s%zu", k ? "," : "", m.cmp[k]);
	fputs("],\n\"merged\":", f);
	if (m.ncmp < 2) {
		fputs("null", f);
	} else {
		const rk_trace *p = &m.t[m.cmp[m.peak]];
		uint64_t pk = p->sp ? p->sp->peak_bytes : 0;
		fputs("{\"space\":", f);
		rf_json_str(f, p->space);
		fprintf(f, ",\"mixed_spaces\":%s,\"peak_trace\":%zu,\"peak_rank\":", m.mixed_spaces ? "true" : "false",
		        m.cmp[m.peak]);
		if (p->r->rank >= 0)
			fprintf(f, "%d", p->r->rank);
		else
			fputs("null", f);
		fprintf(f, ",\"peak_bytes\":%" PRIu64 ",\"others_mean_bytes\":%.0f,\"above_mean_bytes\":%.0f,\"ratio\":",
		        pk, m.others_mean, (double)pk - m.others_mean);
		if (m.others_mean > 0)
			fprintf(f, "%.4f", (double)pk / m.others_mean);
		else
			fputs("null", f);
		fprintf(f, ",\"lowest_trace\":%zu,\"sites_cut\":%s,\"phases_coarse\":%s", m.cmp[m.lowest],
		        m.sites_cut ? "true" : "false", m.phases_coarse ? "true" : "false");
		rows(&m, m.sites, m.nsites, o->top, "sites", f);
		rows(&m, m.phases, m.nphases, o->top, "phases", f);
		fputs("}", f);
	}
	fputs("}\n", f);
	rk_merge_free(&m);
	return ferror(f) ? -1 : 0;
}
