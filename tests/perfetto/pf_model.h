/*
 * pf_model.h - reads a .pftrace back into a small in-memory model for the
 * tests: tracks by uuid, and every track event with its name, arguments,
 * flows and counters resolved through the interned data of its sequence.
 * Decoding uses the protobuf-c code generated from the exporter's trimmed
 * schema.  Test-sized files only (everything is kept, lookups are linear).
 */
#ifndef STPROF_TESTS_PF_MODEL_H
#define STPROF_TESTS_PF_MODEL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"

#define PFM_MAX_ARGS 16
#define PFM_MAX_FLOWS 16

typedef struct pfm_track {
	uint64_t uuid, parent;
	char name[128];
	int counter, process, thread;
	int32_t pid;
	int64_t tid;
	char share_key[64];
	uint32_t seq;
} pfm_track;

typedef struct pfm_arg {
	char key[48];
	int kind; /* 'u' uint, 'i' int, 'p' pointer, 'b' bool, 'd' double, 's' string */
	uint64_t u;
	int64_t i;
	double d;
	char s[512];
} pfm_arg;

typedef struct pfm_event {
	uint64_t index, ts, track;
	uint32_t seq;
	int type;
	char name[128];
	pfm_arg args[PFM_MAX_ARGS];
	int nargs;
	uint64_t flows[PFM_MAX_FLOWS], tflows[PFM_MAX_FLOWS];
	int nflows, ntflows;
	int has_value;
	double value;
	uint64_t xc_track[4];
	int64_t xc_val[4];
	int nxc;
	uint64_t callstack;
	double weight;
	int has_weight;
} pfm_event;

typedef struct pfm_str { uint32_t seq; int table; uint64_t iid; char *s; } pfm_str;
typedef struct pfm_stack { uint32_t seq; uint64_t iid; uint64_t frames[64]; int n; } pfm_stack;
typedef struct pfm_frame { uint32_t seq; uint64_t iid, func, file; uint32_t line; } pfm_frame;

/* Grows *arr (of elem-sized items, *cap of them) to hold n + 1. */
static inline void *pfm_grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return arr;
	*cap = *cap ? *cap * 2 : 64;
	return realloc(arr, *cap * elem);
}

typedef struct pfm {
	size_t cap_tracks, cap_events, cap_strs, cap_stacks, cap_frames;
	pfm_track *tracks;
	size_t ntracks;
	pfm_event *events;
	size_t nevents;
	pfm_str *strs;
	size_t nstrs;
	pfm_stack *stacks;
	size_t nstacks;
	pfm_frame *frames;
	size_t nframes;
	uint64_t packets;
	int first_flags_ok;      /* every sequence's first packet had flags 3 */
	int seq_ids_ok;          /* every packet had a sequence id */
} pfm;

static inline const char *pfm_lookup(const pfm *m, uint32_t seq, int table, uint64_t iid)
{
	for (size_t i = 0; i < m->nstrs; i++)
		if (m->strs[i].seq == seq && m->strs[i].table == table && m->strs[i].iid == iid)
			return m->strs[i].s;
	return NULL;
}

static inline void pfm_add_str(pfm *m, uint32_t seq, int table, uint64_t iid, const char *s, size_t len)
{
	m->strs = pfm_grow(m->strs, &m->cap_strs, m->nstrs, sizeof *m->strs);
	pfm_str *e = &m->strs[m->nstrs++];
	e->seq = seq;
	e->table = table;
	e->iid = iid;
	e->s = malloc(len + 1);
	memcpy(e->s, s, len);
	e->s[len] = 0;
}

static inline const pfm_track *pfm_track_get(const pfm *m, uint64_t uuid)
{
	for (size_t i = 0; i < m->ntracks; i++)
		if (m->tracks[i].uuid == uuid)
			return &m->tracks[i];
	return NULL;
}

static inline const pfm_arg *pfm_arg_get(const pfm_event *e, const char *key)
{
	for (int i = 0; i < e->nargs; i++)
		if (!strcmp(e->args[i].key, key))
			return &e->args[i];
	return NULL;
}

static inline void pfm_packet(pfm *m, const Perfetto__Protos__TracePacket *p, uint32_t *seen, size_t *nseen)
{
	uint32_t seq = p->has_trusted_packet_sequence_id ? p->trusted_packet_sequence_id : 0;
	if (!seq)
		m->seq_ids_ok = 0;
	int first = 1;
	for (size_t i = 0; i < *nseen; i++)
		first &= seen[i] != seq;
	if (first) {
		seen[(*nseen)++] = seq;
		if (!p->has_sequence_flags || p->sequence_flags != 3 || !p->first_packet_on_sequence)
			m->first_flags_ok = 0;
	}
	const Perfetto__Protos__InternedData *in = p->interned_data;
	if (in) {
		for (size_t i = 0; i < in->n_event_names; i++)
			pfm_add_str(m, seq, 2, in->event_names[i]->iid, in->event_names[i]->name,
			            strlen(in->event_names[i]->name));
		for (size_t i = 0; i < in->n_debug_annotation_names; i++)
			pfm_add_str(m, seq, 3, in->debug_annotation_names[i]->iid, in->debug_annotation_names[i]->name,
			            strlen(in->debug_annotation_names[i]->name));
		for (size_t i = 0; i < in->n_debug_annotation_string_values; i++)
			pfm_add_str(m, seq, 29, in->debug_annotation_string_values[i]->iid,
			            (const char *)in->debug_annotation_string_values[i]->str.data,
			            in->debug_annotation_string_values[i]->str.len);
		for (size_t i = 0; i < in->n_function_names; i++)
			pfm_add_str(m, seq, 5, in->function_names[i]->iid, (const char *)in->function_names[i]->str.data,
			            in->function_names[i]->str.len);
		for (size_t i = 0; i < in->n_source_paths; i++)
			pfm_add_str(m, seq, 18, in->source_paths[i]->iid, (const char *)in->source_paths[i]->str.data,
			            in->source_paths[i]->str.len);
		for (size_t i = 0; i < in->n_frames; i++) {
			m->frames = pfm_grow(m->frames, &m->cap_frames, m->nframes, sizeof *m->frames);
			const Perfetto__Protos__Frame *f = in->frames[i];
			m->frames[m->nframes++] = (pfm_frame){seq, f->iid, f->function_name_id, f->source_path_iid,
			                                      f->line_number};
		}
		for (size_t i = 0; i < in->n_callstacks; i++) {
			m->stacks = pfm_grow(m->stacks, &m->cap_stacks, m->nstacks, sizeof *m->stacks);
			pfm_stack *s = &m->stacks[m->nstacks++];
			memset(s, 0, sizeof *s);
			s->seq = seq;
			s->iid = in->callstacks[i]->iid;
			for (size_t j = 0; j < in->callstacks[i]->n_frame_ids && j < 64; j++)
				s->frames[s->n++] = in->callstacks[i]->frame_ids[j];
		}
	}
	if (p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR) {
		const Perfetto__Protos__TrackDescriptor *d = p->track_descriptor;
		m->tracks = pfm_grow(m->tracks, &m->cap_tracks, m->ntracks, sizeof *m->tracks);
		pfm_track *t = &m->tracks[m->ntracks++];
		memset(t, 0, sizeof *t);
		t->uuid = d->uuid;
		t->parent = d->has_parent_uuid ? d->parent_uuid : 0;
		t->seq = seq;
		if (d->static_or_dynamic_name_case == PERFETTO__PROTOS__TRACK_DESCRIPTOR__STATIC_OR_DYNAMIC_NAME_NAME)
			snprintf(t->name, sizeof t->name, "%s", d->name);
		if (d->counter) {
			t->counter = 1;
			if (d->counter->y_axis_share_key)
				snprintf(t->share_key, sizeof t->share_key, "%s", d->counter->y_axis_share_key);
		}
		if (d->process) {
			t->process = 1;
			t->pid = d->process->pid;
			snprintf(t->name, sizeof t->name, "%s", d->process->process_name ? d->process->process_name : "");
		}
		if (d->thread) {
			t->thread = 1;
			t->pid = d->thread->pid;
			t->tid = d->thread->tid;
			snprintf(t->name, sizeof t->name, "%s", d->thread->thread_name ? d->thread->thread_name : "");
		}
	}
	if (p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT) {
		const Perfetto__Protos__TrackEvent *e = p->track_event;
		m->events = pfm_grow(m->events, &m->cap_events, m->nevents, sizeof *m->events);
		pfm_event *v = &m->events[m->nevents];
		memset(v, 0, sizeof *v);
		v->index = m->nevents++;
		v->ts = p->timestamp;
		v->seq = seq;
		v->track = e->track_uuid;
		v->type = e->type;
		if (e->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID) {
			const char *s = pfm_lookup(m, seq, 2, e->name_iid);
			snprintf(v->name, sizeof v->name, "%s", s ? s : "?undefined");
		}
		for (size_t i = 0; i < e->n_debug_annotations && v->nargs < PFM_MAX_ARGS; i++) {
			const Perfetto__Protos__DebugAnnotation *a = e->debug_annotations[i];
			pfm_arg *g = &v->args[v->nargs++];
			const char *k = pfm_lookup(m, seq, 3, a->name_iid);
			snprintf(g->key, sizeof g->key, "%s", k ? k : "?undefined");
			switch (a->value_case) {
			case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE: g->kind = 'u'; g->u = a->uint_value; break;
			case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE: g->kind = 'i'; g->i = a->int_value; break;
			case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_POINTER_VALUE: g->kind = 'p'; g->u = a->pointer_value; break;
			case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE: g->kind = 'b'; g->u = a->bool_value; break;
			case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE: g->kind = 'd'; g->d = a->double_value; break;
			case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE:
				g->kind = 's';
				snprintf(g->s, sizeof g->s, "%s", a->string_value);
				break;
			case PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID: {
				const char *s = pfm_lookup(m, seq, 29, a->string_value_iid);
				g->kind = 's';
				snprintf(g->s, sizeof g->s, "%s", s ? s : "?undefined");
				break;
			}
			default: g->kind = '?'; break;
			}
		}
		for (size_t i = 0; i < e->n_flow_ids && v->nflows < PFM_MAX_FLOWS; i++)
			v->flows[v->nflows++] = e->flow_ids[i];
		for (size_t i = 0; i < e->n_terminating_flow_ids && v->ntflows < PFM_MAX_FLOWS; i++)
			v->tflows[v->ntflows++] = e->terminating_flow_ids[i];
		if (e->counter_value_field_case == PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE) {
			v->has_value = 1;
			v->value = (double)e->counter_value;
		} else if (e->counter_value_field_case ==
		           PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_DOUBLE_COUNTER_VALUE) {
			v->has_value = 1;
			v->value = e->double_counter_value;
		}
		for (size_t i = 0; i < e->n_extra_counter_values && i < 4; i++) {
			v->xc_track[i] = e->extra_counter_track_uuids[i];
			v->xc_val[i] = e->extra_counter_values[i];
			v->nxc++;
		}
		if (e->callstack_field_case == PERFETTO__PROTOS__TRACK_EVENT__CALLSTACK_FIELD_CALLSTACK_IID)
			v->callstack = e->callstack_iid;
		if (e->has_callstack_weight) {
			v->has_weight = 1;
			v->weight = e->callstack_weight;
		}
	}
}

/* Loads path; 0 or -1 (unreadable or not a stream of TracePackets). */
static inline int pfm_load(pfm *m, const char *path)
{
	memset(m, 0, sizeof *m);
	m->first_flags_ok = m->seq_ids_ok = 1;
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t)size + 1);
	if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	uint32_t seen[64];
	size_t nseen = 0;
	size_t pos = 0;
	int rc = 0;
	while (pos < (size_t)size) {
		if (buf[pos++] != 0x0a) {
			rc = -1;
			break;
		}
		uint64_t len = 0;
		int shift = 0;
		while (pos < (size_t)size && (buf[pos] & 0x80)) {
			len |= (uint64_t)(buf[pos++] & 0x7f) << shift;
			shift += 7;
		}
		if (pos >= (size_t)size) {
			rc = -1;
			break;
		}
		len |= (uint64_t)buf[pos++] << shift;
		if (len > (size_t)size - pos) {
			rc = -1;
			break;
		}
		Perfetto__Protos__TracePacket *p =
		    perfetto__protos__trace_packet__unpack(NULL, (size_t)len, buf + pos);
		if (!p) {
			rc = -1;
			break;
		}
		pfm_packet(m, p, seen, &nseen);
		perfetto__protos__trace_packet__free_unpacked(p, NULL);
		m->packets++;
		pos += len;
	}
	free(buf);
	return rc;
}

static inline void pfm_free(pfm *m)
{
	for (size_t i = 0; i < m->nstrs; i++)
		free(m->strs[i].s);
	free(m->strs);
	free(m->tracks);
	free(m->events);
	free(m->stacks);
	free(m->frames);
	memset(m, 0, sizeof *m);
}

#endif
