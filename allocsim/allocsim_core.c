/*
 * allocsim_core.c - the replay driver: feeds events to a model, tracks the
 * peaks (allocated, reserved, requested), the first OOM and a decimated time
 * series; and the ways in that use it: allocsim_model_* (one model, event
 * by event), allocsim_run / allocsim_explain (a recorded event log), and
 * sim_run_configs (a device report's configs, the first one explained).
 *
 * The series keeps at most max_samples points; each point covers `stride`
 * consecutive events and holds the maxima over them, so peaks survive
 * decimation.  When the buffer fills, neighbouring points merge pairwise and
 * the stride doubles (between max/2 and max points at the end).
 */
#include <string.h>

#include "allocsim_internal.h"

sim_base *sim_new(const allocsim_config *c, char *err, size_t errlen)
{
	if (allocsim_config_check(c, err, errlen))
		return NULL;
	sim_base *m = NULL;
	switch (c->model) {
	case ALLOCSIM_PYTORCH:
		m = sim_pytorch_new(c);
		break;
	case ALLOCSIM_BFC:
		m = sim_bfc_new(c);
		break;
	case ALLOCSIM_RAW:
		m = sim_raw_new(c);
		break;
	}
	if (!m && err && errlen)
		snprintf(err, errlen, "out of memory");
	return m;
}

/* ---------------------------------------------------------------- tracking */

typedef struct sim_track {
	uint64_t events, allocs, frees;
	uint64_t live_req, peak_req;
	uint64_t pa, pa_time, pr, pr_time, pr_event;
	uint64_t ooms_seen, first_oom_time, first_oom_event, first_oom_size;
	uint64_t last_time;
	int aborted;
	/* series */
	allocsim_sample *s;
	size_t n, max;
	uint64_t stride, in_bucket;
	allocsim_sample cur;
} sim_track;

static void track_init(sim_track *t, size_t max_samples)
{
	memset(t, 0, sizeof *t);
	t->max = max_samples ? max_samples : 1024;
	if (t->max < 2)
		t->max = 2;
	t->stride = 1;
	t->s = malloc(t->max * sizeof *t->s);
	if (!t->s)
		t->max = 0;
}

static void series_push(sim_track *t)
{
	if (!t->max)
		return;
	if (t->n == t->max) {
		size_t k = 0;
		for (size_t i = 0; i + 1 < t->n; i += 2, k++) {
			allocsim_sample a = t->s[i], b = t->s[i + 1];
			t->s[k].time = a.time;
			t->s[k].allocated = a.allocated > b.allocated ? a.allocated : b.allocated;
			t->s[k].reserved = a.reserved > b.reserved ? a.reserved : b.reserved;
		}
		if (t->n & 1)
			t->s[k++] = t->s[t->n - 1];
		t->n = k;
		t->stride *= 2;
	}
	t->s[t->n++] = t->cur;
}

static inline void track(sim_track *t, const sim_base *m, uint64_t time, uint64_t event)
{
	t->events++;
	t->last_time = time;
	if (m->allocated > t->pa) {
		t->pa = m->allocated;
		t->pa_time = time;
	}
	if (m->reserved > t->pr) {
		t->pr = m->reserved;
		t->pr_time = time;
		t->pr_event = event;
	}
	if (!t->in_bucket) {
		t->cur.time = time;
		t->cur.allocated = m->allocated;
		t->cur.reserved = m->reserved;
	} else {
		if (m->allocated > t->cur.allocated)
			t->cur.allocated = m->allocated;
		if (m->reserved > t->cur.reserved)
			t->cur.reserved = m->reserved;
	}
	if (++t->in_bucket >= t->stride) {
		series_push(t);
		t->in_bucket = 0;
	}
}

static void track_oom(sim_track *t, uint64_t time, uint64_t event, uint64_t size)
{
	if (!t->ooms_seen++) {
		t->first_oom_time = time;
		t->first_oom_event = event;
		t->first_oom_size = size;
	}
}

/* Fills r; the series moves into r unless copy is set. */
static void track_result(sim_track *t, const sim_base *m, allocsim_result *r, int copy)
{
	memset(r, 0, sizeof *r);
	r->config = m->cfg;
	allocsim_config_label(&m->cfg, r->label, sizeof r->label);
	r->events = t->events;
	r->allocs = t->allocs;
	r->frees = t->frees;
	r->peak_allocated = t->pa;
	r->peak_reserved = t->pr;
	r->peak_requested = t->peak_req;
	r->peak_allocated_time = t->pa_time;
	r->peak_reserved_time = t->pr_time;
	r->peak_reserved_event = t->pr_event;
	r->efficiency = t->pr ? (double)t->pa / (double)t->pr : 1.0;
	r->fragmentation = 1.0 - r->efficiency;
	r->final_allocated = m->allocated;
	r->final_reserved = m->reserved;
	r->segment_allocs = m->segment_allocs;
	r->segment_frees = m->segment_frees;
	r->largest_segment = m->largest_segment;
	r->splits = m->splits;
	r->merges = m->merges;
	r->alloc_retries = m->retries;
	r->ooms = m->ooms;
	r->first_oom_time = t->first_oom_time;
	r->first_oom_event = t->first_oom_event;
	r->first_oom_size = t->first_oom_size;
	r->aborted = t->aborted;
	size_t n = t->n + (t->in_bucket ? 1 : 0);
	if (!n || !t->max)
		return;
	if (copy) {
		r->series = malloc(n * sizeof *r->series);
		if (!r->series)
			return;
		memcpy(r->series, t->s, t->n * sizeof *r->series);
	} else {
		r->series = t->s;
		t->s = NULL;
		if (t->in_bucket && t->n == t->max) {
			/* no room for the partial bucket: fold it into the last point */
			allocsim_sample *l = &r->series[t->n - 1];
			if (t->cur.allocated > l->allocated)
				l->allocated = t->cur.allocated;
			if (t->cur.reserved > l->reserved)
				l->reserved = t->cur.reserved;
			r->nseries = t->n;
			return;
		}
	}
	if (t->in_bucket)
		r->series[t->n] = t->cur;
	r->nseries = n;
}

void allocsim_result_clear(allocsim_result *r)
{
	if (!r)
		return;
	free(r->series);
	r->series = NULL;
	r->nseries = 0;
}

/* ---------------------------------------------------------------- replay */

/* Fills the moment fields of a snapshot from event k of the log. */
static void snap_moment(allocsim_snapshot *s, const allocsim_events *e, size_t k)
{
	const sim_ev *v = &e->ev[k];
	s->time = v->time;
	s->event = k;
	s->request_size = 0;
	s->request_stack = 0;
	if (!(v->slot & SIM_EV_FREE)) {
		s->request_size = v->size_stream & SIM_SIZE_MASK;
		s->request_stack = v->stack;
	}
	for (size_t i = 0; i < s->nsegments; i++)
		if (s->segments[i].stream < e->streams.n)
			s->segments[i].stream = e->streams.handles[s->segments[i].stream];
}

#define SNAP_WEIGHT 16

int sim_replay_snap(sim_base *m, const allocsim_events *e, size_t stop, const allocsim_run_opts *o,
                    allocsim_result *r, allocsim_snapshot *snap, int *snap_ok)
{
	sim_track t;
	track_init(&t, o ? o->max_samples : 0);
	uint64_t abort_above = o ? o->abort_above : 0;
	uint64_t abort_ooms = o && o->abort_ooms_at ? o->abort_ooms_at : UINT64_MAX;
	sim_slots_reserve(m, e->ids.nslots ? e->ids.nslots : 1);
	size_t n = stop < e->n ? stop : e->n;
	const sim_ev *ev = e->ev;
	/* snapshots at new peaks of reserved, at most one per
	 * SNAP_WEIGHT x (blocks + sites) events: an element of a snapshot
	 * (walk, sorts) costs about as much as SNAP_WEIGHT replayed events, so
	 * all snapshots together cost about one more pass over the events.  A
	 * final peak skipped this way is explained by one replay to it. */
	size_t last_snap = 0;
	int have_snap = 0;
	if (snap) {
		memset(snap, 0, sizeof *snap);
		m->count_sites = 1;
	}
	for (size_t k = 0; k < n; k++) {
		const sim_ev *v = &ev[k];
		uint64_t size = v->size_stream & SIM_SIZE_MASK;
		if (v->slot & SIM_EV_FREE) {
			m->ops->free(m, v->slot & ~SIM_EV_FREE);
			t.live_req -= size;
			t.frees++;
		} else {
			if (m->ops->alloc(m, v->slot, size, (uint16_t)(v->size_stream >> 48), v->stack, NULL))
				track_oom(&t, v->time, k, size);
			t.live_req += size;
			if (t.live_req > t.peak_req)
				t.peak_req = t.live_req;
			t.allocs++;
		}
		uint64_t old_pr = t.pr;
		track(&t, m, v->time, k);
		if (snap && t.pr != old_pr &&
		    (!have_snap || k - last_snap >= SNAP_WEIGHT * ((size_t)m->nB + m->nsites))) {
			allocsim_snapshot_clear(snap);
			if (sim_snapshot(m, snap) == 0) {
				snap_moment(snap, e, k);
				have_snap = 1;
				last_snap = k;
			} else {
				have_snap = 0;
			}
		}
		if ((abort_above && m->reserved > abort_above) || m->ooms >= abort_ooms) {
			t.aborted = 1;
			break;
		}
	}
	if (snap_ok)
		*snap_ok = have_snap && snap->event == t.pr_event && t.pr;
	if (r) {
		track_result(&t, m, r, 0);
		r->unmatched_frees = e->unmatched_frees;
		r->duplicate_allocs = e->duplicate_allocs;
	}
	free(t.s);
	return 0;
}

int sim_replay(sim_base *m, const allocsim_events *e, size_t stop, const allocsim_run_opts *o,
               allocsim_result *r)
{
	return sim_replay_snap(m, e, stop, o, r, NULL, NULL);
}

int allocsim_run_explained(const allocsim_events *e, const allocsim_config *c, const allocsim_run_opts *o,
                           allocsim_result *r, allocsim_snapshot *worst, char *err, size_t errlen)
{
	sim_base *m = sim_new(c, err, errlen);
	if (!m)
		return -1;
	int ok = 0;
	sim_replay_snap(m, e, SIZE_MAX, o, r, worst, &ok);
	m->ops->destroy(m);
	if (ok)
		return 0;
	/* the snapshot at the final peak was skipped to bound the cost: replay */
	allocsim_snapshot_clear(worst);
	return allocsim_explain(e, c, r->peak_reserved_event, worst, err, errlen);
}

int allocsim_run(const allocsim_events *e, const allocsim_config *c, const allocsim_run_opts *o,
                 allocsim_result *r, char *err, size_t errlen)
{
	sim_base *m = sim_new(c, err, errlen);
	if (!m)
		return -1;
	sim_replay(m, e, SIZE_MAX, o, r);
	m->ops->destroy(m);
	return 0;
}

int allocsim_explain(const allocsim_events *e, const allocsim_config *c, uint64_t event, allocsim_snapshot *s,
                     char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	sim_base *m = sim_new(c, err, errlen);
	if (!m)
		return -1;
	m->count_sites = 1;
	size_t stop = event < e->n ? (size_t)event + 1 : e->n;
	allocsim_run_opts o = {.max_samples = 2};
	sim_replay(m, e, stop, &o, NULL);
	int rc = sim_snapshot(m, s);
	if (!rc && stop)
		snap_moment(s, e, stop - 1);
	m->ops->destroy(m);
	if (rc && err && errlen)
		snprintf(err, errlen, "out of memory");
	return rc;
}

int allocsim_probe_request(const allocsim_events *e, const allocsim_config *c, size_t before, uint64_t size,
                           uint64_t stream, allocsim_refusal_probe *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	sim_base *m = sim_new(c, err, errlen);
	if (!m)
		return -1;
	allocsim_run_opts o = {.max_samples = 2};
	allocsim_result r;
	sim_replay(m, e, before, &o, &r);
	allocsim_result_clear(&r);
	out->ooms_before = r.ooms;
	out->first_oom_time = r.first_oom_time;
	out->allocated = m->allocated;
	out->reserved = m->reserved;
	allocsim_snapshot s;
	if (sim_snapshot(m, &s) == 0) {
		out->free_bytes = s.free_bytes;
		out->largest_free = s.largest_free;
	}
	allocsim_snapshot_clear(&s);
	uint16_t si = 0; /* the stream's index in the log (0: a stream it never saw) */
	for (uint32_t i = 0; i < e->streams.n; i++)
		if (e->streams.handles[i] == stream)
			si = (uint16_t)i;
	uint32_t slot = e->ids.nslots; /* one no logged object uses */
	sim_slots_reserve(m, slot);
	out->served = size < (1ull << 48) && !m->ops->alloc(m, slot, size, si, 0, NULL);
	m->ops->destroy(m);
	return 0;
}

/* ---------------------------------------------------------------- one model */

struct allocsim_model {
	sim_base *m;
	sim_idmap ids;
	sim_streams streams;
	sim_track t;
	uint64_t unmatched, duplicates;
};

allocsim_model *allocsim_model_new(const allocsim_config *c, char *err, size_t errlen)
{
	allocsim_model *am = calloc(1, sizeof *am);
	if (!am) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return NULL;
	}
	am->m = sim_new(c, err, errlen);
	if (!am->m || sim_idmap_init(&am->ids)) {
		if (am->m)
			am->m->ops->destroy(am->m);
		sim_idmap_release(&am->ids);
		free(am);
		return NULL;
	}
	track_init(&am->t, 1024);
	return am;
}

int allocsim_model_free(allocsim_model *am, uint64_t id, uint64_t time)
{
	uint64_t size;
	int64_t s = sim_idmap_remove(&am->ids, id, &size);
	if (s < 0) {
		am->unmatched++;
		return 1;
	}
	am->m->ops->free(am->m, (uint32_t)s);
	am->t.live_req -= size;
	am->t.frees++;
	track(&am->t, am->m, time, am->t.events);
	return 0;
}

int allocsim_model_alloc(allocsim_model *am, uint64_t id, uint64_t size, uint64_t stream, uint64_t time,
                         uint32_t stack, uint64_t *addr)
{
	if (size > SIM_SIZE_MASK)
		return -1;
	int si = sim_stream_index(&am->streams, stream);
	if (si < 0)
		return -1;
	int live;
	int64_t s = sim_idmap_add(&am->ids, id, size, &live);
	if (s >= 0 && live) {
		am->duplicates++;
		allocsim_model_free(am, id, time);
		s = sim_idmap_add(&am->ids, id, size, &live);
	}
	if (s < 0)
		return -1;
	sim_slots_reserve(am->m, (uint32_t)s);
	int oom = am->m->ops->alloc(am->m, (uint32_t)s, size, (uint16_t)si, stack, addr);
	if (oom)
		track_oom(&am->t, time, am->t.events, size);
	am->t.live_req += size;
	if (am->t.live_req > am->t.peak_req)
		am->t.peak_req = am->t.live_req;
	am->t.allocs++;
	track(&am->t, am->m, time, am->t.events);
	return oom;
}

void allocsim_model_empty_cache(allocsim_model *am, uint64_t time)
{
	am->m->ops->empty_cache(am->m);
	track(&am->t, am->m, time, am->t.events);
}

void allocsim_model_result(allocsim_model *am, allocsim_result *r)
{
	track_result(&am->t, am->m, r, 1);
	r->unmatched_frees = am->unmatched;
	r->duplicate_allocs = am->duplicates;
}

int allocsim_model_snapshot(allocsim_model *am, allocsim_snapshot *s)
{
	int rc = sim_snapshot(am->m, s);
	s->time = am->t.last_time;
	s->event = am->t.events ? am->t.events - 1 : 0;
	for (size_t i = 0; i < s->nsegments; i++)
		if (s->segments[i].stream < am->streams.n)
			s->segments[i].stream = am->streams.handles[s->segments[i].stream];
	return rc;
}

void allocsim_model_watch(allocsim_model *am, void (*fn)(void *ctx, int mapped, uint64_t addr, uint64_t size,
                                                          uint32_t segment),
                          void *ctx)
{
	am->m->watch = fn;
	am->m->watch_ctx = ctx;
}

uint64_t allocsim_model_block(allocsim_model *am, uint64_t id, uint64_t *addr)
{
	int64_t s = sim_idmap_find(&am->ids, id);
	if (s < 0 || (uint64_t)s >= am->m->nslot || !am->m->B)
		return 0;
	uint32_t b = am->m->slot_block[s];
	if (!b || b >= am->m->nB || !(am->m->B[b].flags & SB_ALLOCATED))
		return 0;
	if (addr)
		*addr = am->m->B[b].addr;
	return am->m->B[b].size;
}

void allocsim_model_usage(allocsim_model *am, uint64_t *allocated, uint64_t *reserved)
{
	*allocated = am->m->allocated;
	*reserved = am->m->reserved;
}

int allocsim_model_check(allocsim_model *am, char *why, size_t len)
{
	return am->m->ops->check(am->m, why, len);
}

void allocsim_model_destroy(allocsim_model *am)
{
	if (!am)
		return;
	am->m->ops->destroy(am->m);
	sim_idmap_release(&am->ids);
	free(am->streams.handles);
	free(am->t.s);
	free(am);
}

/* ---------------------------------------------------------------- a device's configs */

int sim_run_configs(const allocsim_events *e, const allocsim_config *cfgs, size_t nc, const allocsim_replay_opts *o,
                    allocsim_device_report *dr, char *err, size_t errlen)
{
	dr->results = calloc(nc, sizeof *dr->results);
	if (!dr->results) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	allocsim_run_opts ro = {.max_samples = o->max_samples};
	for (size_t i = 0; i < nc; i++) {
		int rc = i == 0 && !o->no_explain
		             ? allocsim_run_explained(e, &cfgs[i], &ro, &dr->results[i], &dr->worst, err, errlen)
		             : allocsim_run(e, &cfgs[i], &ro, &dr->results[i], err, errlen);
		if (rc)
			return -1;
		dr->nresults++;
		if (i == 0 && !o->no_explain)
			dr->has_worst = 1;
	}
	return 0;
}
