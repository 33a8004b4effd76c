/*
 * stprof/stprof.h - marker API for programs profiled by stprof.
 *
 * Header-only.  A program marks its iterations, phases and modules:
 *
 *     for (int it = 0; it < n; it++) {
 *         stprof_iteration_begin(it);
 *         stprof_phase_begin("forward", mb);  ... stprof_phase_end("forward", mb);
 *         stprof_phase_begin("backward", mb); ... stprof_phase_end("backward", mb);
 *         stprof_iteration_end(it);
 *     }
 *
 * When the program runs under stprof, each call records a marker event on the
 * calling thread.  When it does not, a call costs one load and one predictable
 * branch after a single lookup on first use, and the program needs no library
 * to link against: the entry point is found at run time with dlsym()
 * (part of libc since glibc 2.34; link with -ldl on older systems).
 *
 * Names are copied by the collector; they may be freed after the call.
 * The kinds match stp_marker_kind in stprof/trace.h.
 */
#ifndef STPROF_STPROF_H
#define STPROF_STPROF_H

#include <dlfcn.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The collector's one entry point (defined in libstprof.so). */
typedef void (*stprof_mark_fn)(int kind, const char *name, int64_t value);
#define STPROF_MARK_SYMBOL "stprof_mark_v1"

#define STPROF_ITER_BEGIN 1
#define STPROF_ITER_END 2
#define STPROF_PHASE_BEGIN 3
#define STPROF_PHASE_END 4
#define STPROF_MODULE_ENTER 5
#define STPROF_MODULE_EXIT 6
#define STPROF_ANNOTATION 7

/* One resolved pointer per translation unit; a race between threads on the
 * first call is benign (both store the same value) and done with atomics. */
static stprof_mark_fn stprof__fn_;
static int stprof__state_; /* 0 unresolved, 1 resolved */

static inline stprof_mark_fn stprof__get(void)
{
	if (__builtin_expect(__atomic_load_n(&stprof__state_, __ATOMIC_ACQUIRE), 1))
		return __atomic_load_n(&stprof__fn_, __ATOMIC_RELAXED);
	stprof_mark_fn f;
	void *sym = dlsym(RTLD_DEFAULT, STPROF_MARK_SYMBOL);
	__builtin_memcpy(&f, &sym, sizeof f);
	__atomic_store_n(&stprof__fn_, f, __ATOMIC_RELAXED);
	__atomic_store_n(&stprof__state_, 1, __ATOMIC_RELEASE);
	return f;
}

static inline void stprof_mark(int kind, const char *name, int64_t value)
{
	stprof_mark_fn f = stprof__get();
	if (f)
		f(kind, name, value);
}

/* True when the program runs under the stprof collector. */
static inline int stprof_active(void) { return stprof__get() != 0; }

static inline void stprof_iteration_begin(int64_t i) { stprof_mark(STPROF_ITER_BEGIN, 0, i); }
static inline void stprof_iteration_end(int64_t i) { stprof_mark(STPROF_ITER_END, 0, i); }
/* A phase of an iteration: "forward", "backward", "optimizer", ...;
 * micro_batch tells micro-batches apart (use 0 when there is one). */
static inline void stprof_phase_begin(const char *phase, int64_t micro_batch)
{
	stprof_mark(STPROF_PHASE_BEGIN, phase, micro_batch);
}
static inline void stprof_phase_end(const char *phase, int64_t micro_batch)
{
	stprof_mark(STPROF_PHASE_END, phase, micro_batch);
}
/* A module (layer) of the model: "layers.3.mlp". */
static inline void stprof_module_enter(const char *module) { stprof_mark(STPROF_MODULE_ENTER, module, 0); }
static inline void stprof_module_exit(const char *module) { stprof_mark(STPROF_MODULE_EXIT, module, 0); }
static inline void stprof_annotate(const char *name, int64_t value) { stprof_mark(STPROF_ANNOTATION, name, value); }

#ifdef __cplusplus
}
#endif
#endif
