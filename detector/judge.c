/*
 * judge.c - what the program's structure explains: where an event falls on
 * the timeline (its iteration, its phase), whether an inefficiency instance
 * is what a training loop does by design (stp_det_expect: idle across
 * iterations, saved for the backward, freed at teardown, a library's
 * buffer, a caching allocator's tensor), and the words that place an
 * interval on the timeline for the report.
 *
 * Iterations are trusted when they come from markers, or when detection
 * found a period of at least 4 allocations with 90% confidence (a period of
 * one allocation repeating is a loop of allocations, not a training step).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "det.h"

int det_judge_usable(const stp_det *d)
{
	if (!d->niters)
		return 0;
	if (d->res.timeline.iter_source == STP_DET_SRC_MARKERS || d->have_iter_markers)
		return 1;
	return d->res.timeline.period_allocs >= 4 && d->res.timeline.confidence >= 0.9;
}

uint32_t det_ib_at(const stp_det *d, uint64_t seq) { return det_count_le(d->ibounds, d->nibounds, seq); }

int32_t det_phase_at(const stp_det *d, uint64_t seq)
{
	uint32_t lo = 0, hi = d->nphases; /* the first phase beginning after seq */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (d->phases[mid].begin_seq <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the innermost open one: a nested phase (recompute in backward) may
	 * have ended before seq while its parent goes on */
	for (uint32_t k = lo, steps = 0; k > 0 && steps < 8; k--, steps++)
		if (seq < d->phases[k - 1].end_seq)
			return (int32_t)(k - 1);
	return -1;
}

int det_phase_is_backward(const char *n) { return n && (!strcmp(n, "backward") || !strcmp(n, "recompute")); }

stp_det_expect det_judge_idle(const stp_det *d, uint64_t alloc_seq, uint64_t from_seq, uint64_t to_seq)
{
	if (!det_judge_usable(d))
		return STP_EXPECT_NONE;
	uint32_t ia = det_ib_at(d, alloc_seq), ib = det_ib_at(d, from_seq);
	if (ib != det_ib_at(d, to_seq))
		return STP_EXPECT_ACROSS_ITERATIONS;
	if (ib == 0)
		return STP_EXPECT_SETUP; /* before the loop */
	if (ia < ib && (ib & 1))
		return STP_EXPECT_ACROSS_ITERATIONS; /* alive when its iteration began: state */
	int32_t a = det_phase_at(d, from_seq), b = det_phase_at(d, to_seq);
	if (a >= 0 && b >= 0 && a != b)
		return STP_EXPECT_PHASES;
	/* inside a backward or an optimizer step: the framework orders those
	 * ops (what the forward saved, gradients read by several backward ops) */
	if (a >= 0 && a == b && d->phases[a].name &&
	    (det_phase_is_backward(d->phases[a].name) || !strcmp(d->phases[a].name, "optimizer")))
		return STP_EXPECT_PHASES;
	return STP_EXPECT_NONE;
}

int det_kept_for_backward(const stp_det *d, uint64_t gap_seq, uint64_t last_seq)
{
	if (!det_judge_usable(d) || det_ib_at(d, gap_seq) != det_ib_at(d, last_seq))
		return 0;
	int32_t a = det_phase_at(d, gap_seq), b = det_phase_at(d, last_seq);
	return b >= 0 && a != b && d->phases[b].begin_seq > gap_seq && det_phase_is_backward(d->phases[b].name);
}

int det_before_loop(const stp_det *d, uint64_t seq) { return det_judge_usable(d) && det_ib_at(d, seq) == 0; }

int det_same_segment(const stp_det *d, uint64_t a_seq, uint64_t b_seq)
{
	return det_count_le(d->cuts, d->ncuts, a_seq) == det_count_le(d->cuts, d->ncuts, b_seq);
}

int det_spans_peak(const stp_det *d, uint64_t a_seq, uint64_t b_seq)
{
	/* iterations are in order, and so are their peaks: the first peak at
	 * or after a_seq */
	uint32_t lo = 0, hi = d->niters;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (d->ipeak_seq && d->ipeak_seq[mid] < a_seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return d->ipeak_seq && lo < d->niters && d->ipeak_seq[lo] <= b_seq;
}

int det_after_loop(const stp_det *d, uint64_t seq)
{
	if (!det_judge_usable(d))
		return 0;
	const stp_det_iteration *last = &d->iters[d->niters - 1];
	return last->end_seq != UINT64_MAX && seq >= last->end_seq;
}

/* ------------------------------------------------------------ libraries */

/* Modules whose own allocations are a library's buffers, and functions that
 * name a workspace (PyTorch's cuBLAS / cuBLASLt workspaces come from its
 * caching allocator, below at::cuda's getCurrentCUDABlasHandle and friends). */
static int library_frame(const stp_det_frame *f)
{
	static const char *const libs[] = {"libcublas", "libcublasLt", "libcudnn", "libnccl", "libcufft",
	                                   "libcusparse", "libcusolver", "libcurand", "libnvrtc", "libnvJitLink"};
	const char *m = f->module && *f->module ? strrchr(f->module, '/') : NULL;
	m = m ? m + 1 : f->module;
	for (size_t i = 0; m && i < sizeof libs / sizeof libs[0]; i++)
		if (!strncmp(m, libs[i], strlen(libs[i])))
			return 1;
	if (f->function && !STP_IS_PYFRAME(f->ip)) {
		for (const char *p = f->function; *p; p++)
			if ((*p == 'W' || *p == 'w') && !strncasecmp(p, "workspace", 9))
				return 1;
		if (strstr(f->function, "BlasHandle") || strstr(f->function, "BlasLtHandle"))
			return 1;
	}
	return 0;
}

/* Whether a frame of the call path stack, of the kind python (1: Python
 * frames, 0: native ones), within its innermost `depth`, is one `is` takes. */
static int stack_has(stp_det *d, uint32_t stack, int python, uint32_t max_depth,
                     int (*is)(const stp_det_frame *))
{
	uint32_t parent, depth = 0;
	uint64_t ip;
	while (stack && d->rd && depth < max_depth && stp_reader_stack_node(d->rd, stack, &parent, &ip) == 0) {
		if (!STP_IS_PYFRAME(ip) == !python) {
			stp_det_frame f;
			det_frames_resolve(d->frames, ip, depth > 0, &f);
			if (is(&f))
				return 1;
		}
		depth++;
		stack = parent;
	}
	return 0;
}

/* A batch a DataLoader makes or receives. */
int det_site_is_loader(stp_det *d, uint32_t stack) { return stack_has(d, stack, 1, 64, det_frame_is_loader); }

int det_site_is_library(stp_det *d, uint32_t stack) { return stack_has(d, stack, 0, 48, library_frame); }

/* ------------------------------------------------------------ words */

const char *stp_det_expect_name(unsigned e)
{
	static const char *const n[] = {"", "across-iterations", "phases", "teardown", "library",
	                                "caching-allocator", "off-peak", "set-up", "negligible", "minor", "data-loader"};
	return e < STP_EXPECT_COUNT ? n[e] : "?";
}

const char *stp_det_expect_text(unsigned e)
{
	static const char *const n[] = {
		"",
		"state the loop keeps (weights, optimizer state), idle between its uses",
		"kept from one phase for a later one, or inside a backward or an optimizer step: activations saved "
		"for the backward, gradients waiting for the step (the framework orders those ops)",
		"freed after the loop ended: teardown",
		"a library's own buffer (cuBLAS, cuDNN workspaces)",
		"a caching allocator's tensors: it already reuses their memory",
		"kept after its last use, but not over its iteration's memory peak: freeing it sooner "
		"would not lower the peak",
		"before the loop began: set-up",
		"under 1/1024 of its memory space's peak: too small to matter",
		"an early allocation or idle gap wasting under 1/16 of what the same object's own finding wastes: "
		"listed for that one",
		"a DataLoader's batch: its prefetching and reordering keep it; num_workers and prefetch_factor set "
		"how many",
	};
	return e < STP_EXPECT_COUNT ? n[e] : "?";
}

static void where_seq(const stp_det *d, uint64_t seq, int32_t *iter, int32_t *phase)
{
	uint32_t ib = det_ib_at(d, seq);
	*iter = (ib & 1) ? (int32_t)(ib / 2) : -1;
	*phase = det_phase_at(d, seq);
}

const char *stp_det_span_text(const stp_det *d, uint64_t from_seq, uint64_t to_seq, char *buf, size_t len)
{
	buf[0] = 0;
	if (!det_judge_usable(d) || !from_seq || !to_seq)
		return buf;
	int32_t ia, pa, ib, pb;
	where_seq(d, from_seq, &ia, &pa);
	where_seq(d, to_seq, &ib, &pb);
	const char *na = pa >= 0 ? d->phases[pa].name : NULL, *nb = pb >= 0 ? d->phases[pb].name : NULL;
	int64_t xa = ia >= 0 ? d->iters[ia].index : 0, xb = ib >= 0 ? d->iters[ib].index : 0;
	if (ia < 0 && ib < 0) {
		uint32_t a = det_ib_at(d, from_seq), b = det_ib_at(d, to_seq);
		snprintf(buf, len, "%s", a == 0 && b == 0 ? "before the loop" : a >= d->nibounds ? "after the loop"
		                                                                                 : "between iterations");
	} else if (ia == ib) {
		if (na && nb && pa == pb)
			snprintf(buf, len, "in %s of iteration %lld", na, (long long)xa);
		else if (na && nb)
			snprintf(buf, len, "from %s to %s of iteration %lld", na, nb, (long long)xa);
		else
			snprintf(buf, len, "in iteration %lld", (long long)xa);
	} else if (ia < 0) {
		snprintf(buf, len, "from before the loop to %s%siteration %lld", nb ? nb : "", nb ? " of " : "",
		         (long long)xb);
	} else if (ib < 0) {
		snprintf(buf, len, "from %s%siteration %lld to after it", na ? na : "", na ? " of " : "", (long long)xa);
	} else {
		snprintf(buf, len, "from %s%siteration %lld to %s%siteration %lld", na ? na : "", na ? " of " : "",
		         (long long)xa, nb ? nb : "", nb ? " of " : "", (long long)xb);
	}
	return buf;
}
