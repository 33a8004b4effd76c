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

struct stp_snapshot_import_stats;
/* stp_snapshot_import on a pickle held in memory (name: for messages); the
 * fuzz target's way in without a pickle file. */
int snap_import_mem(const uint8_t *data, size_t len, const char *name, const char *out_stp,
                    struct stp_snapshot_import_stats *st, char *err, size_t errlen);
#endif
