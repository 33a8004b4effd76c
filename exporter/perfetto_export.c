/*
 * perfetto_export.c - stp_export_perfetto(): the driver.  Each trace is read
 * once in seq order (twice with --top: perfetto_select.c first) and written
 * as one process on its own packet sequence; what an event changes is
 * written at once, so the output streams.
 *
 * Window: before it opens, events only update state (live objects, counters,
 * open markers).  At the first event at or after its start, the state is
 * written as of the start (counter values, slices of live objects and open
 * markers, clipped); at the first event after its end, everything open is
 * closed at the end and reading stops.  Events are "almost" in time order
 * across threads (stprof/trace.h), so a late event inside the window is
 * moved to its start.
 *
 * Objects: an alloc draws, for a selected object, an instant on its stream
 * (with the allocation callstack, weight = bytes, the counters, and the start
 * of its flow) and a lifetime slice on a lane of its (space, class) group.
 * The first API call whose ranges touch the object continues the flow; the
 * free instant ends it (or a "still allocated" instant at the end).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "perfetto_export.h"

#define T_BEGIN PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN
#define T_END PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END
#define T_INSTANT PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT
#define T_COUNTER PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER

#define MAX_FLOWS_PER_API 256
#define MAX_MARK_DEPTH 256
#define PROGRESS_EVERY (4u << 20)

void pf_fail(pf_export *x, const char *fmt, ...)
{
	if (!x->err || !x->errlen || x->err[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->err, x->errlen, fmt, ap);
	va_end(ap);
}

uint64_t pf_conv(const pf_proc *p, uint64_t t)
{
	int64_t v = (int64_t)t + p->offset;
	return v < 0 ? 0 : (uint64_t)v;
}

/* Time an event is written at: inside the window. */
static uint64_t at(const pf_proc *p, uint64_t t)
{
	if (p->x->has_window) {
		if (t < p->x->lo)
			return p->x->lo;
		if (t > p->x->hi)
			return p->x->hi;
	}
	return t;
}

static int is_selected(const pf_proc *p, uint64_t seq)
{
	if (!p->selected)
		return 1;
	return seq < p->nselected_bits && (p->selected[seq / 64] >> (seq % 64) & 1);
}

#define emit(p, k) pf_emit(k)

/* Names an event through p->names: key identifies text, which is only
 * looked at the first time. */
static void name_by_key(pf_proc *p, pf_pkt *k, uint64_t key, const char *text)
{
	uint64_t *v = pf_map_get(&p->names, key);
	if (v) {
		pf_name_iid(k, *v);
		return;
	}
	uint64_t iid = pf_intern_name(k, text);
	if (pf_map_put(&p->names, key, iid) < 0)
		k->failed = 1;
	pf_name_iid(k, iid);
}

/* Names an event with a string literal. */
static void name_lit(pf_proc *p, pf_pkt *k, const char *lit)
{
	name_by_key(p, k, PF_KEY_LITERAL | (uint64_t)(uintptr_t)lit, lit);
}

/* An annotation whose value is a string literal. */
static void arg_lit(pf_proc *p, pf_pkt *k, const char *key, const char *lit)
{
	uint64_t *v = pf_map_get(&p->names, PF_KEY_VALUE | (uint64_t)(uintptr_t)lit);
	uint64_t iid = v ? *v : pf_intern_str(k, lit);
	if (!v && pf_map_put(&p->names, PF_KEY_VALUE | (uint64_t)(uintptr_t)lit, iid) < 0)
		k->failed = 1;
	pf_arg_str_iid(k, key, iid);
}

/* "512 B", "1.50 MiB": integer arithmetic (this runs once per object). */
static const char *size_label(uint64_t b, char *buf, size_t len)
{
	static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	int u = 0;
	while (u < 6 && b >> (10 * (u + 1)))
		u++;
	if (u == 0) {
		snprintf(buf, len, "%" PRIu64 " B", b);
		return buf;
	}
	uint64_t whole = b >> (10 * u);
	uint64_t frac = (uint64_t)((double)(b & ((1ull << (10 * u)) - 1)) / (double)(1ull << (10 * u)) * 100 + 0.5);
	if (frac == 100) {
		whole++;
		frac = 0;
	}
	snprintf(buf, len, "%" PRIu64 ".%02u %s", whole, (unsigned)frac, unit[u]);
	return buf;
}

/* ------------------------------------------------------------ counters */

static int counters_packet(pf_proc *p, pf_space *s, uint64_t t)
{
	pf_pkt *k = pf_event(&p->seq, t, T_COUNTER, s->t_req);
	pf_counter_int(k, s->requested);
	pf_extra_counter(k, s->t_alloc, s->allocated);
	return emit(p, k);
}

static int reserved_packet(pf_proc *p, pf_space *s, uint64_t t)
{
	pf_pkt *k = pf_event(&p->seq, t, T_COUNTER, s->t_resv);
	pf_counter_int(k, s->reserved);
	return emit(p, k);
}

/* ------------------------------------------------------------ objects */

static void object_info(const pf_proc *p, const pf_obj *o, stp_alloc_info *a, stp_export_object *eo)
{
	memset(a, 0, sizeof *a);
	a->addr = o->addr;
	a->size = o->size;
	a->requested = o->requested;
	a->stack = o->stack;
	a->kind = o->kind;
	a->device = o->device;
	a->stream = o->stream != PF_NONE ? p->streams[o->stream].stream : 0;
	eo->trace = p->index;
	eo->alloc_seq = o->seq;
	eo->alloc_ns = (uint64_t)((int64_t)o->t_alloc - p->offset);
	eo->alloc = a;
}

/* The lifetime slice's BEGIN.  a: the ALLOC payload (NULL: rebuilt). */
static int draw_begin(pf_proc *p, uint32_t oi, uint64_t t, const stp_alloc_info *a, int clipped)
{
	pf_obj *o = &p->objs.v[oi];
	const stp_export_opts *opt = &p->x->opts;
	stp_alloc_info rebuilt;
	stp_export_object eo;
	object_info(p, o, &rebuilt, &eo);
	if (a)
		eo.alloc = a;
	const char *cls = opt->classify ? opt->classify(opt->ctx, &eo) : NULL;
	if (!cls || !*cls)
		cls = "unclassified";
	uint32_t gi = pf_group_get(p, o->space, cls, t);
	if (gi == PF_NONE)
		return -1;
	pf_group *g = &p->groups[gi];
	uint32_t lane = pf_lane_take(p, g, t);
	if (lane == PF_NONE) {
		p->x->st.objects_no_lane++;
		return 0;
	}
	o = &p->objs.v[oi];
	o->group = gi;
	o->lane = lane;
	g->lanes[lane].last_ts = t;
	p->x->st.objects_drawn++;

	char buf[64];
	pf_pkt *k = pf_event(&p->seq, t, T_BEGIN, g->lanes[lane].uuid);
	if (o->size < (1ull << 60))
		name_by_key(p, k, PF_KEY_SIZE | o->size, size_label(o->size, buf, sizeof buf));
	else
		pf_name(k, size_label(o->size, buf, sizeof buf));
	pf_arg_uint(k, "size", o->size);
	if (o->requested != o->size)
		pf_arg_uint(k, "requested", o->requested);
	pf_arg_ptr(k, "address", o->addr);
	if (!g->cls_iid)
		g->cls_iid = pf_intern_str(k, g->cls);
	pf_arg_str_iid(k, "class", g->cls_iid);
	uint64_t path = pf_call_path_iid(p, k, o->stack);
	if (path)
		pf_arg_str_iid(k, "call path", path);
	if (opt->patterns) {
		const char *names[8];
		size_t n = opt->patterns(opt->ctx, &eo, names, 8);
		if (n > 8)
			n = 8;
		char text[512];
		size_t len = 0;
		for (size_t i = 0; i < n && len < sizeof text; i++) {
			if (!names[i] || !*names[i])
				continue;
			int w = snprintf(text + len, sizeof text - len, "%s%s", len ? ", " : "", names[i]);
			if (w < 0)
				break;
			len += (size_t)w;
		}
		if (len) {
			text[len < sizeof text ? len : sizeof text - 1] = 0;
			pf_arg_str(k, "patterns", text);
		}
	}
	pf_arg_uint(k, "alloc seq", o->seq);
	if (clipped)
		pf_arg_bool(k, "allocated before the window", 1);
	return emit(p, k);
}

static int draw_end(pf_proc *p, pf_obj *o, uint64_t t, int freed)
{
	if (o->lane == PF_NONE)
		return 0;
	pf_group *g = &p->groups[o->group];
	pf_lane *l = &g->lanes[o->lane];
	if (t < l->last_ts)
		t = l->last_ts;
	pf_pkt *k = pf_event(&p->seq, t, T_END, l->uuid);
	if (!freed)
		pf_arg_bool(k, "freed", 0);
	if (p->saw_ranges) {
		pf_arg_uint(k, "accesses", o->accesses);
		if (o->flags & PF_OBJ_ACCESSED)
			pf_arg_uint(k, "first access after (ns)", o->t_first - o->t_alloc);
	}
	int rc = emit(p, k);
	pf_lane_release(g, o->lane, t);
	o->lane = PF_NONE;
	return rc;
}

static void space_add(pf_space *s, const pf_obj *o, int sign)
{
	s->requested += sign * (int64_t)o->requested;
	s->allocated += sign * (int64_t)o->size;
	if (s->requested < 0)
		s->requested = 0;
	if (s->allocated < 0)
		s->allocated = 0;
}

/* Frees object oi at t (the FREE's stream, or its own when fr is NULL). */
static int do_free(pf_proc *p, uint32_t oi, uint64_t t, const stp_free_info *fr, const char *what)
{
	pf_obj *o = &p->objs.v[oi];
	pf_space *s = &p->spaces[o->space];
	space_add(s, o, -1);
	int rc = 0;
	if (p->wstate == 1) {
		uint64_t te = at(p, t);
		if (o->flags & PF_OBJ_SELECTED) {
			uint32_t si = fr ? pf_stream_get(p, o->kind, fr->device, fr->stream, te) : o->stream;
			if (si == PF_NONE)
				return -1;
			o = &p->objs.v[oi];
			pf_pkt *k = pf_event(&p->seq, te, T_INSTANT, p->streams[si].lanes[0].uuid);
			name_lit(p, k, what);
			pf_arg_uint(k, "size", o->size);
			if (o->flags & PF_OBJ_FLOW)
				pf_flow_end(k, o->flow);
			pf_extra_counter(k, s->t_req, s->requested);
			pf_extra_counter(k, s->t_alloc, s->allocated);
			rc |= emit(p, k);
			rc |= draw_end(p, o, te, 1);
		} else {
			rc |= counters_packet(p, s, te);
		}
	}
	pf_obj_remove(&p->objs, oi);
	return rc;
}

static int on_alloc(pf_proc *p, const stp_event *ev, uint64_t t)
{
	const stp_alloc_info *a = &ev->u.alloc;
	p->x->st.objects++;
	uint32_t old = pf_obj_find(&p->objs, a->addr);
	if (old != PF_NONE && do_free(p, old, t, NULL, "free (address reused)") < 0)
		return -1;
	uint32_t sp = pf_space_get(p, a->kind, a->device, at(p, t));
	uint32_t si = pf_stream_get(p, a->kind, a->device, a->stream, at(p, t));
	uint32_t oi = pf_obj_new(&p->objs);
	if (sp == PF_NONE || si == PF_NONE || oi == PF_NONE)
		return -1;
	pf_obj *o = &p->objs.v[oi];
	o->addr = a->addr;
	o->size = a->size;
	o->requested = a->requested ? a->requested : a->size;
	o->t_alloc = t;
	o->seq = ev->seq;
	o->stack = a->stack;
	o->space = (uint16_t)sp;
	o->kind = a->kind;
	o->device = a->device;
	o->stream = si;
	if (is_selected(p, ev->seq))
		o->flags |= PF_OBJ_SELECTED;
	pf_obj_insert(&p->objs, oi);
	pf_space *s = &p->spaces[sp];
	space_add(s, o, +1);
	if (p->wstate != 1)
		return 0;
	uint64_t te = at(p, t);
	if (!(o->flags & PF_OBJ_SELECTED))
		return counters_packet(p, s, te);
	o->flow = p->x->next_flow++;
	o->flags |= PF_OBJ_FLOW;
	p->x->st.flows++;
	pf_pkt *k = pf_event(&p->seq, te, T_INSTANT, p->streams[si].lanes[0].uuid);
	name_lit(p, k, "alloc");
	pf_arg_uint(k, "size", o->size);
	uint64_t cs = pf_callstack_iid(p, k, o->stack);
	if (cs)
		pf_callstack(k, cs, (double)o->size);
	pf_flow(k, o->flow);
	pf_extra_counter(k, s->t_req, s->requested);
	pf_extra_counter(k, s->t_alloc, s->allocated);
	if (emit(p, k) < 0)
		return -1;
	return draw_begin(p, oi, te, a, 0);
}

static int on_free(pf_proc *p, const stp_event *ev, uint64_t t)
{
	uint32_t oi = pf_obj_find(&p->objs, ev->u.free.addr);
	if (oi == PF_NONE) {
		p->x->st.unmatched_frees++;
		return 0;
	}
	return do_free(p, oi, t, &ev->u.free, "free");
}

static int on_segment(pf_proc *p, const stp_event *ev, uint64_t t)
{
	const stp_segment_info *g = &ev->u.segment;
	uint32_t sp = pf_space_get(p, g->kind, g->device, at(p, t));
	if (sp == PF_NONE || pf_space_reserved_track(p, &p->spaces[sp], at(p, t)) < 0)
		return -1;
	pf_space *s = &p->spaces[sp];
	if (ev->type == STP_EV_SEGMENT_RESERVE) {
		uint64_t *old = pf_map_get(&p->segs, g->addr);
		if (old)
			s->reserved -= (int64_t)*old;
		if (pf_map_put(&p->segs, g->addr, g->size) < 0)
			return -1;
		s->reserved += (int64_t)g->size;
	} else {
		uint64_t *old = pf_map_get(&p->segs, g->addr);
		uint64_t size = old ? *old : g->size;
		pf_map_del(&p->segs, g->addr);
		s->reserved -= (int64_t)size;
	}
	if (s->reserved < 0)
		s->reserved = 0;
	return p->wstate == 1 ? reserved_packet(p, s, at(p, t)) : 0;
}

/* ------------------------------------------------------------ API calls */

static const char *api_kind_label(unsigned kind)
{
	switch (kind) {
	case STP_API_KERNEL: return "kernel";
	case STP_API_MEMCPY: return "memcpy";
	case STP_API_MEMSET: return "memset";
	case STP_API_SYNC: return "synchronize";
	case STP_API_OP: return "op";
	default: return "api call";
	}
}

static int on_api(pf_proc *p, const stp_event *ev, uint64_t t)
{
	const stp_api_info *a = &ev->u.api;
	uint64_t b = t, e = pf_conv(p, a->end_ns);
	if (e < b)
		e = b;
	int visible = p->wstate == 1;
	uint64_t flows[MAX_FLOWS_PER_API];
	size_t nflows = 0;
	uint64_t bytes = 0;
	if (a->nranges)
		p->saw_ranges = 1;
	for (uint32_t i = 0; i < a->nranges; i++) {
		const stp_range *r = &a->ranges[i];
		bytes += r->size;
		uint64_t end = r->addr + (r->size ? r->size : 1);
		if (end < r->addr)
			end = UINT64_MAX;
		uint32_t oi = pf_obj_floor(&p->objs, r->addr);
		if (oi != PF_NONE) {
			const pf_obj *f = &p->objs.v[oi];
			if (r->addr - f->addr >= (f->size ? f->size : 1))
				oi = pf_obj_next(&p->objs, r->addr);
		} else {
			oi = pf_obj_next(&p->objs, r->addr);
		}
		while (oi != PF_NONE && p->objs.v[oi].addr < end) {
			pf_obj *o = &p->objs.v[oi];
			o->accesses++;
			if (!(o->flags & PF_OBJ_ACCESSED)) {
				o->flags |= PF_OBJ_ACCESSED;
				o->t_first = b;
			}
			if (visible && (o->flags & PF_OBJ_FLOW) && !(o->flags & PF_OBJ_STEPPED) &&
			    nflows < MAX_FLOWS_PER_API) {
				o->flags |= PF_OBJ_STEPPED;
				flows[nflows++] = o->flow;
			}
			oi = pf_obj_next(&p->objs, o->addr);
		}
	}
	if (!visible)
		return 0;
	b = at(p, b);
	e = at(p, e);
	uint32_t si = pf_stream_get(p, STP_MEM_DEVICE, a->device, a->stream, b);
	if (si == PF_NONE)
		return -1;
	pf_stream *s = &p->streams[si];
	uint32_t li = pf_stream_lane(p, s, b, e);
	if (li == PF_NONE)
		return -1;
	uint64_t track = s->lanes[li].uuid;
	const char *name = stp_reader_string(p->r, a->name);
	pf_pkt *k = pf_event(&p->seq, b, T_BEGIN, track);
	if (*name) {
		name_by_key(p, k, PF_KEY_STRING | a->name, name);
		arg_lit(p, k, "kind", api_kind_label(a->kind));
	} else {
		name_lit(p, k, api_kind_label(a->kind));
	}
	if (a->nranges) {
		pf_arg_uint(k, "ranges", a->nranges);
		pf_arg_uint(k, "bytes", bytes);
	}
	for (size_t i = 0; i < nflows; i++)
		pf_flow(k, flows[i]);
	if (emit(p, k) < 0)
		return -1;
	p->x->st.api_slices++;
	k = pf_event(&p->seq, e, T_END, track);
	return emit(p, k);
}

/* ------------------------------------------------------------ markers */

static const char *mark_name(pf_proc *p, const pf_mark *m, char *buf, size_t len)
{
	const char *s = stp_reader_string(p->r, m->name);
	switch (m->kind) {
	case STP_MARK_ITER_BEGIN:
		snprintf(buf, len, "iteration %" PRId64, m->value);
		return buf;
	case STP_MARK_PHASE_BEGIN: return *s ? s : "phase";
	case STP_MARK_MODULE_ENTER: return *s ? s : "module";
	default: return *s ? s : "marker";
	}
}

static int mark_begin_packet(pf_proc *p, pf_mtrack *mt, pf_mark *m, uint64_t t)
{
	char buf[64];
	if (t < mt->last_ts)
		t = mt->last_ts;
	mt->last_ts = t;
	pf_pkt *k = pf_event(&p->seq, t, T_BEGIN, mt->uuid);
	pf_name(k, mark_name(p, m, buf, sizeof buf));
	if (m->kind == STP_MARK_PHASE_BEGIN && m->value)
		pf_arg_int(k, "micro-batch", m->value);
	if (p->x->has_window && m->t < p->x->lo)
		pf_arg_bool(k, "began before the window", 1);
	m->emitted = 1;
	return emit(p, k);
}

static int mark_push(pf_proc *p, pf_mtrack *mt, const stp_marker_info *mi, uint64_t t)
{
	if (mt->n >= MAX_MARK_DEPTH) {
		p->x->st.unmatched_markers++;
		return 0;
	}
	if (pf_grow((void **)&mt->stack, &mt->cap, mt->n + 1, sizeof *mt->stack) < 0)
		return -1;
	pf_mark *m = &mt->stack[mt->n++];
	*m = (pf_mark){.kind = mi->kind, .name = mi->name, .value = mi->value, .t = t};
	return p->wstate == 1 ? mark_begin_packet(p, mt, m, at(p, t)) : 0;
}

/* Closes stack entries from index i up, innermost first. */
static int mark_pop_to(pf_proc *p, pf_mtrack *mt, size_t i, uint64_t t)
{
	int rc = 0;
	while (mt->n > i) {
		pf_mark *m = &mt->stack[--mt->n];
		if (!m->emitted || p->wstate != 1)
			continue;
		uint64_t te = at(p, t);
		if (te < mt->last_ts)
			te = mt->last_ts;
		mt->last_ts = te;
		rc |= emit(p, pf_event(&p->seq, te, T_END, mt->uuid));
	}
	return rc;
}

/* Index of the innermost entry of kind (and name, if non-zero); -1. */
static long mark_find(const pf_mtrack *mt, unsigned kind, uint32_t name)
{
	for (size_t i = mt->n; i-- > 0;)
		if (mt->stack[i].kind == kind && (!name || mt->stack[i].name == name))
			return (long)i;
	return -1;
}

static int on_marker(pf_proc *p, const stp_event *ev, uint64_t t)
{
	const stp_marker_info *m = &ev->u.marker;
	pf_mtrack *mt;
	long i;
	switch (m->kind) {
	case STP_MARK_ITER_BEGIN:
	case STP_MARK_ITER_END:
	case STP_MARK_PHASE_BEGIN:
	case STP_MARK_PHASE_END:
	case STP_MARK_ANNOTATION:
		if (pf_training_track(p, at(p, t)) < 0)
			return -1;
		mt = &p->training;
		break;
	case STP_MARK_MODULE_ENTER:
	case STP_MARK_MODULE_EXIT:
		mt = pf_thread_track(p, ev->tid, at(p, t));
		if (!mt)
			return -1;
		break;
	default:
		return 0;
	}
	switch (m->kind) {
	case STP_MARK_ITER_BEGIN:
		if (mark_pop_to(p, mt, 0, t) < 0)
			return -1;
		return mark_push(p, mt, m, t);
	case STP_MARK_PHASE_BEGIN:
	case STP_MARK_MODULE_ENTER:
		return mark_push(p, mt, m, t);
	case STP_MARK_ITER_END:
		i = mark_find(mt, STP_MARK_ITER_BEGIN, 0);
		break;
	case STP_MARK_PHASE_END:
		i = mark_find(mt, STP_MARK_PHASE_BEGIN, m->name);
		break;
	case STP_MARK_MODULE_EXIT:
		i = mark_find(mt, STP_MARK_MODULE_ENTER, m->name);
		break;
	default: { /* annotation: an instant */
		if (p->wstate != 1)
			return 0;
		const char *s = stp_reader_string(p->r, m->name);
		pf_pkt *k = pf_event(&p->seq, at(p, t), T_INSTANT, mt->uuid);
		pf_name(k, *s ? s : "annotation");
		pf_arg_int(k, "value", m->value);
		return emit(p, k);
	}
	}
	if (i < 0) {
		p->x->st.unmatched_markers++;
		return 0;
	}
	return mark_pop_to(p, mt, (size_t)i, t);
}

/* ------------------------------------------------------------ window */

static int open_marks(pf_proc *p, pf_mtrack *mt, uint64_t t)
{
	for (size_t i = 0; i < mt->n; i++)
		if (!mt->stack[i].emitted && mark_begin_packet(p, mt, &mt->stack[i], t) < 0)
			return -1;
	return 0;
}

static int draw_live(pf_proc *p, uint32_t t_node, uint64_t t)
{
	/* In-order walk without recursion depth surprises: explicit stack. */
	uint32_t *stack = NULL;
	size_t n = 0, cap = 0;
	uint32_t cur = t_node;
	int rc = 0;
	while ((cur != PF_NONE || n) && rc == 0) {
		while (cur != PF_NONE) {
			if (pf_grow((void **)&stack, &cap, n + 1, sizeof *stack) < 0) {
				free(stack);
				return -1;
			}
			stack[n++] = cur;
			cur = p->objs.v[cur].left;
		}
		cur = stack[--n];
		if (p->objs.v[cur].flags & PF_OBJ_SELECTED)
			rc = draw_begin(p, cur, t, NULL, 1);
		cur = p->objs.v[cur].right;
	}
	free(stack);
	return rc;
}

static int window_open(pf_proc *p)
{
	uint64_t t = p->x->lo;
	p->wstate = 1;
	for (size_t i = 0; i < p->nspaces; i++) {
		if (counters_packet(p, &p->spaces[i], t) < 0)
			return -1;
		if (p->spaces[i].t_resv && reserved_packet(p, &p->spaces[i], t) < 0)
			return -1;
	}
	if (p->training.uuid && open_marks(p, &p->training, t) < 0)
		return -1;
	for (size_t i = 0; i < p->nthreads; i++)
		if (open_marks(p, &p->threads[i], t) < 0)
			return -1;
	return p->objs.live ? draw_live(p, p->objs.root, t) : 0;
}

/* Ends everything still open at t (the trace's or the window's end). */
static int close_all(pf_proc *p, uint64_t t)
{
	int rc = 0;
	if (p->wstate != 1)
		return 0;
	if (p->training.uuid)
		rc |= mark_pop_to(p, &p->training, 0, t);
	for (size_t i = 0; i < p->nthreads; i++)
		rc |= mark_pop_to(p, &p->threads[i], 0, t);
	for (size_t i = 0; i < p->objs.n && rc == 0; i++) {
		pf_obj *o = &p->objs.v[i];
		if (!(o->flags & PF_OBJ_FLOW) && o->lane == PF_NONE)
			continue;
		if (pf_obj_find(&p->objs, o->addr) != i)
			continue; /* a free slot */
		if (o->flags & PF_OBJ_FLOW) {
			pf_pkt *k = pf_event(&p->seq, t, T_INSTANT, p->streams[o->stream].lanes[0].uuid);
			name_lit(p, k, p->x->has_window && t == p->x->hi ? "still allocated at the window's end"
			                                                 : "still allocated at the end");
			pf_arg_uint(k, "size", o->size);
			pf_flow_end(k, o->flow);
			rc |= emit(p, k);
			o->flags &= (uint8_t)~PF_OBJ_FLOW;
		}
		rc |= draw_end(p, o, t, 0);
	}
	p->wstate = 2;
	return rc;
}

/* ------------------------------------------------------------ extras */

static int emit_findings(pf_proc *p)
{
	const stp_export_opts *o = &p->x->opts;
	for (size_t i = 0; i < o->nfindings; i++) {
		const stp_export_finding *f = &o->findings[i];
		if (f->trace != p->index || !f->name || !*f->name)
			continue;
		uint64_t t = pf_conv(p, f->time_ns);
		if (p->x->has_window && (t < p->x->lo || t > p->x->hi))
			continue;
		uint64_t track = pf_findings_track(p, t);
		if (!track)
			return -1;
		pf_pkt *k = pf_event(&p->seq, t, T_INSTANT, track);
		pf_name(k, f->name);
		if (f->suggestion && *f->suggestion)
			pf_arg_text(k, "suggestion", f->suggestion);
		if (f->detail && *f->detail)
			pf_arg_text(k, "detail", f->detail);
		if (f->bytes)
			pf_arg_uint(k, "bytes", f->bytes);
		if (f->object_seq >= 0)
			pf_arg_uint(k, "alloc seq", (uint64_t)f->object_seq);
		if (emit(p, k) < 0)
			return -1;
		p->x->st.findings++;
	}
	return 0;
}

static int emit_series(pf_proc *p)
{
	const stp_export_opts *o = &p->x->opts;
	for (size_t i = 0; i < o->nseries; i++) {
		const stp_export_series *s = &o->series[i];
		if (s->trace != p->index || !s->name || !s->npoints || !s->points)
			continue;
		char name[160], key[64];
		snprintf(name, sizeof name, "%s%s%s", s->space ? s->space : "", s->space ? " " : "", s->name);
		snprintf(key, sizeof key, "stprof %s bytes", s->space ? s->space : "");
		uint64_t uuid = pf_new_uuid(p);
		uint64_t t0 = pf_conv(p, s->points[0].time_ns);
		pf_track tr = {.kind = PF_TRACK_COUNTER, .uuid = uuid, .parent = p->uuid, .name = name,
		               .has_rank = 1, .rank = 500 + (int32_t)i,
		               .description = s->unit == STP_UNIT_BYTES
		                                  ? "A series computed by the detector (bytes), e.g. what a "
		                                    "simulated allocator would reserve."
		                                  : "A ratio computed by the detector, e.g. fragmentation."};
		if (s->unit == STP_UNIT_BYTES) {
			tr.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES;
			if (s->space)
				tr.share_key = key;
		}
		if (pf_emit_track(&p->seq, at(p, t0), &tr) < 0)
			return -1;
		int have_prev = 0, pending = 0;
		double prev = 0, pend_v = 0;
		for (size_t j = 0; j < s->npoints; j++) {
			uint64_t t = pf_conv(p, s->points[j].time_ns);
			double v = s->points[j].value;
			if (p->x->has_window && t < p->x->lo) {
				pending = 1; /* carried to the window's start */
				pend_v = v;
				continue;
			}
			if (p->x->has_window && t > p->x->hi)
				break;
			if (pending) {
				pending = 0;
				if (!(have_prev && pend_v == prev)) {
					pf_pkt *k = pf_event(&p->seq, p->x->lo, T_COUNTER, uuid);
					pf_counter_double(k, pend_v);
					if (emit(p, k) < 0)
						return -1;
					prev = pend_v;
					have_prev = 1;
					p->x->st.series_points++;
				}
			}
			if (have_prev && v == prev)
				continue;
			pf_pkt *k = pf_event(&p->seq, t, T_COUNTER, uuid);
			pf_counter_double(k, v);
			if (emit(p, k) < 0)
				return -1;
			prev = v;
			have_prev = 1;
			p->x->st.series_points++;
		}
		if (pending) {
			pf_pkt *k = pf_event(&p->seq, p->x->lo, T_COUNTER, uuid);
			pf_counter_double(k, pend_v);
			if (emit(p, k) < 0)
				return -1;
			p->x->st.series_points++;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ a trace */

typedef struct head {
	int has_proc;
	stp_process_info proc;
	char host[256];
	uint64_t t0;
	int empty;
} head;

static int read_head(pf_export *x, const char *path, head *h)
{
	char err[512];
	memset(h, 0, sizeof *h);
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	if (!r) {
		pf_fail(x, "%s", err);
		return -1;
	}
	stp_event ev;
	int got = stp_reader_next(r, &ev);
	if (got < 0) {
		pf_fail(x, "%s", stp_reader_error(r));
		stp_reader_close(r);
		return -1;
	}
	if (got == 0) {
		h->empty = 1;
	} else {
		h->t0 = ev.time_ns;
		if (ev.type == STP_EV_PROCESS) {
			h->has_proc = 1;
			h->proc = ev.u.process;
			snprintf(h->host, sizeof h->host, "%s", stp_reader_string(r, ev.u.process.hostname));
		}
	}
	stp_reader_close(r);
	return 0;
}

static int32_t pick_pid(pf_export *x, const head *h, uint32_t index)
{
	int32_t pid = h->has_proc && h->proc.pid ? (int32_t)h->proc.pid : (int32_t)(100000 + index);
	for (int attempt = 0;; attempt++) {
		int used = 0;
		for (size_t i = 0; i < x->npids; i++)
			used |= x->pids[i] == pid;
		if (!used)
			break;
		pid = (int32_t)(10000000 * (index + 1 + attempt) + (pid % 10000000));
	}
	x->pids[x->npids++] = pid;
	return pid;
}

static int export_trace(pf_export *x, uint32_t index, const char *path, int64_t offset, const head *h)
{
	pf_proc p;
	memset(&p, 0, sizeof p);
	p.x = x;
	p.index = index;
	p.path = path;
	p.offset = offset;
	p.objs.free_head = p.objs.root = PF_NONE;
	p.wstate = x->has_window ? 0 : 1;
	uint64_t *bits = NULL;
	int rc = -1;
	char err[512];
	if (x->opts.top_n) {
		if (pf_select_top(x, path, offset, &bits, &p.nselected_bits) < 0)
			return -1;
		p.selected = bits;
	}
	p.r = stp_reader_open(path, err, sizeof err);
	if (!p.r) {
		pf_fail(x, "%s", err);
		free(bits);
		return -1;
	}
	pf_seq_init(&p.seq, &x->out, index + 1);
	p.pid = pick_pid(x, h, index);
	struct stat sb;
	uint64_t total = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0, next_progress = PROGRESS_EVERY;
	stp_event ev;
	int got, first = 1, bad = 0;
	while ((got = stp_reader_next(p.r, &ev)) > 0) {
		x->st.events++;
		uint64_t t = pf_conv(&p, ev.time_ns);
		if (first) {
			first = 0;
			p.t_first = t;
			if (pf_process_track(&p, ev.type == STP_EV_PROCESS ? &ev.u.process : NULL,
			                     x->has_window && t < x->lo ? x->lo : t) < 0)
				goto out;
		}
		if (t > p.t_last)
			p.t_last = t;
		if (x->has_window) {
			if (p.wstate == 0 && t >= x->lo && window_open(&p) < 0)
				goto out;
			if (p.wstate == 1 && t > x->hi)
				break;
		}
		switch (ev.type) {
		case STP_EV_ALLOC: bad = on_alloc(&p, &ev, t) < 0; break;
		case STP_EV_FREE: bad = on_free(&p, &ev, t) < 0; break;
		case STP_EV_SEGMENT_RESERVE:
		case STP_EV_SEGMENT_RELEASE: bad = on_segment(&p, &ev, t) < 0; break;
		case STP_EV_API: bad = on_api(&p, &ev, t) < 0; break;
		case STP_EV_MARKER: bad = on_marker(&p, &ev, t) < 0; break;
		case STP_EV_MODULE: bad = pf_module_add(&p, &ev.u.module) < 0; break;
		case STP_EV_THREAD: bad = pf_thread_renamed(&p, ev.u.thread.tid, ev.u.thread.name, at(&p, t)) < 0; break;
		default: break;
		}
		if (bad)
			goto out;
		if (x->opts.progress && stp_reader_stats(p.r)->bytes >= next_progress) {
			next_progress = stp_reader_stats(p.r)->bytes + PROGRESS_EVERY;
			x->opts.progress(x->opts.ctx, index, stp_reader_stats(p.r)->bytes, total);
		}
	}
	if (first && pf_process_track(&p, h->has_proc ? &h->proc : NULL, x->has_window ? x->lo : h->t0) < 0)
		goto out;
	uint64_t t_end = p.t_last;
	if (x->has_window && p.wstate == 1 && (got > 0 || t_end > x->hi))
		t_end = x->hi;
	if (close_all(&p, t_end) < 0 || emit_findings(&p) < 0 || emit_series(&p) < 0)
		goto out;
	if (got < 0) {
		pf_fail(x, "%s", stp_reader_error(p.r));
		goto out;
	}
	rc = 0;
out:
	if (rc < 0 && !x->err[0])
		pf_fail(x, "%s", x->out.failed ? x->out.err : "out of memory");
	stp_reader_close(p.r);
	pf_seq_free(&p.seq);
	pf_tracks_free(&p);
	pf_symbols_free(&p);
	pf_objs_free(&p.objs);
	pf_map_free(&p.names);
	free(bits);
	return rc;
}

int stp_export_perfetto(const char *const *traces, size_t ntraces, const char *out_path,
                        const stp_export_opts *opts, stp_export_stats *stats, char *err, size_t errlen)
{
	pf_export x;
	memset(&x, 0, sizeof x);
	char errbuf[512];
	if (!err || !errlen) {
		err = errbuf;
		errlen = sizeof errbuf;
	}
	err[0] = 0;
	x.err = err;
	x.errlen = errlen;
	if (opts)
		x.opts = *opts;
	x.next_uuid = 1;
	x.next_flow = 1;
	if (!ntraces) {
		pf_fail(&x, "no trace to export");
		return -1;
	}
	head *heads = calloc(ntraces, sizeof *heads);
	int64_t *offsets = calloc(ntraces, sizeof *offsets);
	x.pids = calloc(ntraces, sizeof *x.pids);
	int rc = -1;
	if (!heads || !offsets || !x.pids) {
		pf_fail(&x, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < ntraces; i++)
		if (read_head(&x, traces[i], &heads[i]) < 0)
			goto done;
	/* Traces of one host share CLOCK_MONOTONIC; across hosts, align them on
	 * the realtime clock each one recorded at its start. */
	int many_hosts = 0;
	for (size_t i = 1; i < ntraces; i++)
		if (strcmp(heads[i].host, heads[0].host) != 0)
			many_hosts = 1;
	uint64_t base = UINT64_MAX;
	for (size_t i = 0; i < ntraces; i++) {
		const head *h = &heads[i];
		if (many_hosts && h->has_proc && h->proc.start_realtime_ns)
			offsets[i] = (int64_t)(h->proc.start_realtime_ns - h->proc.start_monotonic_ns);
		if (!h->empty) {
			int64_t t = (int64_t)h->t0 + offsets[i];
			uint64_t tu = t < 0 ? 0 : (uint64_t)t;
			if (tu < base)
				base = tu;
		}
	}
	if (base == UINT64_MAX)
		base = 0;
	if (x.opts.has_window) {
		if (x.opts.window_end_ns < x.opts.window_begin_ns) {
			pf_fail(&x, "the window ends before it begins");
			goto done;
		}
		x.has_window = 1;
		x.lo = base + x.opts.window_begin_ns;
		x.hi = x.opts.window_end_ns > UINT64_MAX - base ? UINT64_MAX : base + x.opts.window_end_ns;
	}
	if (pf_out_open(&x.out, out_path) < 0) {
		pf_fail(&x, "%s", x.out.err);
		goto done;
	}
	rc = 0;
	for (size_t i = 0; i < ntraces && rc == 0; i++)
		rc = export_trace(&x, (uint32_t)i, traces[i], offsets[i], &heads[i]);
	if (pf_out_close(&x.out) < 0 && rc == 0) {
		pf_fail(&x, "%s: %s", out_path, x.out.err);
		rc = -1;
	}
done:
	x.st.packets = x.out.packets;
	x.st.bytes = x.out.bytes;
	if (stats)
		*stats = x.st;
	free(heads);
	free(offsets);
	free(x.pids);
	return rc;
}
