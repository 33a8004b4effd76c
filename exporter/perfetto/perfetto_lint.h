/*
 * perfetto_lint.h - the state of one run of stp_lint_perfetto(), shared by
 * perfetto_lint.c (reading, and the checks made packet by packet) and
 * perfetto_lint_end.c (the checks made at the end: parents, nesting, flows).
 * Internal to exporter/perfetto/.
 */
#ifndef STPROF_EXPORTER_PERFETTO_LINT_H
#define STPROF_EXPORTER_PERFETTO_LINT_H

#include <stdint.h>

#include "perfetto_trace.pb-c.h"
#include "perfetto_util.h"
#include "stprof/perfetto.h"

typedef Perfetto__Protos__TracePacket TracePacket;
typedef Perfetto__Protos__TrackEvent TrackEvent;
typedef Perfetto__Protos__InternedData InternedData;
typedef Perfetto__Protos__DebugAnnotation DebugAnnotation;

/* Interned tables (InternedData field numbers). */
enum { TB_CATEGORY = 1, TB_NAME = 2, TB_KEY = 3, TB_FUNC = 5, TB_FRAME = 6, TB_STACK = 7,
       TB_BUILD_ID = 16, TB_MAP_PATH = 17, TB_SRC_PATH = 18, TB_MAPPING = 19, TB_STRING = 29 };

extern const char *const pf_lint_rule_names[STP_LINT_NRULES];

typedef struct iid_key { uint64_t iid; uint32_t seq, gen; uint32_t table, used; } iid_key;

typedef struct seq_state {
	uint32_t id, gen;
	int cleared;           /* incremental state cleared at least once */
	int reported_first;
	int has_default_track;
	uint64_t default_track;
	uint32_t default_clock;  /* TracePacketDefaults.timestamp_clock_id, 0: none */
	uint64_t default_xc[8], default_xdc[8]; /* default extra counter tracks */
	size_t ndefault_xc, ndefault_xdc;
} seq_state;

typedef struct track {
	uint64_t uuid, parent;
	uint64_t pkt, off;     /* first declaration */
	uint8_t declared, counter, has_parent, reported;
	uint32_t walk;         /* cycle check stamp */
} track;

typedef struct sev { uint64_t ts, off; uint32_t pkt, track; uint8_t type; } sev; /* slice event */
typedef struct fev { uint64_t ts, id, off; uint32_t pkt, ix; uint8_t term; } fev; /* flow event */

typedef struct lint {
	const stp_lint_opts *o;
	stp_lint_result *res;
	const char *name;
	uint64_t pkt, off;     /* current packet */
	uint64_t printed;
	/* interned ids */
	iid_key *iids;
	size_t niids, iid_cap;
	seq_state *seqs;
	size_t nseqs, seqs_cap;
	pf_map seq_ix;
	track *tracks;
	size_t ntracks, tracks_cap;
	pf_map track_ix;
	sev *sevs;
	size_t nsevs, sevs_cap;
	fev *fevs;
	size_t nfevs, fevs_cap;
	int oom;
} lint;

/* Reports a violation of rule at packet pkt, byte offset off. */
void pf_lint_violation(lint *l, unsigned rule, uint64_t pkt, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The track of uuid; create: add it (undeclared) when absent. */
track *pf_lint_track(lint *l, uint64_t uuid, int create);
void pf_lint_check_parents(lint *l);
void pf_lint_check_nesting(lint *l);
void pf_lint_check_flows(lint *l);

#endif
