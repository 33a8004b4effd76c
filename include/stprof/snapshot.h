/*
 * stprof/snapshot.h - PyTorch memory snapshots in and out (stp_snapshot).
 *
 * A PyTorch memory snapshot is the pickle torch.cuda.memory._dump_snapshot
 * writes and https://pytorch.org/memory_viz opens.  Two layouts exist:
 *   - PyTorch 1.13: a list of segments; blocks have size, state and a
 *     `history` of {addr, real_size, frames}; no trace;
 *   - PyTorch 2.x: a dict with `segments` (blocks with address, size,
 *     requested_size, state, frames), `device_traces` (a ring buffer of
 *     alloc / free_requested / free_completed / segment_alloc / segment_free
 *     / segment_map / segment_unmap / oom / snapshot entries per device),
 *     optionally `allocator_settings` and `external_annotations`.
 * The pickle reader executes nothing: any opcode that could import or call
 * code is refused (docs/snapshot.md).
 *
 * Import maps the snapshot onto trace events (frames become source frames,
 * stprof/srcframe.h); export writes any trace as a snapshot.  Both report
 * errors as one line "FILE: offset N: what" (import) or "FILE: what".
 */
#ifndef STPROF_SNAPSHOT_H
#define STPROF_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "outfile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the file starts like a pickle (byte 0x80: protocol 2 or later),
 * 0 otherwise or when it cannot be read. */
int stp_snapshot_is_pickle(const char *path);

typedef struct stp_snapshot_import_stats {
	int layout;                /* 113 (PyTorch 1.13 list) or 2 (2.x dict) */
	int protocol;              /* pickle protocol announced */
	uint64_t segments, blocks; /* in `segments` */
	uint64_t entries;          /* trace entries read (all devices) */
	uint64_t skipped;          /* entries with an unknown action or no address */
	uint64_t initial_segments, initial_allocs; /* rebuilt from before the ring's first entry */
	uint64_t events;           /* events written */
	uint64_t frames;           /* distinct source frames */
	int synthetic_segments;    /* written by stprof from a trace without segments */
	/* allocations outside every segment live on their device: the segments
	 * are not the allocator's whole state, and were dropped (no segment
	 * events written; the trace carries the annotation
	 * "stprof.segments_dropped" with this count) */
	uint64_t outside_allocs, first_outside_addr;
	/* items of the segments list that are not segments (not dicts), dropped */
	uint64_t dropped_segments;
} stp_snapshot_import_stats;

/* Reads the pickle and writes a .stp trace.  Returns 0, or -1 with err set. */
int stp_snapshot_import(const char *pickle, const char *out_stp, stp_snapshot_import_stats *st, char *err,
                        size_t errlen);

/*
 * JAX device memory profiles: the gzip'd pprof protocol buffer that
 * jax.profiler.save_device_memory_profile() writes (the buffers and
 * executables live at that moment, with the Python traceback that made
 * each; docs/jax.md).  Import writes a trace of that one moment: one ALLOC
 * per buffer (pool STP_POOL_JAX; host memory for "cpu" devices), at
 * stand-in addresses (the profile has none), frames as source frames.
 */
typedef struct stp_pprof_import_stats {
	int gzipped;
	uint64_t samples;          /* samples read */
	uint64_t buffers, executables, other; /* allocations by the sample's kind label */
	uint64_t allocations, bytes; /* ALLOC events written and their bytes */
	uint64_t skipped;          /* samples of 0 bytes (executables on a CPU): no allocation */
	uint64_t frames;           /* distinct source frames */
	uint64_t devices;          /* distinct devices (the host counts as one) */
	uint64_t events;           /* events written, process and thread included */
} stp_pprof_import_stats;

/* 1 when the file starts with the gzip magic (a profile as JAX writes it). */
int stp_snapshot_is_pprof(const char *path);
/* Reads the profile and writes a .stp trace.  0, or -1 with err set. */
int stp_pprof_import(const char *path, const char *out_stp, stp_pprof_import_stats *st, char *err, size_t errlen);

/* How the exporter names a frame that is an address (not a source frame). */
typedef struct stp_snap_frame {
	const char *name;     /* function, or "module+0xoff" */
	const char *filename; /* source file or module path ("??" when unknown) */
	uint32_t line;
} stp_snap_frame;

/* Which allocations a snapshot holds (stp_snapshot_export_opts.spaces). */
#define STP_SNAP_AUTO 0u     /* device memory if the trace has some, else a
                              * PyTorch run's tensors, else everything */
#define STP_SNAP_HEAP 1u     /* the host heap (not tensors) */
#define STP_SNAP_TENSORS 2u  /* host tensor storages (pool 1) */
#define STP_SNAP_DEVICE 4u   /* device, managed and pinned memory, segments */

typedef struct stp_snapshot_export_opts {
	int layout; /* 2 (default, 0 means 2) or 113 */
	unsigned spaces; /* STP_SNAP_* bits; STP_SNAP_AUTO (0): see above */
	/* called for every MODULE event that is not a source frame */
	void (*module)(void *ctx, const char *path, uint64_t base, uint64_t size, uint64_t bias,
	               const uint8_t *build_id, uint32_t build_id_len);
	/* names an address; caller = 1 for a return address.  NULL: "0x..." */
	void (*resolve)(void *ctx, uint64_t ip, int caller, stp_snap_frame *out);
	void *ctx;
} stp_snapshot_export_opts;

typedef struct stp_snapshot_export_stats {
	uint64_t events;           /* trace events read */
	uint64_t entries;          /* trace entries written */
	uint64_t segments, blocks; /* in `segments` */
	uint64_t frames;           /* distinct frames written */
	int synthetic_segments;    /* the trace had no segments: one per live allocation */
	unsigned spaces;           /* the STP_SNAP_* bits exported (AUTO resolved) */
	uint64_t allocs, skipped_allocs; /* allocations exported, and of other spaces left out */
} stp_snapshot_export_stats;

/* What a snapshot output may replace (stprof/outfile.h): a pickle of
 * protocol 2, as this exporter and PyTorch's C++ pickler write them. */
extern const stp_outkind stp_outkind_snapshot;

/* Reads a .stp trace and writes a snapshot pickle (as stprof/outfile.h
 * says).  Returns 0 or -1. */
int stp_snapshot_export(const char *stp, const char *out_pickle, const stp_snapshot_export_opts *o,
                        stp_snapshot_export_stats *st, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
