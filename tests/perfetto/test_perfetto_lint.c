/*
 * test_perfetto_lint.c - stp_lint_perfetto() on hand-made files: a good one
 * passes, and each bad one breaks exactly one rule, which the lint names
 * (and no other).  With a directory argument, writes the files there instead
 * (the fuzz target's seeds): test_perfetto_lint DIR.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "perfetto_trace.pb-c.h"
#include "stprof/perfetto.h"

typedef Perfetto__Protos__TracePacket Pkt;
typedef Perfetto__Protos__TrackEvent Ev;

enum {
	GOOD, NO_SEQ, FIRST_NOT_CLEARED, IID_UNDEFINED, IID_ZERO, END_NO_BEGIN, END_BEFORE_BEGIN,
	OVERLAP, UNENDED, UNDECLARED_TRACK, TRACK_AFTER_USE, NO_TRACK_UUID, PARENT_UNDECLARED,
	PARENT_CYCLE, SLICE_ON_COUNTER, COUNTER_ON_SLICE, EXTRA_COUNTER_ON_SLICE, FLOW_UNPAIRED,
	FLOW_TERM_ONLY, INSTANT_UNNAMED, NO_TIMESTAMP, NEG_TIMESTAMP, GARBAGE, TRUNCATED, NCASES
};

static const struct { const char *name; int rule; } cases[NCASES] = {
	[GOOD] = {"good", -1},
	[NO_SEQ] = {"no_seq", STP_LINT_SEQUENCE_ID},
	[FIRST_NOT_CLEARED] = {"first_not_cleared", STP_LINT_FIRST_PACKET},
	[IID_UNDEFINED] = {"iid_undefined", STP_LINT_INTERNED_ID},
	[IID_ZERO] = {"iid_zero", STP_LINT_INTERNED_ID},
	[END_NO_BEGIN] = {"end_no_begin", STP_LINT_NESTING},
	[END_BEFORE_BEGIN] = {"end_before_begin", STP_LINT_NESTING},
	[OVERLAP] = {"overlap", STP_LINT_NESTING},
	[UNENDED] = {"unended", STP_LINT_NESTING},
	[UNDECLARED_TRACK] = {"undeclared_track", STP_LINT_TRACK},
	[TRACK_AFTER_USE] = {"track_after_use", STP_LINT_TRACK},
	[NO_TRACK_UUID] = {"no_track_uuid", STP_LINT_TRACK},
	[PARENT_UNDECLARED] = {"parent_undeclared", STP_LINT_PARENT},
	[PARENT_CYCLE] = {"parent_cycle", STP_LINT_PARENT},
	[SLICE_ON_COUNTER] = {"slice_on_counter", STP_LINT_COUNTER},
	[COUNTER_ON_SLICE] = {"counter_on_slice", STP_LINT_COUNTER},
	[EXTRA_COUNTER_ON_SLICE] = {"extra_counter_on_slice", STP_LINT_COUNTER},
	[FLOW_UNPAIRED] = {"flow_unpaired", STP_LINT_FLOW},
	[FLOW_TERM_ONLY] = {"flow_term_only", STP_LINT_FLOW},
	[INSTANT_UNNAMED] = {"instant_unnamed", STP_LINT_INSTANT_NAME},
	[NO_TIMESTAMP] = {"no_timestamp", STP_LINT_TIMESTAMP},
	[NEG_TIMESTAMP] = {"neg_timestamp", STP_LINT_TIMESTAMP},
	[GARBAGE] = {"garbage", STP_LINT_MALFORMED},
	[TRUNCATED] = {"truncated", STP_LINT_MALFORMED},
};

static void put(FILE *f, const Pkt *p)
{
	size_t n = protobuf_c_message_get_packed_size(&p->base);
	uint8_t *buf = malloc(n + 16);
	size_t h = 0;
	buf[h++] = 0x0a;
	uint64_t v = n;
	do {
		buf[h++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	protobuf_c_message_pack(&p->base, buf + h);
	fwrite(buf, 1, h + n, f);
	free(buf);
}

/* A packet on sequence 1 with flags 2 (unless noted by the caller). */
static Pkt pkt(uint64_t ts)
{
	Pkt p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	p.has_timestamp = 1;
	p.timestamp = ts;
	p.has_trusted_packet_sequence_id = 1;
	p.trusted_packet_sequence_id = 1;
	p.has_sequence_flags = 1;
	p.sequence_flags = 2;
	return p;
}

static void desc(FILE *f, uint64_t uuid, uint64_t parent, const char *name, int counter, int process)
{
	Pkt p = pkt(1);
	p.has_sequence_flags = 0;
	Perfetto__Protos__TrackDescriptor d = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	Perfetto__Protos__CounterDescriptor c = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
	Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
	d.has_uuid = 1;
	d.uuid = uuid;
	if (parent) {
		d.has_parent_uuid = 1;
		d.parent_uuid = parent;
	}
	d.static_or_dynamic_name_case = PERFETTO__PROTOS__TRACK_DESCRIPTOR__STATIC_OR_DYNAMIC_NAME_NAME;
	d.name = (char *)name;
	if (counter)
		d.counter = &c;
	if (process) {
		pd.has_pid = 1;
		pd.pid = 42;
		d.process = &pd;
	}
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	p.track_descriptor = &d;
	put(f, &p);
}

typedef struct evspec {
	uint64_t ts;
	int type;
	uint64_t track;
	const char *name;      /* inline name */
	uint64_t name_iid;
	uint64_t flow, tflow;
	int has_value;
	uint64_t extra_counter; /* track of an extra counter value */
	int no_seq, no_ts, no_track;
	uint32_t flags;         /* 0: 2 */
} evspec;

static void event(FILE *f, const evspec *s)
{
	Pkt p = pkt(s->ts);
	Ev e = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	if (s->no_seq) {
		p.has_trusted_packet_sequence_id = 0;
		p.has_sequence_flags = 0;
	}
	if (s->no_ts)
		p.has_timestamp = 0;
	if (s->flags)
		p.sequence_flags = s->flags;
	e.has_type = 1;
	e.type = (Perfetto__Protos__TrackEvent__Type)s->type;
	if (!s->no_track) {
		e.has_track_uuid = 1;
		e.track_uuid = s->track;
	}
	if (s->name) {
		e.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
		e.name = (char *)s->name;
	} else if (s->name_iid) {
		e.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
		e.name_iid = s->name_iid;
	}
	uint64_t fl = s->flow, tf = s->tflow, xt = s->extra_counter;
	int64_t xv = 5;
	if (fl) {
		e.n_flow_ids = 1;
		e.flow_ids = &fl;
	}
	if (tf) {
		e.n_terminating_flow_ids = 1;
		e.terminating_flow_ids = &tf;
	}
	if (xt) {
		e.n_extra_counter_track_uuids = e.n_extra_counter_values = 1;
		e.extra_counter_track_uuids = &xt;
		e.extra_counter_values = &xv;
	}
	if (s->has_value) {
		e.counter_value_field_case = PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE;
		e.counter_value = 7;
	}
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	p.track_event = &e;
	put(f, &p);
}

static void first_packet(FILE *f, int bad, uint64_t name_iid)
{
	Pkt p = pkt(1);
	if (!bad) {
		p.sequence_flags = 3;
		p.has_first_packet_on_sequence = 1;
		p.first_packet_on_sequence = 1;
	}
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__EventName n = PERFETTO__PROTOS__EVENT_NAME__INIT, *np = &n;
	n.has_iid = 1;
	n.iid = name_iid;
	n.name = "interned";
	in.n_event_names = 1;
	in.event_names = &np;
	p.interned_data = &in;
	Perfetto__Protos__TrackDescriptor d = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
	d.has_uuid = 1;
	d.uuid = 1;
	pd.has_pid = 1;
	pd.pid = 42;
	d.process = &pd;
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	p.track_descriptor = &d;
	put(f, &p);
}

enum { T = 1, B = 1, E = 2, I = 3, C = 4 };

static void write_case(const char *path, int c)
{
	FILE *f = fopen(path, "wb");
	first_packet(f, c == FIRST_NOT_CLEARED, c == IID_ZERO ? 0 : 1);
	desc(f, 2, 1, "slices", 0, 0);
	desc(f, 3, 1, "bytes", 1, 0);
	if (c == PARENT_UNDECLARED)
		desc(f, 8, 77, "orphan", 0, 0);
	if (c == PARENT_CYCLE) {
		desc(f, 10, 11, "a", 0, 0);
		desc(f, 11, 10, "b", 0, 0);
	}
	/* The good content. */
	event(f, &(evspec){.ts = 10, .type = B, .track = 2, .name_iid = c == IID_ZERO ? 0 : 1, .name = c == IID_ZERO ? "x" : NULL});
	event(f, &(evspec){.ts = 20, .type = E, .track = 2});
	event(f, &(evspec){.ts = 12, .type = I, .track = 2, .name = "source", .flow = 5});
	event(f, &(evspec){.ts = 15, .type = I, .track = 2, .name = "sink", .tflow = 5});
	event(f, &(evspec){.ts = 16, .type = C, .track = 3, .has_value = 1});
	event(f, &(evspec){.ts = 17, .type = I, .track = 2, .name = "with counter", .extra_counter = 3});
	/* Nested properly, written out of time order: fine. */
	event(f, &(evspec){.ts = 30, .type = B, .track = 2, .name = "outer"});
	event(f, &(evspec){.ts = 60, .type = E, .track = 2});
	event(f, &(evspec){.ts = 40, .type = B, .track = 2, .name = "inner"});
	event(f, &(evspec){.ts = 50, .type = E, .track = 2});
	switch (c) {
	case NO_SEQ: event(f, &(evspec){.ts = 70, .type = I, .track = 2, .name = "n", .no_seq = 1}); break;
	case IID_UNDEFINED: event(f, &(evspec){.ts = 70, .type = I, .track = 2, .name_iid = 9}); break;
	case END_NO_BEGIN: event(f, &(evspec){.ts = 70, .type = E, .track = 2}); break;
	case END_BEFORE_BEGIN:
		event(f, &(evspec){.ts = 80, .type = B, .track = 2, .name = "b"});
		event(f, &(evspec){.ts = 75, .type = E, .track = 2});
		break;
	case OVERLAP:
		event(f, &(evspec){.ts = 100, .type = B, .track = 2, .name = "a"});
		event(f, &(evspec){.ts = 300, .type = E, .track = 2});
		event(f, &(evspec){.ts = 200, .type = B, .track = 2, .name = "b"});
		event(f, &(evspec){.ts = 400, .type = E, .track = 2});
		break;
	case UNENDED: event(f, &(evspec){.ts = 500, .type = B, .track = 2, .name = "open"}); break;
	case UNDECLARED_TRACK: event(f, &(evspec){.ts = 70, .type = I, .track = 99, .name = "u"}); break;
	case TRACK_AFTER_USE:
		event(f, &(evspec){.ts = 70, .type = I, .track = 7, .name = "early"});
		desc(f, 7, 1, "late", 0, 0);
		break;
	case NO_TRACK_UUID:
		/* fine for slices and instants (a default track), not counters */
		event(f, &(evspec){.ts = 70, .type = I, .name = "default track", .no_track = 1});
		event(f, &(evspec){.ts = 71, .type = C, .has_value = 1, .no_track = 1});
		break;
	case SLICE_ON_COUNTER:
		event(f, &(evspec){.ts = 70, .type = B, .track = 3, .name = "s"});
		event(f, &(evspec){.ts = 71, .type = E, .track = 3});
		break;
	case COUNTER_ON_SLICE: event(f, &(evspec){.ts = 70, .type = C, .track = 2, .has_value = 1}); break;
	case EXTRA_COUNTER_ON_SLICE:
		event(f, &(evspec){.ts = 70, .type = I, .track = 2, .name = "x", .extra_counter = 2});
		break;
	case FLOW_UNPAIRED: event(f, &(evspec){.ts = 70, .type = I, .track = 2, .name = "f", .flow = 77}); break;
	case FLOW_TERM_ONLY: event(f, &(evspec){.ts = 70, .type = I, .track = 2, .name = "t", .tflow = 78}); break;
	case INSTANT_UNNAMED: event(f, &(evspec){.ts = 70, .type = I, .track = 2}); break;
	case NO_TIMESTAMP: event(f, &(evspec){.ts = 70, .type = I, .track = 2, .name = "n", .no_ts = 1}); break;
	case NEG_TIMESTAMP:
		event(f, &(evspec){.ts = (1ull << 63) + 5, .type = I, .track = 2, .name = "n"});
		break;
	case GARBAGE: {
		static const uint8_t junk[] = {0x0a, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff};
		fwrite(junk, 1, sizeof junk, f);
		break;
	}
	case TRUNCATED: event(f, &(evspec){.ts = 70, .type = I, .track = 2, .name = "cut short"}); break;
	default: break;
	}
	long size = ftell(f);
	fclose(f);
	if (c == TRUNCATED)
		CHECK(truncate(path, size - 3) == 0);
}

static void test_cases(void)
{
	for (int c = 0; c < NCASES; c++) {
		const char *path = check_tmp("lint.pftrace");
		write_case(path, c);
		FILE *f = fopen(path, "rb");
		stp_lint_opts o = {.name = cases[c].name, .report = stderr, .max_report = 10};
		stp_lint_result r;
		int rc = stp_lint_perfetto(f, &o, &r);
		fclose(f);
		if (cases[c].rule < 0) {
			CHECK_EQ_I(rc, 0);
			CHECK_EQ_U(r.violations, 0);
			CHECK_EQ_U(r.packets, 13);
			CHECK_EQ_U(r.track_events, 10);
			CHECK_EQ_U(r.descriptors, 3);
		} else {
			CHECK_EQ_I(rc, 1);
			if (r.by_rule[cases[c].rule] == 0 || r.violations != r.by_rule[cases[c].rule])
				fprintf(stderr, "case %s: expected only %s violations\n", cases[c].name,
				        stp_lint_rule_name((unsigned)cases[c].rule));
			CHECK(r.by_rule[cases[c].rule] > 0);
			CHECK_EQ_U(r.violations, r.by_rule[cases[c].rule]);
		}
		remove(path);
	}
}

/* The report names the file, the packet and the byte offset. */
static void test_report(void)
{
	const char *path = check_tmp("report.pftrace"), *rep = check_tmp("report.txt");
	write_case(path, UNDECLARED_TRACK);
	FILE *f = fopen(path, "rb"), *out = fopen(rep, "w+");
	stp_lint_opts o = {.name = "x.pftrace", .report = out};
	stp_lint_result r;
	CHECK_EQ_I(stp_lint_perfetto(f, &o, &r), 1);
	fclose(f);
	rewind(out);
	char line[512] = "";
	CHECK(fgets(line, sizeof line, out) != NULL);
	fclose(out);
	unsigned long long pkt = 0, off = 0;
	char rule[64] = "";
	CHECK_EQ_I(sscanf(line, "x.pftrace: packet %llu at offset %llu: %63[^:]:", &pkt, &off, rule), 3);
	CHECK_EQ_U(pkt, 13);
	CHECK(off > 0);
	CHECK_STR(rule, "track");
	remove(path);
	remove(rep);
}

/* Empty input is a valid (empty) trace; random bytes never crash. */
static void test_noise(void)
{
	stp_lint_result r;
	FILE *f = tmpfile();
	CHECK_EQ_I(stp_lint_perfetto(f, NULL, &r), 0);
	fclose(f);
	uint64_t x = 88172645463325252ull;
	for (int round = 0; round < 300; round++) {
		f = tmpfile();
		size_t n = (size_t)(round * 7 % 500);
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			fputc(round % 3 == 0 && i % 9 == 0 ? 0x0a : (int)(x & 0xff), f);
		}
		rewind(f);
		int rc = stp_lint_perfetto(f, NULL, &r);
		CHECK(rc == 0 || rc == 1);
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	if (argc == 2) { /* write the cases as fuzz seeds */
		for (int c = 0; c < NCASES; c++) {
			char path[1024];
			snprintf(path, sizeof path, "%s/%s.pftrace", argv[1], cases[c].name);
			write_case(path, c);
		}
		return 0;
	}
	test_cases();
	test_report();
	test_noise();
	return check_done();
}
