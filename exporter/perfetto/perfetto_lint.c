/*
 * perfetto_lint.c - stp_lint_perfetto(): checks a Perfetto protobuf trace
 * against the rules whose breach makes the trace processor drop data without
 * a word (docs/perfetto.md, "Lint rules").
 *
 * The file is read as a stream of Trace.packet records (the outer framing is
 * decoded here); each packet is unpacked with protobuf-c against the trimmed
 * schema (proto/perfetto_trace.proto), so fields it does not know are
 * skipped.  Checks that need the whole file are done at the end from compact
 * records: slice BEGIN/END events (nesting, as the trace processor will see
 * them after sorting by timestamp, ties in file order), flow ends, and the
 * parents of tracks.  Memory: about 40 bytes per BEGIN/END and per flow
 * event, plus the interned ids and tracks.
 *
 * Every violation names the packet (index from 0) and the byte offset of its
 * record in the file.  The checks made at the end are in perfetto_lint_end.c,
 * which this file calls; what both use (violations, the track table) is in
 * perfetto_lint_state.c below them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_lint.h"

#define MAX_PACKET (256u << 20)
#define MAX_ANNOTATION_DEPTH 16

#define V(l, rule, ...) pf_lint_violation(l, rule, (l)->pkt, (l)->off, __VA_ARGS__)

/* ------------------------------------------------------------ interned ids */

static uint64_t iid_hash(uint32_t seq, uint32_t gen, uint32_t table, uint64_t iid)
{
	return pf_hash64(iid ^ pf_hash64(((uint64_t)seq << 32 | gen) ^ ((uint64_t)table << 56)));
}

static int iid_has(const lint *l, uint32_t seq, uint32_t gen, uint32_t table, uint64_t iid)
{
	if (!l->iid_cap)
		return 0;
	size_t mask = l->iid_cap - 1;
	for (size_t i = iid_hash(seq, gen, table, iid) & mask; l->iids[i].used; i = (i + 1) & mask) {
		const iid_key *k = &l->iids[i];
		if (k->iid == iid && k->seq == seq && k->gen == gen && k->table == table)
			return 1;
	}
	return 0;
}

static void iid_add(lint *l, uint32_t seq, uint32_t gen, uint32_t table, uint64_t iid)
{
	if (iid_has(l, seq, gen, table, iid))
		return;
	if ((l->niids + 1) * 4 > l->iid_cap * 3) {
		size_t nc = l->iid_cap ? l->iid_cap * 2 : 1024;
		iid_key *n = calloc(nc, sizeof *n);
		if (!n) {
			l->oom = 1;
			return;
		}
		for (size_t j = 0; j < l->iid_cap; j++) {
			if (!l->iids[j].used)
				continue;
			const iid_key *k = &l->iids[j];
			size_t i = iid_hash(k->seq, k->gen, k->table, k->iid) & (nc - 1);
			while (n[i].used)
				i = (i + 1) & (nc - 1);
			n[i] = *k;
		}
		free(l->iids);
		l->iids = n;
		l->iid_cap = nc;
	}
	size_t mask = l->iid_cap - 1;
	size_t i = iid_hash(seq, gen, table, iid) & mask;
	while (l->iids[i].used)
		i = (i + 1) & mask;
	l->iids[i] = (iid_key){iid, seq, gen, table, 1};
	l->niids++;
}

static const char *table_name(uint32_t t)
{
	switch (t) {
	case TB_CATEGORY: return "event category";
	case TB_NAME: return "event name";
	case TB_KEY: return "debug annotation name";
	case TB_FUNC: return "function name";
	case TB_FRAME: return "frame";
	case TB_STACK: return "callstack";
	case TB_BUILD_ID: return "build id";
	case TB_MAP_PATH: return "mapping path";
	case TB_SRC_PATH: return "source path";
	case TB_MAPPING: return "mapping";
	case TB_STRING: return "debug annotation string";
	default: return "interned";
	}
}

/* A use of iid in table t on sequence s (NULL: the packet has no sequence). */
static void use_iid(lint *l, const seq_state *s, uint32_t t, uint64_t iid, const char *what)
{
	if (!iid) {
		V(l, STP_LINT_INTERNED_ID, "%s refers to %s iid 0 (iids start at 1)", what, table_name(t));
		return;
	}
	if (!s || !iid_has(l, s->id, s->gen, t, iid))
		V(l, STP_LINT_INTERNED_ID, "%s refers to %s iid %" PRIu64 ", not defined on sequence %u before",
		  what, table_name(t), iid, s ? s->id : 0);
}

static void def_iid(lint *l, const seq_state *s, uint32_t t, int has, uint64_t iid)
{
	if (!has || !iid) {
		V(l, STP_LINT_INTERNED_ID, "an interned %s is defined with iid 0 (iids start at 1)", table_name(t));
		return;
	}
	if (s)
		iid_add(l, s->id, s->gen, t, iid);
}

#define DEF_ALL(arr, n, t)                                   \
	for (size_t i_ = 0; i_ < (n); i_++)                      \
	def_iid(l, s, t, (arr)[i_]->has_iid, (arr)[i_]->iid)

static void check_interned(lint *l, const seq_state *s, const InternedData *in)
{
	/* Strings first, then what refers to them, so one packet may define an
	 * entry and what it uses together. */
	DEF_ALL(in->event_categories, in->n_event_categories, TB_CATEGORY);
	DEF_ALL(in->event_names, in->n_event_names, TB_NAME);
	DEF_ALL(in->debug_annotation_names, in->n_debug_annotation_names, TB_KEY);
	DEF_ALL(in->debug_annotation_string_values, in->n_debug_annotation_string_values, TB_STRING);
	DEF_ALL(in->build_ids, in->n_build_ids, TB_BUILD_ID);
	DEF_ALL(in->mapping_paths, in->n_mapping_paths, TB_MAP_PATH);
	DEF_ALL(in->source_paths, in->n_source_paths, TB_SRC_PATH);
	DEF_ALL(in->function_names, in->n_function_names, TB_FUNC);
	for (size_t i = 0; i < in->n_mappings; i++) {
		const Perfetto__Protos__Mapping *m = in->mappings[i];
		if (m->has_build_id && m->build_id)
			use_iid(l, s, TB_BUILD_ID, m->build_id, "a mapping");
		for (size_t j = 0; j < m->n_path_string_ids; j++)
			use_iid(l, s, TB_MAP_PATH, m->path_string_ids[j], "a mapping");
		def_iid(l, s, TB_MAPPING, m->has_iid, m->iid);
	}
	for (size_t i = 0; i < in->n_frames; i++) {
		const Perfetto__Protos__Frame *f = in->frames[i];
		if (f->has_function_name_id && f->function_name_id)
			use_iid(l, s, TB_FUNC, f->function_name_id, "a frame");
		if (f->has_source_path_iid)
			use_iid(l, s, TB_SRC_PATH, f->source_path_iid, "a frame");
		if (f->has_mapping_id && f->mapping_id)
			use_iid(l, s, TB_MAPPING, f->mapping_id, "a frame");
		def_iid(l, s, TB_FRAME, f->has_iid, f->iid);
	}
	for (size_t i = 0; i < in->n_callstacks; i++) {
		const Perfetto__Protos__Callstack *c = in->callstacks[i];
		for (size_t j = 0; j < c->n_frame_ids; j++)
			use_iid(l, s, TB_FRAME, c->frame_ids[j], "a callstack");
		def_iid(l, s, TB_STACK, c->has_iid, c->iid);
	}
}

/* ------------------------------------------------------------ tracks */

static void check_descriptor(lint *l, const Perfetto__Protos__TrackDescriptor *d)
{
	l->res->descriptors++;
	if (!d->has_uuid || !d->uuid) {
		V(l, STP_LINT_TRACK, "a track descriptor without a uuid");
		return;
	}
	if (d->process && !d->process->has_pid)
		V(l, STP_LINT_TRACK, "the process track %" PRIu64 " has no pid (it is dropped)", d->uuid);
	track *t = pf_lint_track(l, d->uuid, 1);
	if (!t)
		return;
	int counter = d->counter != NULL;
	uint64_t parent = d->has_parent_uuid ? d->parent_uuid : 0;
	if (t->declared) {
		if (t->counter != counter)
			V(l, STP_LINT_TRACK, "track %" PRIu64 " is declared again as a %s track", d->uuid,
			  counter ? "counter" : "slice");
		if (parent && t->has_parent && t->parent != parent)
			V(l, STP_LINT_TRACK, "track %" PRIu64 " is declared again with another parent", d->uuid);
	} else {
		t->declared = 1;
		t->counter = (uint8_t)counter;
		t->pkt = l->pkt;
		t->off = l->off;
	}
	if (parent) {
		if (parent == d->uuid)
			V(l, STP_LINT_PARENT, "track %" PRIu64 " is its own parent", d->uuid);
		t->has_parent = 1;
		t->parent = parent;
	}
}

/* ------------------------------------------------------------ events */

static void check_annotations(lint *l, const seq_state *s, DebugAnnotation *const *a, size_t n, int depth)
{
	if (depth > MAX_ANNOTATION_DEPTH)
		return;
	for (size_t i = 0; i < n; i++) {
		if (a[i]->name_field_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID)
			use_iid(l, s, TB_KEY, a[i]->name_iid, "a debug annotation");
		if (a[i]->value_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID)
			use_iid(l, s, TB_STRING, a[i]->string_value_iid, "a debug annotation");
		check_annotations(l, s, a[i]->dict_entries, a[i]->n_dict_entries, depth + 1);
		check_annotations(l, s, a[i]->array_values, a[i]->n_array_values, depth + 1);
	}
}

static void add_flow(lint *l, uint64_t ts, uint64_t id, int term)
{
	if (pf_grow((void **)&l->fevs, &l->fevs_cap, l->nfevs + 1, sizeof *l->fevs) < 0) {
		l->oom = 1;
		return;
	}
	l->fevs[l->nfevs] = (fev){ts, id, l->off, (uint32_t)l->pkt, (uint32_t)l->nfevs, (uint8_t)term};
	l->nfevs++;
}

static void check_event(lint *l, const TracePacket *p, seq_state *s)
{
	const TrackEvent *e = p->track_event;
	l->res->track_events++;
	/* Timestamp. */
	int have_ts = 1;
	uint64_t ts = 0;
	if (e->timestamp_case == PERFETTO__PROTOS__TRACK_EVENT__TIMESTAMP_TIMESTAMP_ABSOLUTE_US) {
		if (e->timestamp_absolute_us < 0) {
			V(l, STP_LINT_TIMESTAMP, "negative timestamp_absolute_us %" PRId64 " (the event is dropped)",
			  e->timestamp_absolute_us);
			have_ts = 0;
		} else {
			ts = (uint64_t)e->timestamp_absolute_us * 1000u;
		}
	} else if (e->timestamp_case == PERFETTO__PROTOS__TRACK_EVENT__TIMESTAMP_TIMESTAMP_DELTA_US) {
		have_ts = 0; /* relative to thread descriptors: not followed here */
	} else if (p->has_timestamp) {
		ts = p->timestamp;
		/* Another clock than the trace's (BOOTTIME, 6) needs the clock
		 * snapshots to be ordered, incremental ones (>= 64) especially:
		 * such events are not checked for nesting and flows. */
		uint32_t clock = p->has_timestamp_clock_id ? p->timestamp_clock_id : s ? s->default_clock : 0;
		if (clock && clock != 6)
			have_ts = 0;
		else if (ts > (uint64_t)INT64_MAX) {
			V(l, STP_LINT_TIMESTAMP, "timestamp %" PRIu64 " is negative as int64 (the event is dropped)", ts);
			have_ts = 0;
		}
	} else {
		V(l, STP_LINT_TIMESTAMP, "a track event without a timestamp (it is dropped)");
		have_ts = 0;
	}
	/* Interned references. */
	if (e->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID)
		use_iid(l, s, TB_NAME, e->name_iid, "the event name");
	for (size_t i = 0; i < e->n_category_iids; i++)
		use_iid(l, s, TB_CATEGORY, e->category_iids[i], "an event category");
	check_annotations(l, s, e->debug_annotations, e->n_debug_annotations, 0);
	if (e->callstack_field_case == PERFETTO__PROTOS__TRACK_EVENT__CALLSTACK_FIELD_CALLSTACK_IID)
		use_iid(l, s, TB_STACK, e->callstack_iid, "the event's callstack");
	/* Track. */
	int type = e->has_type ? (int)e->type : 0;
	uint64_t uuid = e->has_track_uuid ? e->track_uuid : 0;
	if (!e->has_track_uuid && s && s->has_default_track)
		uuid = s->default_track;
	track *t = NULL;
	/* Without a track_uuid, slices and instants go to the thread of the
	 * sequence or to a default track; counters are dropped. */
	if (type >= 1 && type <= 4) {
		if (!uuid) {
			if (type == 4)
				V(l, STP_LINT_TRACK, "a counter event without a track_uuid (it is dropped)");
		} else {
			t = pf_lint_track(l, uuid, 0);
			if (!t || !t->declared) {
				V(l, STP_LINT_TRACK, "an event on track %" PRIu64 ", which is not declared before it", uuid);
				t = NULL;
			}
		}
	}
	if (type == 3 && e->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD__NOT_SET)
		V(l, STP_LINT_INSTANT_NAME, "an instant event without a name");
	if (type == 3 && e->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME && !*e->name)
		V(l, STP_LINT_INSTANT_NAME, "an instant event with an empty name");
	if (t) {
		if (type == 4 && !t->counter)
			V(l, STP_LINT_COUNTER, "a counter value on track %" PRIu64 ", which is not a counter track", uuid);
		if (type != 4 && t->counter)
			V(l, STP_LINT_COUNTER, "a %s on counter track %" PRIu64 " (counter tracks take only values)",
			  type == 3 ? "instant" : "slice event", uuid);
	}
	if (type == 4 && e->counter_value_field_case == PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD__NOT_SET)
		V(l, STP_LINT_COUNTER, "a counter event without a value");
	/* Extra counter values go to the event's extra tracks, else to the
	 * sequence's defaults. */
	for (int pass = 0; pass < 2; pass++) {
		size_t nv = pass ? e->n_extra_double_counter_values : e->n_extra_counter_values;
		size_t n = pass ? e->n_extra_double_counter_track_uuids : e->n_extra_counter_track_uuids;
		const uint64_t *u = pass ? e->extra_double_counter_track_uuids : e->extra_counter_track_uuids;
		if (!n && nv && s) {
			n = pass ? s->ndefault_xdc : s->ndefault_xc;
			u = pass ? s->default_xdc : s->default_xc;
		}
		if (nv > n)
			V(l, STP_LINT_COUNTER, "%zu extra %scounter values for %zu extra counter tracks (the event is dropped)",
			  nv, pass ? "double " : "", n);
		for (size_t i = 0; i < n && i < nv; i++) {
			const track *x = pf_lint_track(l, u[i], 0);
			if (!x || !x->declared)
				V(l, STP_LINT_TRACK, "an extra counter value for track %" PRIu64 ", which is not declared before it",
				  u[i]);
			else if (!x->counter)
				V(l, STP_LINT_COUNTER, "an extra counter value for track %" PRIu64 ", which is not a counter track",
				  u[i]);
		}
	}
	if (!have_ts)
		return;
	/* Slices and flows, checked at the end. */
	if (t && (type == 1 || type == 2)) {
		if (pf_grow((void **)&l->sevs, &l->sevs_cap, l->nsevs + 1, sizeof *l->sevs) < 0) {
			l->oom = 1;
			return;
		}
		l->sevs[l->nsevs++] = (sev){ts, l->off, (uint32_t)l->pkt, (uint32_t)(t - l->tracks), (uint8_t)type};
	}
	for (size_t i = 0; i < e->n_flow_ids; i++)
		add_flow(l, ts, e->flow_ids[i], 0);
	for (size_t i = 0; i < e->n_flow_ids_old; i++)
		add_flow(l, ts, e->flow_ids_old[i], 0);
	for (size_t i = 0; i < e->n_terminating_flow_ids; i++)
		add_flow(l, ts, e->terminating_flow_ids[i], 1);
	for (size_t i = 0; i < e->n_terminating_flow_ids_old; i++)
		add_flow(l, ts, e->terminating_flow_ids_old[i], 1);
}

static seq_state *seq_get(lint *l, uint32_t id)
{
	uint64_t *ix = pf_map_get(&l->seq_ix, id);
	if (ix)
		return &l->seqs[*ix];
	if (pf_grow((void **)&l->seqs, &l->seqs_cap, l->nseqs + 1, sizeof *l->seqs) < 0 ||
	    pf_map_put(&l->seq_ix, id, l->nseqs) < 0) {
		l->oom = 1;
		return NULL;
	}
	seq_state *s = &l->seqs[l->nseqs++];
	memset(s, 0, sizeof *s);
	s->id = id;
	return s;
}

static void check_packet(lint *l, const TracePacket *p)
{
	int is_event = p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	seq_state *s = NULL;
	if (p->has_trusted_packet_sequence_id && p->trusted_packet_sequence_id) {
		s = seq_get(l, p->trusted_packet_sequence_id);
		if (!s)
			return;
		uint32_t flags = p->has_sequence_flags ? p->sequence_flags : 0;
		int clears = (flags & 1) || (p->has_incremental_state_cleared && p->incremental_state_cleared);
		if (!s->cleared && !clears && (flags & 2) && !s->reported_first) {
			s->reported_first = 1;
			V(l, STP_LINT_FIRST_PACKET,
			  "a packet of sequence %u needs incremental state (sequence_flags 2) before any packet "
			  "cleared it (sequence_flags 1): it is skipped, as are the others until one does", s->id);
		}
		if (clears) {
			s->cleared = 1;
			s->gen++;
			s->has_default_track = 0;
			s->default_clock = 0;
			s->ndefault_xc = s->ndefault_xdc = 0;
		}
		if (p->trace_packet_defaults && p->trace_packet_defaults->has_timestamp_clock_id)
			s->default_clock = p->trace_packet_defaults->timestamp_clock_id;
		if (p->trace_packet_defaults && p->trace_packet_defaults->track_event_defaults) {
			const Perfetto__Protos__TrackEventDefaults *d = p->trace_packet_defaults->track_event_defaults;
			s->has_default_track = d->has_track_uuid;
			s->default_track = d->track_uuid;
			s->ndefault_xc = d->n_extra_counter_track_uuids < 8 ? d->n_extra_counter_track_uuids : 8;
			memcpy(s->default_xc, d->extra_counter_track_uuids, s->ndefault_xc * sizeof *s->default_xc);
			s->ndefault_xdc = d->n_extra_double_counter_track_uuids < 8 ? d->n_extra_double_counter_track_uuids : 8;
			memcpy(s->default_xdc, d->extra_double_counter_track_uuids, s->ndefault_xdc * sizeof *s->default_xdc);
		}
	} else if (is_event || p->interned_data) {
		V(l, STP_LINT_SEQUENCE_ID, "a %s without a trusted_packet_sequence_id (it is dropped)",
		  is_event ? "track event" : "packet with interned data");
	}
	if (p->interned_data)
		check_interned(l, s, p->interned_data);
	if (p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR)
		check_descriptor(l, p->track_descriptor);
	else if (is_event)
		check_event(l, p, s);
}

/* ------------------------------------------------------------ reading */

/* Reads a varint; 1 ok, 0 clean EOF before it, -1 truncated/overlong. */
static int read_varint(FILE *f, uint64_t *v, uint64_t *pos)
{
	*v = 0;
	for (int i = 0; i < 10; i++) {
		int c = getc(f);
		if (c == EOF)
			return i == 0 ? 0 : -1;
		(*pos)++;
		*v |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80))
			return 1;
	}
	return -1;
}

static int skip_bytes(FILE *f, uint64_t n, uint64_t *pos)
{
	char buf[4096];
	while (n) {
		size_t k = n < sizeof buf ? (size_t)n : sizeof buf;
		if (fread(buf, 1, k, f) != k)
			return -1;
		n -= k;
		*pos += k;
	}
	return 0;
}

int stp_lint_perfetto(FILE *f, const stp_lint_opts *opts, stp_lint_result *res)
{
	stp_lint_opts def = {.name = "trace"};
	if (!opts)
		opts = &def;
	lint l;
	memset(&l, 0, sizeof l);
	memset(res, 0, sizeof *res);
	l.o = opts;
	l.res = res;
	l.name = opts->name ? opts->name : "trace";
	uint8_t *buf = NULL;
	size_t cap = 0;
	uint64_t pos = 0;
	int rc = 0;
	for (;;) {
		uint64_t start = pos, tag, len;
		int got = read_varint(f, &tag, &pos);
		if (got == 0)
			break;
		l.pkt = res->packets;
		l.off = start;
		if (got < 0) {
			V(&l, STP_LINT_MALFORMED, "a truncated or overlong field tag");
			break;
		}
		unsigned wt = (unsigned)(tag & 7);
		uint64_t field = tag >> 3;
		if (field == 0) { /* never valid (and /dev/zero would be read forever) */
			V(&l, STP_LINT_MALFORMED, "field number 0");
			break;
		}
		if (wt == 2) {
			if (read_varint(f, &len, &pos) != 1) {
				V(&l, STP_LINT_MALFORMED, "a truncated length");
				break;
			}
			if (field != 1) {
				if (skip_bytes(f, len, &pos) < 0) {
					V(&l, STP_LINT_MALFORMED, "a field of %" PRIu64 " bytes runs past the end", len);
					break;
				}
				continue;
			}
			if (len > MAX_PACKET) {
				V(&l, STP_LINT_MALFORMED, "a packet of %" PRIu64 " bytes (more than %u MiB)", len,
				  MAX_PACKET >> 20);
				break;
			}
			/* Grow as the bytes arrive, so a lying length costs nothing. */
			size_t have = 0;
			int trunc = 0;
			while (have < len) {
				size_t want = (size_t)len - have < (1u << 20) ? (size_t)len - have : (1u << 20);
				if (pf_grow((void **)&buf, &cap, have + want, 1) < 0) {
					l.oom = 1;
					break;
				}
				size_t k = fread(buf + have, 1, want, f);
				have += k;
				pos += k;
				if (k < want) {
					trunc = 1;
					break;
				}
			}
			if (l.oom)
				break;
			if (trunc) {
				V(&l, STP_LINT_MALFORMED, "the packet is cut short: %zu of %" PRIu64 " bytes", have, len);
				res->packets++;
				break;
			}
			TracePacket *p = (TracePacket *)protobuf_c_message_unpack(&perfetto__protos__trace_packet__descriptor,
			                                                          NULL, (size_t)len, buf);
			if (!p) {
				V(&l, STP_LINT_MALFORMED, "not a valid TracePacket (%" PRIu64 " bytes)", len);
			} else {
				check_packet(&l, p);
				protobuf_c_message_free_unpacked(&p->base, NULL);
			}
			res->packets++;
		} else if (wt == 0) {
			uint64_t v;
			if (read_varint(f, &v, &pos) != 1) {
				V(&l, STP_LINT_MALFORMED, "a truncated varint");
				break;
			}
		} else if (wt == 1 || wt == 5) {
			if (skip_bytes(f, wt == 1 ? 8 : 4, &pos) < 0) {
				V(&l, STP_LINT_MALFORMED, "a truncated fixed-size field");
				break;
			}
		} else {
			V(&l, STP_LINT_MALFORMED, "wire type %u at the top level (not a Trace)", wt);
			break;
		}
		if (l.oom)
			break;
	}
	if (ferror(f))
		rc = -1;
	res->bytes = pos;
	if (!l.oom) {
		pf_lint_check_parents(&l);
		pf_lint_check_nesting(&l);
		pf_lint_check_flows(&l);
	}
	if (l.oom) {
		if (opts->report)
			fprintf(opts->report, "%s: out of memory; the checks are incomplete\n", l.name);
		rc = -1;
	}
	if (opts->report && opts->max_report && l.printed < res->violations)
		fprintf(opts->report, "%s: ... and %" PRIu64 " more violations\n", l.name,
		        res->violations - l.printed);
	free(buf);
	free(l.iids);
	free(l.seqs);
	pf_map_free(&l.seq_ix);
	free(l.tracks);
	pf_map_free(&l.track_ix);
	free(l.sevs);
	free(l.fevs);
	if (rc < 0)
		return -1;
	return res->violations ? 1 : 0;
}
