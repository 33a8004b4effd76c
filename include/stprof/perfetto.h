/*
 * stprof/perfetto.h - Perfetto timelines from .stp traces, and a checker for
 * Perfetto trace files.
 *
 * stp_export_perfetto() reads one or more traces (one per rank/process) and
 * streams a Perfetto protobuf trace (.pftrace) that ui.perfetto.dev opens:
 * one process per trace, memory counters, iteration/phase/module slices,
 * per-stream API slices with alloc/free instants, object lifetimes on lane
 * tracks, flows alloc -> first access -> free, and allocation call stacks
 * weighted by bytes (a flamegraph of bytes by call site).  docs/perfetto.md
 * describes the tracks.  Memory use is bounded by the live objects and the
 * distinct strings/stacks, never by the trace length.
 *
 * The analysis results of the detector plug in through stp_export_opts
 * (classes, patterns, findings, simulated allocator series, symbols); every
 * one of them is optional.
 *
 * stp_lint_perfetto() checks any Perfetto protobuf file against the rules the
 * trace processor enforces silently (see docs/perfetto.md, "Lint rules").
 */
#ifndef STPROF_PERFETTO_H
#define STPROF_PERFETTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "detector.h"
#include "outfile.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ export */

/* An object as the exporter sees it when it is allocated.  An object is
 * identified by (trace, alloc_seq): the seq of its ALLOC event. */
typedef struct stp_export_object {
	uint32_t trace;              /* index into the traces of the export */
	uint64_t alloc_seq;          /* stp_event.seq of the ALLOC event */
	uint64_t alloc_ns;           /* its time_ns (the trace's own clock) */
	const stp_alloc_info *alloc; /* its payload; valid during the call only */
} stp_export_object;

/* What a symbolizer says about one instruction address.  NULL / 0 fields are
 * unknown.  The strings need to live only until the callback is called
 * again. */
typedef struct stp_export_frame {
	const char *function;
	const char *file;
	uint32_t line;
} stp_export_frame;

/* An inefficiency found by the detector: an instant on the process's
 * "findings" track. */
typedef struct stp_export_finding {
	uint32_t trace;
	uint64_t time_ns;       /* the trace's own clock */
	const char *name;       /* required, e.g. "late deallocation" */
	const char *suggestion; /* optional */
	const char *detail;     /* optional */
	uint64_t bytes;         /* 0: not given */
	int64_t object_seq;     /* alloc_seq of the object concerned; -1: none */
} stp_export_finding;

typedef struct stp_export_point {
	uint64_t time_ns;       /* the trace's own clock */
	double value;
} stp_export_point;

enum stp_export_unit {
	STP_UNIT_BYTES = 0,     /* shares the y axis of its space's counters */
	STP_UNIT_RATIO = 1,     /* a plain number, e.g. fragmentation 0..1 */
};

/* An extra counter track, e.g. the reserved bytes of a simulated allocator
 * or the fragmentation ratio.  Points must be in time order. */
typedef struct stp_export_series {
	uint32_t trace;
	const char *space;      /* a name from stp_export_space_name(); NULL: none */
	const char *name;       /* e.g. "reserved (sim: pytorch caching)" */
	unsigned unit;          /* enum stp_export_unit */
	const stp_export_point *points;
	size_t npoints;
} stp_export_series;

enum stp_export_top_by {
	STP_TOP_BY_AREA = 0,    /* bytes x lifetime (inside the window, if any) */
	STP_TOP_BY_SIZE = 1,    /* bytes */
};

typedef struct stp_export_opts {
	/* Limits.  Counters always cover every object; the limits apply to what
	 * is drawn per object (lifetime slices, alloc/free instants, flows,
	 * callstacks). */
	uint64_t top_n;         /* 0: every object */
	unsigned top_by;        /* enum stp_export_top_by */
	int has_window;         /* export only [window_begin_ns, window_end_ns] */
	uint64_t window_begin_ns, window_end_ns; /* since the earliest trace's first event */
	uint32_t max_lanes;     /* lifetime lanes per group; 0: 10000 */
	/* Counters of objects not drawn: at most one point per this many ns
	 * plus the highest and the last value of each such gap (peaks are
	 * kept); 0: a point per allocation and free. */
	uint64_t counter_gap_ns;
	int tensors_only;       /* draw only tensors (host pool 1) and device objects;
	                         * every space keeps its counters */

	/* Detector results (all optional). */
	void *ctx;              /* passed to every callback */
	/* The object's class ("persistent", ...); NULL: "unclassified".  Lanes
	 * are grouped by (memory space, class). */
	const char *(*classify)(void *ctx, const stp_export_object *obj);
	/* Pattern names that apply to the object; writes at most max, returns
	 * how many. */
	size_t (*patterns)(void *ctx, const stp_export_object *obj, const char **names, size_t max);
	/* Symbolizes ip of trace; returns 1 if *out was filled, 0 if unknown. */
	int (*symbolize)(void *ctx, uint32_t trace, uint64_t ip, stp_export_frame *out);
	/* Folded call paths (optional): 1 when the frame at ip is left out of
	 * the interned callstacks (framework frames); the one-line call path
	 * of an allocation, written into buf (returns its length, 0: none, the
	 * raw frames are used). */
	int (*hide_frame)(void *ctx, uint32_t trace, uint64_t ip);
	size_t (*path_text)(void *ctx, uint32_t trace, uint32_t stack, char *buf, size_t len);
	const stp_export_finding *findings;
	size_t nfindings;
	const stp_export_series *series;
	size_t nseries;

	/* Called every few MiB of input: trace index, bytes read, file size. */
	void (*progress)(void *ctx, uint32_t trace, uint64_t done, uint64_t total);
} stp_export_opts;

typedef struct stp_export_stats {
	uint64_t packets, bytes;       /* written */
	uint64_t events;               /* read */
	uint64_t objects;              /* allocations seen */
	uint64_t objects_drawn;        /* with a lifetime slice */
	uint64_t objects_no_lane;      /* selected but over max_lanes */
	uint64_t lanes;                /* lifetime lane tracks */
	uint64_t api_slices;
	uint64_t flows;
	uint64_t callstacks, frames;   /* interned */
	uint64_t unmatched_frees;      /* frees of addresses never allocated */
	uint64_t counter_points_held;  /* counter points merged by counter_gap_ns */
	uint64_t unmatched_markers;    /* ends without a begin */
	uint64_t findings, series_points;
} stp_export_stats;

/* A Perfetto timeline written by stprof (stprof/outfile.h): a TracePacket
 * first, naming stprof's tracks early. */
extern const stp_outkind stp_outkind_timeline;

/* Writes traces[0..ntraces) to out_path (as stprof/outfile.h says: an
 * earlier timeline there is kept as .old; a failed export leaves the path
 * as it was).  Returns 0, or -1 with a one-line message in err ("FILE:
 * offset N: what" for a bad trace).  opts and stats may be NULL. */
int stp_export_perfetto(const char *const *traces, size_t ntraces, const char *out_path,
                        const stp_export_opts *opts, stp_export_stats *stats, char *err,
                        size_t errlen);

/* The detector's results as the extension points above: dets[i] is the
 * result of stp_det_run() on traces[i] (NULL: none for that trace), run with
 * opt.keep_objects for classes and patterns per object.  Sets o's classify,
 * patterns, symbolize, findings (one per finding, at its worst instance's
 * wasted interval, with its suggestion) and series (each allocator model's
 * reserved bytes on its space's axis, and the fragmentation ratio of the
 * model as run); o->progress keeps working with its ctx.  The dets must
 * outlive the export; free the handle after it.  NULL when out of memory. */
typedef struct stp_export_detector stp_export_detector;
stp_export_detector *stp_export_detector_attach(stp_det *const *dets, size_t ndets, stp_export_opts *o);
void stp_export_detector_free(stp_export_detector *x);

/* The host's framework spaces, as devices of STP_MEM_HOST. */
#define STP_EXPORT_DEV_TENSORS (-2) /* PyTorch's CPU tensors (host pool 1) */
#define STP_EXPORT_DEV_JAX (-3)     /* JAX's CPU buffers (host pool 2) */
/* The name the exporter gives a memory space: "host", "cpu tensors",
 * "jax buffers", "cuda:N", "managed", "pinned".  Counter tracks are "<space> requested|allocated|reserved". */
const char *stp_export_space_name(unsigned kind, int32_t device, char *buf, size_t len);

/* -------------------------------------------------------------- lint */

enum stp_lint_rule {
	STP_LINT_MALFORMED = 0,     /* not a protobuf stream of TracePackets */
	STP_LINT_SEQUENCE_ID,       /* TrackEvent/interned data without a sequence id */
	STP_LINT_FIRST_PACKET,      /* sequence not started by a cleared-state packet */
	STP_LINT_INTERNED_ID,       /* iid 0, or used before it is defined */
	STP_LINT_NESTING,           /* END without BEGIN, END < BEGIN, overlap, unended */
	STP_LINT_TRACK,             /* event on an undeclared track; bad descriptor */
	STP_LINT_PARENT,            /* parent_uuid never declared, or a cycle */
	STP_LINT_COUNTER,           /* slices on counter tracks, counters elsewhere */
	STP_LINT_FLOW,              /* a flow with one end only */
	STP_LINT_INSTANT_NAME,      /* an instant without a name */
	STP_LINT_TIMESTAMP,         /* missing or negative timestamp */
	STP_LINT_NRULES
};

typedef struct stp_lint_opts {
	const char *name;       /* file name used in messages */
	FILE *report;           /* where violations are printed; NULL: nowhere */
	uint64_t max_report;    /* print at most this many (0: all) */
} stp_lint_opts;

typedef struct stp_lint_result {
	uint64_t packets, track_events, descriptors, bytes;
	uint64_t violations;
	uint64_t by_rule[STP_LINT_NRULES];
} stp_lint_result;

/* Checks the Perfetto trace read from f.  Returns 0 when it breaks no rule,
 * 1 when it does, -1 on a read error (res->violations may be 0 then). */
int stp_lint_perfetto(FILE *f, const stp_lint_opts *opts, stp_lint_result *res);
const char *stp_lint_rule_name(unsigned rule);

#ifdef __cplusplus
}
#endif
#endif
