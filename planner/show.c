/*
 * show.c - plans for people: the quality summary printed by `stprof plan`
 * and the full dump of `stprof plan --show`.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *bytes(uint64_t b, char *buf, size_t len)
{
	static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)b;
	int k = 0;
	while (v >= 1024 && k < 5) {
		v /= 1024;
		k++;
	}
	if (k == 0)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.2f %s", v, u[k]);
	return buf;
}

static double ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0.0; }

void stp_plan_summary(FILE *f, const stp_reqs *r, const stp_plan *p, uint64_t greedy_pool, double greedy_s)
{
	char b1[32], b2[32];
	const stp_plan_stats *st = &p->stats;
	uint64_t nstat = 0, ndyn = 0, npers = 0, nspare = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (r->req[i].flags & STP_REQ_DYNAMIC)
			ndyn++;
		else if (r->req[i].flags & STP_REQ_SPARE)
			nspare++;
		else if (r->req[i].flags & STP_REQ_PERSISTENT)
			npers++;
		else
			nstat++;
	}
	fprintf(f, "requests:       %zu (%" PRIu64 " persistent, %" PRIu64 " static, %" PRIu64 " dynamic", r->n, npers,
	        nstat, ndyn);
	if (nspare)
		fprintf(f, ", %" PRIu64 " spare", nspare);
	fprintf(f, ")\n");
	/* the layout: the pool less the dynamic space stprof plan may add */
	uint64_t pool = st->dynamic_space < p->pool ? p->pool - st->dynamic_space : p->pool;
	fprintf(f, "pool:           %s (%" PRIu64 " bytes)", bytes(p->pool, b1, sizeof b1), p->pool);
	if (pool != p->pool)
		fprintf(f, ": layout %s + dynamic space %s", bytes(pool, b1, sizeof b1),
		        bytes(st->dynamic_space, b2, sizeof b2));
	fprintf(f, "\n");
	fprintf(f, "lower bound:    %s  max over time of live bytes; layout / bound = %.4f\n",
	        bytes(st->lower_bound, b1, sizeof b1), ratio(pool, st->lower_bound));
	if (st->persistent_bytes && st->lower_bound > st->persistent_bytes)
		fprintf(f, "  non-persistent part: layout %s vs bound %s = %.4f\n",
		        bytes(pool - st->persistent_bytes, b1, sizeof b1),
		        bytes(st->lower_bound - st->persistent_bytes, b2, sizeof b2),
		        ratio(pool - st->persistent_bytes, st->lower_bound - st->persistent_bytes));
	if (st->pool_stalloc)
		fprintf(f, "STAlloc steps:  %s = %.4f x bound; improvement re-placed %" PRIu64 " requests%s\n",
		        bytes(st->pool_stalloc, b1, sizeof b1), ratio(st->pool_stalloc, st->lower_bound),
		        st->improved_requests, st->greedy_layout ? " of greedy-by-size's layout, which it kept" : "");
	if (greedy_pool)
		fprintf(f, "greedy by size: %s = %.4f x bound (%.3f s)%s\n", bytes(greedy_pool, b1, sizeof b1),
		        ratio(greedy_pool, st->lower_bound), greedy_s,
		        greedy_pool < pool ? "  (smaller than this plan)" : "");
	if (ndyn) {
		fprintf(f, "dynamic:        %" PRIu64 " requests in %u HomoLayer groups; the bound with them is %s\n", ndyn,
		        p->ngroups, bytes(st->lower_bound_all, b1, sizeof b1));
		if (st->seconds > 0) /* replayed only when planned, not when read from a file */
			fprintf(f, "  replayed at the recorded sizes: %" PRIu64 " fit their reusable space, the rest peak at "
			           "%s in the fallback;\n  pool + fallback peak = %s = %.4f x the bound with them\n",
			        st->dynamic_fit, bytes(st->dynamic_fallback_peak, b1, sizeof b1),
			        bytes(p->pool + st->dynamic_fallback_peak, b2, sizeof b2),
			        ratio(p->pool + st->dynamic_fallback_peak, st->lower_bound_all));
	}
	if (st->pinned_requests)
		fprintf(f, "pinned:         %" PRIu64 " requests live across the cyclic cut are kept for the whole iteration\n",
		        st->pinned_requests);
	if (p->nplaced)
		fprintf(f, "start-up:       %u temporar%s that outlive%s start-up placed over the slots of persistent requests\n"
		           "                made after %s freed (the slots stacked in the order their objects come)\n",
		        p->nplaced, p->nplaced == 1 ? "y" : "ies", p->nplaced == 1 ? "s" : "", p->nplaced == 1 ? "it is" : "they are");
	if (st->seconds > 0) {
		/* which step's layout this is, and how good it is known to be */
		fprintf(f, "result:         %s; ", stp_plan_step_name(st->step));
		if (st->runtime_checked && !st->runtime_followed)
			fprintf(f, "layout %s, but the runtime would not follow it (below)\n",
			        st->optimal && pool <= st->lower_bound ? "at the lower bound" : "as planned");
		else if (st->optimal)
			fprintf(f, "%s%s\n", pool != p->pool ? "layout optimal" : "optimal",
			        pool <= st->lower_bound ? " (meets the lower bound)"
			                         : st->pinned_requests ? " for the cut timeline (no smaller pool exists for it)"
			                                               : " (no smaller pool exists: the search proved it)");
		else
			fprintf(f, "best found, gap %.2f%% above the best proven bound %" PRIu64 "%s\n",
			        100.0 * (ratio(pool, st->proven_bound) - 1), st->proven_bound,
			        st->search_stopped ? " (search stopped at the budget)" : "");
		if (st->search_nodes)
			fprintf(f, "search:         %" PRIu64 " nodes in %.3f s\n", st->search_nodes, st->search_seconds);
		fprintf(f, "planned in:     %.3f s\n", st->seconds);
	}
}

void stp_plan_show(FILE *f, const stp_reqs *r, const stp_plan *p, size_t max_entries)
{
	char b1[32];
	fprintf(f, "source:         %s\n", stp_reqs_str(r, r->source));
	if (r->iteration >= 0 || r->end_seq)
		fprintf(f, "iteration:      %" PRId64 " (sequence numbers %" PRIu64 "..%" PRIu64 " of the trace, which holds %" PRIu64
		        " events: a folded iteration's are counters)\n",
		        r->iteration, r->begin_seq, r->end_seq, r->trace_events);
	if (r->notes)
		fprintf(f, "notes:          %s\n", stp_reqs_str(r, r->notes));
	if (r->program) { /* "EXE\nSCRIPT": stprof/programkey.h */
		const char *k = stp_reqs_str(r, r->program), *nl = strchr(k, '\n');
		fprintf(f, "program:        %.*s%s%s\n", nl ? (int)(nl - k) : (int)strlen(k), k, nl && nl[1] ? " " : "",
		        nl ? nl + 1 : "");
	}
	fprintf(f, "period:         %" PRIu64 " ticks\n", r->period);
	fprintf(f, "alignment:      %" PRIu64 "\n", p->align);
	fprintf(f, "memory:         %s\n", r->device    ? "device (GPU) allocations"
	                                  : r->tensors ? "PyTorch CPU tensor storages"
	                                               : "host allocations");
	if (r->min_size)
		fprintf(f, "min size:       %" PRIu64 " bytes (smaller allocations are not planned)\n", r->min_size);
	if (r->nstartup)
		fprintf(f, "start-up:       %u requests before the iteration, up to its last persistent one (followed at\n"
		           "                run time to give each persistent request its own slot)\n",
		        r->nstartup);
	if (r->shapes_vary)
		fprintf(f, "shapes vary:    from one recorded iteration to the next (requests the plan does not place\n"
		           "                take free pool space at run time)\n");
	stp_plan_summary(f, r, p, 0, 0);
	if (r->nphases > 1) {
		fprintf(f, "\nphases (%u):\n", r->nphases - 1);
		for (uint32_t k = 1; k < r->nphases; k++)
			fprintf(f, "  %4u  %-24s micro-batch %-5" PRId64 " ticks [%" PRIu64 ", %" PRIu64 ")\n", k,
			        stp_reqs_str(r, r->phases[k].name), r->phases[k].value, r->phases[k].t_begin,
			        r->phases[k].t_end);
	}
	size_t shown = r->n;
	if (max_entries && shown > max_entries)
		shown = max_entries;
	fprintf(f, "\nentries (%zu%s):\n", r->n, shown < r->n ? ", first ones" : "");
	fprintf(f, "  %8s %14s %12s %21s %11s %16s %s\n", "ordinal", "offset", "size", "ticks", "phases", "call site",
	        "kind");
	for (size_t i = 0; i < shown; i++) {
		const stp_req *q = &r->req[i];
		char off[24], ticks[48], ph[24];
		if (p->offset[i] == STP_NO_OFFSET)
			snprintf(off, sizeof off, "dyn g%u", p->group[i]);
		else
			snprintf(off, sizeof off, "%" PRIu64, p->offset[i]);
		snprintf(ticks, sizeof ticks, "[%" PRIu64 ",%" PRIu64 ")", q->t_start, q->t_end);
		snprintf(ph, sizeof ph, "%u..%u", q->phase_start, q->phase_end);
		const char *kind = (q->flags & STP_REQ_DYNAMIC)      ? "dynamic"
		                   : (q->flags & STP_REQ_VARYING)    ? "varying"
		                   : (q->flags & STP_REQ_PERSISTENT) ? "persistent"
		                   : (q->flags & STP_REQ_SPARE)      ? "spare"
		                   : q->t_end <= q->t_start          ? "wraps"
		                                                     : "static";
		fprintf(f, "  %8u %14s %12" PRIu64 " %21s %11s %016" PRIx64 " %s\n", q->ordinal, off, q->size, ticks, ph,
		        q->callsite, kind);
	}
	if (p->ngroups) {
		fprintf(f, "\ndynamic reusable space (%u HomoLayer groups):\n", p->ngroups);
		for (uint32_t g = 0; g < p->ngroups; g++) {
			const stp_dyn_group *G = &p->groups[g];
			uint64_t total = 0;
			for (uint32_t k = 0; k < G->count; k++)
				total += p->intervals[G->first + k].size;
			const char *ln0 = G->layer_start < r->nlayers ? stp_reqs_str(r, r->layers[G->layer_start].name) : "";
			const char *ln1 = G->layer_end < r->nlayers ? stp_reqs_str(r, r->layers[G->layer_end].name) : "";
			fprintf(f, "  group %u: layers %u (%s) .. %u (%s), ticks [%" PRIu64 ", %" PRIu64 "): %" PRIu64
			           " requests, peak %s",
			        g, G->layer_start, ln0, G->layer_end, ln1, G->t_begin, G->t_end, G->requests,
			        bytes(G->max_bytes, b1, sizeof b1));
			fprintf(f, "; reusable %s in %u intervals\n", bytes(total, b1, sizeof b1), G->count);
			for (uint32_t k = 0; k < G->count && k < 8; k++)
				fprintf(f, "      [%" PRIu64 ", +%" PRIu64 ")\n", p->intervals[G->first + k].offset,
				        p->intervals[G->first + k].size);
			if (G->count > 8)
				fprintf(f, "      ... %u more\n", G->count - 8);
		}
	}
}
