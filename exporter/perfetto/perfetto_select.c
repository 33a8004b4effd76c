/*
 * perfetto_select.c - the --top pre-pass: which objects the timeline draws
 * when it cannot draw them all.  The rule is the detector's
 * stp_det_select(), which the HTML report's viewer uses too (one level of
 * detail for every timeline of stprof): the N objects with the largest
 * score (bytes x lifetime, or bytes), the detector's findings first, with
 * a window only what is live inside it.  Only objects the timeline draws
 * compete: with tensors_only, the tensors and device objects (the
 * interpreter's heap is never drawn: perfetto_memory.c), so N tensors are
 * drawn when there are N or more.  This file only turns the export's
 * options into that call.
 */
#include <stdio.h>

#include "perfetto_export.h"

typedef struct sel_ctx {
	pf_export *x;
	uint32_t trace;
} sel_ctx;

/* tensors_only: the interpreter's heap is drawn as counters only */
static int drawn(void *ctx, const stp_event *alloc)
{
	(void)ctx;
	return alloc->u.alloc.kind != STP_MEM_HOST || alloc->u.alloc.pool == STP_POOL_TENSORS;
}

static int has_finding(void *ctx, uint64_t alloc_seq)
{
	sel_ctx *c = ctx;
	const char *names[1];
	stp_export_object o = {.trace = c->trace, .alloc_seq = alloc_seq};
	return c->x->opts.patterns(c->x->opts.ctx, &o, names, 1) > 0;
}

int pf_select_top(pf_export *x, uint32_t trace, const char *path, int64_t offset, uint64_t **bits, uint64_t *nbits)
{
	sel_ctx c = {x, trace};
	stp_det_select_opts o = {.n = x->opts.top_n,
	                         .by_size = x->opts.top_by == STP_TOP_BY_SIZE,
	                         .offset = offset,
	                         .has_window = x->has_window,
	                         .lo = x->lo,
	                         .hi = x->hi,
	                         .eligible = x->opts.tensors_only ? drawn : NULL,
	                         .has_finding = x->opts.patterns ? has_finding : NULL,
	                         .ctx = &c};
	char err[512];
	if (stp_det_select(path, &o, bits, nbits, err, sizeof err) < 0) {
		pf_fail(x, "%s", err);
		return -1;
	}
	return 0;
}
