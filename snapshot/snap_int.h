/*
 * snap_int.h - what the snapshot importer's files share (snapshot/ internal).
 *
 * The importer reads the pickle (shaped: only what a snapshot's importer
 * uses is kept, and segments, trace entries and annotations are converted
 * as they are read, pickle.h) into imp_ev records (one per future trace
 * event, in time order once sorted) and a frame table; snap_replay.c
 * rebuilds the state before the ring buffer's first entry; snap_import.c
 * writes the trace.  Frames lists are converted once each into call paths
 * (stack indices), by the offset of the pickle node.
 */
#ifndef STP_SNAPSHOT_INT_H
#define STP_SNAPSHOT_INT_H

#include <stdint.h>

#include "pickle.h"
#include "stprof/trace.h"

typedef struct imp_ev {
	uint64_t time_ns;
	uint64_t order;      /* position read, to keep sorting stable */
	uint8_t type;        /* STP_EV_ALLOC, FREE, SEGMENT_*, MARKER */
	uint8_t mark_kind;   /* for MARKER */
	int32_t device;
	uint64_t addr, size, requested, stream;
	uint32_t stack;      /* call path: the importer's stack index + 1, 0: none */
	const char *name;    /* MARKER name (a static string or the importer's copy) */
	int64_t value;
} imp_ev;

typedef struct imp_vec {
	imp_ev *v;
	size_t n, cap;
} imp_vec;

int imp_push(imp_vec *vec, const imp_ev *e);

/* PyTorch's block rounding without roundup_power2_divisions: 512-byte
 * multiples, at least 512. */
static inline uint64_t imp_round(uint64_t req)
{
	return req < 512 ? 512 : (req + 511) / 512 * 512;
}

/*
 * Rebuilds what was live before the first trace entry: starts from the end
 * state (the segments and allocated blocks, as events in `end_segs` and
 * `end_allocs`) and undoes the trace entries `tr` backwards.  Appends to
 * `out` the SEGMENT_RESERVE and ALLOC events of that initial state (time
 * and order left 0 for the caller to set).  Returns 0 or -1 (no memory).
 */
int imp_replay_initial(const imp_vec *end_segs, const imp_vec *end_allocs, const imp_vec *tr, imp_vec *out);

/* snap_check.c: how many ALLOC events of ev (in time order) lie outside
 * the segments live on their device at that moment (0 when ev has no
 * segments at all); *first: the first one's address.  UINT64_MAX when out
 * of memory. */
uint64_t imp_outside_segments(const imp_vec *ev, uint64_t *first);
/* The MODULE path of a source frame (stprof/srcframe.h) for a function,
 * file and line given as (pointer, length) pairs, malloc'd; a \x1f inside
 * the name or file (which would break the split) becomes a space.  NULL
 * when out of memory.  A negative line is written as 0. */
char *snap_frame_text(const char *name, size_t nlen, const char *file, size_t flen, int64_t line);

/* The source frames of an import, in the order they are made (frame k is
 * text[k], a snap_frame_text). */
typedef struct snap_frames {
	char **text;
	size_t n, cap;
} snap_frames;
/* Appends t (taken: freed on failure); its index, -2 when out of memory or
 * t is NULL. */
int64_t snap_frames_add(snap_frames *f, char *t);
void snap_frames_free(snap_frames *f);

/* Opens the trace out and writes its beginning: the PROCESS (cmdline,
 * exe), THREAD 1 named thread, a MODULE per source frame text (frame k at
 * STP_SRCFRAME_BASE + k * STP_SRCFRAME_STRIDE), all at t0.  NULL with err
 * ("OUT: cannot write the trace", or the writer's) on failure. */
stp_writer *snap_trace_begin(const char *out, const char *cmdline, const char *exe, const char *thread, uint64_t t0,
                             char *const *ftext, size_t nf, char *err, size_t errlen);

struct stp_snapshot_import_stats;
/* stp_snapshot_import on a pickle held in memory (name: for messages); the
 * fuzz target's way in without a pickle file. */
int snap_import_mem(const uint8_t *data, size_t len, const char *name, const char *out_stp,
                    struct stp_snapshot_import_stats *st, char *err, size_t errlen);

struct pp_profile;
struct stp_pprof_import_stats;
/* stp_pprof_import on a parsed profile (pprof.h); the fuzz target's way in. */
int snap_pprof_import_profile(const struct pp_profile *p, const char *name, const char *out_stp,
                              struct stp_pprof_import_stats *st, char *err, size_t errlen);
#endif
