/*
 * perfetto_writer.c - see perfetto_writer.h.
 *
 * Packing: protobuf-c's pack() writes into a flat buffer without checking
 * room, so every setter adds a generous upper bound of what it adds to
 * pk->bound and pf_out_packet() makes that much room first.  (Sanitizer
 * builds check the bound against protobuf_c_message_get_packed_size().)  The
 * packet is packed 6 bytes past the end of the file buffer, then its tag and
 * length are written in front of it; a packet under 16 KiB moves a few bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_writer.h"

#define FLUSH_AT (1u << 20)
#define HDR_ROOM 6 /* tag + up to 5 varint bytes of length */

/* ------------------------------------------------------------ output */

const stp_outkind stp_outkind_timeline = {"stprof Perfetto timeline", "\x0a", 1, "stprof"};

int pf_out_open(pf_out *o, const char *path)
{
	memset(o, 0, sizeof *o);
	o->f = stp_outfile_open(&o->file, path, &stp_outkind_timeline, o->err, sizeof o->err);
	if (!o->f) {
		o->failed = 1;
		return -1;
	}
	return 0;
}

static int out_flush(pf_out *o)
{
	if (o->failed)
		return -1;
	if (o->buf.len && fwrite(o->buf.data, 1, o->buf.len, o->f) != o->buf.len) {
		snprintf(o->err, sizeof o->err, "%s: write failed: %s", o->file.path ? o->file.path : "output",
		         strerror(errno));
		o->failed = 1;
		return -1;
	}
	o->buf.len = 0;
	return 0;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

int pf_out_packet(pf_out *o, const pf_TracePacket *p, size_t bound)
{
	if (o->failed)
		return -1;
	if (o->buf.len >= FLUSH_AT && out_flush(o) < 0)
		return -1;
	if (pf_vec_reserve(&o->buf, bound + HDR_ROOM) < 0) {
		snprintf(o->err, sizeof o->err, "out of memory");
		o->failed = 1;
		return -1;
	}
#ifdef STPROF_PF_CHECK_BOUND
	if (protobuf_c_message_get_packed_size(&p->base) > bound) {
		fprintf(stderr, "perfetto_writer: packet bound %zu too small\n", bound);
		abort();
	}
#endif
	uint8_t *at = o->buf.data + o->buf.len;
	size_t len = protobuf_c_message_pack(&p->base, at + HDR_ROOM);
	size_t vl = varint_len(len);
	uint8_t hdr[HDR_ROOM];
	hdr[0] = 0x0a; /* Trace.packet, length-delimited */
	uint64_t v = len;
	for (size_t i = 0; i < vl; i++, v >>= 7)
		hdr[1 + i] = (uint8_t)((v & 0x7f) | (i + 1 < vl ? 0x80 : 0));
	size_t hl = 1 + vl;
	if (hl != HDR_ROOM)
		memmove(at + hl, at + HDR_ROOM, len);
	memcpy(at, hdr, hl);
	o->buf.len += hl + len;
	o->bytes += hl + len;
	o->packets++;
	return 0;
}

int pf_out_close(pf_out *o, int complete)
{
	if (complete)
		out_flush(o);
	if (o->f) {
		if (!complete || o->failed)
			stp_outfile_abort(&o->file);
		else if (stp_outfile_commit(&o->file, o->err, sizeof o->err) < 0)
			o->failed = 1;
		o->f = NULL;
	}
	pf_vec_free(&o->buf);
	return o->failed || !complete ? -1 : 0;
}

/* ------------------------------------------------------------ sequence */

int pf_seq_init(pf_seq *s, pf_out *out, uint32_t id)
{
	memset(s, 0, sizeof *s);
	s->out = out;
	s->id = id;
	s->next_name = s->next_key = s->next_str = s->next_func = s->next_file = 1;
	s->next_frame = s->next_stack = 1;
	s->pk.seq = s;
	return 0;
}

void pf_seq_free(pf_seq *s)
{
	pf_strtab_free(&s->names);
	pf_strtab_free(&s->keys);
	pf_strtab_free(&s->strs);
	pf_strtab_free(&s->funcs);
	pf_strtab_free(&s->files);
	pf_map_free(&s->frames);
	pf_map_free(&s->stacks);
	pf_map_free(&s->key_cache);
	pf_pkt *k = &s->pk;
	free(k->flows);
	free(k->tflows);
	free(k->names);
	free(k->keys);
	free(k->strs);
	free(k->funcs);
	free(k->files);
	free(k->frames);
	free(k->stacks);
	free(k->frame_ids);
	free(k->stack_first);
	free(k->ptrs);
	memset(s, 0, sizeof *s);
}

/* Sequence fields of a packet: id, and the flags of the first packet. */
static void seq_fields(pf_seq *s, pf_TracePacket *p, int track_event)
{
	p->has_trusted_packet_sequence_id = 1;
	p->trusted_packet_sequence_id = s->id;
	if (!s->started) {
		s->started = 1;
		p->has_sequence_flags = 1;
		p->sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED |
		                    PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
		p->has_first_packet_on_sequence = 1;
		p->first_packet_on_sequence = 1;
	} else if (track_event) {
		p->has_sequence_flags = 1;
		p->sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
	}
}

static size_t slen(const char *s) { return s ? strlen(s) : 0; }

int pf_emit_track(pf_seq *s, uint64_t ts, const pf_track *t)
{
	pf_TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
	Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
	Perfetto__Protos__ThreadDescriptor thd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
	char *cmdline[1], *labels[1];
	size_t bound = 160 + slen(t->name) + slen(t->description) + slen(t->share_key) +
	               slen(t->process_name) + slen(t->cmdline) + slen(t->label) + slen(t->thread_name);

	p.has_timestamp = 1;
	p.timestamp = ts;
	seq_fields(s, &p, 0);
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	p.track_descriptor = &td;
	td.has_uuid = 1;
	td.uuid = t->uuid;
	if (t->parent) {
		td.has_parent_uuid = 1;
		td.parent_uuid = t->parent;
	}
	if (t->name) {
		td.static_or_dynamic_name_case = PERFETTO__PROTOS__TRACK_DESCRIPTOR__STATIC_OR_DYNAMIC_NAME_NAME;
		td.name = (char *)t->name;
	}
	td.description = (char *)t->description;
	if (t->explicit_order) {
		td.has_child_ordering = 1;
		td.child_ordering = PERFETTO__PROTOS__TRACK_DESCRIPTOR__CHILD_TRACKS_ORDERING__EXPLICIT;
	}
	if (t->has_rank) {
		td.has_sibling_order_rank = 1;
		td.sibling_order_rank = t->rank;
	}
	switch (t->kind) {
	case PF_TRACK_COUNTER:
		td.counter = &cd;
		if (t->unit) {
			cd.has_unit = 1;
			cd.unit = (Perfetto__Protos__CounterDescriptor__Unit)t->unit;
		}
		cd.y_axis_share_key = (char *)t->share_key;
		break;
	case PF_TRACK_PROCESS:
		td.process = &pd;
		pd.has_pid = 1;
		pd.pid = t->pid;
		pd.process_name = (char *)t->process_name;
		if (t->cmdline) {
			cmdline[0] = (char *)t->cmdline;
			pd.n_cmdline = 1;
			pd.cmdline = cmdline;
		}
		if (t->label) {
			labels[0] = (char *)t->label;
			pd.n_process_labels = 1;
			pd.process_labels = labels;
		}
		break;
	case PF_TRACK_THREAD:
		td.thread = &thd;
		thd.has_pid = 1;
		thd.pid = t->pid;
		thd.has_tid = 1;
		thd.tid = t->tid;
		thd.thread_name = (char *)t->thread_name;
		break;
	default:
		break;
	}
	return pf_out_packet(s->out, &p, bound);
}

/* ------------------------------------------------------------ events */

#define GROW(k, arr, n, cap)                                                        \
	(pf_grow((void **)&(k)->arr, &(k)->cap, (k)->n + 1, sizeof *(k)->arr) < 0 \
	     ? ((k)->failed = 1, (void *)0)                                         \
	     : (void *)&(k)->arr[(k)->n++])

pf_pkt *pf_event(pf_seq *s, uint64_t ts, int type, uint64_t track)
{
	static const pf_TracePacket p0 = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	static const pf_TrackEvent e0 = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	pf_pkt *k = &s->pk;
	memcpy(&k->p, &p0, sizeof p0);
	memcpy(&k->ev, &e0, sizeof e0);
	k->nflows = k->ntflows = 0;
	k->nnames = k->nkeys = k->nstrs = k->nfuncs = k->nfiles = k->nframes = k->nstacks = 0;
	k->nframe_ids = 0;
	k->failed = 0;
	k->bound = 112;
	k->p.has_timestamp = 1;
	k->p.timestamp = ts;
	k->p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	k->p.track_event = &k->ev;
	k->ev.has_type = 1;
	k->ev.type = (Perfetto__Protos__TrackEvent__Type)type;
	k->ev.has_track_uuid = 1;
	k->ev.track_uuid = track;
	return k;
}

/* Looks text up in table t; adds it with the next iid (and to the packet's
 * interned data through add) when new.  Returns the iid, 0 on failure. */
static uint64_t intern(pf_pkt *k, pf_strtab *t, uint64_t *next, const char *text, const char **stored)
{
	size_t len = strlen(text);
	uint64_t id;
	const char *copy = pf_strtab_find(t, text, len, &id);
	if (copy) {
		*stored = NULL;
		return id;
	}
	id = (*next)++;
	copy = pf_strtab_add(t, text, len, id);
	if (!copy) {
		k->failed = 1;
		return 0;
	}
	*stored = copy;
	k->bound += 32 + len;
	return id;
}

uint64_t pf_intern_name(pf_pkt *k, const char *name)
{
	pf_seq *s = k->seq;
	const char *stored;
	uint64_t id = intern(k, &s->names, &s->next_name, name, &stored);
	if (stored) {
		Perfetto__Protos__EventName *e = GROW(k, names, nnames, cnames);
		if (e) {
			Perfetto__Protos__EventName e0 = PERFETTO__PROTOS__EVENT_NAME__INIT;
			*e = e0;
			e->has_iid = 1;
			e->iid = id;
			e->name = (char *)stored;
		}
	}
	return id;
}

void pf_name_iid(pf_pkt *k, uint64_t iid)
{
	k->ev.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
	k->ev.name_iid = iid;
}

void pf_name(pf_pkt *k, const char *name) { pf_name_iid(k, pf_intern_name(k, name)); }

static pf_DebugAnnotation *arg(pf_pkt *k, const char *key)
{
	if (k->ev.n_debug_annotations >= PF_MAX_ARGS) {
		k->failed = 1;
		return NULL;
	}
	pf_seq *s = k->seq;
	const char *stored = NULL;
	uint64_t id;
	uint64_t *cached = pf_map_get(&s->key_cache, (uint64_t)(uintptr_t)key);
	if (cached) {
		id = *cached;
	} else {
		id = intern(k, &s->keys, &s->next_key, key, &stored);
		if (pf_map_put(&s->key_cache, (uint64_t)(uintptr_t)key, id) < 0)
			k->failed = 1;
	}
	if (stored) {
		Perfetto__Protos__DebugAnnotationName *e = GROW(k, keys, nkeys, ckeys);
		if (e) {
			Perfetto__Protos__DebugAnnotationName e0 = PERFETTO__PROTOS__DEBUG_ANNOTATION_NAME__INIT;
			*e = e0;
			e->has_iid = 1;
			e->iid = id;
			e->name = (char *)stored;
		}
	}
	static const pf_DebugAnnotation a0 = PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT;
	pf_DebugAnnotation *a = &k->args[k->ev.n_debug_annotations];
	memcpy(a, &a0, sizeof a0);
	k->argp[k->ev.n_debug_annotations++] = a;
	a->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID;
	a->name_iid = id;
	k->bound += 40;
	return a;
}

void pf_arg_uint(pf_pkt *k, const char *key, uint64_t v)
{
	pf_DebugAnnotation *a = arg(k, key);
	if (a) {
		a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE;
		a->uint_value = v;
	}
}

void pf_arg_int(pf_pkt *k, const char *key, int64_t v)
{
	pf_DebugAnnotation *a = arg(k, key);
	if (a) {
		a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE;
		a->int_value = v;
	}
}

void pf_arg_ptr(pf_pkt *k, const char *key, uint64_t v)
{
	pf_DebugAnnotation *a = arg(k, key);
	if (a) {
		a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_POINTER_VALUE;
		a->pointer_value = v;
	}
}

void pf_arg_bool(pf_pkt *k, const char *key, int v)
{
	pf_DebugAnnotation *a = arg(k, key);
	if (a) {
		a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE;
		a->bool_value = v != 0;
	}
}

void pf_arg_double(pf_pkt *k, const char *key, double v)
{
	pf_DebugAnnotation *a = arg(k, key);
	if (a) {
		a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE;
		a->double_value = v;
	}
}

uint64_t pf_intern_str(pf_pkt *k, const char *text)
{
	pf_seq *s = k->seq;
	const char *stored;
	uint64_t id = intern(k, &s->strs, &s->next_str, text, &stored);
	if (stored) {
		Perfetto__Protos__InternedString *e = GROW(k, strs, nstrs, cstrs);
		if (e) {
			Perfetto__Protos__InternedString e0 = PERFETTO__PROTOS__INTERNED_STRING__INIT;
			*e = e0;
			e->has_iid = 1;
			e->iid = id;
			e->has_str = 1;
			e->str.data = (uint8_t *)stored;
			e->str.len = strlen(stored);
		}
	}
	return id;
}

void pf_arg_str_iid(pf_pkt *k, const char *key, uint64_t iid)
{
	pf_DebugAnnotation *a = arg(k, key);
	if (a) {
		a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID;
		a->string_value_iid = iid;
	}
}

void pf_arg_str(pf_pkt *k, const char *key, const char *v)
{
	uint64_t iid = pf_intern_str(k, v);
	pf_arg_str_iid(k, key, iid);
}

void pf_arg_text(pf_pkt *k, const char *key, const char *v)
{
	pf_DebugAnnotation *a = arg(k, key);
	if (a) {
		a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
		a->string_value = (char *)v;
		k->bound += strlen(v);
	}
}

static void push_u64(pf_pkt *k, uint64_t **arr, size_t *n, size_t *cap, uint64_t v)
{
	if (pf_grow((void **)arr, cap, *n + 1, sizeof **arr) < 0) {
		k->failed = 1;
		return;
	}
	(*arr)[(*n)++] = v;
	k->bound += 12;
}

void pf_flow(pf_pkt *k, uint64_t id) { push_u64(k, &k->flows, &k->nflows, &k->flows_cap, id); }
void pf_flow_end(pf_pkt *k, uint64_t id) { push_u64(k, &k->tflows, &k->ntflows, &k->tflows_cap, id); }

void pf_counter_int(pf_pkt *k, int64_t v)
{
	k->ev.counter_value_field_case = PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE;
	k->ev.counter_value = v;
}

void pf_counter_double(pf_pkt *k, double v)
{
	k->ev.counter_value_field_case = PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_DOUBLE_COUNTER_VALUE;
	k->ev.double_counter_value = v;
}

void pf_extra_counter(pf_pkt *k, uint64_t track, int64_t v)
{
	size_t i = k->ev.n_extra_counter_values;
	if (i >= PF_MAX_XC) {
		k->failed = 1;
		return;
	}
	k->xc_uuid[i] = track;
	k->xc_val[i] = v;
	k->ev.n_extra_counter_values = k->ev.n_extra_counter_track_uuids = i + 1;
	k->ev.extra_counter_values = k->xc_val;
	k->ev.extra_counter_track_uuids = k->xc_uuid;
	k->bound += 24;
}

void pf_callstack(pf_pkt *k, uint64_t iid, double weight)
{
	if (!iid)
		return;
	k->ev.callstack_field_case = PERFETTO__PROTOS__TRACK_EVENT__CALLSTACK_FIELD_CALLSTACK_IID;
	k->ev.callstack_iid = iid;
	k->ev.has_callstack_weight = 1;
	k->ev.callstack_weight = weight;
	k->bound += 24;
}

int pf_frame_known(const pf_seq *s, uint64_t key, uint64_t *iid)
{
	uint64_t *v = pf_map_get(&s->frames, key);
	if (!v)
		return 0;
	*iid = *v;
	return 1;
}

static uint64_t intern_interned_string(pf_pkt *k, pf_strtab *t, uint64_t *next, const char *text,
                                       Perfetto__Protos__InternedString **arr, size_t *n, size_t *cap)
{
	const char *stored;
	uint64_t id = intern(k, t, next, text, &stored);
	if (stored) {
		if (pf_grow((void **)arr, cap, *n + 1, sizeof **arr) < 0) {
			k->failed = 1;
			return id;
		}
		Perfetto__Protos__InternedString e0 = PERFETTO__PROTOS__INTERNED_STRING__INIT;
		Perfetto__Protos__InternedString *e = &(*arr)[(*n)++];
		*e = e0;
		e->has_iid = 1;
		e->iid = id;
		e->has_str = 1;
		e->str.data = (uint8_t *)stored;
		e->str.len = strlen(stored);
	}
	return id;
}

uint64_t pf_intern_frame(pf_pkt *k, uint64_t key, const char *function, const char *file, uint32_t line)
{
	pf_seq *s = k->seq;
	uint64_t iid;
	if (pf_frame_known(s, key, &iid))
		return iid;
	Perfetto__Protos__Frame f0 = PERFETTO__PROTOS__FRAME__INIT;
	Perfetto__Protos__Frame fr = f0;
	if (function && *function) {
		fr.has_function_name_id = 1;
		fr.function_name_id = intern_interned_string(k, &s->funcs, &s->next_func, function, &k->funcs,
		                                             &k->nfuncs, &k->cfuncs);
	}
	if (file && *file) {
		fr.has_source_path_iid = 1;
		fr.source_path_iid = intern_interned_string(k, &s->files, &s->next_file, file, &k->files,
		                                            &k->nfiles, &k->cfiles);
	}
	if (line) {
		fr.has_line_number = 1;
		fr.line_number = line;
	}
	iid = s->next_frame++;
	fr.has_iid = 1;
	fr.iid = iid;
	Perfetto__Protos__Frame *e = GROW(k, frames, nframes, cframes);
	if (!e || pf_map_put(&s->frames, key, iid) < 0) {
		k->failed = 1;
		return 0;
	}
	*e = fr;
	k->bound += 72;
	return iid;
}

int pf_stack_known(const pf_seq *s, uint64_t key, uint64_t *iid)
{
	uint64_t *v = pf_map_get(&s->stacks, key);
	if (!v)
		return 0;
	*iid = *v;
	return 1;
}

uint64_t pf_intern_stack(pf_pkt *k, uint64_t key, const uint64_t *frames, size_t n)
{
	pf_seq *s = k->seq;
	uint64_t iid;
	if (pf_stack_known(s, key, &iid))
		return iid;
	if (pf_grow((void **)&k->frame_ids, &k->cframe_ids, k->nframe_ids + n, sizeof *k->frame_ids) < 0 ||
	    pf_grow((void **)&k->stack_first, &k->cstack_first, k->nstacks + 1, sizeof *k->stack_first) < 0) {
		k->failed = 1;
		return 0;
	}
	k->stack_first[k->nstacks] = k->nframe_ids;
	memcpy(k->frame_ids + k->nframe_ids, frames, n * sizeof *frames);
	k->nframe_ids += n;
	Perfetto__Protos__Callstack *e = GROW(k, stacks, nstacks, cstacks);
	iid = s->next_stack++;
	if (!e || pf_map_put(&s->stacks, key, iid) < 0) {
		k->failed = 1;
		return 0;
	}
	Perfetto__Protos__Callstack c0 = PERFETTO__PROTOS__CALLSTACK__INIT;
	*e = c0;
	e->has_iid = 1;
	e->iid = iid;
	e->n_frame_ids = n; /* frame_ids pointer set on emit: the pool may move */
	k->bound += 24 + 11 * n;
	return iid;
}

/* Builds the pointer arrays protobuf-c wants for repeated messages. */
static void **ptr_array(pf_pkt *k, size_t *used, void *base, size_t n, size_t elem)
{
	void **arr = k->ptrs + *used;
	for (size_t i = 0; i < n; i++)
		arr[i] = (char *)base + i * elem;
	*used += n;
	return arr;
}

int pf_emit(pf_pkt *k)
{
	pf_seq *s = k->seq;
	if (k->failed) {
		if (!s->out->failed) {
			snprintf(s->out->err, sizeof s->out->err, "out of memory building a packet");
			s->out->failed = 1;
		}
		return -1;
	}
	seq_fields(s, &k->p, 1);
	pf_TrackEvent *e = &k->ev;
	if (e->n_debug_annotations)
		e->debug_annotations = k->argp;
	e->n_flow_ids = k->nflows;
	e->flow_ids = k->flows;
	e->n_terminating_flow_ids = k->ntflows;
	e->terminating_flow_ids = k->tflows;
	size_t total = k->nnames + k->nkeys + k->nstrs + k->nfuncs + k->nfiles + k->nframes + k->nstacks;
	if (total) {
		if (pf_grow((void **)&k->ptrs, &k->cptrs, total, sizeof *k->ptrs) < 0) {
			snprintf(s->out->err, sizeof s->out->err, "out of memory building a packet");
			s->out->failed = 1;
			return -1;
		}
		size_t used = 0;
		Perfetto__Protos__InternedData i0 = PERFETTO__PROTOS__INTERNED_DATA__INIT;
		Perfetto__Protos__InternedData *in = &k->in;
		*in = i0;
		in->n_event_names = k->nnames;
		in->event_names = (Perfetto__Protos__EventName **)ptr_array(k, &used, k->names, k->nnames, sizeof *k->names);
		in->n_debug_annotation_names = k->nkeys;
		in->debug_annotation_names =
		    (Perfetto__Protos__DebugAnnotationName **)ptr_array(k, &used, k->keys, k->nkeys, sizeof *k->keys);
		in->n_debug_annotation_string_values = k->nstrs;
		in->debug_annotation_string_values =
		    (Perfetto__Protos__InternedString **)ptr_array(k, &used, k->strs, k->nstrs, sizeof *k->strs);
		in->n_function_names = k->nfuncs;
		in->function_names =
		    (Perfetto__Protos__InternedString **)ptr_array(k, &used, k->funcs, k->nfuncs, sizeof *k->funcs);
		in->n_source_paths = k->nfiles;
		in->source_paths =
		    (Perfetto__Protos__InternedString **)ptr_array(k, &used, k->files, k->nfiles, sizeof *k->files);
		in->n_frames = k->nframes;
		in->frames = (Perfetto__Protos__Frame **)ptr_array(k, &used, k->frames, k->nframes, sizeof *k->frames);
		for (size_t i = 0; i < k->nstacks; i++)
			k->stacks[i].frame_ids = k->frame_ids + k->stack_first[i];
		in->n_callstacks = k->nstacks;
		in->callstacks = (Perfetto__Protos__Callstack **)ptr_array(k, &used, k->stacks, k->nstacks, sizeof *k->stacks);
		k->p.interned_data = in;
		k->bound += 16;
	}
	return pf_out_packet(s->out, &k->p, k->bound);
}
