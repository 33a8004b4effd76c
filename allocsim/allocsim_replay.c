/*
 * allocsim_replay.c - from a .stp trace to the fragmentation report: collects
 * the allocations of each device (kind DEVICE, by device and stream) into an
 * event log, or the host heap's allocations when the trace has no device
 * ones (a "what if this ran on a GPU" answer, flagged host_fallback);
 * measures the actual M_a / M_r / E from the allocator's own segment events
 * (SEGMENT_RESERVE / SEGMENT_RELEASE) when the trace has them; then runs the
 * models, explains the PyTorch model's worst moment and tries settings.
 * A device holding JAX's buffers goes to allocsim_xla.c instead, with the
 * XLA statistics the trace sampled (allocsim_collector_xla_stat).
 *
 * The model is fed what the program asked for (alloc.requested, or size when
 * requested is 0); the actual M_a uses alloc.size (what the real allocator
 * handed out, after its rounding), so the two compare like for like.
 * Pinned and managed memory are left out.
 */
#include <string.h>

#include "allocsim_internal.h"
#include "stprof/trace.h"

typedef struct dev_state {
	int32_t device;
	allocsim_events *ev;
	uint64_t *actual; /* by slot: size the allocator reported */
	uint32_t nactual;
	uint64_t cur_alloc, peak_alloc, cur_res, peak_res;
	uint64_t reserves, releases;
	uint64_t over_reserved; /* allocations that took cur_alloc above cur_res */
	sim_idmap segs; /* live segments: addr -> size */
	int segs_init;
	int jax;        /* JAX's buffers (pool STP_POOL_JAX): the XLA report */
	allocsim_xla_probe *probes; /* XLA's statistics, in event order */
	size_t nprobes, capprobes;
	/* the first request refused (REFUSED, not an attempt): where in the
	 * log, its bytes and stream, when, and the most reserved before it */
	int refused;
	size_t refused_at;
	uint64_t refused_size, refused_stream, refused_time, refused_peak_res;
} dev_state;

struct allocsim_collector {
	dev_state *devs;
	size_t ndevs, capdevs;
	dev_state host;
	uint64_t events, start_time;
	int failed;
};

allocsim_collector *allocsim_collector_new(void)
{
	allocsim_collector *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->host.device = -1;
	return c;
}

static void dev_release(dev_state *d)
{
	allocsim_events_destroy(d->ev);
	free(d->actual);
	if (d->segs_init)
		sim_idmap_release(&d->segs);
	free(d->probes);
	memset(d, 0, sizeof *d);
}

void allocsim_collector_destroy(allocsim_collector *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->ndevs; i++)
		dev_release(&c->devs[i]);
	dev_release(&c->host);
	free(c->devs);
	free(c);
}

static dev_state *dev_get(allocsim_collector *c, int32_t device)
{
	for (size_t i = 0; i < c->ndevs; i++)
		if (c->devs[i].device == device)
			return &c->devs[i];
	if (c->ndevs == c->capdevs) {
		size_t cap = c->capdevs ? c->capdevs * 2 : 4;
		dev_state *n = realloc(c->devs, cap * sizeof *n);
		if (!n)
			return NULL;
		c->devs = n;
		c->capdevs = cap;
	}
	dev_state *d = &c->devs[c->ndevs++];
	memset(d, 0, sizeof *d);
	d->device = device;
	return d;
}

static int dev_ready(dev_state *d)
{
	if (!d->ev && !(d->ev = allocsim_events_new()))
		return -1;
	if (!d->segs_init) {
		if (sim_idmap_init(&d->segs))
			return -1;
		d->segs_init = 1;
	}
	return 0;
}

static void actual_free(dev_state *d, int64_t slot)
{
	if (slot >= 0 && (uint64_t)slot < d->nactual) {
		d->cur_alloc -= d->actual[slot];
		d->actual[slot] = 0;
	}
}

static void on_alloc(allocsim_collector *c, dev_state *d, const stp_event *ev, int64_t direct)
{
	const stp_alloc_info *a = &ev->u.alloc;
	if (dev_ready(d)) {
		c->failed = 1;
		return;
	}
	d->jax |= a->pool == STP_POOL_JAX;
	/* an address allocated again without a free seen frees the old object
	 * first (in the log and in the actual figures) */
	uint64_t size = a->requested ? a->requested : a->size;
	int64_t dup = -1;
	int64_t s = direct >= 0 ? sim_events_alloc_direct(d->ev, (uint32_t)direct, size, a->stream, ev->time_ns, a->stack)
	                        : sim_events_alloc_slot2(d->ev, a->addr, size, a->stream, ev->time_ns, a->stack, &dup);
	if (dup >= 0)
		actual_free(d, dup);
	if (s < 0)
		return;
	if ((uint64_t)s >= d->nactual) {
		uint32_t n = d->nactual ? d->nactual : 1024;
		while (n <= (uint64_t)s)
			n *= 2;
		uint64_t *na = realloc(d->actual, (size_t)n * sizeof *na);
		if (!na) {
			c->failed = 1;
			return;
		}
		memset(na + d->nactual, 0, (size_t)(n - d->nactual) * sizeof *na);
		d->actual = na;
		d->nactual = n;
	}
	d->actual[s] = a->size;
	d->cur_alloc += a->size;
	if (d->cur_alloc > d->peak_alloc)
		d->peak_alloc = d->cur_alloc;
	/* the allocator's blocks lie inside its segments: more allocated than
	 * reserved means segment events are missing (allocsim_actual), also
	 * before the first segment is seen (counted now, reported only if the
	 * trace has segments at all): so peak_alloc > peak_res implies
	 * over_reserved > 0, since the allocated peak is reached at an alloc */
	if (d->cur_alloc > d->cur_res)
		d->over_reserved++;
}

static void collect(allocsim_collector *c, const stp_event *ev, int64_t direct)
{
	if (!c->events++)
		c->start_time = ev->time_ns;
	switch (ev->type) {
	case STP_EV_ALLOC: {
		const stp_alloc_info *a = &ev->u.alloc;
		if (a->kind == STP_MEM_DEVICE) {
			dev_state *d = dev_get(c, a->device);
			if (d)
				on_alloc(c, d, ev, direct);
			else
				c->failed = 1;
		} else if (a->kind == STP_MEM_HOST) {
			on_alloc(c, &c->host, ev, direct);
		}
		break;
	}
	case STP_EV_FREE: {
		const stp_free_info *f = &ev->u.free;
		dev_state *d = NULL;
		if (f->kind == STP_MEM_DEVICE) {
			for (size_t i = 0; i < c->ndevs; i++)
				if (c->devs[i].device == f->device)
					d = &c->devs[i];
		} else if (f->kind == STP_MEM_HOST) {
			d = &c->host;
		}
		if (d && d->ev)
			actual_free(d, direct >= 0 ? sim_events_free_direct(d->ev, (uint32_t)direct, ev->time_ns)
			                           : sim_events_free_slot(d->ev, f->addr, ev->time_ns));
		break;
	}
	case STP_EV_REFUSED: { /* the first request a device's allocator refused */
		const stp_alloc_info *a = &ev->u.alloc;
		if (a->kind != STP_MEM_DEVICE || stp_refused_attempt(a))
			break;
		dev_state *d = dev_get(c, a->device);
		if (!d || dev_ready(d)) {
			c->failed = 1;
			break;
		}
		if (!d->refused) {
			d->refused = 1;
			d->refused_at = allocsim_events_count(d->ev);
			d->refused_size = a->requested;
			d->refused_stream = a->stream;
			d->refused_time = ev->time_ns;
			d->refused_peak_res = d->peak_res;
		}
		break;
	}
	case STP_EV_SEGMENT_RESERVE:
	case STP_EV_SEGMENT_RELEASE: {
		const stp_segment_info *s = &ev->u.segment;
		if (s->kind != STP_MEM_DEVICE)
			break;
		dev_state *d = dev_get(c, s->device);
		if (!d || dev_ready(d)) {
			c->failed = 1;
			break;
		}
		if (ev->type == STP_EV_SEGMENT_RESERVE) {
			int live;
			int64_t slot = sim_idmap_add(&d->segs, s->addr, s->size, &live);
			if (slot >= 0 && live) {
				/* reserved again without a release: replace */
				uint64_t old = 0;
				sim_idmap_remove(&d->segs, s->addr, &old);
				d->cur_res -= old < d->cur_res ? old : d->cur_res;
				sim_idmap_add(&d->segs, s->addr, s->size, &live);
			}
			d->cur_res += s->size;
			if (d->cur_res > d->peak_res)
				d->peak_res = d->cur_res;
			d->reserves++;
		} else {
			/* the release's own size wins (an unmapping of expandable
			 * pages may cover parts of several mappings); the size
			 * recorded at reserve time is the fallback */
			uint64_t size = 0;
			if (sim_idmap_remove(&d->segs, s->addr, &size) >= 0 && s->size && s->size < size) {
				int live;
				sim_idmap_add(&d->segs, s->addr + s->size, size - s->size, &live);
			}
			if (s->size)
				size = s->size;
			d->cur_res -= size < d->cur_res ? size : d->cur_res;
			d->releases++;
		}
		break;
	}
	default:
		break;
	}
}

void allocsim_collector_event(allocsim_collector *c, const stp_event *ev) { collect(c, ev, -1); }

void allocsim_collector_event_slot(allocsim_collector *c, const stp_event *ev, uint32_t slot)
{
	collect(c, ev, slot < SIM_EV_FREE ? (int64_t)slot : -1);
}

void allocsim_collector_xla_stat(allocsim_collector *c, int32_t device, uint64_t time, int key, uint64_t value)
{
	if (key < 0 || key >= ALLOCSIM_XLA_NKEYS)
		return;
	dev_state *d = device < 0 ? &c->host : dev_get(c, device);
	if (!d || dev_ready(d)) {
		c->failed = 1;
		return;
	}
	uint64_t at = d->ev->n;
	allocsim_xla_probe *p = d->nprobes ? &d->probes[d->nprobes - 1] : NULL;
	if (!p || p->events != at) {
		if (d->nprobes == d->capprobes) {
			size_t cap = d->capprobes ? d->capprobes * 2 : 64;
			allocsim_xla_probe *np = realloc(d->probes, cap * sizeof *np);
			if (!np) {
				c->failed = 1;
				return;
			}
			d->probes = np;
			d->capprobes = cap;
		}
		p = &d->probes[d->nprobes++];
		memset(p, 0, sizeof *p);
		p->events = at;
	}
	p->time = time;
	p->value[key] = value;
	p->have |= 1u << key;
}

static int parse_cfg(allocsim_config *c, const char *what, const char *text, uint64_t capacity, char *err,
                     size_t errlen)
{
	char e[256];
	allocsim_config_default(c, ALLOCSIM_PYTORCH);
	if (text && allocsim_config_parse(c, text, e, sizeof e)) {
		snprintf(err, errlen, "%s \"%s\": %s", what, text, e);
		return -1;
	}
	if (!c->capacity)
		c->capacity = capacity;
	if (allocsim_config_check(c, e, sizeof e)) {
		snprintf(err, errlen, "%s \"%s\": %s", what, text ? text : "", e);
		return -1;
	}
	return 0;
}

/* The first refused request tried on every model, within what the device
 * is known to have given: --capacity, else the most the allocator had
 * reserved before it (its segment events: the device had at least that,
 * and less than what the allocator held when refused plus the segment it
 * asked for).
 * Nothing without either. */
static int refusal_probes(const dev_state *d, const allocsim_replay_opts *o, const allocsim_config *cfgs,
                          allocsim_device_report *dr, char *err, size_t errlen)
{
	uint64_t cap = o->capacity ? o->capacity : d->refused_peak_res;
	if (!cap)
		return 0;
	dr->refusal_probes = calloc(dr->nresults ? dr->nresults : 1, sizeof *dr->refusal_probes);
	if (!dr->refusal_probes) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < dr->nresults; i++) {
		allocsim_config c = cfgs[i];
		c.capacity = cap;
		if (c.model == ALLOCSIM_BFC && !c.bfc_allow_growth && c.bfc_memory_limit > cap)
			c.bfc_memory_limit = cap;
		if (allocsim_probe_request(d->ev, &c, d->refused_at, d->refused_size, d->refused_stream,
		                           &dr->refusal_probes[i], err, errlen))
			return -1;
	}
	dr->has_refusal = 1;
	dr->refusal_time = d->refused_time;
	dr->refusal_size = d->refused_size;
	dr->refusal_capacity = cap;
	dr->refusal_capacity_given = o->capacity != 0;
	return 0;
}

int allocsim_refusal_fix(const allocsim_device_report *dr, char *buf, size_t len)
{
	if (!dr->has_refusal || !dr->nresults || dr->refusal_probes[0].served || dr->refusal_probes[0].ooms_before ||
	    dr->results[0].config.model != ALLOCSIM_PYTORCH)
		return -1;
	for (size_t i = 1; i < dr->nresults; i++)
		if (dr->results[i].config.model == ALLOCSIM_PYTORCH && dr->refusal_probes[i].served &&
		    !dr->refusal_probes[i].ooms_before) {
			allocsim_config c = dr->results[i].config;
			c.capacity = 0, c.name[0] = 0; /* the settings alone */
			allocsim_config_format(&c, buf, len);
			return (int)i;
		}
	for (size_t i = 1; i < dr->nresults; i++)
		if (dr->refusal_probes[i].served)
			return -1;
	return ALLOCSIM_REFUSAL_NONE;
}

static int device_report(dev_state *d, const allocsim_replay_opts *o, allocsim_device_report *dr, char *err,
                         size_t errlen)
{
	if (d->jax) {
		dr->device = d->device;
		dr->allocs = d->ev->allocs;
		dr->frees = d->ev->frees;
		dr->unmatched_frees = d->ev->unmatched_frees;
		return sim_xla_report(d->ev, d->probes, d->nprobes, o, dr, err, errlen);
	}
	allocsim_config cfgs[16];
	size_t nc = 0;
	if (parse_cfg(&cfgs[nc++], "as_run", o->as_run, o->capacity, err, errlen))
		return -1;
	if (!o->no_expandable) {
		allocsim_config alt = cfgs[0];
		alt.name[0] = 0;
		alt.expandable_segments = !alt.expandable_segments;
		cfgs[nc++] = alt;
	}
	if (!o->no_bfc) {
		allocsim_config_default(&cfgs[nc], ALLOCSIM_BFC);
		cfgs[nc++].capacity = o->capacity;
		if (o->capacity) {
			allocsim_config_default(&cfgs[nc], ALLOCSIM_BFC);
			cfgs[nc].capacity = o->capacity;
			cfgs[nc++].bfc_allow_growth = 0;
		}
	}
	if (!o->no_raw) {
		allocsim_config_default(&cfgs[nc], ALLOCSIM_RAW);
		cfgs[nc++].capacity = o->capacity;
	}
	for (size_t i = 0; i < o->nextra && nc < sizeof cfgs / sizeof *cfgs; i++)
		if (parse_cfg(&cfgs[nc++], "config", o->extra[i], o->capacity, err, errlen))
			return -1;

	dr->device = d->device;
	dr->allocs = d->ev->allocs;
	dr->frees = d->ev->frees;
	dr->unmatched_frees = d->ev->unmatched_frees;
	if (sim_run_configs(d->ev, cfgs, nc, o, dr, err, errlen))
		return -1;
	if (d->reserves) {
		allocsim_actual *ac = &dr->actual;
		ac->present = 1;
		ac->segment_reserves = d->reserves;
		ac->segment_releases = d->releases;
		ac->peak_allocated = d->peak_alloc;
		ac->peak_reserved = d->peak_res;
		ac->over_reserved = d->over_reserved;
		ac->efficiency = d->peak_res ? (double)d->peak_alloc / (double)d->peak_res : 1.0;
		const allocsim_result *r0 = &dr->results[0];
		if (d->peak_alloc)
			ac->allocated_error = ((double)r0->peak_allocated - (double)d->peak_alloc) / (double)d->peak_alloc;
		if (d->peak_res)
			ac->reserved_error = ((double)r0->peak_reserved - (double)d->peak_res) / (double)d->peak_res;
	}
	if (d->refused && refusal_probes(d, o, cfgs, dr, err, errlen))
		return -1;
	if (!o->no_recommend && cfgs[0].model == ALLOCSIM_PYTORCH) {
		size_t max = o->max_recommendations ? o->max_recommendations : 3;
		dr->recs = calloc(max, sizeof *dr->recs);
		if (!dr->recs) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		dr->nrecs = allocsim_recommend(d->ev, &cfgs[0], &dr->results[0], dr->recs, max);
		dr->recommend_tried = 1;
	}
	return 0;
}

static int cmp_dev(const void *a, const void *b)
{
	const dev_state *x = a, *y = b;
	return x->device < y->device ? -1 : x->device > y->device;
}

int allocsim_collector_finish(allocsim_collector *c, const allocsim_replay_opts *o, allocsim_report *out,
                              char *err, size_t errlen)
{
	static const allocsim_replay_opts defaults;
	if (!o)
		o = &defaults;
	memset(out, 0, sizeof *out);
	out->trace_events = c->events;
	out->start_time = c->start_time;
	if (c->failed) {
		snprintf(err, errlen, "out of memory while collecting allocations");
		return -1;
	}
	if (c->ndevs > 1)
		qsort(c->devs, c->ndevs, sizeof *c->devs, cmp_dev);
	size_t n = 0;
	for (size_t i = 0; i < c->ndevs; i++)
		n += c->devs[i].ev && c->devs[i].ev->allocs;
	int fallback = !n && c->host.ev && c->host.ev->allocs;
	if (fallback)
		n = 1;
	if (!n)
		return 0;
	out->devices = calloc(n, sizeof *out->devices);
	if (!out->devices) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	size_t k = 0;
	for (size_t i = 0; i < c->ndevs + (size_t)fallback; i++) {
		dev_state *d = i < c->ndevs ? &c->devs[i] : &c->host;
		if (!d->ev || !d->ev->allocs)
			continue;
		if (d == &c->host && !fallback)
			continue;
		allocsim_events_trim(d->ev);
		out->memory += allocsim_events_memory(d->ev);
		allocsim_device_report *dr = &out->devices[k++];
		out->ndevices = k;
		dr->host_fallback = d == &c->host;
		if (device_report(d, o, dr, err, errlen))
			return -1;
	}
	return 0;
}

int allocsim_replay_file(const char *path, const allocsim_replay_opts *o, allocsim_report *out, char *err,
                         size_t errlen)
{
	memset(out, 0, sizeof *out);
	stp_reader *r = stp_reader_open(path, err, errlen);
	if (!r)
		return -1;
	allocsim_collector *c = allocsim_collector_new();
	if (!c) {
		stp_reader_close(r);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	stp_event ev;
	int rc;
	while ((rc = stp_reader_next(r, &ev)) > 0)
		allocsim_collector_event(c, &ev);
	if (rc < 0) {
		snprintf(err, errlen, "%s", stp_reader_error(r));
		stp_reader_close(r);
		allocsim_collector_destroy(c);
		return -1;
	}
	stp_reader_close(r);
	rc = allocsim_collector_finish(c, o, out, err, errlen);
	allocsim_collector_destroy(c);
	if (rc)
		allocsim_report_clear(out);
	return rc;
}

void allocsim_report_clear(allocsim_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->ndevices; i++) {
		allocsim_device_report *d = &r->devices[i];
		for (size_t k = 0; k < d->nresults; k++)
			allocsim_result_clear(&d->results[k]);
		free(d->results);
		allocsim_snapshot_clear(&d->worst);
		free(d->recs);
		free(d->probes);
		free(d->refusal_probes);
	}
	free(r->devices);
	memset(r, 0, sizeof *r);
}
