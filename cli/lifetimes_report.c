/*
 * lifetimes_report.c - the report section for non-iterative programs
 * (servers, pipelines): the lifetime classes of the heaviest allocation
 * sites over the run's wall time, the huge-page footprint each allocator
 * model would show (planner/lifetime_sim.c: size classes only, the
 * lifetime heap with the model's classes, with each object's own), and
 * what the lifetime plan would save.  `stprof report` prints it after the
 * report of a host trace without iterations, `stprof plan --lifetimes`
 * for the trace it scores the model on (docs/lifetimes.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lifetimes_report.h"
#include "stprof/symbolize.h"

static double mib(uint64_t b) { return (double)b / 1048576.0; }
static double pg(uint64_t pages) { return (double)pages * 2.0; }

static void ratio(FILE *f, uint64_t pages, uint64_t live)
{
	if (live)
		fprintf(f, " %8.1f MiB %5.2fx", pg(pages), pg(pages) / mib(live));
	else
		fprintf(f, " %8.1f MiB %6s", pg(pages), "-");
}

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

int lifetimes_section(FILE *f, const char *trace, const stp_lt_model *model, const char *model_name, char *err,
                      size_t errlen)
{
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
	stp_lt_sim s;
	if (!l || stp_lt_simulate(m, l, trace, &s, err, errlen) < 0) {
		stp_lt_learner_free(l);
		stp_lt_model_free(&own);
		return -1;
	}
	if (!s.allocs) { /* no host heap: nothing to say */
		stp_lt_learner_free(l);
		stp_lt_model_free(&own);
		return 0;
	}
	fprintf(f, "\nLifetimes (docs/lifetimes.md): %" PRIu64 " host allocations over %.1f s; %s\n", s.allocs,
	        (double)s.duration_ns / 1e9,
	        model ? model_name : "classes learned from this run (`stprof plan --lifetimes` learns from others)");
	stp_symbolizer *sym = stp_sym_new();
	nadded = 0;
	fprintf(f, "  sites with most allocations: class in this run / predicted; allocations in each tenth of the run\n");
	for (size_t k = 0; k < s.nsites; k++) {
		const stp_lt_sim_site *x = &s.site[k];
		char name[1024];
		site_name(sym, l, x->ctx, name, sizeof name);
		fprintf(f, "    %-7s / %-7s %10" PRIu64 " %9.1f MiB  |", stp_lt_class_name(x->label),
		        stp_lt_class_name(x->predicted), x->allocs, mib(x->bytes));
		for (int t = 0; t < 10; t++)
			fprintf(f, " %" PRIu64, x->tenth[t]);
		fprintf(f, "\n      %s\n", name);
	}
	stp_sym_free(sym);
	static const char *const names[STP_LT_SIM_MODELS] = {
		[STP_LT_SIM_SIZE_CLASSES] = "size classes only", [STP_LT_SIM_GLIBC] = "glibc-like",
		[STP_LT_SIM_PREDICTED] = "lifetime heap, predicted", [STP_LT_SIM_OWN] = "lifetime heap, own class"};
	fprintf(f, "  huge-page footprint (2 MiB pages holding a live object) over live bytes:\n");
	fprintf(f, "    %-26s %19s %19s %12s\n", "", "at the live peak", "at the end", "most held");
	const stp_lt_sim_point *end = &s.samples[STP_LT_SIM_SAMPLES - 1];
	for (int i = 0; i < STP_LT_SIM_MODELS; i++) {
		fprintf(f, "    %-26s", names[i]);
		ratio(f, s.peak.pages[i], s.peak.live);
		ratio(f, end->pages[i], end->live);
		fprintf(f, " %8.1f MiB\n", pg(s.max_pages[i]));
	}
	fprintf(f, "    (live: %.1f MiB at the peak, %.1f MiB at the end; with 8 KiB blocks instead: %.1f, %.1f, %.1f MiB "
	           "at the end)\n",
	        mib(s.peak.live), mib(end->live), (double)end->blocks[STP_LT_SIM_SIZE_CLASSES] / 128.0,
	        (double)end->blocks[STP_LT_SIM_PREDICTED] / 128.0, (double)end->blocks[STP_LT_SIM_OWN] / 128.0);
	fprintf(f, "  over time (s: live / size classes / predicted / own class, MiB):");
	for (int t = 0; t < STP_LT_SIM_SAMPLES; t++) {
		const stp_lt_sim_point *p = &s.samples[t];
		fprintf(f, "%s%.1f: %.0f/%.0f/%.0f/%.0f", t % 5 ? "  " : "\n    ", (double)p->t_ns / 1e9, mib(p->live),
		        pg(p->pages[STP_LT_SIM_SIZE_CLASSES]), pg(p->pages[STP_LT_SIM_PREDICTED]), pg(p->pages[STP_LT_SIM_OWN]));
	}
	fprintf(f, "\n");
	double save_end = pg(end->pages[STP_LT_SIM_SIZE_CLASSES]) - pg(end->pages[STP_LT_SIM_PREDICTED]),
	       save_max = pg(s.max_pages[STP_LT_SIM_SIZE_CLASSES]) - pg(s.max_pages[STP_LT_SIM_PREDICTED]);
	fprintf(f, "  the lifetime plan (`stprof run --plan MODEL`) would hold %.1f MiB %s at the end (%.0f%%) and "
	           "%.1f MiB %s at most (%.0f%%) than a size-class allocator on huge pages\n",
	        save_end < 0 ? -save_end : save_end, save_end < 0 ? "more" : "less",
	        end->pages[STP_LT_SIM_SIZE_CLASSES] ? 100.0 * (save_end < 0 ? -save_end : save_end) / pg(end->pages[STP_LT_SIM_SIZE_CLASSES]) : 0.0,
	        save_max < 0 ? -save_max : save_max, save_max < 0 ? "more" : "less",
	        s.max_pages[STP_LT_SIM_SIZE_CLASSES] ? 100.0 * (save_max < 0 ? -save_max : save_max) / pg(s.max_pages[STP_LT_SIM_SIZE_CLASSES]) : 0.0);
	stp_lt_learner_free(l);
	stp_lt_model_free(&own);
	return 0;
}
