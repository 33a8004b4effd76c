/*
 * sanitizer_map.h - the host side of the Compute Sanitizer backend that
 * needs no GPU: a launch's object map built from the live-object table
 * (core/face.h), the launch block image put in front of it, the decoding of a
 * block's hit bits into the API event's ranges, the ranges of a copy or a
 * set, and launch sampling.  Pure functions over plain buffers, so that the
 * white-box tests run them on recorded buffers (collector/sanitizer/tests/).
 * Internal to collector/sanitizer/.
 *
 * Invariants:
 *   - A map is immutable once built: starts/ends/ids are the devobj
 *     snapshot of one generation for one device, in address order; the
 *     launches that were given it decode against it even after the table
 *     changed (objects freed and their addresses reused since).
 *   - Decoding yields, per object hit and in address order, its whole range
 *     or, when the chunk masks say only some 32nds of it were touched, one
 *     range per run of touched 32nds, each with exactly the mode bits the
 *     device set (READ, WRITE or both): never a range for an object the
 *     launch did not touch, and never less of an object than was touched.
 *   - No fixed object limit: a map holds the whole snapshot.
 */
#ifndef STPROF_COLLECTOR_SANITIZER_MAP_H
#define STPROF_COLLECTOR_SANITIZER_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "sanitizer_hits.h"
#include "stprof/trace.h"

typedef struct stc_szmap {
	uint64_t n;
	uint64_t *starts, *ends, *ids; /* n each, one mmap'ed region */
	size_t bytes;                  /* of that region */
	uint64_t gen;                  /* devobj generation of the snapshot */
	int32_t device;
} stc_szmap;

/* A new map of device dev's live objects (stc_devobj_snapshot); NULL when out
 * of memory.  Freed with stc_szmap_free. */
__attribute__((visibility("hidden"))) stc_szmap *stc_szmap_build(int32_t dev);
__attribute__((visibility("hidden"))) void stc_szmap_free(stc_szmap *m);

/* Ranges of the objects whose hit bits are set in words (a launch area's
 * words for n objects of starts/ends), address order: an object's whole
 * range, or the runs of its 32nds set in chunks[i] (chunks may be NULL:
 * whole objects).  At most max ranges are written (ids[k] too when ids_out
 * is not NULL: the object of each range).  Returns how many there are. */
__attribute__((visibility("hidden"))) size_t stc_sz_decode(const uint64_t *starts, const uint64_t *ends,
                                                           const uint64_t *ids, uint64_t n, const uint32_t *words,
                                                           const uint32_t *chunks, stp_range *out, uint64_t *ids_out,
                                                           size_t max);
/* The first byte offset of chunk c (0..32) of an object of len bytes. */
__attribute__((visibility("hidden"))) uint64_t stc_sz_chunk_start(uint64_t len, uint32_t c);

/* Sampling: launch number k (from 0) gets its accesses recorded when it is a
 * multiple of every (every 0 or 1: all of them). */
__attribute__((visibility("hidden"))) int stc_sz_sampled(uint64_t k, uint32_t every);

/* The ranges of a copy (source READ, destination WRITE) and of a set
 * (WRITE): a 2D/3D operation covers from the first byte to the last row's
 * end.  Return how many ranges were written (0 for an empty operation). */
__attribute__((visibility("hidden"))) uint32_t stc_sz_copy_ranges(uint64_t src, uint64_t dst, uint64_t size,
                                                                  uint64_t width, uint64_t height, uint64_t depth,
                                                                  uint64_t src_pitch, uint64_t dst_pitch,
                                                                  stp_range out[2]);
__attribute__((visibility("hidden"))) uint32_t stc_sz_set_ranges(uint64_t addr, uint64_t width, uint64_t height,
                                                                 uint64_t pitch, uint32_t elem, stp_range out[1]);

#endif
