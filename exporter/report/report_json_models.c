/*
 * report_json_models.c - the "models" member of the JSON report: what was
 * fed to the allocator models, and per device each model's M_a, M_r, E,
 * fragmentation and series, the actual figures from segment events, the
 * worst moment (segments with free bytes, the blocks and the call sites
 * that split them) and the recommended settings.  docs/report-json.md has
 * the schema.  Times are ns since the trace's first event, like every
 * other *_ns of the report; stacks are given as the report's site indexes.
 */
#include <inttypes.h>
#include <string.h>

#include "report_fmt.h"
#include "report_internal.h"

static uint8_t *site_mark; /* report_json_models()'s mark, while it runs */

static void site_or_null(stp_det *d, FILE *f, const char *k, uint32_t stack, int comma)
{
	uint32_t s = stack ? stp_det_stack_site(d, stack) : UINT32_MAX;
	if (s != UINT32_MAX && site_mark)
		site_mark[s] = 1;
	if (s == UINT32_MAX)
		fprintf(f, "\"%s\":null%s", k, comma ? "," : "");
	else
		fprintf(f, "\"%s\":%u%s", k, s, comma ? "," : "");
}

static uint64_t rel(uint64_t t, uint64_t t0) { return t > t0 ? t - t0 : 0; }

static const char *model_name(allocsim_model_kind k)
{
	return k == ALLOCSIM_BFC ? "bfc" : k == ALLOCSIM_RAW ? "raw" : "pytorch";
}

static void result_json(FILE *f, const allocsim_result *res, uint64_t t0)
{
	char set[256];
	fputs("{\"label\":", f);
	rf_json_str(f, res->label);
	fprintf(f, ",\"model\":\"%s\",\"settings\":", model_name(res->config.model));
	rf_json_str(f, allocsim_config_format(&res->config, set, sizeof set));
	fprintf(f,
	        ",\"peak_allocated\":%" PRIu64 ",\"peak_reserved\":%" PRIu64 ",\"peak_requested\":%" PRIu64
	        ",\"efficiency\":%.6f,\"fragmentation\":%.6f,\"peak_reserved_ns\":%" PRIu64 ",\"final_reserved\":%" PRIu64
	        ",\"segment_allocs\":%" PRIu64 ",\"segment_frees\":%" PRIu64 ",\"largest_segment\":%" PRIu64
	        ",\"splits\":%" PRIu64 ",\"merges\":%" PRIu64 ",\"capacity\":%" PRIu64 ",\"ooms\":%" PRIu64
	        ",\"alloc_retries\":%" PRIu64 ",\"first_oom_ns\":",
	        res->peak_allocated, res->peak_reserved, res->peak_requested, res->efficiency, res->fragmentation,
	        rel(res->peak_reserved_time, t0), res->final_reserved, res->segment_allocs, res->segment_frees,
	        res->largest_segment, res->splits, res->merges, res->config.capacity, res->ooms, res->alloc_retries);
	if (res->ooms)
		fprintf(f, "%" PRIu64 ",\"first_oom_size\":%" PRIu64, rel(res->first_oom_time, t0), res->first_oom_size);
	else
		fputs("null,\"first_oom_size\":0", f);
	fputs(",\"series\":[", f);
	for (size_t i = 0; i < res->nseries; i++)
		fprintf(f, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", i ? "," : "", rel(res->series[i].time, t0),
		        res->series[i].allocated, res->series[i].reserved);
	fputs("]}", f);
}

/* The first request refused at run time, tried on each model (results'
 * order) within the capacity. */
static void refusal_json(FILE *f, const allocsim_device_report *dr, uint64_t t0)
{
	fprintf(f, "{\"ns\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"capacity\":%" PRIu64 ",\"capacity_given\":%s,\"models\":[",
	        rel(dr->refusal_time, t0), dr->refusal_size, dr->refusal_capacity,
	        dr->refusal_capacity_given ? "true" : "false");
	for (size_t k = 0; k < dr->nresults; k++) {
		const allocsim_refusal_probe *p = &dr->refusal_probes[k];
		fprintf(f, "%s{\"label\":", k ? "," : "");
		rf_json_str(f, dr->results[k].label);
		fprintf(f, ",\"served\":%s,\"ooms_before\":%" PRIu64 ",\"first_oom_ns\":", p->served ? "true" : "false",
		        p->ooms_before);
		if (p->ooms_before)
			fprintf(f, "%" PRIu64, rel(p->first_oom_time, t0));
		else
			fputs("null", f);
		fprintf(f, ",\"allocated\":%" PRIu64 ",\"reserved\":%" PRIu64 ",\"free_bytes\":%" PRIu64
		        ",\"largest_free\":%" PRIu64 "}",
		        p->allocated, p->reserved, p->free_bytes, p->largest_free);
	}
	fputs("]}", f);
}

static void worst_json(stp_det *d, FILE *f, const allocsim_device_report *dr, uint64_t t0)
{
	const allocsim_snapshot *s = &dr->worst;
	fputs("{\"model\":", f);
	rf_json_str(f, dr->nresults ? dr->results[0].label : "");
	fprintf(f,
	        ",\"ns\":%" PRIu64 ",\"event\":%" PRIu64 ",\"reserved\":%" PRIu64 ",\"allocated\":%" PRIu64
	        ",\"free_bytes\":%" PRIu64 ",\"free_blocks\":%" PRIu64 ",\"largest_free\":%" PRIu64
	        ",\"free_small_pool\":%" PRIu64 ",\"free_large_pool\":%" PRIu64 ",\"request_size\":%" PRIu64 ",",
	        rel(s->time, t0), s->event, s->reserved, s->allocated, s->free_bytes, s->free_blocks, s->largest_free,
	        s->free_small_pool, s->free_large_pool, s->request_size);
	site_or_null(d, f, "request_site", s->request_stack, 1);
	fputs("\"free_by_size\":[", f);
	for (int k = 0; k < ALLOCSIM_FREE_BINS; k++)
		fprintf(f, "%s%" PRIu64, k ? "," : "", s->free_by_bin[k]);
	fputs("],\"segments\":[", f);
	size_t shown = 0;
	for (size_t i = 0; i < s->nsegments && shown < 16; i++) {
		const allocsim_segment_info *g = &s->segments[i];
		if (!g->free_bytes)
			break;
		fprintf(f,
		        "%s\n{\"addr\":%" PRIu64 ",\"size\":%" PRIu64 ",\"stream\":%" PRIu64
		        ",\"small_pool\":%s,\"expandable\":%s,\"allocated\":%" PRIu64 ",\"free_bytes\":%" PRIu64
		        ",\"largest_free\":%" PRIu64 ",",
		        shown++ ? "," : "", g->addr, g->size, g->stream, g->small_pool ? "true" : "false",
		        g->expandable ? "true" : "false", g->allocated, g->free_bytes, g->largest_free);
		site_or_null(d, f, "site", g->stack, 1);
		fputs("\"free\":[", f);
		unsigned nb = 0;
		for (uint32_t k = g->first_block; k < g->first_block + g->nblocks && nb < 32; k++) {
			const allocsim_block_info *b = &s->blocks[k];
			if (b->state != ALLOCSIM_BLOCK_FREE)
				continue;
			fprintf(f, "%s{\"offset\":%" PRIu64 ",\"size\":%" PRIu64 ",", nb++ ? "," : "", b->addr - g->addr, b->size);
			site_or_null(d, f, "split_site", b->split_stack, 1);
			site_or_null(d, f, "left_site", b->left_stack, 1);
			site_or_null(d, f, "right_site", b->right_stack, 0);
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("],\"sites\":[", f);
	for (size_t i = 0; i < s->nsites && i < 32; i++) {
		const allocsim_site *t = &s->sites[i];
		fprintf(f, "%s{", i ? "," : "");
		site_or_null(d, f, "site", t->stack, 1);
		fprintf(f,
		        "\"split_free_bytes\":%" PRIu64 ",\"pinning_bytes\":%" PRIu64 ",\"splits\":%" PRIu64
		        ",\"live_bytes\":%" PRIu64 "}",
		        t->split_free_bytes, t->pinning_bytes, t->splits, t->live_bytes);
	}
	fputs("]}", f);
}

/* A JAX device: the settings as run, XLA's samples against the as-run
 * model (at most 1024 samples, evenly picked, the last always). */
static void xla_json(FILE *f, const allocsim_device_report *dr, uint64_t t0)
{
	const allocsim_xla_settings *s = &dr->xla_settings;
	const allocsim_actual *ac = &dr->actual;
	fprintf(f,
	        "{\"settings_known\":%s,\"preallocate\":%s,\"mem_fraction\":%.4f,\"platform\":%s,\"capacity\":%" PRIu64
	        ",\"bytes_limit\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"in_use_samples\":%" PRIu64 ",\"in_use_error\":%.6f,",
	        s->known ? "true" : "false", s->preallocate ? "true" : "false", s->mem_fraction, s->platform ? "true" : "false",
	        dr->xla_capacity, ac->bytes_limit, (uint64_t)dr->nprobes, ac->in_use_samples, ac->in_use_error);
	if (ac->has_largest_free)
		fprintf(f, "\"largest_free\":%" PRIu64 ",\"model_largest_free\":%" PRIu64 ",", ac->largest_free,
		        ac->model_largest_free);
	else
		fputs("\"largest_free\":null,\"model_largest_free\":null,", f);
	fputs("\"probes\":[", f);
	size_t n = dr->nprobes, step = n > 1024 ? (n + 1023) / 1024 : 1, out = 0;
	for (size_t i = 0; i < n; i++) {
		if (i % step && i + 1 != n)
			continue;
		const allocsim_xla_probe *p = &dr->probes[i];
		fprintf(f, "%s[%" PRIu64, out++ ? "," : "", p->time > t0 ? p->time - t0 : 0);
		static const int keys[] = {ALLOCSIM_XLA_BYTES_IN_USE, ALLOCSIM_XLA_PEAK_BYTES_IN_USE, ALLOCSIM_XLA_POOL_BYTES,
		                           ALLOCSIM_XLA_LARGEST_FREE_BLOCK};
		for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
			if (p->have >> keys[k] & 1)
				fprintf(f, ",%" PRIu64, p->value[keys[k]]);
			else
				fputs(",null", f);
		}
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", p->model_in_use, p->model_pool, p->model_largest_free);
	}
	fputs("]}", f);
}

static void json_models(stp_det *d, FILE *f);

void report_json_models(stp_det *d, FILE *f, uint8_t *mark)
{
	site_mark = mark;
	json_models(d, f);
	site_mark = NULL;
}

static void json_models(stp_det *d, FILE *f)
{
	const stp_det_result *r = stp_det_result_of(d);
	fputs(",\n\"models\":", f);
	if (!r->sim) {
		fputs("null,\"models_error\":", f);
		if (r->sim_error)
			rf_json_str(f, r->sim_error);
		else
			fputs("null", f);
		return;
	}
	const allocsim_report *sr = r->sim;
	uint64_t t0 = sr->start_time;
	fprintf(f,
	        "{\"fed\":{\"source\":\"%s\",\"allocs\":%" PRIu64 ",\"skipped_small\":%" PRIu64 ",\"min_size\":%" PRIu64
	        ",\"skipped_other_libraries\":%" PRIu64 "},\"memory\":%zu,\"devices\":[",
	        r->sim_host ? "host" : "device", r->sim_fed_allocs, r->sim_skipped, r->sim_min_size, r->sim_skipped_other,
	        sr->memory);
	for (size_t i = 0; i < sr->ndevices; i++) {
		const allocsim_device_report *dr = &sr->devices[i];
		fprintf(f,
		        "%s\n{\"device\":%d,\"host_fallback\":%s,\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64
		        ",\"unmatched_frees\":%" PRIu64 ",\"results\":[",
		        i ? "," : "", dr->device, dr->host_fallback ? "true" : "false", dr->allocs, dr->frees,
		        dr->unmatched_frees);
		for (size_t k = 0; k < dr->nresults; k++) {
			fputs(k ? ",\n" : "\n", f);
			result_json(f, &dr->results[k], t0);
		}
		fputs("],\n\"actual\":", f);
		if (dr->actual.present && dr->actual.over_reserved) /* inconsistent segments: no ratios */
			fprintf(f,
			        "{\"segment_reserves\":%" PRIu64 ",\"segment_releases\":%" PRIu64 ",\"peak_allocated\":%" PRIu64
			        ",\"peak_reserved\":%" PRIu64 ",\"efficiency\":null,\"fragmentation\":null,"
			        "\"allocated_error\":null,\"reserved_error\":null,\"over_reserved\":%" PRIu64 "}",
			        dr->actual.segment_reserves, dr->actual.segment_releases, dr->actual.peak_allocated,
			        dr->actual.peak_reserved, dr->actual.over_reserved);
		else if (dr->actual.present)
			fprintf(f,
			        "{\"segment_reserves\":%" PRIu64 ",\"segment_releases\":%" PRIu64 ",\"peak_allocated\":%" PRIu64
			        ",\"peak_reserved\":%" PRIu64 ",\"efficiency\":%.6f,\"fragmentation\":%.6f,"
			        "\"allocated_error\":%.6f,\"reserved_error\":%.6f,\"over_reserved\":0}",
			        dr->actual.segment_reserves, dr->actual.segment_releases, dr->actual.peak_allocated,
			        dr->actual.peak_reserved, dr->actual.efficiency, 1 - dr->actual.efficiency,
			        dr->actual.allocated_error, dr->actual.reserved_error);
		else
			fputs("null", f);
		fputs(",\n\"xla\":", f);
		if (dr->xla)
			xla_json(f, dr, t0);
		else
			fputs("null", f);
		fputs(",\n\"worst\":", f);
		if (dr->has_worst)
			worst_json(d, f, dr, t0);
		else
			fputs("null", f);
		fprintf(f, ",\n\"recommend_tried\":%s,\"recommendations\":[", dr->recommend_tried ? "true" : "false");
		for (size_t k = 0; k < dr->nrecs; k++) {
			const allocsim_recommendation *rc = &dr->recs[k];
			fprintf(f, "%s{\"settings\":", k ? "," : "");
			rf_json_str(f, rc->settings);
			fprintf(f,
			        ",\"peak_allocated\":%" PRIu64 ",\"peak_reserved\":%" PRIu64 ",\"efficiency\":%.6f,\"ooms\":%" PRIu64
			        ",\"alloc_retries\":%" PRIu64 ",\"reserved_delta\":%" PRId64 ",\"efficiency_delta\":%.6f}",
			        rc->peak_allocated, rc->peak_reserved, rc->efficiency, rc->ooms, rc->alloc_retries,
			        rc->reserved_delta, rc->efficiency_delta);
		}
		fputs("],\n\"refusal\":", f);
		if (dr->has_refusal)
			refusal_json(f, dr, t0);
		else
			fputs("null", f);
		fputs("}", f);
	}
	fputs("]}", f);
}
