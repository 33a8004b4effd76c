/*
 * perfetto_tracks.c - the tracks of one process (trace) in a Perfetto export,
 * each declared (TrackDescriptor) before its first event:
 *
 *   process "rank R: prog"                  ProcessDescriptor, pid
 *     <space> requested|allocated|reserved  counters, bytes, one y axis
 *     training                              iteration and phase slices
 *     <space> stream S / host               API slices, alloc/free instants;
 *                                           sub-lanes share the name
 *     <space> objects (<class>)             a group of lifetime lanes
 *       lifetimes                           one lane per concurrent object
 *     findings                              detector findings
 *   thread tracks (tid)                     module slices
 *
 * Lanes: a group keeps its free lanes in a min-heap by index, so the lowest
 * free lane is reused first and the lane count is the peak number of objects
 * drawn at once (capped by max_lanes).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_export.h"

/* Sibling ranks under the process track. */
enum { RANK_COUNTERS = 0, RANK_TRAINING = 1000, RANK_STREAMS = 2000, RANK_OBJECTS = 3000,
       RANK_FINDINGS = 4000, RANK_SERIES = 500 };

uint64_t pf_new_uuid(pf_proc *p) { return p->x->next_uuid++; }

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

int pf_process_track(pf_proc *p, const stp_process_info *info, uint64_t ts)
{
	char name[256], label[160], first[128];
	const char *cmd = info ? stp_reader_string(p->r, info->cmdline) : "";
	const char *exe = info ? stp_reader_string(p->r, info->exe) : "";
	const char *host = info ? stp_reader_string(p->r, info->hostname) : "";
	size_t n = strcspn(cmd, " ");
	if (n >= sizeof first)
		n = sizeof first - 1;
	memcpy(first, cmd, n);
	first[n] = 0;
	const char *prog = *exe ? base_name(exe) : *first ? base_name(first) : base_name(p->path);
	if (info && info->rank >= 0)
		snprintf(name, sizeof name, "rank %d: %s", info->rank, prog);
	else
		snprintf(name, sizeof name, "%s", prog);
	snprintf(label, sizeof label, "host %s", *host ? host : "?");
	p->uuid = pf_new_uuid(p);
	pf_track t = {.kind = PF_TRACK_PROCESS, .uuid = p->uuid, .pid = p->pid, .process_name = name,
	              .cmdline = *cmd ? cmd : NULL, .label = *host ? label : NULL, .explicit_order = 1};
	return pf_emit_track(&p->seq, ts, &t);
}

const char *stp_export_space_name(unsigned kind, int32_t device, char *buf, size_t len)
{
	switch (kind) {
	case STP_MEM_DEVICE: snprintf(buf, len, "cuda:%d", device); break;
	case STP_MEM_MANAGED: snprintf(buf, len, "managed"); break;
	case STP_MEM_PINNED: snprintf(buf, len, "pinned"); break;
	case STP_MEM_HOST:
		snprintf(buf, len, device == PF_DEV_TENSORS ? "cpu tensors" : device == PF_DEV_JAX ? "jax buffers" : "host");
		break;
	default: snprintf(buf, len, "memory kind %u", kind); break;
	}
	return buf;
}

static int counter_track(pf_proc *p, uint64_t uuid, const char *name, const char *desc,
                         const char *share_key, int32_t rank, uint64_t ts)
{
	pf_track t = {.kind = PF_TRACK_COUNTER, .uuid = uuid, .parent = p->uuid, .name = name,
	              .description = desc, .has_rank = 1, .rank = rank,
	              .unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES,
	              .share_key = share_key};
	return pf_emit_track(&p->seq, ts, &t);
}

uint32_t pf_space_get(pf_proc *p, unsigned kind, int32_t device, uint64_t ts)
{
	if (kind != STP_MEM_DEVICE && !(kind == STP_MEM_HOST && PF_DEV_FRAMEWORK(device)))
		device = -1;
	for (size_t i = 0; i < p->nspaces; i++)
		if (p->spaces[i].kind == kind && p->spaces[i].device == device)
			return (uint32_t)i;
	if (p->nspaces >= UINT16_MAX ||
	    pf_grow((void **)&p->spaces, &p->spaces_cap, p->nspaces + 1, sizeof *p->spaces) < 0)
		return PF_NONE;
	uint32_t ix = (uint32_t)p->nspaces++;
	pf_space *s = &p->spaces[ix];
	memset(s, 0, sizeof *s);
	s->kind = (uint8_t)kind;
	s->device = device;
	stp_export_space_name(kind, device, s->name, sizeof s->name);
	snprintf(s->share_key, sizeof s->share_key, "stprof %s bytes", s->name);
	char name[64];
	s->t_req = pf_new_uuid(p);
	s->t_alloc = pf_new_uuid(p);
	int32_t rank = RANK_COUNTERS + (int32_t)ix * 10;
	snprintf(name, sizeof name, "%s requested", s->name);
	int rc = counter_track(p, s->t_req, name,
	                       "Bytes the program asked for, summed over its live objects.",
	                       s->share_key, rank, ts);
	snprintf(name, sizeof name, "%s allocated", s->name);
	rc |= counter_track(p, s->t_alloc, name,
	                    "Bytes the allocator handed out (rounded sizes), summed over live objects.",
	                    s->share_key, rank + 1, ts);
	return rc ? PF_NONE : ix;
}

int pf_space_reserved_track(pf_proc *p, pf_space *s, uint64_t ts)
{
	if (s->t_resv)
		return 0;
	char name[64];
	s->t_resv = pf_new_uuid(p);
	int32_t rank = RANK_COUNTERS + (int32_t)(s - p->spaces) * 10 + 2;
	snprintf(name, sizeof name, "%s reserved", s->name);
	return counter_track(p, s->t_resv, name,
	                     "Bytes the actual allocator reserved from the system (its segments).",
	                     s->share_key, rank, ts);
}

static int stream_lane_track(pf_proc *p, pf_stream *s, pf_sublane *l, uint64_t ts)
{
	l->uuid = pf_new_uuid(p);
	pf_track t = {.kind = PF_TRACK_PLAIN, .uuid = l->uuid, .parent = p->uuid, .name = s->name,
	              .has_rank = 1, .rank = RANK_STREAMS + (int32_t)(s - p->streams),
	              .description = "API calls on this stream (kernels, copies, sets, ops) and the "
	                             "allocations and frees made on it.  Arrows: alloc -> first "
	                             "access -> free."};
	return pf_emit_track(&p->seq, ts, &t);
}

uint32_t pf_stream_get(pf_proc *p, unsigned kind, int32_t device, uint64_t stream, uint64_t ts)
{
	if (kind == STP_MEM_HOST || kind == STP_MEM_PINNED || device < 0) {
		device = -1;
		stream = 0;
	}
	uint64_t key = stream ^ ((uint64_t)(uint32_t)(device + 1) << 52);
	uint64_t *ix = pf_map_get(&p->stream_ix, key);
	if (ix && p->streams[*ix].device == device && p->streams[*ix].stream == stream)
		return (uint32_t)*ix;
	for (size_t i = 0; i < p->nstreams; i++)
		if (p->streams[i].device == device && p->streams[i].stream == stream)
			return (uint32_t)i;
	if (pf_grow((void **)&p->streams, &p->streams_cap, p->nstreams + 1, sizeof *p->streams) < 0)
		return PF_NONE;
	uint32_t i = (uint32_t)p->nstreams++;
	pf_stream *s = &p->streams[i];
	memset(s, 0, sizeof *s);
	s->device = device;
	s->stream = stream;
	if (device < 0)
		snprintf(s->name, sizeof s->name, "host");
	else if (stream == 0)
		snprintf(s->name, sizeof s->name, "cuda:%d default stream", device);
	else if (stream < 1000000)
		snprintf(s->name, sizeof s->name, "cuda:%d stream %" PRIu64, device, stream);
	else
		snprintf(s->name, sizeof s->name, "cuda:%d stream 0x%" PRIx64, device, stream);
	if (pf_map_put(&p->stream_ix, key, i) < 0 ||
	    pf_grow((void **)&s->lanes, &s->cap, 1, sizeof *s->lanes) < 0)
		return PF_NONE;
	s->nlanes = 1;
	memset(&s->lanes[0], 0, sizeof s->lanes[0]);
	if (stream_lane_track(p, s, &s->lanes[0], ts) < 0)
		return PF_NONE;
	return i;
}

/* Can [b, e] go on sub-lane l?  Pops the slices that ended by b. */
static int sublane_fits(pf_sublane *l, uint64_t b, uint64_t e)
{
	if (b < l->floor)
		return 0;
	while (l->nopen && l->open[l->nopen - 1].e <= b) {
		l->nopen--;
		if (l->open[l->nopen].e > l->floor)
			l->floor = l->open[l->nopen].e;
	}
	if (!l->nopen)
		return 1;
	const pf_span *top = &l->open[l->nopen - 1];
	/* Nest only when it cannot share both ends with the enclosing slice:
	 * equal ends would let sorting swap which END closes which. */
	return b >= top->b && e <= top->e && !(b == top->b && e == top->e);
}

uint32_t pf_stream_lane(pf_proc *p, pf_stream *s, uint64_t b, uint64_t e)
{
	size_t i;
	for (i = 0; i < s->nlanes; i++)
		if (sublane_fits(&s->lanes[i], b, e))
			break;
	if (i == s->nlanes) {
		if (pf_grow((void **)&s->lanes, &s->cap, s->nlanes + 1, sizeof *s->lanes) < 0)
			return PF_NONE;
		memset(&s->lanes[i], 0, sizeof s->lanes[i]);
		s->nlanes++;
		if (stream_lane_track(p, s, &s->lanes[i], b) < 0)
			return PF_NONE;
	}
	pf_sublane *l = &s->lanes[i];
	if (pf_grow((void **)&l->open, &l->cap, l->nopen + 1, sizeof *l->open) < 0)
		return PF_NONE;
	l->open[l->nopen++] = (pf_span){b, e};
	return (uint32_t)i;
}

uint32_t pf_group_get(pf_proc *p, uint16_t space, const char *cls, uint64_t ts)
{
	/* Few groups (spaces x classes): a scan beats hashing the text. */
	for (size_t i = 0; i < p->ngroups; i++)
		if (p->groups[i].space == space && (p->groups[i].cls == cls || !strcmp(p->groups[i].cls, cls)))
			return (uint32_t)i;
	if (pf_grow((void **)&p->groups, &p->groups_cap, p->ngroups + 1, sizeof *p->groups) < 0)
		return PF_NONE;
	uint32_t ix = (uint32_t)p->ngroups;
	const char *stored = pf_strtab_keep(&p->group_text, cls, strlen(cls));
	if (!stored)
		return PF_NONE;
	p->ngroups++;
	pf_group *g = &p->groups[ix];
	memset(g, 0, sizeof *g);
	g->space = space;
	g->cls = stored;
	snprintf(g->name, sizeof g->name, "%s objects (%s)", p->spaces[space].name, g->cls);
	g->uuid = pf_new_uuid(p);
	pf_track t = {.kind = PF_TRACK_PLAIN, .uuid = g->uuid, .parent = p->uuid, .name = g->name,
	              .has_rank = 1, .rank = RANK_OBJECTS + (int32_t)ix,
	              .description = "Object lifetimes, one slice per object from its allocation to its "
	                             "free; the lanes are reused, so there are as many as objects live "
	                             "at once.  Arguments: size, class, call path, patterns."};
	if (pf_emit_track(&p->seq, ts, &t) < 0)
		return PF_NONE;
	return ix;
}

static int heap_less(const pf_group *g, uint32_t a, uint32_t b) { return a < b; }

static void heap_push(pf_group *g, uint32_t lane)
{
	size_t i = g->nheap++;
	g->heap[i] = lane;
	while (i && heap_less(g, g->heap[i], g->heap[(i - 1) / 2])) {
		uint32_t t = g->heap[i];
		g->heap[i] = g->heap[(i - 1) / 2];
		g->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static uint32_t heap_pop(pf_group *g)
{
	uint32_t top = g->heap[0];
	g->heap[0] = g->heap[--g->nheap];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < g->nheap && heap_less(g, g->heap[l], g->heap[m]))
			m = l;
		if (r < g->nheap && heap_less(g, g->heap[r], g->heap[m]))
			m = r;
		if (m == i)
			break;
		uint32_t t = g->heap[i];
		g->heap[i] = g->heap[m];
		g->heap[m] = t;
		i = m;
	}
	return top;
}

uint32_t pf_lane_take(pf_proc *p, pf_group *g, uint64_t ts)
{
	if (g->nheap && g->lanes[g->heap[0]].last_ts <= ts) {
		uint32_t l = heap_pop(g);
		g->lanes[l].busy = 1;
		return l;
	}
	uint32_t max = p->x->opts.max_lanes ? p->x->opts.max_lanes : 10000;
	if (g->nlanes >= max)
		return PF_NONE;
	if (pf_grow((void **)&g->lanes, &g->cap, g->nlanes + 1, sizeof *g->lanes) < 0 ||
	    pf_grow((void **)&g->heap, &g->heap_cap, g->nlanes + 1, sizeof *g->heap) < 0)
		return PF_NONE;
	uint32_t l = (uint32_t)g->nlanes;
	pf_lane *ln = &g->lanes[l];
	ln->uuid = pf_new_uuid(p);
	ln->last_ts = ts;
	ln->busy = 1;
	pf_track t = {.kind = PF_TRACK_PLAIN, .uuid = ln->uuid, .parent = g->uuid, .name = "lifetimes"};
	if (pf_emit_track(&p->seq, ts, &t) < 0)
		return PF_NONE;
	g->nlanes++;
	p->x->st.lanes++;
	return l;
}

void pf_lane_release(pf_group *g, uint32_t lane, uint64_t ts)
{
	g->lanes[lane].busy = 0;
	g->lanes[lane].last_ts = ts;
	heap_push(g, lane);
}

static int thread_desc(pf_proc *p, pf_mtrack *m, uint64_t ts)
{
	uint64_t *name = pf_map_get(&p->thread_names, m->tid);
	const char *tn = name ? stp_reader_string(p->r, (uint32_t)*name) : "";
	char buf[64];
	if (!*tn) {
		snprintf(buf, sizeof buf, "thread %u", m->tid);
		tn = buf;
	}
	pf_track t = {.kind = PF_TRACK_THREAD, .uuid = m->uuid, .pid = p->pid, .tid = m->tid,
	              .thread_name = tn};
	return pf_emit_track(&p->seq, ts, &t);
}

pf_mtrack *pf_thread_track(pf_proc *p, uint32_t tid, uint64_t ts)
{
	uint64_t *ix = pf_map_get(&p->thread_ix, tid);
	if (ix)
		return &p->threads[*ix];
	if (pf_grow((void **)&p->threads, &p->threads_cap, p->nthreads + 1, sizeof *p->threads) < 0 ||
	    pf_map_put(&p->thread_ix, tid, p->nthreads) < 0)
		return NULL;
	pf_mtrack *m = &p->threads[p->nthreads++];
	memset(m, 0, sizeof *m);
	m->tid = tid;
	m->uuid = pf_new_uuid(p);
	if (thread_desc(p, m, ts) < 0)
		return NULL;
	return m;
}

int pf_thread_renamed(pf_proc *p, uint32_t tid, uint32_t name, uint64_t ts)
{
	if (pf_map_put(&p->thread_names, tid, name) < 0)
		return -1;
	uint64_t *ix = pf_map_get(&p->thread_ix, tid);
	return ix ? thread_desc(p, &p->threads[*ix], ts) : 0;
}

int pf_training_track(pf_proc *p, uint64_t ts)
{
	if (p->training.uuid)
		return 0;
	p->training.uuid = pf_new_uuid(p);
	pf_track t = {.kind = PF_TRACK_PLAIN, .uuid = p->training.uuid, .parent = p->uuid,
	              .name = "training", .has_rank = 1, .rank = RANK_TRAINING,
	              .description = "Iterations, and the phases inside them (forward, backward, "
	                             "optimizer...), from the program's markers."};
	return pf_emit_track(&p->seq, ts, &t);
}

uint64_t pf_findings_track(pf_proc *p, uint64_t ts)
{
	if (p->findings_uuid)
		return p->findings_uuid;
	uint64_t u = pf_new_uuid(p);
	pf_track t = {.kind = PF_TRACK_PLAIN, .uuid = u, .parent = p->uuid, .name = "findings",
	              .has_rank = 1, .rank = RANK_FINDINGS,
	              .description = "Inefficiencies the detector found, each with its suggestion."};
	if (pf_emit_track(&p->seq, ts, &t) < 0)
		return 0;
	p->findings_uuid = u;
	return u;
}

void pf_tracks_free(pf_proc *p)
{
	for (size_t i = 0; i < p->nstreams; i++) {
		for (size_t j = 0; j < p->streams[i].nlanes; j++)
			free(p->streams[i].lanes[j].open);
		free(p->streams[i].lanes);
	}
	free(p->streams);
	for (size_t i = 0; i < p->ngroups; i++) {
		free(p->groups[i].lanes);
		free(p->groups[i].heap);
	}
	free(p->groups);
	free(p->spaces);
	for (size_t i = 0; i < p->nthreads; i++)
		free(p->threads[i].stack);
	free(p->threads);
	free(p->training.stack);
	pf_map_free(&p->stream_ix);
	pf_map_free(&p->thread_ix);
	pf_map_free(&p->thread_names);
	pf_map_free(&p->segs);
	pf_strtab_free(&p->group_text);
}
