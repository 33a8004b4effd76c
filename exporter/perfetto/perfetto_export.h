/*
 * perfetto_export.h - the state of one Perfetto export, shared by the
 * exporter's files (internal to exporter/perfetto/):
 *   perfetto_export.c   the driver: reads each trace, dispatches events,
 *                       opens and closes the window
 *   perfetto_emit.c     what the writers share: errors, event times,
 *                       --top selection, interned names
 *   perfetto_memory.c   allocations, frees, segments, API calls
 *   perfetto_markers.c  iterations, phases, modules
 *   perfetto_extras.c   the detector's findings and series
 *   perfetto_objects.c  live objects: a pool and a treap by address
 *   perfetto_tracks.c   processes, memory spaces, streams, lanes, markers
 *   perfetto_symbols.c  frame names, call paths, interned callstacks
 *   perfetto_select.c   the --top pre-pass
 *
 * Time: every timestamp written is "export time": the trace's time_ns plus
 * the trace's offset (0, or realtime - monotonic when the traces come from
 * different hosts).  Per track, the exporter writes events so that sorting
 * them by timestamp (what the trace processor does, ties in file order)
 * never changes which END closes which BEGIN:
 *   - a lifetime lane holds one object at a time, and is reused only after
 *     its last END;
 *   - a marker track is a stack whose timestamps never go back;
 *   - API slices go to the first sub-lane of their stream where they nest
 *     or follow (sub-lanes share the stream's name, so the UI merges them).
 */
#ifndef STPROF_EXPORTER_PERFETTO_EXPORT_H
#define STPROF_EXPORTER_PERFETTO_EXPORT_H

#include <stdint.h>

#include "perfetto_writer.h"
#include "stprof/perfetto.h"
#include "stprof/trace.h"

#define PF_NONE UINT32_MAX
#define PF_DEV_TENSORS STP_EXPORT_DEV_TENSORS /* the device of host pool 1 (a framework's tensors) */
#define PF_DEV_JAX STP_EXPORT_DEV_JAX         /* the device of host pool 2 (JAX's CPU buffers) */
/* the host's framework spaces (a framework's buffers, not the heap) */
#define PF_DEV_FRAMEWORK(d) ((d) == PF_DEV_TENSORS || (d) == PF_DEV_JAX)

/* ---- objects */
enum {
	PF_OBJ_SELECTED = 1,   /* drawn when visible (not cut by --top) */
	PF_OBJ_FLOW = 2,       /* its alloc instant began a flow */
	PF_OBJ_STEPPED = 4,    /* the flow went through its first access */
	PF_OBJ_ACCESSED = 8,
};

typedef struct pf_obj {
	uint64_t addr, size, requested;
	uint64_t t_alloc, t_first, t_step; /* allocation, first access, flow step */
	uint64_t seq;
	uint64_t flow;
	uint32_t accesses;
	uint32_t stack;
	uint32_t lane, group;      /* PF_NONE: not drawn */
	uint32_t stream;           /* index of its alloc stream track */
	uint32_t left, right, prio;
	uint16_t space;
	uint8_t kind, flags;
	int32_t device;
} pf_obj;

typedef struct pf_objs {
	pf_obj *v;
	size_t n, cap;
	uint32_t free_head;        /* free list through .left */
	uint32_t root;
	uint64_t live;
} pf_objs;

uint32_t pf_obj_new(pf_objs *o);            /* PF_NONE on OOM */
void pf_obj_insert(pf_objs *o, uint32_t i); /* by v[i].addr, unique */
void pf_obj_remove(pf_objs *o, uint32_t i);
uint32_t pf_obj_find(const pf_objs *o, uint64_t addr);
/* The object with the greatest addr <= a, or PF_NONE. */
uint32_t pf_obj_floor(const pf_objs *o, uint64_t a);
/* The object with the smallest addr > a, or PF_NONE. */
uint32_t pf_obj_next(const pf_objs *o, uint64_t a);
void pf_objs_free(pf_objs *o);

/* ---- tracks */
typedef struct pf_space {
	uint8_t kind;
	int32_t device;
	char name[32];
	char share_key[48];
	uint64_t t_req, t_alloc, t_resv;   /* t_resv 0 until a segment is seen */
	int64_t requested, allocated, reserved;
	uint64_t last_ts, resv_last_ts; /* counter values never go back in time */
	/* thinned counters (opts.counter_gap_ns): the last point written, and
	 * what is pending in the current gap: its highest and its last values */
	uint64_t thin_last;
	int thin_any, thin_pend;
	uint64_t max_t, pend_t;
	int64_t max_req, max_alloc, pend_req, pend_alloc;
} pf_space;

typedef struct pf_span { uint64_t b, e; } pf_span;
typedef struct pf_sublane {
	uint64_t uuid;
	uint64_t floor;            /* nothing may begin before this */
	pf_span *open;
	size_t nopen, cap;
} pf_sublane;
typedef struct pf_stream {
	int32_t device;
	uint64_t stream;
	char name[64];
	pf_sublane *lanes;
	size_t nlanes, cap;
} pf_stream;

typedef struct pf_lane { uint64_t uuid, last_ts; int busy; } pf_lane;
typedef struct pf_group {
	uint16_t space;
	const char *cls;
	uint64_t cls_iid;          /* its annotation string iid, 0 until used */
	char name[96];
	uint64_t uuid;
	pf_lane *lanes;
	size_t nlanes, cap;
	uint32_t *heap;            /* free lanes, lowest index first */
	size_t nheap, heap_cap;
} pf_group;

typedef struct pf_mark {
	uint8_t kind;
	uint8_t emitted;
	uint32_t name;             /* trace string id */
	int64_t value;
	uint64_t t;
} pf_mark;
typedef struct pf_mtrack {
	uint64_t uuid;
	uint32_t tid;              /* 0: the process's training track */
	uint64_t last_ts;
	pf_mark *stack;
	size_t n, cap;
} pf_mtrack;

typedef struct pf_sym { const char *func, *file; uint32_t line; } pf_sym;
typedef struct pf_module { uint64_t base, size, bias; const char *name; } pf_module;

/* ---- an export, and one trace (process) in it */
typedef struct pf_export {
	pf_out out;
	stp_export_opts opts;
	stp_export_stats st;
	uint64_t next_uuid, next_flow;
	uint64_t lo, hi;           /* window, export time */
	int has_window;
	int32_t *pids;
	size_t npids;
	char *err;
	size_t errlen;
} pf_export;

typedef struct pf_proc {
	pf_export *x;
	uint32_t index;
	const char *path;
	stp_reader *r;
	pf_seq seq;
	int64_t offset;
	uint64_t t_first, t_last;
	int wstate;                /* 0 before the window, 1 inside, 2 after */
	int32_t pid;
	uint64_t uuid;
	int saw_ranges;
	pf_objs objs;
	pf_space *spaces;
	size_t nspaces, spaces_cap;
	pf_stream *streams;
	size_t nstreams, streams_cap;
	pf_map stream_ix;
	pf_group *groups;
	size_t ngroups, groups_cap;
	pf_strtab group_text;      /* class names of the groups */
	pf_mtrack training;
	pf_mtrack *threads;
	size_t nthreads, threads_cap;
	pf_map thread_ix;          /* tid -> index in threads */
	pf_map thread_names;       /* tid -> trace string id */
	uint64_t findings_uuid;
	pf_map segs;               /* segment addr -> size */
	pf_module *mods;
	size_t nmods, mods_cap;
	pf_sym *syms;
	size_t nsyms, syms_cap;
	pf_map sym_ix;             /* ip -> index in syms */
	pf_strtab text;            /* symbol and label text */
	pf_map paths;              /* stack id -> call path string iid */
	pf_map names;              /* PF_KEY_* | value -> event name / string iid */
	const uint64_t *selected;  /* --top bitmap by alloc seq, NULL: all */
	uint64_t nselected_bits;
} pf_proc;

/* Keys of pf_proc.names: a tag in the top 4 bits. */
#define PF_KEY_SIZE (1ull << 60)     /* a size label, by bytes */
#define PF_KEY_STRING (2ull << 60)   /* an event name, by trace string id */
#define PF_KEY_LITERAL (3ull << 60)  /* an event name, by a literal's address */
#define PF_KEY_VALUE (4ull << 60)    /* an annotation string, by a literal's address */

/* perfetto_tracks.c */
uint64_t pf_new_uuid(pf_proc *p);
int pf_process_track(pf_proc *p, const stp_process_info *info, uint64_t ts);
uint32_t pf_space_get(pf_proc *p, unsigned kind, int32_t device, uint64_t ts);
int pf_space_reserved_track(pf_proc *p, pf_space *s, uint64_t ts);
uint32_t pf_stream_get(pf_proc *p, unsigned kind, int32_t device, uint64_t stream, uint64_t ts);
/* Sub-lane of stream s where [b, e] fits; PF_NONE on OOM. */
uint32_t pf_stream_lane(pf_proc *p, pf_stream *s, uint64_t b, uint64_t e);
uint32_t pf_group_get(pf_proc *p, uint16_t space, const char *cls, uint64_t ts);
/* A free lane of g usable from ts on; PF_NONE when max_lanes are busy. */
uint32_t pf_lane_take(pf_proc *p, pf_group *g, uint64_t ts);
void pf_lane_release(pf_group *g, uint32_t lane, uint64_t ts);
pf_mtrack *pf_thread_track(pf_proc *p, uint32_t tid, uint64_t ts);
int pf_training_track(pf_proc *p, uint64_t ts);
int pf_thread_renamed(pf_proc *p, uint32_t tid, uint32_t name, uint64_t ts);
uint64_t pf_findings_track(pf_proc *p, uint64_t ts);
void pf_tracks_free(pf_proc *p);

/* perfetto_symbols.c */
int pf_module_add(pf_proc *p, const stp_module_info *m);
const pf_sym *pf_symbol(pf_proc *p, uint64_t ip);
uint64_t pf_callstack_iid(pf_proc *p, pf_pkt *k, uint32_t stack);
uint64_t pf_call_path_iid(pf_proc *p, pf_pkt *k, uint32_t stack);
void pf_symbols_free(pf_proc *p);

/* perfetto_select.c: marks the top n objects of a trace by opts->top_by. */
int pf_select_top(pf_export *x, uint32_t trace, const char *path, int64_t offset, uint64_t **bits, uint64_t *nbits);

#define T_BEGIN PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN
#define T_END PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END
#define T_INSTANT PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT
#define T_COUNTER PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER

/* perfetto_emit.c: helpers every writer of events shares */
uint64_t pf_conv(const pf_proc *p, uint64_t t);  /* trace time -> export time */
uint64_t pf_at(const pf_proc *p, uint64_t t);    /* ... moved inside the window */
int pf_is_selected(const pf_proc *p, uint64_t seq);
void pf_fail(pf_export *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Event names and literal string values, cached in p->names: key says
 * which text, and the text is only looked at the first time. */
void pf_name_key(pf_proc *p, pf_pkt *k, uint64_t key, const char *text);
void pf_name_lit(pf_proc *p, pf_pkt *k, const char *lit);
void pf_arg_lit(pf_proc *p, pf_pkt *k, const char *key, const char *lit);

/* perfetto_memory.c */
int pf_on_alloc(pf_proc *p, const stp_event *ev, uint64_t t);
int pf_on_free(pf_proc *p, const stp_event *ev, uint64_t t);
int pf_on_segment(pf_proc *p, const stp_event *ev, uint64_t t);
int pf_on_api(pf_proc *p, const stp_event *ev, uint64_t t);
int pf_counters_packet(pf_proc *p, pf_space *s, uint64_t t);
/* Writes what thinned counters hold back (before an exact value, at the end). */
int pf_counters_flush(pf_proc *p, pf_space *s);
int pf_reserved_packet(pf_proc *p, pf_space *s, uint64_t t);
/* The lifetime slice of object oi: a = its ALLOC payload (NULL: rebuilt),
 * clipped = it was allocated before the window. */
int pf_draw_begin(pf_proc *p, uint32_t oi, uint64_t t, const stp_alloc_info *a, int clipped);
int pf_draw_end(pf_proc *p, pf_obj *o, uint64_t t, int freed);

/* perfetto_markers.c */
int pf_on_marker(pf_proc *p, const stp_event *ev, uint64_t t);
/* A folded iteration (FOLD event): an instant on the training track that
 * says what it stands for. */
int pf_on_fold(pf_proc *p, const stp_event *ev, uint64_t t);
/* "512 B", "1.50 MiB" (perfetto_memory.c). */
const char *pf_size_label(uint64_t b, char *buf, size_t len);
/* A REFUSED event: an instant on the training track (perfetto_markers.c). */
int pf_on_refused(pf_proc *p, const stp_event *ev, uint64_t t);
int pf_open_marks(pf_proc *p, pf_mtrack *mt, uint64_t t); /* BEGINs not yet written */
int pf_mark_pop_to(pf_proc *p, pf_mtrack *mt, size_t i, uint64_t t);

/* perfetto_extras.c */
int pf_emit_findings(pf_proc *p);
int pf_emit_series(pf_proc *p);

#endif
