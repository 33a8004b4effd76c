/*
 * allocsim_print.c - the text forms of allocator-model results: one line per
 * model, the worst-moment explanation, and the whole fragmentation section
 * of a report.  Sizes print in binary units (KiB, MiB, GiB) with 3
 * significant digits; stack ids print through the caller's namer.
 */
#include <inttypes.h>
#include <string.h>

#include "allocsim_internal.h"

char *sim_fmt_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, unit[u]);
	return buf;
}

char *sim_fmt_sbytes(int64_t b, char *buf, size_t len)
{
	char t[32];
	uint64_t m = b < 0 ? (uint64_t)0 - (uint64_t)b : (uint64_t)b;
	snprintf(buf, len, "%s%s", b < 0 ? "-" : "+", sim_fmt_bytes(m, t, sizeof t));
	return buf;
}

static const char *stack_name(allocsim_stack_namer namer, void *ctx, uint32_t stack, char *buf, size_t len)
{
	if (!stack) {
		snprintf(buf, len, "(no stack)");
		return buf;
	}
	const char *n = namer ? namer(ctx, stack, buf, len) : NULL;
	if (!n) {
		snprintf(buf, len, "stack #%" PRIu32, stack);
		n = buf;
	}
	return n;
}

void allocsim_result_print(FILE *f, const allocsim_result *r)
{
	char a[32], b[32];
	fprintf(f, "  %-44s %10s %10s %6.1f%% %6.1f%% %7" PRIu64 " %5" PRIu64 "%s\n", r->label,
	        sim_fmt_bytes(r->peak_allocated, a, sizeof a), sim_fmt_bytes(r->peak_reserved, b, sizeof b),
	        100 * r->efficiency, 100 * r->fragmentation, r->segment_allocs, r->ooms,
	        r->aborted ? " (stopped early)" : "");
}

static void print_table_head(FILE *f)
{
	fprintf(f, "  %-44s %10s %10s %7s %7s %7s %5s\n", "model", "M_a", "M_r", "E", "1-E", "segs", "OOMs");
}

static double rel_s(uint64_t t, uint64_t t0)
{
	return t >= t0 ? (double)(t - t0) / 1e9 : -(double)(t0 - t) / 1e9;
}

void allocsim_snapshot_print(FILE *f, const allocsim_snapshot *s, uint64_t t0, size_t max_segments,
                             allocsim_stack_namer namer, void *ctx)
{
	char a[32], b[32], c[32], d[32], nm[512];
	fprintf(f, "  at event %" PRIu64 " (t=%.6f s): reserved %s, allocated %s, free %s in %" PRIu64
	           " blocks (largest %s)\n",
	        s->event, rel_s(s->time, t0), sim_fmt_bytes(s->reserved, a, sizeof a),
	        sim_fmt_bytes(s->allocated, b, sizeof b), sim_fmt_bytes(s->free_bytes, c, sizeof c), s->free_blocks,
	        sim_fmt_bytes(s->largest_free, d, sizeof d));
	if (s->request_size)
		fprintf(f, "  request being served: %s from %s\n", sim_fmt_bytes(s->request_size, a, sizeof a),
		        stack_name(namer, ctx, s->request_stack, nm, sizeof nm));
	if (s->free_small_pool || s->free_large_pool)
		fprintf(f, "  free bytes by pool: small %s, large %s\n", sim_fmt_bytes(s->free_small_pool, a, sizeof a),
		        sim_fmt_bytes(s->free_large_pool, b, sizeof b));
	if (s->free_bytes) {
		fprintf(f, "  free bytes by block size:");
		for (int k = 0; k < ALLOCSIM_FREE_BINS; k++)
			if (s->free_by_bin[k])
				fprintf(f, " [%s%s..): %s", sim_fmt_bytes(256ull << k, a, sizeof a),
				        k == ALLOCSIM_FREE_BINS - 1 ? "+" : "", sim_fmt_bytes(s->free_by_bin[k], b, sizeof b));
		fprintf(f, "\n");
	}
	size_t shown = 0;
	for (size_t i = 0; i < s->nsegments && shown < max_segments; i++) {
		const allocsim_segment_info *g = &s->segments[i];
		if (!g->free_bytes)
			break;
		shown++;
		fprintf(f, "  segment 0x%" PRIx64 " %s%s%s stream %" PRIu64 ": %s free (largest %s), %s allocated\n", g->addr,
		        sim_fmt_bytes(g->size, a, sizeof a), g->small_pool ? " small" : "",
		        g->expandable ? " expandable" : "", g->stream, sim_fmt_bytes(g->free_bytes, b, sizeof b),
		        sim_fmt_bytes(g->largest_free, c, sizeof c), sim_fmt_bytes(g->allocated, d, sizeof d));
		size_t lines = 0;
		for (uint32_t k = g->first_block; k < g->first_block + g->nblocks; k++) {
			const allocsim_block_info *bi = &s->blocks[k];
			if (bi->state != ALLOCSIM_BLOCK_FREE)
				continue;
			if (++lines > 4) {
				fprintf(f, "      ...\n");
				break;
			}
			fprintf(f, "      free %s at +%s", sim_fmt_bytes(bi->size, a, sizeof a),
			        sim_fmt_bytes(bi->addr - g->addr, b, sizeof b));
			if (bi->split_stack)
				fprintf(f, ", split off by %s", stack_name(namer, ctx, bi->split_stack, nm, sizeof nm));
			fprintf(f, "\n");
			if (bi->left_stack)
				fprintf(f, "        after  %s\n", stack_name(namer, ctx, bi->left_stack, nm, sizeof nm));
			if (bi->right_stack)
				fprintf(f, "        before %s\n", stack_name(namer, ctx, bi->right_stack, nm, sizeof nm));
		}
	}
	size_t more = 0;
	for (size_t i = shown; i < s->nsegments; i++)
		more += s->segments[i].free_bytes != 0;
	if (more)
		fprintf(f, "  ... and %zu more segments with free bytes\n", more);
	if (s->nsites) {
		fprintf(f, "  call sites (free bytes they split off / live bytes pinning fragmented segments / splits):\n");
		for (size_t i = 0; i < s->nsites && i < 8; i++) {
			const allocsim_site *t = &s->sites[i];
			if (!t->split_free_bytes && !t->pinning_bytes && !t->splits)
				break;
			fprintf(f, "    %10s %10s %8" PRIu64 "  %s\n", sim_fmt_bytes(t->split_free_bytes, a, sizeof a),
			        sim_fmt_bytes(t->pinning_bytes, b, sizeof b), t->splits,
			        stack_name(namer, ctx, t->stack, nm, sizeof nm));
		}
	}
}

/* The first request refused at run time, tried on each model within what
 * the device is known to have given the allocator. */
static void refusal_print(FILE *f, const allocsim_report *r, const allocsim_device_report *dr)
{
	char a[32], b[32], c[32];
	fprintf(f, "The request refused at t=%.6f s (%s), tried on each model within %s\n%s\n",
	        rel_s(dr->refusal_time, r->start_time), sim_fmt_bytes(dr->refusal_size, a, sizeof a),
	        sim_fmt_bytes(dr->refusal_capacity, b, sizeof b),
	        dr->refusal_capacity_given ? "(--capacity):"
	                                   : "(the most the allocator had reserved before it: the device gave that much):");
	fprintf(f, "  %-44s %-15s %10s %10s %10s\n", "model", "the request", "reserved", "free", "largest");
	for (size_t i = 0; i < dr->nresults; i++) {
		const allocsim_refusal_probe *p = &dr->refusal_probes[i];
		fprintf(f, "  %-44s ", dr->results[i].label);
		if (p->ooms_before) /* its figures before the request describe a bigger device */
			fprintf(f, "runs out before it: %" PRIu64 " request%s refused, the first at t=%.6f s\n",
			        p->ooms_before, p->ooms_before == 1 ? "" : "s", rel_s(p->first_oom_time, r->start_time));
		else
			fprintf(f, "%-15s %10s %10s %10s\n", p->served ? "serves it" : "refuses it too",
			        sim_fmt_bytes(p->reserved, a, sizeof a), sim_fmt_bytes(p->free_bytes, b, sizeof b),
			        sim_fmt_bytes(p->largest_free, c, sizeof c));
	}
	fprintf(f, "  (reserved, free and the largest free block: the model's just before the request)\n");
	if (dr->nresults && dr->refusal_probes[0].served)
		fprintf(f, "  (as run, the model serves it within this: the allocator had less of the device,\n"
		           "  other libraries or processes holding the rest, or the model misses a rule)\n");
	char conf[256];
	int fix = allocsim_refusal_fix(dr, conf, sizeof conf);
	if (fix >= 0)
		fprintf(f, "  -> PYTORCH_ALLOC_CONF=%s would have served it\n", conf);
	else if (fix == ALLOCSIM_REFUSAL_NONE && dr->refusal_capacity_given)
		fprintf(f, "  -> no model serves it: no setting helps; it needs fewer bytes live or a smaller request\n");
	else if (fix == ALLOCSIM_REFUSAL_NONE)
		fprintf(f, "  -> no model serves it within this; the device may have had up to the request more\n"
		           "     (--capacity with the memory the device gives the program decides)\n");
}

void allocsim_report_print(FILE *f, const allocsim_report *r, allocsim_stack_namer namer, void *ctx)
{
	char a[32], b[32], c[32];
	if (!r->ndevices) {
		fprintf(f, "Fragmentation: no allocations in the trace.\n");
		return;
	}
	for (size_t d = 0; d < r->ndevices; d++) {
		const allocsim_device_report *dr = &r->devices[d];
		const char *what = dr->xla ? "JAX buffers, " : "";
		const char *host = dr->xla ? "host" : r->host_name ? r->host_name : "host heap";
		if (dr->device < 0)
			fprintf(f, "Fragmentation (%s%s, %" PRIu64 " allocations):\n", what, host, dr->allocs);
		else
			fprintf(f, "Fragmentation (%sdevice %d, %" PRIu64 " allocations):\n", what, dr->device, dr->allocs);
		if (dr->host_fallback && dr->xla)
			fprintf(f, "  No device allocations in this trace: these are JAX's CPU buffers replayed as\n"
			           "  if they were made on a GPU (what-if).\n");
		else if (dr->host_fallback && r->host_name)
			fprintf(f, "  No device allocations in this trace: these are its %s,\n"
			           "  replayed as if they were made on a GPU (what-if).\n", r->host_name);
		else if (dr->host_fallback)
			fprintf(f, "  No device allocations in this trace: these are the host heap's allocations\n"
			           "  replayed as if they were made on a GPU (what-if).\n");
		print_table_head(f);
		for (size_t i = 0; i < dr->nresults; i++)
			allocsim_result_print(f, &dr->results[i]);
		if (dr->actual.present && dr->actual.xla) {
			const allocsim_actual *ac = &dr->actual;
			char lab[64];
			snprintf(lab, sizeof lab, "actual (XLA's statistics, %" PRIu64 " samples)", ac->xla_samples);
			if (ac->peak_allocated)
				fprintf(f, "  %-44s %10s %10s %6.1f%% %6.1f%%\n", lab, sim_fmt_bytes(ac->peak_allocated, a, sizeof a),
				        sim_fmt_bytes(ac->peak_reserved, b, sizeof b), 100 * ac->efficiency,
				        100 * (1 - ac->efficiency));
			else /* no peak_bytes_in_use: M_a and E unknown, not 0 */
				fprintf(f, "  %-44s %10s %10s %7s %7s\n", lab, "-", sim_fmt_bytes(ac->peak_reserved, b, sizeof b),
				        "-", "-");
			if (dr->nresults && ac->peak_allocated)
				fprintf(f, "  model error vs actual: M_a %+.1f%%, M_r %+.1f%% (%s)\n", 100 * ac->allocated_error,
				        100 * ac->reserved_error, dr->results[0].label);
			else if (dr->nresults)
				fprintf(f, "  model error vs actual: M_a not measured (no peak_bytes_in_use), M_r %+.1f%% (%s)\n",
				        100 * ac->reserved_error, dr->results[0].label);
			if (ac->in_use_samples)
				fprintf(f, "  bytes in use at XLA's %" PRIu64 " samples: the model within %.1f%% of XLA's\n",
				        ac->in_use_samples, 100 * ac->in_use_error);
			if (ac->has_largest_free)
				fprintf(f, "  largest free chunk at the last sample: model %s, XLA %s\n",
				        sim_fmt_bytes(ac->model_largest_free, a, sizeof a), sim_fmt_bytes(ac->largest_free, b, sizeof b));
		} else if (dr->actual.present && dr->actual.over_reserved) {
			fprintf(f, "  actual: not given: %" PRIu64 " allocations took the bytes allocated above the bytes\n"
			           "  the segment events reserve (the segments are not the allocator's whole state)\n",
			        dr->actual.over_reserved);
		} else if (dr->actual.present) {
			const allocsim_actual *ac = &dr->actual;
			fprintf(f, "  %-44s %10s %10s %6.1f%% %6.1f%% %7" PRIu64 "\n", "actual (segment events in the trace)",
			        sim_fmt_bytes(ac->peak_allocated, a, sizeof a), sim_fmt_bytes(ac->peak_reserved, b, sizeof b),
			        100 * ac->efficiency, 100 * (1 - ac->efficiency), ac->segment_reserves);
			if (dr->nresults)
				fprintf(f, "  model error vs actual: M_a %+.1f%%, M_r %+.1f%% (%s)\n", 100 * ac->allocated_error,
				        100 * ac->reserved_error, dr->results[0].label);
		} else if (dr->xla) {
			fprintf(f, "  (no XLA statistics in the trace: a CPU run, or JAX's memory_stats() gave none)\n");
		}
		for (size_t i = 0; i < dr->nresults; i++) {
			const allocsim_result *res = &dr->results[i];
			if (res->ooms)
				fprintf(f, "  %s: %" PRIu64 " requests would fail at %s (first: %s at t=%.6f s), %" PRIu64
				           " retries after flushing the cache\n",
				        res->label, res->ooms, sim_fmt_bytes(res->config.capacity, a, sizeof a),
				        sim_fmt_bytes(res->first_oom_size, b, sizeof b), rel_s(res->first_oom_time, r->start_time),
				        res->alloc_retries);
		}
		if (dr->unmatched_frees)
			fprintf(f, "  (%" PRIu64 " frees of objects not allocated in the trace were ignored)\n",
			        dr->unmatched_frees);
		if (dr->has_refusal)
			refusal_print(f, r, dr);
		if (dr->has_worst && dr->nresults) {
			fprintf(f, "Worst moment (%s, at its peak reserved):\n", dr->results[0].label);
			allocsim_snapshot_print(f, &dr->worst, r->start_time, 5, namer, ctx);
		}
		if (dr->nrecs && dr->xla) {
			fprintf(f, "XLA_PYTHON_CLIENT_* settings (simulated on these buffers, %s of device memory):\n",
			        sim_fmt_bytes(dr->xla_capacity, a, sizeof a));
			for (size_t i = 0; i < dr->nrecs; i++) {
				const allocsim_recommendation *rc = &dr->recs[i];
				fprintf(f, "  %s\n      peak reserved %s (%s vs as run), ", rc->settings,
				        sim_fmt_bytes(rc->peak_reserved, a, sizeof a), sim_fmt_sbytes(rc->reserved_delta, b, sizeof b));
				if (rc->ooms)
					fprintf(f, "OOM: %" PRIu64 " request%s would fail\n", rc->ooms, rc->ooms == 1 ? "" : "s");
				else
					fprintf(f, "no OOM\n");
			}
		} else if (dr->xla && !dr->xla_capacity) {
			fprintf(f, "XLA_PYTHON_CLIENT_* settings: the device's memory is not known (no bytes_limit in the\n"
			           "  trace); give --capacity to simulate MEM_FRACTION values.\n");
		} else if (dr->nrecs) {
			fprintf(f, "Recommended settings (simulated):\n");
			for (size_t i = 0; i < dr->nrecs; i++) {
				const allocsim_recommendation *rc = &dr->recs[i];
				fprintf(f, "  PYTORCH_ALLOC_CONF=%s\n      peak reserved %s (%s), E %.1f%% (%+.1f points)", rc->settings,
				        sim_fmt_bytes(rc->peak_reserved, a, sizeof a), sim_fmt_sbytes(rc->reserved_delta, b, sizeof b),
				        100 * rc->efficiency, 100 * rc->efficiency_delta);
				if (rc->ooms || (dr->nresults && dr->results[0].ooms))
					fprintf(f, ", %" PRIu64 " OOMs", rc->ooms);
				fprintf(f, ", peak allocated %s\n", sim_fmt_bytes(rc->peak_allocated, c, sizeof c));
			}
		} else if (dr->recommend_tried) {
			fprintf(f, "Recommended settings: none of the candidates lowers the peak reserved.\n");
		}
		if (d + 1 < r->ndevices)
			fprintf(f, "\n");
	}
}
