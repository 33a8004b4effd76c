/*
 * lifetimes_report.c - the figures of the report section for
 * non-iterative programs (servers, pipelines): the trace's host
 * allocations replayed through the host heap models by
 * planner/lifetime_sim.c with a model (or one learned from the trace
 * itself), and the heaviest sites' names, symbolized.  The exporter
 * renders them (stp_report_lifetimes_text/json): `stprof report` after the
 * report of a host trace without iterations (text and JSON), `stprof plan
 * --lifetimes` for the trace it scores the model on (docs/lifetimes.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lifetimes_report.h"
#include "stprof/symbolize.h"

/* The site's innermost frames, symbolized, "a < b < c".  added: the module
 * paths given to the symbolizer so far (the learner's strings). */
static const char *added[256];
static size_t nadded;

static void add_module(stp_symbolizer *sym, const char *path, uint64_t lo, uint64_t size)
{
	for (size_t i = 0; i < nadded; i++)
		if (added[i] == path)
			return;
	if (nadded < sizeof added / sizeof added[0])
		added[nadded++] = path;
	stp_sym_add_module(sym, path, lo, size, 0, NULL, 0);
}

static void site_name(stp_symbolizer *sym, const stp_lt_learner *l, size_t ctx, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = 0;
	for (uint32_t i = 0; i < 3 && at + 8 < len; i++) {
		const char *path;
		uint64_t va, lo, size;
		if (!stp_lt_learner_frame(l, ctx, i, &path, &va, &lo, &size))
			break;
		char fr[256];
		stp_frame out[STP_SYM_MAX_FRAMES];
		int n = 0;
		if (path && sym) {
			add_module(sym, path, lo, size);
			n = stp_sym_lookup(sym, va, 1, out, STP_SYM_MAX_FRAMES);
		}
		if (n > 0)
			stp_sym_format(&out[0], 0, fr, sizeof fr);
		else
			snprintf(fr, sizeof fr, "%s+0x%" PRIx64, path ? (strrchr(path, '/') ? strrchr(path, '/') + 1 : path) : "?",
			         va);
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? " < " : "", fr);
	}
}

int lifetimes_compute(const char *trace, const stp_lt_model *model, const char *model_name, lifetimes_data *out,
                      char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	out->view.sim = &out->sim;
	out->view.model = model ? model_name : NULL;
	stp_lt_model own = {0};
	const stp_lt_model *m = model;
	if (!m) {
		/* learned from this very run: an upper bound of what a model can do */
		stp_lt_learner *l = stp_lt_learner_new(STP_LT_DEPTH_DEFAULT);
		if (!l || stp_lt_learner_add(l, trace, err, errlen) < 0 || stp_lt_learner_model(l, &own) < 0) {
			if (l && !err[0])
				snprintf(err, errlen, "%s: out of memory", trace);
			stp_lt_learner_free(l);
			return -1;
		}
		stp_lt_learner_free(l);
		m = &own;
	}
	stp_lt_learner *l = stp_lt_learner_new(m->depth);
	if (!l || stp_lt_simulate(m, l, trace, &out->sim, err, errlen) < 0) {
		if (!l)
			snprintf(err, errlen, "%s: out of memory", trace);
		stp_lt_learner_free(l);
		stp_lt_model_free(&own);
		return -1;
	}
	stp_symbolizer *sym = out->sim.nsites ? stp_sym_new() : NULL;
	nadded = 0;
	for (size_t k = 0; k < out->sim.nsites; k++) {
		site_name(sym, l, out->sim.site[k].ctx, out->names[k], sizeof out->names[k]);
		out->view.site[k] = out->names[k];
	}
	stp_sym_free(sym);
	stp_lt_learner_free(l);
	stp_lt_model_free(&own);
	return 0;
}
