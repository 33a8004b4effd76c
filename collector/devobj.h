/*
 * devobj.h - the live GPU-visible objects of the process (device, managed
 * and pinned host allocations, and the segments a caching allocator
 * reserved), shared by the CUDA backends of libstprof.so: the CUPTI
 * callbacks add and remove them, kernel launches look pointers up in them
 * (conservative references from the parameter buffer), and the Compute
 * Sanitizer backend copies a device's sorted ranges to the GPU for each
 * patched launch.  Internal to collector/.
 *
 * Invariants:
 *   - Entries never overlap: adding a range removes every older entry it
 *     overlaps (a free we did not see must not leave a stale object behind
 *     that would swallow the addresses of a new one).
 *   - Entries are kept sorted by address, so a lookup is a binary search that
 *     checks the END of the range too (an address one past an object is not
 *     in it), and a snapshot is already in the order the device search needs.
 *   - No fixed limit: the table grows (memory from mmap, never the heap being
 *     recorded).  A failed growth drops the new entry and counts it.
 *   - Every change bumps the generation, so a reader can tell whether a copy
 *     it made is still current without comparing contents.
 *   - Safe from any thread (one mutex; no callback runs under it).
 *   - Every add and remove first calls the Compute Sanitizer backend's sync
 *     point (sanitizer.h), outside the mutex: kernel accesses it still holds
 *     are written before the change.  So a backend that records a device
 *     object's FREE (or ALLOC) itself changes this table BEFORE recording it.
 */
#ifndef STPROF_COLLECTOR_DEVOBJ_H
#define STPROF_COLLECTOR_DEVOBJ_H

#include <stddef.h>
#include <stdint.h>

typedef struct stc_devobj {
	uint64_t addr, size;
	int32_t device;   /* -1: not tied to one device (pinned host memory) */
	uint8_t kind;     /* stp_mem_kind */
	uint8_t segment;  /* 1: an allocator's segment, not an object */
	uint32_t stack;   /* call path of the allocation, 0 = none */
	uint64_t id;      /* order of addition, from 1 */
} stc_devobj;

/* Adds [addr, addr+size).  Older entries that overlap it are removed (and
 * counted as stale).  Returns the new entry's id, 0 when size is 0 or the
 * table could not grow. */
__attribute__((visibility("hidden"))) uint64_t stc_devobj_add(uint64_t addr, uint64_t size, int32_t device,
                                                              uint8_t kind, uint8_t segment, uint32_t stack);
/* Removes the entry that STARTS at addr; fills *out (may be NULL) with it.
 * Returns 1 when one was removed, 0 when none starts there. */
__attribute__((visibility("hidden"))) int stc_devobj_remove(uint64_t addr, stc_devobj *out);
/* The entry that contains p (addr <= p < addr+size).  Returns 1 if found.
 * Objects are preferred to segments only in that segments never overlap
 * objects here: a backend records one or the other for a range. */
__attribute__((visibility("hidden"))) int stc_devobj_find(uint64_t p, stc_devobj *out);
/* Copies the entries of device dev (-1: all; entries with device -1 are
 * always included) in address order: starts[i] and ends[i] (exclusive), and
 * ids[i] when ids is not NULL.  Writes at most max; returns how many there
 * are (call again with a bigger buffer when that exceeds max).  *gen (may
 * be NULL) receives the generation the copy belongs to. */
__attribute__((visibility("hidden"))) size_t stc_devobj_snapshot(int32_t dev, uint64_t *starts, uint64_t *ends,
                                                                 uint64_t *ids, size_t max, uint64_t *gen);
__attribute__((visibility("hidden"))) uint64_t stc_devobj_generation(void);
__attribute__((visibility("hidden"))) size_t stc_devobj_count(void);
/* Entries removed because a newer one overlapped them; additions dropped
 * because the table could not grow. */
__attribute__((visibility("hidden"))) void stc_devobj_stats(uint64_t *stale, uint64_t *dropped);
/* Empties the table (tests; a forked child keeps its parent's objects). */
__attribute__((visibility("hidden"))) void stc_devobj_reset(void);
/* In a forked child: the mutex may have been held by a thread that is gone. */
__attribute__((visibility("hidden"))) void stc_devobj_atfork_child(void);

#endif
