/*
 * period.c - iterations and phases detected from the allocation sequence
 * when the trace has no markers.
 *
 * Each allocation is a token (a hash of its size and call path).  A
 * training loop repeats its token sequence once per iteration, so:
 *   1. candidate periods are frequent distances between repeats of the same
 *      8-gram of tokens (see candidates());
 *   2. each candidate P is scored by its match rate, the fraction of
 *      positions i with tok[i] == tok[i + P], over the largest periodic
 *      region of any candidate (the longest run of blocks matching at 80%,
 *      see region_of(): set-up such as `import torch` is left out); the
 *      smallest P whose mismatches there are within 25% of the best's
 *      wins (multiples of the period match as well as the period; a
 *      sub-period does not);
 *   3. the periodic region starts where a window of P positions matches at
 *      90%; the boundary inside the first period is put before the last of
 *      the allocations that start from the lowest live bytes (between
 *      iterations the activations are gone; the optimizer's temporaries
 *      end an iteration, the first activation starts one), then stepped by
 *      P, re-synchronized each time by up to P/4 positions (at most 64)
 *      comparing 32 tokens around the previous boundary;
 *   4. each iteration is split into "forward" and "backward" at its
 *      live-bytes peak (the turnaround).
 * The iterations found must be credible: hold at least 10% of the bytes
 * the examined allocations allocate and reach 25% of their peak live bytes
 * (a loop inside start-up does neither), and free most of what they
 * allocate: a run of repeats whose live bytes grow by 90% or more of the
 * bytes it allocates builds state (a server storing what its clients send,
 * a loader filling a table), it does not iterate; otherwise none are
 * reported and the method says why and what to do.
 * The confidence is the match rate of P over the iterations found.  Past
 * the examined window (opt.detect_max_allocs allocations) boundaries are
 * extrapolated with the last iteration's length in events, for as many
 * whole periods as allocations are left.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "det.h"

/* A detected loop must hold this share of the examined allocations' bytes
 * and reach this share of their peak live bytes. */
#define DET_CREDIBLE_BYTES 0.10
#define DET_CREDIBLE_PEAK 0.25
/* ... and keep less than this share of the bytes they allocate (the live
 * bytes' growth from the first boundary to the last over the bytes
 * allocated between them): Redis under redis-benchmark kept 99.4% in its
 * one repeating run that passed the two rules above (20 allocations, 515
 * times: SETs of new keys); training loops keep next to nothing. */
#define DET_CREDIBLE_KEPT 0.90

static double match_rate_step(const uint32_t *t, uint64_t lo, uint64_t hi, uint64_t p, uint64_t step)
{
	if (hi <= lo + p)
		return 0;
	uint64_t m = 0, k = 0;
	for (uint64_t i = lo; i + p < hi; i += step, k++)
		m += t[i] == t[i + p];
	return (double)m / (double)k;
}

/* Live bytes just before token i's allocation. */
static uint64_t live_before(const stp_det *d, uint64_t i)
{
	return d->tok_live[i] - (d->tok_live[i] >= d->tok_size[i] ? d->tok_size[i] : d->tok_live[i]);
}

static double match_rate(const uint32_t *t, uint64_t lo, uint64_t hi, uint64_t p)
{
	return match_rate_step(t, lo, hi, p, 1);
}

/* Candidate periods: the distances between repeats of the same k-gram of
 * tokens (k = 8).  A k-gram that straddles a change of regime (forward ->
 * optimizer) occurs once per iteration, so the iteration period shows up
 * even when every single token repeats many times inside an iteration.  The
 * most frequent distances and the ones with the largest count x distance
 * (long periods) are kept. */
#define NCAND 48
#define KGRAM 8
static int candidates(const uint32_t *t, uint64_t n, uint64_t *cand)
{
	uint64_t maxgap = n / 2;
	uint32_t *cnt = calloc(maxgap + 1, sizeof *cnt);
	det_map last;
	if (!cnt || n < KGRAM || det_map_init(&last, 1024) < 0) {
		free(cnt);
		return cnt ? 0 : -1;
	}
	const uint64_t B = 0x100000001b3ull;
	uint64_t bk = 1, h = 0;
	for (int j = 0; j < KGRAM; j++) {
		h = h * B + t[j];
		if (j)
			bk *= B;
	}
	for (uint64_t i = 0; i + KGRAM <= n; i++) {
		if (i) /* roll: drop t[i-1], add t[i+KGRAM-1] */
			h = (h - t[i - 1] * bk) * B + t[i + KGRAM - 1];
		uint64_t key = h | 1, prev;
		if (det_map_get(&last, key, &prev)) {
			uint64_t g = i - prev;
			if (g <= maxgap && cnt[g] < UINT32_MAX)
				cnt[g]++;
		}
		if (det_map_put(&last, key, i, NULL) < 0) {
			free(cnt);
			det_map_destroy(&last);
			return -1;
		}
	}
	det_map_destroy(&last);
	/* two rankings, NCAND/2 each: by count, and by count x gap */
	int nc = 0;
	for (int pass = 0; pass < 2; pass++) {
		double best[NCAND / 2];
		uint64_t bg[NCAND / 2];
		int nb = 0;
		for (uint64_t g = 1; g <= maxgap; g++) {
			if (cnt[g] < 2)
				continue;
			double sc = pass ? (double)cnt[g] * (double)g : (double)cnt[g];
			int at = nb;
			while (at > 0 && best[at - 1] < sc)
				at--;
			if (at >= NCAND / 2)
				continue;
			int lim = nb < NCAND / 2 ? nb : NCAND / 2 - 1;
			for (int j = lim; j > at; j--)
				best[j] = best[j - 1], bg[j] = bg[j - 1];
			best[at] = sc;
			bg[at] = g;
			if (nb < NCAND / 2)
				nb++;
		}
		for (int j = 0; j < nb; j++) {
			int dup = 0;
			for (int q = 0; q < nc; q++)
				dup |= cand[q] == bg[j];
			if (!dup)
				cand[nc++] = bg[j];
		}
	}
	free(cnt);
	return nc;
}

/* The periodic region of period p: the longest run of consecutive blocks
 * (of max(p, 256) positions) in each of which t[i] == t[i + p] holds at
 * >= 80%, extended by p to cover the tokens compared; it must span two
 * periods.  Returns the positions matching in the run (0: no region). */
static uint64_t region_of(const uint32_t *t, uint64_t n, uint64_t p, uint64_t *rs, uint64_t *re)
{
	if (n < 2 * p)
		return 0;
	uint64_t lim = n - p, blk = p > 256 ? p : 256, best = 0, cs = 0, cm = 0;
	int in_run = 0;
	for (uint64_t b0 = 0; b0 < lim; b0 += blk) {
		uint64_t b1 = b0 + blk < lim ? b0 + blk : lim, m = 0;
		for (uint64_t i = b0; i < b1; i++)
			m += t[i] == t[i + p];
		if (m * 10 < (b1 - b0) * 8) {
			in_run = 0;
			continue;
		}
		if (!in_run) {
			in_run = 1;
			cs = b0;
			cm = 0;
		}
		cm += m;
		if (b1 - cs >= p && cm > best) {
			best = cm;
			*rs = cs;
			*re = b1 + p;
		}
	}
	return best;
}

/* % of the 32 tokens from a that equal those from b (a < b) */
static uint64_t window_match(const uint32_t *t, uint64_t n, uint64_t a, uint64_t b)
{
	uint64_t h = 0, m = 0, w = 0;
	for (uint64_t i = 0; i < 32 && b - h + i < n; i++, w++)
		m += t[a - h + i] == t[b - h + i];
	return w ? m * 100 / w : 0;
}

static uint64_t resync(const uint32_t *t, uint64_t n, uint64_t prev, uint64_t guess, uint64_t p, uint64_t *score)
{
	uint64_t w = p < 32 ? p : 32, r = p / 4 < 64 ? p / 4 : 64, best = guess, best_m = 0;
	for (uint64_t k = 0; k <= 2 * r; k++) {
		/* try 0, -1, +1, -2, +2, ... so ties keep the nearest */
		int64_t off = (k & 1) ? -(int64_t)((k + 1) / 2) : (int64_t)(k / 2);
		if ((int64_t)guess + off <= (int64_t)prev || guess + off + w > n)
			continue;
		uint64_t g = (uint64_t)((int64_t)guess + off), m = 0, h = w / 2;
		if (prev < h || g < h)
			h = prev < g ? prev : g;
		for (uint64_t i = 0; i < w; i++)
			m += t[prev - h + i] == t[g - h + i];
		if (m > best_m) {
			best_m = m;
			best = g;
		}
	}
	*score = best_m * 100 / (w ? w : 1);
	return best;
}

int det_detect_period(stp_det *d)
{
	const uint32_t *t = d->tok;
	uint64_t n = d->ntok;
	if (n < 8)
		return 0;
	uint64_t cand[NCAND];
	int nc = candidates(t, n, cand);
	if (nc <= 0)
		return nc;
	double rate[NCAND], best_rate = 0;
	/* The candidates are compared where the one with the largest periodic
	 * region repeats: set-up before the loop (import torch: a million
	 * allocations that never repeat) or an evaluation after it would
	 * dilute every rate alike. */
	uint64_t rs = 0, re = n, best_m = 0;
	for (int i = 0; i < nc; i++) {
		uint64_t a = 0, b = n, m = region_of(t, n, cand[i], &a, &b);
		if (m > best_m) {
			best_m = m;
			rs = a;
			re = b;
		}
	}
	for (int i = 0; i < nc; i++) {
		rate[i] = match_rate_step(t, rs, re, cand[i], 3);
		if (rate[i] > best_rate)
			best_rate = rate[i];
		if (getenv("STP_DEBUG_PERIOD"))
			fprintf(stderr, "candidate %llu: %.3f in [%llu, %llu)\n", (unsigned long long)cand[i], rate[i],
			        (unsigned long long)rs, (unsigned long long)re);
	}
	/* the smallest period whose mismatches are within 25% (+0.1 point) of
	 * the best one's: a sub-period (one layer) mismatches at every change
	 * of regime, the period and its multiples do not */
	uint64_t p = 0;
	double tol = (1 - best_rate) * 1.25 + 0.001;
	for (int i = 0; i < nc; i++)
		if (1 - rate[i] <= tol && (!p || cand[i] < p) && (re - rs) / cand[i] >= 2)
			p = cand[i];
	if (!p || best_rate < 0.5) {
		snprintf(d->method, sizeof d->method,
		         "no iteration markers; no periodic allocation sequence found (best match %.0f%%)",
		         best_rate * 100);
		return 0;
	}
	/* start of the periodic region: a window of p matching at >= 90% */
	uint64_t s0 = rs, m = 0;
	for (uint64_t i = s0; i < s0 + p && i + p < n; i++)
		m += t[i] == t[i + p];
	while (s0 + 2 * p <= n && m * 10 < p * 9) {
		m -= t[s0] == t[s0 + p];
		if (s0 + 2 * p < n)
			m += t[s0 + p] == t[s0 + 2 * p];
		s0++;
	}
	if (s0 + 2 * p > n)
		s0 = 0;
	/* the lowest live bytes before an allocation in the second period of
	 * the region (the first may still hold set-up allocations); where
	 * several allocations in a row start from that low (an optimizer's
	 * temporaries, then the first activation), the boundary goes before
	 * the last of them, where live bytes start to grow; then back while it
	 * repeats */
	uint64_t from = s0 + 2 * p <= n ? s0 + p : s0, b = from;
	for (uint64_t i = from; i < from + p && i < n; i++)
		if (live_before(d, i) < live_before(d, b))
			b = i;
	while (b + 1 < n && b + 1 < from + p && live_before(d, b + 1) == live_before(d, b))
		b++;
	/* step back over earlier iterations that still match well */
	while (b >= p && window_match(t, n, b - p, b) >= 90 && match_rate(t, b - p, b + p, p) >= 0.9)
		b -= p;
	uint64_t *bounds = malloc((n / p + 2) * sizeof *bounds);
	if (!bounds)
		return -1;
	uint32_t nb = 0;
	bounds[nb++] = b;
	while (bounds[nb - 1] + p <= n) {
		uint64_t prev = bounds[nb - 1], score, next = prev + p;
		if (next + 1 < n) {
			next = resync(t, n, prev, prev + p, p, &score);
			if (getenv("STP_DEBUG_PERIOD"))
				fprintf(stderr, "period %llu: boundary %llu -> %llu score %llu (n %llu)\n", (unsigned long long)p,
				        (unsigned long long)prev, (unsigned long long)next, (unsigned long long)score,
				        (unsigned long long)n);
			if (score < 50)
				break;
		}
		if (next > n)
			break;
		bounds[nb++] = next;
		if (next >= n)
			break;
	}
	if (nb < 3) { /* fewer than two iterations */
		free(bounds);
		snprintf(d->method, sizeof d->method,
		         "no iteration markers; allocation period %llu found but it repeats fewer than twice",
		         (unsigned long long)p);
		return 0;
	}
	/* credible: the iterations hold a real share of what the examined
	 * allocations allocate and reach most of their peak; a loop inside
	 * start-up (`import torch`) does neither */
	{
		uint64_t lo = bounds[0], hi = bounds[nb - 1] < n ? bounds[nb - 1] : n;
		double in_bytes = 0, all_bytes = 0;
		uint64_t in_peak = 0, all_peak = 0;
		for (uint64_t i = 0; i < n; i++) {
			all_bytes += d->tok_size[i];
			if (d->tok_live[i] > all_peak)
				all_peak = d->tok_live[i];
			if (i >= lo && i < hi) {
				in_bytes += d->tok_size[i];
				if (d->tok_live[i] > in_peak)
					in_peak = d->tok_live[i];
			}
		}
		double bshare = all_bytes > 0 ? in_bytes / all_bytes : 0;
		double pshare = all_peak ? (double)in_peak / (double)all_peak : 0;
		double l0 = (double)live_before(d, lo), l1 = (double)(hi < n ? live_before(d, hi) : d->tok_live[n - 1]);
		double kept = in_bytes > 0 && l1 > l0 ? (l1 - l0) / in_bytes : 0;
		char why[256] = "";
		if (kept >= DET_CREDIBLE_KEPT)
			snprintf(why, sizeof why,
			         "keeps %.1f%% of the bytes it allocates (iterations free most of theirs; this builds state, "
			         "as a server storing what it is sent)",
			         100 * kept);
		else if (bshare < DET_CREDIBLE_BYTES || pshare < DET_CREDIBLE_PEAK)
			snprintf(why, sizeof why,
			         "holds %.1f%% of the bytes allocated and reaches %.1f%% of the peak (needs %.0f%% and %.0f%%)",
			         100 * bshare, 100 * pshare, 100 * DET_CREDIBLE_BYTES, 100 * DET_CREDIBLE_PEAK);
		if (why[0]) {
			free(bounds);
			snprintf(d->method, sizeof d->method,
			         "no iteration markers, and no credible iteration: the best repeating pattern (%llu "
			         "allocations, %u times) %s; mark the iterations (stprof.step() in Python, "
			         "stprof_iteration_begin/end in C) or use --iterations none",
			         (unsigned long long)p, nb - 1, why);
			return 0;
		}
	}
	uint32_t niter = nb - 1;
	int extrapolate = d->total_allocs > n && bounds[nb - 1] + p >= n;
	uint64_t ext_len = extrapolate ? d->tok_seq[bounds[nb - 1] - 1] - d->tok_seq[bounds[nb - 2]] + 1 : 0;
	uint64_t ext_n = 0;
	if (extrapolate && ext_len) {
		/* by events, and by the allocations left: a program's teardown
		 * frees (every import's objects at exit) are events, not loop */
		ext_n = (d->last_seq - d->tok_seq[bounds[nb - 1] < n ? bounds[nb - 1] : n - 1]) / ext_len;
		uint64_t by_allocs = (d->total_allocs - bounds[nb - 1]) / p;
		if (by_allocs < ext_n)
			ext_n = by_allocs;
	}
	/* markers that made no usable window may have left their arrays */
	free(d->iters);
	free(d->phases);
	d->nphases = d->phases_cap = 0;
	d->iters = calloc(niter + ext_n + 1, sizeof *d->iters);
	d->phases = calloc(2 * ((size_t)niter + ext_n + 1), sizeof *d->phases);
	if (!d->iters || !d->phases) {
		free(bounds);
		return -1;
	}
	d->iters_cap = niter + (uint32_t)ext_n + 1;
	d->phases_cap = 2 * d->iters_cap;
	double conf = match_rate(t, bounds[0], bounds[nb - 1], p);
	for (uint32_t k = 0; k < niter; k++) {
		uint64_t lo = bounds[k], hi = bounds[k + 1], top = lo;
		for (uint64_t i = lo; i < hi; i++)
			if (d->tok_live[i] > d->tok_live[top])
				top = i;
		/* the turnaround: the first peak within 0.1% of the highest, so
		 * that near-equal micro-batch peaks do not flip it (windows.c) */
		for (uint64_t i = lo, high = d->tok_live[top]; i < top; i++)
			if (d->tok_live[i] + high / 1000 >= high && (i + 1 >= hi || d->tok_live[i + 1] <= d->tok_live[i])) {
				top = i;
				break;
			}
		uint64_t bs = d->tok_seq[lo];
		uint64_t es = hi < n ? d->tok_seq[hi] : d->tok_seq[n - 1] + 1;
		d->iters[k] = (stp_det_iteration){.index = k, .begin_seq = bs, .end_seq = es, .begin_ns = UINT64_MAX,
		                                  .end_ns = UINT64_MAX};
		if (top + 1 < hi) {
			uint64_t ts = d->tok_seq[top] + 1;
			d->phases[d->nphases++] = (stp_det_phase){"forward", 0, (int32_t)k, bs, ts, UINT64_MAX, UINT64_MAX, NULL};
			d->phases[d->nphases++] = (stp_det_phase){"backward", 0, (int32_t)k, ts, es, UINT64_MAX, UINT64_MAX, NULL};
		}
	}
	d->niters = niter;
	/* past the window: the last iteration's length, and its turnaround at
	 * the same distance from the start */
	uint64_t turn_off = 0;
	if (d->nphases >= 2 && d->phases[d->nphases - 1].iteration == (int32_t)niter - 1)
		turn_off = d->phases[d->nphases - 1].begin_seq - d->iters[niter - 1].begin_seq;
	for (uint64_t j = 0; j < ext_n; j++) {
		uint64_t bs = d->iters[d->niters - 1].end_seq, es = bs + ext_len;
		d->iters[d->niters] = (stp_det_iteration){.index = d->niters, .begin_seq = bs, .end_seq = es,
		                                          .begin_ns = UINT64_MAX, .end_ns = UINT64_MAX};
		if (turn_off && turn_off < ext_len) {
			uint64_t ts = bs + turn_off;
			int32_t k = (int32_t)d->niters;
			d->phases[d->nphases++] = (stp_det_phase){"forward", 0, k, bs, ts, UINT64_MAX, UINT64_MAX, NULL};
			d->phases[d->nphases++] = (stp_det_phase){"backward", 0, k, ts, es, UINT64_MAX, UINT64_MAX, NULL};
		}
		d->niters++;
	}
	free(bounds);
	d->res.timeline.iter_source = STP_DET_SRC_DETECTED;
	d->res.timeline.phase_source = d->nphases ? STP_DET_SRC_DETECTED : STP_DET_SRC_NONE;
	d->res.timeline.confidence = conf;
	d->res.timeline.period_allocs = p;
	snprintf(d->method, sizeof d->method,
	         "no iteration markers; detected a period of %llu allocations (sizes and call paths) repeating %u "
	         "times, %.1f%% of positions matching%s; phases split at each iteration's live-bytes peak",
	         (unsigned long long)p, niter, conf * 100,
	         ext_n ? " (iterations past the examined allocations extrapolated)" : "");
	return 1;
}
