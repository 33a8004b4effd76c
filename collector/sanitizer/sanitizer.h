/*
 * sanitizer.h - the Compute Sanitizer backend of libstprof.so (`stprof
 * record --accesses=exact`): which objects each kernel launch read and
 * wrote, exactly, from patched global memory instructions.  Internal to
 * collector/sanitizer/; the backend sees the core through core/face.h and
 * registers its hooks (start, finish, mark: sanitizer_backend.c).  It is compiled in
 * only where the API's headers were found (STPROF_HAVE_SANITIZER);
 * otherwise these functions are stubs.
 *
 *   sanitizer_backend.c  the callbacks, rings, held launches, start and end
 *   sanitizer_map.c      a device's object map, decoding (host side)
 *   sanitizer_hits.h     device layout, search and bits, shared with the patch
 *   sanitizer_patch.cu   the device patch (nvcc --compile-as-tools-patch)
 *
 * Ordering contract: a sampled kernel launch takes its seq (its place among
 * every event of the process) at its launch callback and is held until
 * its hits are read back at a drain; the collector's watermark stays below
 * the oldest held launch (the backend's mark hook), so readers see it in
 * its place.  Everything else the backend records (copies, sets, unsampled
 * launches, and the device allocations and frees it sees when no other
 * backend records them) is written at once.  A launch's hits are decoded
 * against the map it was given (immutable), so no access is attributed to
 * an object allocated after the launch at a reused address, and another
 * part of the collector recording a device object's allocation or free
 * never has to wait for the GPU.
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
/* 1 when the backend is compiled in. */
__attribute__((visibility("hidden"))) int stc_sanitizer_built(void);
/* While it records this process's kernel launches, copies and sets
 * (started, subscribed, not a forked child) it claims them (face.h's
 * g_sanitizer_api_pid): the CUPTI backend then records none of its own, so
 * each is one event, the one with the exact accesses (a second,
 * conservative read|write event for the same launch would hide every dead
 * write). */

#endif
