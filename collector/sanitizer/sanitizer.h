/*
 * sanitizer.h - the Compute Sanitizer backend of libstprof.so (`stprof
 * record --accesses=exact`): which objects each kernel launch read and
 * wrote, exactly, from patched global memory instructions.  Internal to
 * collector/sanitizer/; the backend sees the core through core/face.h and
 * registers the three hooks below (sanitizer_backend.c).  It is compiled in
 * only where the API's headers were found (STPROF_HAVE_SANITIZER);
 * otherwise these functions are stubs.
 *
 *   sanitizer_backend.c  the callbacks, the queue, start and end
 *   sanitizer_map.c      a device's object map and a launch's block (host side)
 *   sanitizer_hits.h     the search and hit bits, shared with the patch
 *   sanitizer_patch.cu   the device patch (nvcc --compile-as-tools-patch)
 *
 * Ordering contract: what the backend records (launches, copies, sets, and
 * the device allocations and frees it sees when no other backend records
 * them) waits in one queue, in call order, until the launches' hit bits are
 * read back at a synchronization; the queue is then written in that order.
 * A part of the collector that records a device object's allocation or free
 * itself changes the live-object table (face.h) first: the table runs the
 * backends' devobj_change hooks on every change, this backend's being
 * stc_sanitizer_sync_point(), which writes the queue out
 * before that record, so no access is written after the free of its object
 * or against an object allocated after the launch.
 */
#ifndef STPROF_COLLECTOR_SANITIZER_H
#define STPROF_COLLECTOR_SANITIZER_H

/* The start hook: starts the backend when STPROF_ACCESSES=exact.  Records an
 * annotation "stprof.sanitizer": 1 started; 0 not built in; -1 no
 * libsanitizer-public.so; -2 it lacks a function; -3 subscribing failed
 * (another tool is subscribed, or no driver); -4 started without the patch
 * file (launches are recorded without ranges). */
__attribute__((visibility("hidden"))) void stc_sanitizer_start(void);
/* The finish hook, at the end of the process image: writes what is queued. */
__attribute__((visibility("hidden"))) void stc_sanitizer_finish(void);
/* The devobj_change hook: writes the queue before another part records a
 * device object's change (see above).  Cheap when nothing is queued; a
 * no-op inside the backend. */
__attribute__((visibility("hidden"))) void stc_sanitizer_sync_point(void);
/* 1 when the backend is compiled in. */
__attribute__((visibility("hidden"))) int stc_sanitizer_built(void);
/* While it records this process's kernel launches, copies and sets
 * (started, subscribed, not a forked child) it claims them (face.h's
 * g_sanitizer_api_pid): the CUPTI backend then records none of its own, so
 * each is one event, the one with the exact accesses (a second,
 * conservative read|write event for the same launch would hide every dead
 * write). */

#endif
