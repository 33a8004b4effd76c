/*
 * perfetto_writer.h - the streaming .pftrace writer under the exporter: packs
 * one TracePacket at a time with protobuf-c and appends it to the file as a
 * Trace.packet record (0x0A, varint length, bytes).  Nothing but the output
 * buffer and the interning tables is kept, so a trace of any length is
 * written in bounded memory.  Internal to exporter/perfetto/.
 *
 * A pf_seq is one trusted packet sequence.  It owns the sequence's interning
 * tables and enforces the trace processor's rules by construction:
 *   - every packet carries the sequence id;
 *   - the first packet of the sequence sets SEQ_INCREMENTAL_STATE_CLEARED
 *     and first_packet_on_sequence; every later TrackEvent sets
 *     SEQ_NEEDS_INCREMENTAL_STATE;
 *   - interned ids count from 1 in each table, and an entry travels in the
 *     interned_data of the first packet that uses it.
 * Usage: pf_event() starts a TrackEvent packet (the previous one must have
 * been emitted), the pf_* setters fill it, pf_emit() writes it.
 */
#ifndef STPROF_EXPORTER_PERFETTO_WRITER_H
#define STPROF_EXPORTER_PERFETTO_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "perfetto_trace.pb-c.h"
#include "stprof/outfile.h"
#include "perfetto_util.h"

typedef Perfetto__Protos__TracePacket pf_TracePacket;
typedef Perfetto__Protos__TrackEvent pf_TrackEvent;
typedef Perfetto__Protos__DebugAnnotation pf_DebugAnnotation;

/* ---- the output file */
typedef struct pf_out {
	stp_outfile file; /* stprof/outfile.h: renamed into place when complete */
	FILE *f;
	pf_vec buf;
	uint64_t bytes, packets;
	int failed;
	char err[256];
} pf_out;

int pf_out_open(pf_out *o, const char *path);
/* Packs p (whose packed size is at most bound) as one Trace.packet. */
int pf_out_packet(pf_out *o, const pf_TracePacket *p, size_t bound);
/* Flushes, closes and puts the file in place (complete), or removes it
 * (!complete: the export failed); 0 or -1. */
int pf_out_close(pf_out *o, int complete);

/* ---- track descriptors */
enum { PF_TRACK_PLAIN = 0, PF_TRACK_COUNTER, PF_TRACK_PROCESS, PF_TRACK_THREAD };
typedef struct pf_track {
	int kind;
	uint64_t uuid, parent;         /* parent 0: none */
	const char *name;              /* NULL: none */
	const char *description;
	int explicit_order;            /* children ordered by rank */
	int has_rank;
	int32_t rank;
	/* counters */
	unsigned unit;                 /* CounterDescriptor.Unit */
	const char *share_key;
	/* process / thread */
	int32_t pid;
	int64_t tid;
	const char *process_name, *cmdline, *label, *thread_name;
} pf_track;

/* ---- a packet sequence */
#define PF_MAX_ARGS 16
#define PF_MAX_XC 4

typedef struct pf_seq pf_seq;

typedef struct pf_pkt {
	pf_seq *seq;
	pf_TracePacket p;
	pf_TrackEvent ev;
	pf_DebugAnnotation args[PF_MAX_ARGS];
	pf_DebugAnnotation *argp[PF_MAX_ARGS];
	uint64_t xc_uuid[PF_MAX_XC];
	int64_t xc_val[PF_MAX_XC];
	uint64_t *flows, *tflows;
	size_t nflows, ntflows, flows_cap, tflows_cap;
	size_t bound;
	/* interned entries of this packet: built in pools, pointed at on emit */
	Perfetto__Protos__InternedData in;
	Perfetto__Protos__EventName *names;
	Perfetto__Protos__DebugAnnotationName *keys;
	Perfetto__Protos__InternedString *strs, *funcs, *files;
	Perfetto__Protos__Frame *frames;
	Perfetto__Protos__Callstack *stacks;
	size_t nnames, nkeys, nstrs, nfuncs, nfiles, nframes, nstacks;
	size_t cnames, ckeys, cstrs, cfuncs, cfiles, cframes, cstacks;
	uint64_t *frame_ids;           /* all callstacks' frames, back to back */
	size_t nframe_ids, cframe_ids;
	size_t *stack_first;           /* offset of each callstack's frames */
	size_t cstack_first;
	void **ptrs;                   /* pointer arrays handed to protobuf-c */
	size_t cptrs;
	int failed;
} pf_pkt;

struct pf_seq {
	pf_out *out;
	uint32_t id;
	int started;
	pf_strtab names, keys, strs, funcs, files;
	uint64_t next_name, next_key, next_str, next_func, next_file, next_frame, next_stack;
	pf_map frames;                 /* caller's frame key -> frame iid */
	pf_map stacks;                 /* caller's stack key -> callstack iid */
	pf_map key_cache;              /* argument key's address -> iid */
	pf_pkt pk;
};

int pf_seq_init(pf_seq *s, pf_out *out, uint32_t id);
void pf_seq_free(pf_seq *s);

int pf_emit_track(pf_seq *s, uint64_t ts, const pf_track *t);

/* Starts a TrackEvent packet. type: PERFETTO__PROTOS__TRACK_EVENT__TYPE__*.
 * Argument keys must be string literals (or otherwise never change): their
 * iids are cached by address. */
pf_pkt *pf_event(pf_seq *s, uint64_t ts, int type, uint64_t track);
void pf_name(pf_pkt *k, const char *name);
/* The iid of an event name (added to this packet when new), and its use. */
uint64_t pf_intern_name(pf_pkt *k, const char *name);
void pf_name_iid(pf_pkt *k, uint64_t iid);
void pf_arg_uint(pf_pkt *k, const char *key, uint64_t v);
void pf_arg_int(pf_pkt *k, const char *key, int64_t v);
void pf_arg_ptr(pf_pkt *k, const char *key, uint64_t v);
void pf_arg_bool(pf_pkt *k, const char *key, int v);
void pf_arg_double(pf_pkt *k, const char *key, double v);
/* A string value, interned (for values that repeat). */
void pf_arg_str(pf_pkt *k, const char *key, const char *v);
/* A string value by an iid from pf_intern_str(). */
void pf_arg_str_iid(pf_pkt *k, const char *key, uint64_t iid);
/* A string value written inline (for one-off text). */
void pf_arg_text(pf_pkt *k, const char *key, const char *v);
void pf_flow(pf_pkt *k, uint64_t id);
void pf_flow_end(pf_pkt *k, uint64_t id);
void pf_counter_int(pf_pkt *k, int64_t v);
void pf_counter_double(pf_pkt *k, double v);
void pf_extra_counter(pf_pkt *k, uint64_t track, int64_t v);
void pf_callstack(pf_pkt *k, uint64_t iid, double weight);
int pf_emit(pf_pkt *k);

/* Interning that a caller drives (iids valid for the sequence).  The
 * *_known functions look up without adding. */
uint64_t pf_intern_str(pf_pkt *k, const char *text);
int pf_frame_known(const pf_seq *s, uint64_t key, uint64_t *iid);
uint64_t pf_intern_frame(pf_pkt *k, uint64_t key, const char *function, const char *file,
                         uint32_t line);
int pf_stack_known(const pf_seq *s, uint64_t key, uint64_t *iid);
/* frames: frame iids, outermost first. */
uint64_t pf_intern_stack(pf_pkt *k, uint64_t key, const uint64_t *frames, size_t n);

#endif
