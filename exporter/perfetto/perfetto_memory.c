/*
 * perfetto_memory.c - what allocations, frees, segments and API calls write:
 * the memory counters of each space (riding on the alloc/free instants as
 * extra counter values when there is one), the alloc/free instants on the
 * stream (the alloc one with its callstack, weight = bytes, and the start of
 * the object's flow), the object's lifetime slice on a lane of its (space,
 * class) group, and API slices on their stream, which continue the flow of
 * every object whose first access they are (found through the treap of live
 * objects by address range).
 *
 * An object is drawn only if selected (--top) and allocated inside the
 * window; its counters always count.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_export.h"

#define MAX_FLOWS_PER_API 256

/* "512 B", "1.50 MiB": integer arithmetic (this runs once per object). */
const char *pf_size_label(uint64_t b, char *buf, size_t len)
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

/* Counter values are computed in seq order; written at times that never go
 * back per space, the trace processor's sort by time keeps that order (a
 * free on one thread stamped a little before an alloc on another would
 * otherwise be counted first). */
static uint64_t counter_time(pf_space *s, uint64_t t)
{
	if (t < s->last_ts)
		t = s->last_ts;
	s->last_ts = t;
	return t;
}

static int counter_point(pf_proc *p, pf_space *s, uint64_t t, int64_t req, int64_t alloc)
{
	pf_pkt *k = pf_event(&p->seq, t, T_COUNTER, s->t_req);
	pf_counter_int(k, req);
	pf_extra_counter(k, s->t_alloc, alloc);
	return pf_emit(k);
}

int pf_counters_flush(pf_proc *p, pf_space *s)
{
	if (!s->thin_pend)
		return 0;
	s->thin_pend = 0;
	int rc = counter_point(p, s, s->max_t, s->max_req, s->max_alloc);
	if (s->pend_t > s->max_t || s->pend_req != s->max_req)
		rc |= counter_point(p, s, s->pend_t, s->pend_req, s->pend_alloc);
	return rc;
}

int pf_counters_packet(pf_proc *p, pf_space *s, uint64_t t)
{
	t = counter_time(s, t);
	uint64_t gap = p->x->opts.counter_gap_ns;
	if (gap) {
		if (s->thin_any && t - s->thin_last < gap) {
			/* inside the gap: hold the highest and the last value */
			if (!s->thin_pend || s->requested > s->max_req) {
				s->max_t = t;
				s->max_req = s->requested;
				s->max_alloc = s->allocated;
			}
			s->thin_pend = 1;
			s->pend_t = t;
			s->pend_req = s->requested;
			s->pend_alloc = s->allocated;
			p->x->st.counter_points_held++;
			return 0;
		}
		if (pf_counters_flush(p, s) < 0)
			return -1;
		s->thin_any = 1;
		s->thin_last = t;
	}
	return counter_point(p, s, t, s->requested, s->allocated);
}

int pf_reserved_packet(pf_proc *p, pf_space *s, uint64_t t)
{
	if (t < s->resv_last_ts)
		t = s->resv_last_ts;
	s->resv_last_ts = t;
	pf_pkt *k = pf_event(&p->seq, t, T_COUNTER, s->t_resv);
	pf_counter_int(k, s->reserved);
	return pf_emit(k);
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
int pf_draw_begin(pf_proc *p, uint32_t oi, uint64_t t, const stp_alloc_info *a, int clipped)
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
		pf_name_key(p, k, PF_KEY_SIZE | o->size, pf_size_label(o->size, buf, sizeof buf));
	else
		pf_name(k, pf_size_label(o->size, buf, sizeof buf));
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
	return pf_emit(k);
}

int pf_draw_end(pf_proc *p, pf_obj *o, uint64_t t, int freed)
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
			pf_arg_uint(k, "first access after (ns)", o->t_first > o->t_alloc ? o->t_first - o->t_alloc : 0);
	}
	int rc = pf_emit(k);
	pf_lane_release(g, o->lane, t);
	o->lane = PF_NONE;
	return rc;
}

/* v + sign * x for a counter kept in [0, INT64_MAX]: saturates at both ends
 * (sizes near 2^64 are legal in a trace). */
static int64_t counter_add(int64_t v, int sign, uint64_t x)
{
	if (v < 0)
		v = 0;
	if (sign > 0)
		return x > (uint64_t)(INT64_MAX - v) ? INT64_MAX : v + (int64_t)x;
	return x >= (uint64_t)v ? 0 : v - (int64_t)x;
}

static void space_add(pf_space *s, const pf_obj *o, int sign)
{
	s->requested = counter_add(s->requested, sign, o->requested);
	s->allocated = counter_add(s->allocated, sign, o->size);
}

/* Frees object oi at t (the FREE's stream, or its own when fr is NULL). */
static int do_free(pf_proc *p, uint32_t oi, uint64_t t, const stp_free_info *fr, const char *what)
{
	pf_obj *o = &p->objs.v[oi];
	pf_space *s = &p->spaces[o->space];
	space_add(s, o, -1);
	int rc = 0;
	if (p->wstate == 1) {
		uint64_t te = pf_at(p, t);
		if (o->flags & PF_OBJ_SELECTED) {
			/* Clocks of threads differ a little: a flow's end must not come
			 * before its start or its step, or it would go nowhere. */
			if ((o->flags & PF_OBJ_FLOW) && te < o->t_alloc)
				te = o->t_alloc;
			if ((o->flags & PF_OBJ_STEPPED) && te < o->t_step)
				te = o->t_step;
			te = counter_time(s, te);
			if (pf_counters_flush(p, s) < 0)
				return -1;
			uint32_t si = fr ? pf_stream_get(p, o->kind, fr->device, fr->stream, te) : o->stream;
			if (si == PF_NONE)
				return -1;
			o = &p->objs.v[oi];
			pf_pkt *k = pf_event(&p->seq, te, T_INSTANT, p->streams[si].lanes[0].uuid);
			pf_name_lit(p, k, what);
			pf_arg_uint(k, "size", o->size);
			if (o->flags & PF_OBJ_FLOW)
				pf_flow_end(k, o->flow);
			pf_extra_counter(k, s->t_req, s->requested);
			pf_extra_counter(k, s->t_alloc, s->allocated);
			rc |= pf_emit(k);
			rc |= pf_draw_end(p, o, te, 1);
		} else {
			rc |= pf_counters_packet(p, s, te);
		}
	}
	pf_obj_remove(&p->objs, oi);
	return rc;
}

int pf_on_alloc(pf_proc *p, const stp_event *ev, uint64_t t)
{
	const stp_alloc_info *a = &ev->u.alloc;
	p->x->st.objects++;
	uint32_t old = pf_obj_find(&p->objs, a->addr);
	if (old != PF_NONE && do_free(p, old, t, NULL, "free (address reused)") < 0)
		return -1;
	/* a PyTorch CPU run's tensors: counters of their own, apart from the heap */
	int32_t dev = a->kind != STP_MEM_HOST       ? a->device
	              : a->pool == STP_POOL_JAX     ? PF_DEV_JAX
	              : a->pool == STP_POOL_TENSORS ? PF_DEV_TENSORS
	                                            : a->device;
	uint32_t sp = pf_space_get(p, a->kind, dev, pf_at(p, t));
	uint32_t si = pf_stream_get(p, a->kind, a->device, a->stream, pf_at(p, t));
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
	if (pf_is_selected(p, ev->seq) && !(p->x->opts.tensors_only && a->kind == STP_MEM_HOST && !PF_DEV_FRAMEWORK(dev)))
		o->flags |= PF_OBJ_SELECTED;
	pf_obj_insert(&p->objs, oi);
	pf_space *s = &p->spaces[sp];
	space_add(s, o, +1);
	if (p->wstate != 1)
		return 0;
	uint64_t te = pf_at(p, t);
	if (!(o->flags & PF_OBJ_SELECTED))
		return pf_counters_packet(p, s, te);
	te = counter_time(s, te);
	if (pf_counters_flush(p, s) < 0)
		return -1;
	o->t_alloc = te; /* as written: flows and accesses compare with it */
	o->flow = p->x->next_flow++;
	o->flags |= PF_OBJ_FLOW;
	p->x->st.flows++;
	pf_pkt *k = pf_event(&p->seq, te, T_INSTANT, p->streams[si].lanes[0].uuid);
	pf_name_lit(p, k, "alloc");
	pf_arg_uint(k, "size", o->size);
	uint64_t cs = pf_callstack_iid(p, k, o->stack);
	if (cs)
		pf_callstack(k, cs, (double)o->size);
	pf_flow(k, o->flow);
	pf_extra_counter(k, s->t_req, s->requested);
	pf_extra_counter(k, s->t_alloc, s->allocated);
	if (pf_emit(k) < 0)
		return -1;
	return pf_draw_begin(p, oi, te, a, 0);
}

int pf_on_free(pf_proc *p, const stp_event *ev, uint64_t t)
{
	uint32_t oi = pf_obj_find(&p->objs, ev->u.free.addr);
	if (oi == PF_NONE) {
		p->x->st.unmatched_frees++;
		return 0;
	}
	return do_free(p, oi, t, &ev->u.free, "free");
}

int pf_on_segment(pf_proc *p, const stp_event *ev, uint64_t t)
{
	const stp_segment_info *g = &ev->u.segment;
	uint32_t sp = pf_space_get(p, g->kind, g->device, pf_at(p, t));
	if (sp == PF_NONE || pf_space_reserved_track(p, &p->spaces[sp], pf_at(p, t)) < 0)
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
	return p->wstate == 1 ? pf_reserved_packet(p, s, pf_at(p, t)) : 0;
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

int pf_on_api(pf_proc *p, const stp_event *ev, uint64_t t)
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
			if (visible && (o->flags & PF_OBJ_FLOW) && !(o->flags & PF_OBJ_STEPPED) && b >= o->t_alloc &&
			    nflows < MAX_FLOWS_PER_API) {
				o->flags |= PF_OBJ_STEPPED;
				o->t_step = b;
				flows[nflows++] = o->flow;
			}
			oi = pf_obj_next(&p->objs, o->addr);
		}
	}
	if (!visible)
		return 0;
	b = pf_at(p, b);
	e = pf_at(p, e);
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
		pf_name_key(p, k, PF_KEY_STRING | a->name, name);
		pf_arg_lit(p, k, "kind", api_kind_label(a->kind));
	} else {
		pf_name_lit(p, k, api_kind_label(a->kind));
	}
	if (a->nranges) {
		pf_arg_uint(k, "ranges", a->nranges);
		pf_arg_uint(k, "bytes", bytes);
	}
	for (size_t i = 0; i < nflows; i++)
		pf_flow(k, flows[i]);
	if (pf_emit(k) < 0)
		return -1;
	p->x->st.api_slices++;
	k = pf_event(&p->seq, e, T_END, track);
	return pf_emit(k);
}
