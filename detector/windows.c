/*
 * windows.c - iteration and phase windows from markers, the cuts that
 * split the trace into segments, and the choice of the steady-state
 * iteration.
 *
 * Markers are taken as they come in pass 1: ITER_BEGIN opens an iteration
 * (closing one left open), ITER_END closes it; only top-level phases make
 * windows (a phase inside a phase is ignored), and a phase still open when
 * its iteration ends is closed there.  Windows left open when the trace
 * ends are closed at its end (the trace was cut short), except, in a whole
 * trace, an iteration never ended after one that was (the tail after a
 * training loop; see det_markers_end).  When the trace has
 * iteration markers but no phase markers, each iteration is split into
 * "forward" and "backward" at its live-bytes peak (the turnaround: the first
 * peak within 0.1% of the highest, so that micro-batches with near-equal
 * peaks do not move it from one iteration to the next).  When it
 * has phase markers but no iteration markers, an iteration starts at each
 * repeat of the first phase (same name, same micro-batch).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "det.h"
#include "space.h"

void det_marker(stp_det *d, const stp_reader *r, const stp_event *ev, uint64_t live_total);
void det_marker_live(stp_det *d, uint64_t seq, uint64_t live_total);
void det_markers_end(stp_det *d, uint64_t seq, uint64_t ns);

static int grow(void **p, uint32_t *cap, uint32_t n, size_t size)
{
	if (n < *cap)
		return 0;
	uint32_t nc = *cap ? *cap * 2 : 64;
	void *np = realloc(*p, (size_t)nc * size);
	if (!np)
		return -1;
	*p = np;
	*cap = nc;
	return 0;
}

static void close_phase(stp_det *d, uint64_t seq, uint64_t ns)
{
	if (!d->phase_open)
		return;
	stp_det_phase *p = &d->phases[d->phase_open - 1];
	p->end_seq = seq;
	p->end_ns = ns;
	d->phase_open = 0;
	d->phase_depth = 0;
}

static void close_iter(stp_det *d, uint64_t seq, uint64_t ns)
{
	if (!d->iter_open)
		return;
	uint32_t k = (uint32_t)d->iter_open - 1;
	close_phase(d, seq, ns);
	d->iters[k].end_seq = seq;
	d->iters[k].end_ns = ns;
	d->iter_open = 0;
	if (grow((void **)&d->turn_seq, &d->turn_cap, k, sizeof *d->turn_seq) == 0) {
		uint64_t *tn = realloc(d->turn_ns, (size_t)d->turn_cap * sizeof *tn);
		if (tn) {
			d->turn_ns = tn;
			d->turn_seq[k] = d->turn_cand_seq + 1;
			d->turn_ns[k] = d->turn_cand_ns;
			d->nturn = k + 1;
		}
	}
}

void det_marker_live(stp_det *d, uint64_t seq, uint64_t live_total)
{
	if (d->iter_open && live_total > d->cur_max_live) {
		d->cur_max_live = live_total;
		d->cur_max_seq = seq;
		d->cur_max_ns = d->cur_ns;
		/* a new highest: the turnaround moves here only when the earlier
		 * candidate is more than 0.1% below it */
		if (d->turn_cand_live + live_total / 1000 < live_total) {
			d->turn_cand_live = live_total;
			d->turn_cand_seq = seq;
			d->turn_cand_ns = d->cur_ns;
		}
	}
}

/* The recording's detail changes (trace.h: STP_HEAP_SAMPLE_ANNOTATION,
 * STP_LEAN_ANNOTATION): the open iteration is detailed from an unsampled
 * heap on, and the collector's first lean iteration makes every iteration
 * before it detailed (module markers and walked call paths cost time). */
static void note_detail(stp_det *d, const stp_reader *r, const stp_event *ev)
{
	const char *name = stp_reader_string(r, ev->u.marker.name);
	if (!name)
		return;
	if (!strcmp(name, STP_HEAP_SAMPLE_ANNOTATION)) {
		det_heap_sample_note(r, ev, &d->mk_heap_interval);
		d->mk_heap_sampled |= d->mk_heap_interval > 0;
		if (d->mk_heap_sampled && !d->mk_heap_interval && d->iter_open)
			d->iters[d->iter_open - 1].detail = 1;
	} else if (!strcmp(name, STP_LEAN_ANNOTATION)) {
		d->mk_lean = ev->u.marker.value != 0;
		uint32_t before = d->iter_open ? (uint32_t)d->iter_open - 1 : d->niters;
		if (d->mk_lean && !d->mk_lean_seen)
			for (uint32_t i = 0; i < before; i++)
				d->iters[i].detail = 1;
		d->mk_lean_seen |= d->mk_lean;
		if (!d->mk_lean && d->iter_open)
			d->iters[d->iter_open - 1].detail = 1;
	}
}

void det_marker(stp_det *d, const stp_reader *r, const stp_event *ev, uint64_t live_total)
{
	d->res.marker_events++;
	if (d->opt.iter_mode == STP_DET_ITER_DETECT || d->opt.iter_mode == STP_DET_ITER_NONE)
		return;
	uint64_t ns = ev->time_ns > d->t0 ? ev->time_ns - d->t0 : 0;
	const stp_marker_info *m = &ev->u.marker;
	switch (m->kind) {
	case STP_MARK_ITER_BEGIN:
		close_iter(d, ev->seq, ns);
		if (grow((void **)&d->iters, &d->iters_cap, d->niters, sizeof *d->iters) < 0)
			return;
		d->iters[d->niters] = (stp_det_iteration){.index = m->value, .begin_seq = ev->seq, .end_seq = UINT64_MAX,
		                                          .begin_ns = ns, .end_ns = UINT64_MAX,
		                                          .detail = (d->mk_lean_seen && !d->mk_lean) ||
		                                                    (d->mk_heap_sampled && !d->mk_heap_interval)};
		d->iter_open = (int)++d->niters;
		d->have_iter_markers = 1;
		d->cur_max_live = live_total;
		d->cur_max_seq = ev->seq;
		d->cur_max_ns = ns;
		d->turn_cand_live = live_total;
		d->turn_cand_seq = ev->seq;
		d->turn_cand_ns = ns;
		break;
	case STP_MARK_ITER_END:
		d->seen_iter_end = 1;
		close_iter(d, ev->seq, ns);
		break;
	case STP_MARK_PHASE_BEGIN:
		d->have_phase_markers = 1;
		if (d->phase_depth++ > 0) { /* only top-level phases make windows: name the nested one */
			if (d->phase_open && !d->phases[d->phase_open - 1].inner)
				d->phases[d->phase_open - 1].inner = det_intern(d, r, m->name);
			break;
		}
		if (grow((void **)&d->phases, &d->phases_cap, d->nphases, sizeof *d->phases) < 0)
			return;
		d->phases[d->nphases] = (stp_det_phase){.name = det_intern(d, r, m->name), .micro_batch = m->value,
		                                        .iteration = d->iter_open - 1, .begin_seq = ev->seq,
		                                        .end_seq = UINT64_MAX, .begin_ns = ns, .end_ns = UINT64_MAX};
		d->phase_open = (int)++d->nphases;
		break;
	case STP_MARK_PHASE_END:
		if (d->phase_depth > 0 && --d->phase_depth == 0)
			close_phase(d, ev->seq, ns);
		break;
	case STP_MARK_ANNOTATION:
		note_detail(d, r, ev);
		break;
	default:
		break;
	}
}

void det_markers_end(stp_det *d, uint64_t seq, uint64_t ns)
{
	/* An iteration never ended after one that was (ended by ITER_END, not
	 * by the next ITER_BEGIN) is what ran after the last one: inference,
	 * teardown (stprof's Python shim opens the next iteration at each
	 * step's end, so that data loading counts in it).  It is no iteration.
	 * (In a trace cut short it is the iteration the program was in.) */
	uint32_t n = d->niters;
	if (d->iter_open && d->stats.whole && n >= 2 && d->iters[n - 2].end_seq < d->iters[n - 1].begin_seq) {
		close_phase(d, seq, ns);
		while (d->nphases && d->phases[d->nphases - 1].iteration == (int32_t)(n - 1))
			d->nphases--;
		d->niters--;
		d->iter_open = 0;
		return;
	}
	if (d->iter_open)
		d->last_iter_cut = 1;
	close_phase(d, seq, ns);
	close_iter(d, seq, ns);
}

/* Phase markers only: an iteration starts at each repeat of the first
 * phase (same name and micro-batch) and ends where the next starts. */
static int iterations_from_phases(stp_det *d)
{
	if (d->nphases < 2)
		return 0;
	const stp_det_phase *p0 = &d->phases[0];
	uint32_t starts = 0;
	for (uint32_t i = 0; i < d->nphases; i++)
		starts += d->phases[i].name == p0->name && d->phases[i].micro_batch == p0->micro_batch;
	if (starts < 2)
		return 0;
	d->iters = calloc(starts, sizeof *d->iters);
	if (!d->iters)
		return -1;
	d->iters_cap = starts;
	for (uint32_t i = 0; i < d->nphases; i++) {
		stp_det_phase *p = &d->phases[i];
		if (p->name == p0->name && p->micro_batch == p0->micro_batch) {
			if (d->niters)
				d->iters[d->niters - 1].end_seq = p->begin_seq, d->iters[d->niters - 1].end_ns = p->begin_ns;
			d->iters[d->niters] = (stp_det_iteration){.index = d->niters, .begin_seq = p->begin_seq,
			                                          .begin_ns = p->begin_ns};
			d->niters++;
		}
		p->iteration = (int32_t)d->niters - 1;
	}
	stp_det_iteration *last = &d->iters[d->niters - 1];
	last->end_seq = d->phases[d->nphases - 1].end_seq;
	last->end_ns = d->phases[d->nphases - 1].end_ns;
	snprintf(d->method, sizeof d->method,
	         "phase markers; iterations start at each repeat of phase \"%s\" (micro-batch %lld)", p0->name,
	         (long long)p0->micro_batch);
	return 1;
}

int det_windows_from_markers(stp_det *d)
{
	if (!d->have_iter_markers) {
		int rc = iterations_from_phases(d);
		if (rc <= 0)
			return rc;
	} else {
		snprintf(d->method, sizeof d->method, "iteration%s markers", d->have_phase_markers ? " and phase" : "");
	}
	d->res.timeline.iter_source = STP_DET_SRC_MARKERS;
	d->res.timeline.confidence = 1.0;
	if (d->have_phase_markers) {
		d->res.timeline.phase_source = STP_DET_SRC_MARKERS;
		return 1;
	}
	/* turnaround: forward up to the live-bytes peak of each iteration */
	free(d->phases);
	d->phases = calloc((size_t)d->niters * 2 + 1, sizeof *d->phases);
	if (!d->phases)
		return -1;
	d->phases_cap = d->niters * 2 + 1;
	d->nphases = 0;
	for (uint32_t k = 0; k < d->niters && k < d->nturn; k++) {
		stp_det_iteration *it = &d->iters[k];
		uint64_t t = d->turn_seq[k], tn = d->turn_ns[k];
		if (t <= it->begin_seq || t >= it->end_seq)
			continue;
		d->phases[d->nphases++] = (stp_det_phase){"forward", 0, (int32_t)k, it->begin_seq, t, it->begin_ns, tn, NULL};
		d->phases[d->nphases++] = (stp_det_phase){"backward", 0, (int32_t)k, t, it->end_seq, tn, it->end_ns, NULL};
	}
	d->res.timeline.phase_source = d->nphases ? STP_DET_SRC_DETECTED : STP_DET_SRC_NONE;
	if (d->nphases) {
		size_t n = strlen(d->method);
		snprintf(d->method + n, sizeof d->method - n, "; phases split at each iteration's live-bytes peak");
	}
	return 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int det_windows_finish(stp_det *d)
{
	d->nibounds = 0;
	d->ibounds = malloc(((size_t)d->niters * 2 + 1) * sizeof *d->ibounds);
	if (!d->ibounds)
		return -1;
	for (uint32_t k = 0; k < d->niters; k++) {
		stp_det_iteration *it = &d->iters[k];
		d->ibounds[d->nibounds++] = it->begin_seq;
		d->ibounds[d->nibounds++] = it->end_seq;
		if (det_push_cut(d, it->begin_seq, it->begin_ns) < 0 || det_push_cut(d, it->end_seq, it->end_ns) < 0)
			return -1;
		it->first_phase = UINT32_MAX;
	}
	for (uint32_t i = 0; i < d->nphases; i++) {
		stp_det_phase *p = &d->phases[i];
		if (det_push_cut(d, p->begin_seq, p->begin_ns) < 0 || det_push_cut(d, p->end_seq, p->end_ns) < 0)
			return -1;
		if (p->iteration >= 0 && (uint32_t)p->iteration < d->niters) {
			stp_det_iteration *it = &d->iters[p->iteration];
			if (it->first_phase == UINT32_MAX)
				it->first_phase = i;
			it->nphases++;
		}
	}
	for (uint32_t k = 0; k < d->niters; k++)
		if (d->iters[k].first_phase == UINT32_MAX)
			d->iters[k].first_phase = 0;
	/* sort cuts with their times: pair them up */
	uint64_t *pairs = malloc((size_t)d->ncuts * 2 * sizeof *pairs);
	if (!pairs && d->ncuts)
		return -1;
	for (uint32_t i = 0; i < d->ncuts; i++)
		pairs[2 * i] = d->cuts[i], pairs[2 * i + 1] = d->cut_ns[i];
	qsort(pairs, d->ncuts, 2 * sizeof *pairs, cmp_u64);
	uint32_t n = 0;
	for (uint32_t i = 0; i < d->ncuts; i++) {
		if (n && d->cuts[n - 1] == pairs[2 * i])
			continue;
		d->cuts[n] = pairs[2 * i];
		d->cut_ns[n] = pairs[2 * i + 1];
		n++;
	}
	d->ncuts = n;
	free(pairs);
	qsort(d->ibounds, d->nibounds, sizeof *d->ibounds, cmp_u64);
	stp_det_timeline *t = &d->res.timeline;
	t->iterations = d->iters;
	t->niterations = d->niters;
	t->phases = d->phases;
	t->nphases = d->nphases;
	t->method = d->method;
	t->steady = -1;
	t->steady_why = d->steady_why;
	if (!d->niters && !d->method[0])
		snprintf(d->method, sizeof d->method, "no iteration markers and no periodic allocation sequence found");
	return 0;
}

/* Whether iteration k has a backward phase: it trains. */
static int trains(const stp_det *d, uint32_t k)
{
	const stp_det_iteration *it = &d->iters[k];
	for (uint32_t i = it->first_phase; i < d->nphases && i < it->first_phase + it->nphases; i++)
		if (d->phases[i].iteration == (int32_t)k && det_phase_is_backward(d->phases[i].name))
			return 1;
	return 0;
}

/* Two iterations agree: the same allocation count, peaks within 1%. */
static int agree(const stp_det_iteration *a, const stp_det_iteration *b)
{
	uint64_t hi = a->peak_bytes > b->peak_bytes ? a->peak_bytes : b->peak_bytes;
	uint64_t diff = a->peak_bytes > b->peak_bytes ? a->peak_bytes - b->peak_bytes : b->peak_bytes - a->peak_bytes;
	return a->allocs == b->allocs && diff * 100 <= hi;
}

/* The iteration written in full that folded iteration k repeats, when the
 * two agree; -1 if none. */
static int64_t like_of(const stp_det *d, uint32_t k)
{
	const stp_det_iteration *b = &d->iters[k];
	for (uint32_t j = k; j-- > 0;)
		if (d->iters[j].index == b->like)
			return !d->iters[j].folded && agree(&d->iters[j], b) ? (int64_t)j : -1;
	return -1;
}

/* Steady state: the first iteration after the first whose allocation count
 * equals its predecessor's and whose peak is within 1% of it; in a folded
 * trace (FOLD events) only iterations written in full count, and one that
 * the next, folded one repeats (its `like`) and agrees with is steady (the
 * next or, where lengths vary, any: the first folded one's reference); else
 * the last complete iteration written in full.  Where some iterations train
 * (a backward phase), only those: a script that evaluates before it trains
 * has iterations of inference first (the PyTorch shim marks them). */
void det_choose_steady(stp_det *d)
{
	stp_det_timeline *t = &d->res.timeline;
	uint32_t complete = d->niters - (d->last_iter_cut ? 1 : 0);
	if (!complete) {
		snprintf(d->steady_why, sizeof d->steady_why, "no complete iteration");
		return;
	}
	int training = 0;
	for (uint32_t k = 0; k < complete && !training; k++)
		training = trains(d, k);
	for (uint32_t k = 1; k < complete; k++) {
		const stp_det_iteration *a = &d->iters[k - 1], *b = &d->iters[k];
		if (a->folded)
			continue; /* the steady iteration is one with its events (plans need them) */
		if (training && !trains(d, k - 1))
			continue;
		if (b->folded) {
			/* the next one folded as a repeat of this one: this one is
			 * the steady iteration, with its events */
			if (b->like == a->index && agree(a, b)) {
				t->steady = (int32_t)(k - 1);
				snprintf(d->steady_why, sizeof d->steady_why,
				         "the iteration the next ones repeat (folded by the collector; same allocation "
				         "count and peak within 1%%)");
				return;
			}
			/* a loop whose lengths vary: the first folded iteration
			 * repeats an earlier one of its length */
			int64_t r = like_of(d, k);
			if (r >= 0 && (!training || trains(d, (uint32_t)r))) {
				t->steady = (int32_t)r;
				snprintf(d->steady_why, sizeof d->steady_why,
				         "the first iteration a later one repeats (iteration %" PRId64 ", folded by the "
				         "collector; same allocation count and peak within 1%%)",
				         d->iters[k].index);
				return;
			}
			continue;
		}
		if (agree(a, b) && (!training || trains(d, k))) {
			t->steady = (int32_t)k;
			snprintf(d->steady_why, sizeof d->steady_why,
			         "first iteration with the same allocation count and peak (within 1%%) as the one before");
			return;
		}
	}
	uint32_t last = complete - 1;
	while (last > 0 && (d->iters[last].folded || (training && !trains(d, last))))
		last--;
	t->steady = (int32_t)last;
	snprintf(d->steady_why, sizeof d->steady_why,
	         complete > 1 ? "no two consecutive iterations agree; the last complete one written in full"
	                      : "the only complete iteration");
}
