/*
 * perfetto_extras.c - what the detector adds to a process: findings as
 * instants on its "findings" track (with their suggestion), and extra counter
 * series (simulated allocators' reserved bytes on the y axis of their space,
 * ratios such as fragmentation), with repeated values dropped and the value
 * at the window's start carried to it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_export.h"

int pf_emit_findings(pf_proc *p)
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
		if (pf_emit(k) < 0)
			return -1;
		p->x->st.findings++;
	}
	return 0;
}

int pf_emit_series(pf_proc *p)
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
		if (pf_emit_track(&p->seq, pf_at(p, t0), &tr) < 0)
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
					if (pf_emit(k) < 0)
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
			if (pf_emit(k) < 0)
				return -1;
			prev = v;
			have_prev = 1;
			p->x->st.series_points++;
		}
		if (pending) {
			pf_pkt *k = pf_event(&p->seq, p->x->lo, T_COUNTER, uuid);
			pf_counter_double(k, pend_v);
			if (pf_emit(k) < 0)
				return -1;
			p->x->st.series_points++;
		}
	}
	return 0;
}
