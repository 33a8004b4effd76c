/*
 * report_json.c - the JSON report.  The schema is docs/report-json.md
 * ("schema": "stprof-report", "version": 2); fields are only ever added
 * within a version.  Bounded like the text report: the --top call sites and
 * findings, plus every site a listed finding or the models name (ids are
 * the sites' ranks, so a bounded list has gaps); --top 0 (report --all)
 * includes everything.  Call paths are cut at --frames.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report_fmt.h"
#include "report_internal.h"
#include "stprof/report.h"

/* this report and the ranks' ("stprof-report-ranks") start so */
const stp_outkind stp_outkind_report_json = {"stprof JSON report", "{\"schema\":\"stprof-report", 24, NULL};

static const char *end_reason(uint32_t r)
{
	switch (r) {
	case STP_END_EXIT: return "exit";
	case STP_END_SIGNAL: return "signal";
	case STP_END_EXEC: return "exec";
	case STP_END_DETACH: return "detach";
	case STP_END_SNAPSHOT: return "snapshot";
	default: return "none";
	}
}

static void u64(FILE *f, const char *k, uint64_t v, int comma) { fprintf(f, "\"%s\":%" PRIu64 "%s", k, v, comma ? "," : ""); }

static void idx_or_null(FILE *f, const char *k, int64_t v)
{
	if (v < 0)
		fprintf(f, "\"%s\":null,", k);
	else
		fprintf(f, "\"%s\":%" PRId64 ",", k, v);
}

static void frame_json(FILE *f, const stp_det_frame *fr)
{
	char t[512];
	fprintf(f, "{\"ip\":%" PRIu64 ",\"module\":", fr->ip);
	rf_json_str(f, fr->module);
	fprintf(f, ",\"offset\":%" PRIu64 ",\"function\":", fr->offset);
	if (fr->function)
		rf_json_str(f, fr->function);
	else
		fputs("null", f);
	fputs(",\"file\":", f);
	if (fr->file)
		rf_json_str(f, fr->file);
	else
		fputs("null", f);
	fprintf(f, ",\"line\":%u,\"op\":", fr->line);
	if (fr->op)
		rf_json_str(f, fr->op);
	else
		fputs("null", f);
	fputs(",\"text\":", f);
	rf_json_str(f, stp_det_frame_text(fr, t, sizeof t));
	fputc('}', f);
}

/* One finding (or one the structure explains: "expected" names why). */
static void finding_json(stp_det *d, const stp_det_result *r, FILE *f, const stp_det_finding *x, int first)
{
	const stp_det_instance *w = &x->worst;
	char sug[1024], where[256];
	fprintf(f, "%s\n{\"pattern\":\"%s\",\"title\":", first ? "" : ",", stp_det_pattern_name(x->pattern));
	rf_json_str(f, stp_det_pattern_title(x->pattern));
	fprintf(f, ",\"site\":%u,", x->site);
	if (x->expected)
		fprintf(f, "\"expected\":\"%s\",", stp_det_expect_name(x->expected));
	else
		fputs("\"expected\":null,", f);
	u64(f, "objects", x->objects, 1);
	u64(f, "bytes", x->bytes, 1);
	fprintf(f, "\"waste_byte_ns\":%.0f,", x->waste_byte_ns);
	u64(f, "max_distance", x->max_distance, 1);
	fprintf(f, "\"distance_unit\":\"%s\",\"suggestion\":",
	        x->pattern == STP_PAT_LATE_FREE    ? "segments"
	        : x->pattern == STP_PAT_DEAD_WRITE ? "writes"
	        : x->pattern == STP_PAT_OVERALLOC  ? "64ths"
	        : x->pattern == STP_PAT_STRUCTURED ? "parts"
	                                           : r->logical_unit);
	rf_json_str(f, x->expected ? stp_det_expect_text(x->expected) : stp_det_suggestion(d, x, sug, sizeof sug));
	fputs(",\"span\":", f);
	rf_json_str(f, stp_det_span_text(d, w->at_seq, w->until_seq, where, sizeof where));
	if (x->pattern == STP_PAT_LEAK && x->leak_iters)
		fprintf(f, ",\"leak_iterations\":{\"count\":%u,\"first\":%" PRId64 ",\"last\":%" PRId64
		        ",\"freed_after_loop\":%" PRIu64 "}", x->leak_iters, x->leak_first_iter, x->leak_last_iter,
		        x->leak_freed_after);
	else
		fputs(",\"leak_iterations\":null", f);
	fputs(",\"worst\":{", f);
	u64(f, "alloc_seq", w->alloc_seq, 1);
	u64(f, "alloc_ns", w->alloc_ns, 1);
	if (w->free_ns == UINT64_MAX)
		fputs("\"free_ns\":null,", f);
	else
		u64(f, "free_ns", w->free_ns, 1);
	u64(f, "addr", w->addr, 1);
	u64(f, "size", w->size, 1);
	u64(f, "distance", w->distance, 1);
	u64(f, "levels", w->levels, 1);
	u64(f, "waste_from_ns", w->at_ns, 1);
	u64(f, "waste_until_ns", w->until_ns, 1);
	if (x->pattern == STP_PAT_OVERALLOC || x->pattern == STP_PAT_STRUCTURED || x->pattern == STP_PAT_NONUNIFORM) {
		/* overallocation: the bytes used; structured: the largest part
		 * (used_bytes) and the span of all parts; non-uniform: the hot part */
		u64(f, "used_bytes", w->used_bytes, 1);
		u64(f, "used_from", w->used_lo, 1);
		u64(f, "used_to", w->used_hi, 1);
	}
	if (x->pattern == STP_PAT_NONUNIFORM)
		fprintf(f, "\"hot_apis\":%" PRIu64 ",\"cold_apis\":%.2f,", w->hot_apis, w->cold_apis);
	if (w->other_site != UINT32_MAX)
		fprintf(f, "\"other_site\":%u,\"other_size\":%" PRIu64 "}}", w->other_site, w->other_size);
	else
		fputs("\"other_site\":null,\"other_size\":0}}", f);
}

/* "frames":[...] of a call path's frames. */
static void frame_list_json(FILE *f, const stp_det_frame *fr, uint32_t n)
{
	fputs("\"frames\":[", f);
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		frame_json(f, &fr[i]);
	}
	fputc(']', f);
}

/* A refused request: bytes asked for, live and reserved then, when, frames. */
static void refusal_json(stp_det *d, FILE *f, const stp_det_refusal *x)
{
	fputc('{', f);
	u64(f, "bytes", x->bytes, 1);
	u64(f, "live_bytes", x->live, 1);
	u64(f, "reserved_bytes", x->reserved, 1);
	u64(f, "seq", x->seq, 1);
	u64(f, "ns", x->ns, 1);
	stp_det_frame fr[8];
	frame_list_json(f, fr, x->stack ? stp_det_stack_frames(d, x->stack, fr, 8) : 0);
	fputc('}', f);
}

/* "frames":[...] of a site (as the text report shows them), then
 * "user_frame": the first of them when it is the user's own line (a
 * Python frame of the user's code, else a native frame outside the
 * framework), else null; "package_frame": the line of an installed
 * package's model the site went through below the user's
 * (stp_det_site_package_line), else null. */
static void frames_json(stp_det *d, FILE *f, uint32_t site, unsigned max)
{
	stp_det_frame fr[REPORT_MAX_FRAMES];
	uint32_t n = stp_det_site_frames(d, site, fr, max > REPORT_MAX_FRAMES ? REPORT_MAX_FRAMES : (max ? max : 1));
	frame_list_json(f, fr, n);
	fputs(",\"user_frame\":", f);
	if (n && stp_det_frame_is_user(&fr[0]))
		frame_json(f, &fr[0]);
	else
		fputs("null", f);
	stp_det_frame pkg;
	fputs(",\"package_frame\":", f);
	if (stp_det_site_package_line(d, site, &pkg))
		frame_json(f, &pkg);
	else
		fputs("null", f);
}

static void classes_json(FILE *f, const uint64_t *objs, const uint64_t *bytes, const uint64_t *peak)
{
	fputc('{', f);
	for (unsigned c = 0; c < STP_CLASS_COUNT; c++)
		fprintf(f, "%s\"%s\":{\"objects\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"bytes_at_peak\":%" PRIu64 "}",
		        c ? "," : "", stp_det_class_name(c), objs[c], bytes[c], peak[c]);
	fputc('}', f);
}

static void u64_array(FILE *f, const uint64_t *v, unsigned n)
{
	fputc('[', f);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", v[i]);
	fputc(']', f);
}

int stp_report_json(stp_det *d, const stp_report_options *o, FILE *f)
{
	stp_report_options def;
	if (!o) {
		stp_report_options_default(&def);
		o = &def;
	}
	const stp_det_result *r = stp_det_result_of(d);
	const stp_det_timeline *t = &r->timeline;
	fputs("{\"schema\":\"stprof-report\",\"version\":2,\n\"trace\":{\"path\":", f);
	rf_json_str(f, r->path);
	fputs(",\"command\":", f);
	rf_json_str(f, r->command);
	fprintf(f, ",\"pid\":%u,", r->pid);
	rf_json_rank(f, r);
	fprintf(f, ",\"whole\":%s,\"end\":{\"reason\":\"%s\",\"value\":%d},\"error\":",
	        r->whole ? "true" : "false", r->whole ? end_reason(r->end_reason) : "none", r->end_value);
	if (r->error)
		rf_json_str(f, r->error);
	else
		fputs("null", f);
	fputc(',', f);
	u64(f, "events", r->events, 1);
	fputs("\"events_by_type\":{", f);
	for (unsigned ty = 1; ty <= STP_EV_TYPE_MAX; ty++)
		fprintf(f, "%s\"%s\":%" PRIu64, ty > 1 ? "," : "", stp_event_type_name(ty), r->by_type[ty]);
	fputs("},", f);
	u64(f, "lost_events", r->lost_events, 1);
	u64(f, "duration_ns", r->duration_ns, 1);
	u64(f, "unknown_frees", r->unknown_frees, 1);
	u64(f, "reused_live", r->reused_live, 1);
	u64(f, "small_ignored", r->small_ignored, 1);
	u64(f, "huge_ignored", r->huge_ignored, 1);
	u64(f, "segments_dropped", r->segments_dropped, 0);
	fputs("},\n\"spaces\":[", f);
	for (uint32_t i = 0; i < r->nspaces; i++) {
		const stp_det_space *s = &r->spaces[i];
		fprintf(f, "%s\n{\"kind\":\"%s\",\"device\":%d,\"tensors\":%s,\"jax\":%s,\"primary\":%s,", i ? "," : "",
		        stp_mem_kind_name(s->kind), s->tensors ? -1 : s->device, s->tensors ? "true" : "false",
		        s->jax ? "true" : "false",
		        (int32_t)i == r->primary ? "true" : "false");
		u64(f, "allocs", s->allocs, 1);
		u64(f, "frees", s->frees, 1);
		u64(f, "bytes_allocated", s->bytes_allocated, 1);
		u64(f, "bytes_freed", s->bytes_freed, 1);
		u64(f, "live_objects_end", s->live_objects_end, 1);
		u64(f, "live_bytes_end", s->live_bytes_end, 1);
		u64(f, "peak_bytes", s->peak_bytes, 1);
		u64(f, "peak_objects", s->peak_objects, 1);
		u64(f, "peak_seq", s->peak_seq, 1);
		u64(f, "peak_ns", s->peak_ns, 1);
		if (s->peak_at_window_begin)
			fprintf(f, "\"peak_at_window_begin\":true,");
		if (s->peak_like >= 0) {
			fprintf(f, "\"peak_like\":%" PRId64 ",", s->peak_like);
			u64(f, "peak_like_bytes", s->peak_like_bytes, 1);
		}
		u64(f, "reserved_peak", s->reserved_peak, 1);
		u64(f, "over_reserved", s->over_reserved, s->pool_allocs > 0 || s->sample_interval);
		if (s->sample_interval) {
			u64(f, "sample_interval", s->sample_interval, 1);
			u64(f, "sampled_allocs", s->sampled_allocs, 1);
			fprintf(f, "\"est_allocs\":%.0f%s", s->est_allocs, s->pool_allocs ? "," : "");
		}
		if (s->pool_allocs) {
			u64(f, "pool_allocs", s->pool_allocs, 1);
			u64(f, "pool_peak_bytes", s->pool_peak_bytes, 1);
			u64(f, "other_allocs", s->other_allocs, 1);
			u64(f, "other_bytes_allocated", s->other_bytes_allocated, 1);
			u64(f, "other_peak_bytes", s->other_peak_bytes, 0);
		}
		if (s->refused) { /* requests refused for want of memory: the first and the last */
			fprintf(f, ",\"refused\":{\"count\":%" PRIu64 ",\"first\":", s->refused);
			refusal_json(d, f, &s->refused_first);
			fputs(",\"last\":", f);
			refusal_json(d, f, &s->refused_last);
			fputc('}', f);
		}
		if (s->refused_attempts) { /* the allocator's own attempts refused, and what came of them */
			fprintf(f, ",\"retried\":{\"attempts\":%" PRIu64 ",\"served\":%" PRIu64 ",\"unknown\":%" PRIu64
			        ",\"first\":",
			        s->refused_attempts, s->retried, s->retry_unknown);
			if (s->retried)
				refusal_json(d, f, &s->retried_first);
			else
				fputs("null", f);
			fputc('}', f);
		}
		fputc('}', f);
	}
	fputs("],\n\"peak\":{", f);
	idx_or_null(f, "space", r->primary);
	idx_or_null(f, "iteration", r->peak_iteration);
	idx_or_null(f, "phase", r->peak_phase);
	if (r->primary >= 0) {
		u64(f, "bytes", r->spaces[r->primary].peak_bytes, 1);
		u64(f, "ns", r->spaces[r->primary].peak_ns, 0);
	} else {
		fputs("\"bytes\":0,\"ns\":0", f);
	}
	fprintf(f, "},\n\"timeline\":{\"iteration_source\":\"%s\",\"phase_source\":\"%s\",\"confidence\":%.4f,\"method\":",
	        stp_det_source_name(t->iter_source), stp_det_source_name(t->phase_source), t->confidence);
	rf_json_str(f, t->method);
	fprintf(f, ",\"period_allocs\":%" PRIu64 ",", t->period_allocs);
	idx_or_null(f, "steady", t->steady);
	fputs("\"steady_why\":", f);
	rf_json_str(f, t->steady_why);
	if (r->folded_iterations)
		fprintf(f, ",\"folded\":{\"iterations\":%" PRIu64 ",\"events\":%" PRIu64 ",\"allocs\":%" PRIu64 "}",
		        r->folded_iterations, r->folded_events, r->folded_allocs);
	fputs(",\n\"iterations\":[", f);
	for (uint32_t k = 0; k < t->niterations; k++) {
		const stp_det_iteration *it = &t->iterations[k];
		fprintf(f, "%s\n{\"index\":%" PRId64 ",", k ? "," : "", it->index);
		u64(f, "begin_seq", it->begin_seq, 1);
		u64(f, "end_seq", it->end_seq, 1);
		u64(f, "begin_ns", it->begin_ns, 1);
		u64(f, "end_ns", it->end_ns, 1);
		u64(f, "allocs", it->allocs, 1);
		u64(f, "peak_bytes", it->peak_bytes, 1);
		u64(f, "first_phase", it->first_phase, 1);
		u64(f, "phases", it->nphases, 0);
		if (it->folded) /* kept as counters by the collector: like that iteration */
			fprintf(f, ",\"folded_like\":%" PRId64, it->like);
		if (it->detail) /* recorded in more detail than the steady state: slower */
			fputs(",\"detail\":true", f);
		fputc('}', f);
	}
	fputs("],\n\"phases\":[", f);
	for (uint32_t i = 0; i < t->nphases; i++) {
		const stp_det_phase *p = &t->phases[i];
		fprintf(f, "%s\n{\"name\":", i ? "," : "");
		rf_json_str(f, p->name);
		fprintf(f, ",\"micro_batch\":%" PRId64 ",\"iteration\":%d,", p->micro_batch, p->iteration);
		u64(f, "begin_seq", p->begin_seq, 1);
		u64(f, "end_seq", p->end_seq, 1);
		u64(f, "begin_ns", p->begin_ns, 1);
		u64(f, "end_ns", p->end_ns, 1);
		fputs("\"inner\":", f);
		if (p->inner)
			rf_json_str(f, p->inner);
		else
			fputs("null", f);
		fputc('}', f);
	}
	fputs("]},\n\"classes\":", f);
	classes_json(f, r->class_objects, r->class_bytes, r->peak_class_bytes);
	if (r->has_window && r->window_end_ns == UINT64_MAX)
		fprintf(f, ",\n\"window\":{\"begin_ns\":%" PRIu64 ",\"end_ns\":null}", r->window_begin_ns);
	else if (r->has_window)
		fprintf(f, ",\n\"window\":{\"begin_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 "}", r->window_begin_ns,
		        r->window_end_ns);
	else
		fputs(",\n\"window\":null", f);
	fprintf(f, ",\n\"leaks_set_aside\":{\"objects\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", r->leaks_set_aside,
	        r->leaks_set_aside_bytes);
	fputs(",\n\"logical_unit\":", f);
	rf_json_str(f, r->logical_unit);
	fputs(",\n\"lifetime_buckets\":{\"time\":[\"<1us\",\"<10us\",\"<100us\",\"<1ms\",\"<10ms\",\"<100ms\",\"<1s\","
	      "\"<10s\",\"<100s\",\"<1000s\",\">=1000s\",\"never freed\"],\"logical\":[\"0\",\"1-9\",\"10-99\","
	      "\"100-999\",\"1000-9999\",\"10000-99999\",\"100000-999999\",\">=1000000\",\"never freed\"]},\n\"sites\":[",
	      f);
	/* the models first, into memory: the sites they name are listed */
	uint32_t top = o->top ? o->top : UINT32_MAX;
	uint32_t nf = r->nfindings < top ? r->nfindings : top;
	uint8_t *mark = calloc(r->nsites ? r->nsites : 1, 1);
	char *models = NULL;
	size_t models_len = 0;
	FILE *mf = mark ? open_memstream(&models, &models_len) : NULL;
	if (!mf) {
		free(mark);
		return -1;
	}
	report_json_models(d, mf, mark);
	if (fclose(mf) != 0) {
		free(mark);
		free(models);
		return -1;
	}
	for (uint32_t i = 0; i < r->nsites && i < top; i++)
		mark[i] = 1;
	uint32_t ne = r->nexpected < top ? r->nexpected : top;
	for (uint32_t i = 0; i < nf + ne; i++) {
		const stp_det_finding *x = i < nf ? &r->findings[i] : &r->expected[i - nf];
		mark[x->site] = 1;
		if (x->worst.other_site < r->nsites)
			mark[x->worst.other_site] = 1;
	}
	uint32_t listed = 0;
	for (uint32_t i = 0; i < r->nsites; i++) {
		if (!mark[i])
			continue;
		int first = !listed++;
		stp_det_site site;
		stp_det_site_get(d, i, &site);
		const stp_det_site *s = &site;
		fprintf(f, "%s\n{\"id\":%u,\"stack\":%u,\"kind\":\"%s\",\"class\":\"%s\",", first ? "" : ",", i, s->stack,
		        stp_mem_kind_name(s->kind), stp_det_class_name(s->dominant));
		fprintf(f, "\"library\":%s,", stp_det_site_library(d, i) ? "true" : "false");
		u64(f, "allocs", s->allocs, 1);
		u64(f, "frees", s->frees, 1);
		u64(f, "bytes_allocated", s->bytes_allocated, 1);
		u64(f, "max_size", s->max_size, 1);
		u64(f, "peak_bytes", s->peak_bytes, 1);
		u64(f, "peak_objects", s->peak_objects, 1);
		u64(f, "end_bytes", s->end_bytes, 1);
		u64(f, "end_objects", s->end_objects, 1);
		fprintf(f, "\"byte_ns\":%.0f,\"classes\":", s->byte_ns);
		classes_json(f, s->class_objects, s->class_bytes, s->peak_class_bytes);
		fputs(",\"lifetime_time\":", f);
		u64_array(f, s->life_time, STP_DET_TIME_BUCKETS);
		fputs(",\"lifetime_logical\":", f);
		u64_array(f, s->life_logical, STP_DET_LOGICAL_BUCKETS);
		fputc(',', f);
		frames_json(d, f, i, o->frames);
		fputc('}', f);
	}
	free(mark);
	fprintf(f, "],\n\"sites_total\":%u,\"sites_listed\":%u,\"findings_total\":%u,\"findings_listed\":%u", r->nsites,
	        listed, r->nfindings, nf);
	fputs(",\n\"modules\":[", f);
	const stp_det_module *mods;
	uint32_t nmods = stp_det_modules(d, &mods);
	for (uint32_t i = 0; i < nmods; i++) {
		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f);
		rf_json_str(f, mods[i].name);
		fprintf(f, ",\"allocs\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", mods[i].allocs, mods[i].bytes);
	}
	fputs("],\n\"patterns\":{", f);
	for (unsigned p = 0; p < STP_PAT_COUNT; p++)
		fprintf(f, "%s\"%s\":{\"available\":%s,\"objects\":%" PRIu64 ",\"waste_byte_ns\":%.0f}", p ? "," : "",
		        stp_det_pattern_name(p), r->pattern_available[p] ? "true" : "false", r->pattern_objects[p],
		        r->pattern_waste[p]);
	fputs("},\n\"findings\":[", f);
	for (uint32_t i = 0; i < nf; i++)
		finding_json(d, r, f, &r->findings[i], i == 0);
	fprintf(f, "],\n\"expected_total\":%u,\"expected\":[", r->nexpected);
	for (uint32_t i = 0; i < ne; i++)
		finding_json(d, r, f, &r->expected[i], i == 0);
	fputs("],\n\"accesses\":{", f);
	fprintf(f, "\"sanitizer\":%d,", (int)r->acc.sanitizer);
	u64(f, "apis", r->acc.apis, 1);
	u64(f, "launches", r->acc.launches, 1);
	u64(f, "sampled", r->acc.sampled, 1);
	u64(f, "timed", r->acc.timed, 1);
	u64(f, "unread", r->acc.unread, 1);
	u64(f, "ranges_dropped", r->acc.dropped, 1);
	u64(f, "unplaced", r->acc.unplaced, 1);
	u64(f, "unsure_objects", r->acc.unsure_objects, 1);
	fprintf(f, "\"patched_kinds\":%u}", r->acc.kinds);
	fputs(",\n\"series\":[", f);
	for (uint32_t i = 0; i < r->nseries; i++)
		fprintf(f, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", i ? "," : "", r->series[i].t_ns,
		        r->series[i].live_bytes, r->series[i].reserved_bytes);
	fputc(']', f);
	fwrite(models, 1, models_len, f);
	free(models);
	report_children_json(o->children, f);
	if (o->lifetimes && o->lifetimes->sim->allocs) {
		fputs(",\n\"lifetimes\":", f);
		stp_report_lifetimes_json(o->lifetimes, f);
	}
	fputs("}\n", f);
	fflush(f);
	return ferror(f) ? -1 : 0;
}
