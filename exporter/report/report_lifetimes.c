/*
 * report_lifetimes.c - the Lifetimes section of the report of a program
 * without iterations (a server, a pipeline; docs/lifetimes.md), as text
 * and as the report's "lifetimes" JSON member (docs/report-json.md): the
 * lifetime classes of the heaviest allocation sites over the run's wall
 * time, the huge-page footprint each host heap model would show
 * (allocsim's, replayed by planner/lifetime_sim.c: size classes only,
 * glibc-like, the lifetime heap with the model's classes and with each
 * object's own), and what the lifetime plan would save.
 *
 * It only renders stp_report_lifetimes: the figures are the simulation's,
 * the site names the caller's.  Text and JSON carry the same figures.
 */
#include <inttypes.h>
#include <stdio.h>

#include "report_fmt.h"
#include "stprof/report.h"

#define PAGE_MIB 2.0            /* a huge page */
#define BLOCKS_PER_MIB 128.0    /* 8 KiB blocks */

static const char *const model_name[STP_LT_SIM_MODELS] = {
	[STP_LT_SIM_SIZE_CLASSES] = "size classes only", [STP_LT_SIM_GLIBC] = "glibc-like",
	[STP_LT_SIM_PREDICTED] = "lifetime heap, predicted", [STP_LT_SIM_OWN] = "lifetime heap, own class"};
static const char *const model_key[STP_LT_SIM_MODELS] = {
	[STP_LT_SIM_SIZE_CLASSES] = "size_classes", [STP_LT_SIM_GLIBC] = "glibc",
	[STP_LT_SIM_PREDICTED] = "lifetime_predicted", [STP_LT_SIM_OWN] = "lifetime_own"};

static double mib(uint64_t b) { return (double)b / 1048576.0; }
static double pg(uint64_t pages) { return (double)pages * PAGE_MIB; }

static void ratio(FILE *f, uint64_t pages, uint64_t live)
{
	if (live)
		fprintf(f, " %8.1f MiB %5.2fx", pg(pages), pg(pages) / mib(live));
	else
		fprintf(f, " %8.1f MiB %6s", pg(pages), "-");
}

static const stp_lt_sim_point *end_of(const stp_lt_sim *s) { return &s->samples[STP_LT_SIM_SAMPLES - 1]; }

/* what the lifetime heap (predicted) holds less than model i, in MiB
 * (negative: more), at the end and at most */
static double saved_end(const stp_lt_sim *s, int i)
{
	return pg(end_of(s)->pages[i]) - pg(end_of(s)->pages[STP_LT_SIM_PREDICTED]);
}
static double saved_max(const stp_lt_sim *s, int i)
{
	return pg(s->max_pages[i]) - pg(s->max_pages[STP_LT_SIM_PREDICTED]);
}

static void saving(FILE *f, double d, uint64_t of_pages)
{
	fprintf(f, "%.1f MiB %s (%.0f%%)", d < 0 ? -d : d, d < 0 ? "more" : "less",
	        of_pages ? 100.0 * (d < 0 ? -d : d) / pg(of_pages) : 0.0);
}

int stp_report_lifetimes_text(const stp_report_lifetimes *l, FILE *f)
{
	const stp_lt_sim *s = l->sim;
	if (!s->allocs)
		return 0;
	fprintf(f, "\nLifetimes (docs/lifetimes.md): %" PRIu64 " host allocations over %.1f s; %s\n", s->allocs,
	        (double)s->duration_ns / 1e9,
	        l->model ? l->model : "classes learned from this run (`stprof plan --lifetimes` learns from others)");
	fprintf(f, "  sites with most allocations: class in this run / predicted; allocations in each tenth of the run\n");
	for (size_t k = 0; k < s->nsites; k++) {
		const stp_lt_sim_site *x = &s->site[k];
		fprintf(f, "    %-7s / %-7s %10" PRIu64 " %9.1f MiB  |", stp_lt_class_name(x->label),
		        stp_lt_class_name(x->predicted), x->allocs, mib(x->bytes));
		for (int t = 0; t < 10; t++)
			fprintf(f, " %" PRIu64, x->tenth[t]);
		fprintf(f, "\n      %s\n", l->site[k] ? l->site[k] : "?");
	}
	fprintf(f, "  huge-page footprint (2 MiB pages holding a live object) over live bytes:\n");
	fprintf(f, "    %-26s %19s %19s %12s\n", "", "at the live peak", "at the end", "most held");
	const stp_lt_sim_point *end = end_of(s);
	for (int i = 0; i < STP_LT_SIM_MODELS; i++) {
		fprintf(f, "    %-26s", model_name[i]);
		ratio(f, s->peak.pages[i], s->peak.live);
		ratio(f, end->pages[i], end->live);
		fprintf(f, " %8.1f MiB\n", pg(s->max_pages[i]));
	}
	fprintf(f, "    (live: %.1f MiB at the peak, %.1f MiB at the end; with 8 KiB blocks instead, at the end:",
	        mib(s->peak.live), mib(end->live));
	for (int i = 0; i < STP_LT_SIM_MODELS; i++)
		fprintf(f, "%s %.1f", i ? "," : "", (double)end->blocks[i] / BLOCKS_PER_MIB);
	fprintf(f, " MiB)\n");
	fprintf(f, "  over time (s: live / size classes / glibc-like / predicted / own class, MiB):");
	for (int t = 0; t < STP_LT_SIM_SAMPLES; t++) {
		const stp_lt_sim_point *p = &s->samples[t];
		fprintf(f, "%s%.1f: %.0f", t % 5 ? "  " : "\n    ", (double)p->t_ns / 1e9, mib(p->live));
		for (int i = 0; i < STP_LT_SIM_MODELS; i++)
			fprintf(f, "/%.0f", pg(p->pages[i]));
	}
	fprintf(f, "\n  the lifetime plan (`stprof run --plan MODEL`) would hold ");
	saving(f, saved_end(s, STP_LT_SIM_SIZE_CLASSES), end->pages[STP_LT_SIM_SIZE_CLASSES]);
	fprintf(f, " at the end and ");
	saving(f, saved_max(s, STP_LT_SIM_SIZE_CLASSES), s->max_pages[STP_LT_SIM_SIZE_CLASSES]);
	fprintf(f, " at most than a size-class allocator on huge pages; ");
	saving(f, saved_end(s, STP_LT_SIM_GLIBC), end->pages[STP_LT_SIM_GLIBC]);
	fprintf(f, " and ");
	saving(f, saved_max(s, STP_LT_SIM_GLIBC), s->max_pages[STP_LT_SIM_GLIBC]);
	fprintf(f, " than glibc-like\n");
	return ferror(f) ? -1 : 0;
}

static void point_json(FILE *f, const stp_lt_sim_point *p)
{
	fprintf(f, "{\"t_ns\":%" PRIu64 ",\"live\":%" PRIu64 ",\"pages\":[", p->t_ns, p->live);
	for (int i = 0; i < STP_LT_SIM_MODELS; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", p->pages[i]);
	fputs("],\"blocks\":[", f);
	for (int i = 0; i < STP_LT_SIM_MODELS; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", p->blocks[i]);
	fputs("]}", f);
}

int stp_report_lifetimes_json(const stp_report_lifetimes *l, FILE *f)
{
	const stp_lt_sim *s = l->sim;
	fputs("{\"model\":", f);
	if (l->model)
		rf_json_str(f, l->model);
	else
		fputs("null", f);
	fprintf(f, ",\"allocs\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"page_bytes\":%" PRIu64
	           ",\"block_bytes\":%u,\n\"sites\":[",
	        s->allocs, s->duration_ns, (uint64_t)ALLOCPOLICY_LT_PAGE, ALLOCPOLICY_LT_BLOCK);
	for (size_t k = 0; k < s->nsites; k++) {
		const stp_lt_sim_site *x = &s->site[k];
		fprintf(f, "%s\n{\"frames\":", k ? "," : "");
		rf_json_str(f, l->site[k] ? l->site[k] : "?");
		fprintf(f, ",\"class\":\"%s\",\"predicted\":\"%s\",\"allocs\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"tenths\":[",
		        stp_lt_class_name(x->label), stp_lt_class_name(x->predicted), x->allocs, x->bytes);
		for (int t = 0; t < 10; t++)
			fprintf(f, "%s%" PRIu64, t ? "," : "", x->tenth[t]);
		fputs("]}", f);
	}
	fputs("],\n\"models\":[", f);
	const stp_lt_sim_point *end = end_of(s);
	for (int i = 0; i < STP_LT_SIM_MODELS; i++)
		fprintf(f, "%s\n{\"key\":\"%s\",\"name\":\"%s\",\"peak_pages\":%" PRIu64 ",\"end_pages\":%" PRIu64
		           ",\"max_pages\":%" PRIu64 ",\"end_blocks\":%" PRIu64 "}",
		        i ? "," : "", model_key[i], model_name[i], s->peak.pages[i], end->pages[i], s->max_pages[i],
		        end->blocks[i]);
	fputs("],\n\"peak\":", f);
	point_json(f, &s->peak);
	fputs(",\n\"samples\":[", f);
	for (int t = 0; t < STP_LT_SIM_SAMPLES; t++) {
		fputs(t ? ",\n" : "\n", f);
		point_json(f, &s->samples[t]);
	}
	/* pages the lifetime plan would hold less (negative: more) */
	fprintf(f, "],\n\"saved_pages\":{\"end_vs_size_classes\":%" PRId64 ",\"max_vs_size_classes\":%" PRId64
	           ",\"end_vs_glibc\":%" PRId64 ",\"max_vs_glibc\":%" PRId64 "}}",
	        (int64_t)end->pages[STP_LT_SIM_SIZE_CLASSES] - (int64_t)end->pages[STP_LT_SIM_PREDICTED],
	        (int64_t)s->max_pages[STP_LT_SIM_SIZE_CLASSES] - (int64_t)s->max_pages[STP_LT_SIM_PREDICTED],
	        (int64_t)end->pages[STP_LT_SIM_GLIBC] - (int64_t)end->pages[STP_LT_SIM_PREDICTED],
	        (int64_t)s->max_pages[STP_LT_SIM_GLIBC] - (int64_t)s->max_pages[STP_LT_SIM_PREDICTED]);
	return ferror(f) ? -1 : 0;
}
