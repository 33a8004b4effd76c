/*
 * marker.c - stprof_mark_v1, the one exported entry point of the marker API
 * (include/stprof/stprof.h finds it with dlsym).  Records a MARKER event on
 * the calling thread; the first iteration marker starts the folding of
 * steady iterations (fold.c), and an iteration marker may switch the host
 * heap's sampling (sample.c) or the lean recording of steady iterations
 * (fold.c), which an annotation right after it records.  stprof_lean_v1
 * tells the Python shim which recording is in force.
 */
#include <string.h>

#include "fold.h"
#include "sample.h"

__attribute__((visibility("default"))) void stprof_mark_v1(int kind, const char *name, int64_t value);
__attribute__((visibility("default"))) int stprof_lean_v1(void);

/* Whether the iteration under way is recorded lean (fold.c): the Python
 * shim asks at each ITER_BEGIN it marks, and hands out no backward sites
 * while it is. */
int stprof_lean_v1(void)
{
	return __atomic_load_n(&g_lean_now, __ATOMIC_RELAXED) != 0;
}

/* Lean recording is possible: a Python loop whose frames are read in
 * place (torch_lean.c matches tensors by their Python frames). */
static int lean_allowed(void)
{
	return g_cfg.lean && g_cfg.depth && stc_py_active() && stc_py_frames_how() == STC_PYF_IN_PLACE;
}

void stprof_mark_v1(int kind, const char *name, int64_t value)
{
	if (atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON || kind < 1 ||
	    kind > STP_MARK_KIND_MAX)
		return;
	int was = t_busy;
	t_busy = 1;
	stp_event ev = {.type = STP_EV_MARKER};
	ev.u.marker.kind = (uint8_t)kind;
	ev.u.marker.name = name && *name ? stc_intern_string(name, strnlen(name, 4096)) : 0;
	ev.u.marker.value = value;
	if (kind == STP_MARK_ITER_BEGIN && !__atomic_load_n(&g_fold_on, __ATOMIC_RELAXED))
		stc_fold_activate(); /* before the marker is recorded: the folder sees it */
	stc_emit(&ev);
	if (kind == STP_MARK_ITER_BEGIN || kind == STP_MARK_ITER_END) {
		int lean = kind == STP_MARK_ITER_BEGIN && g_fold_on ? stc_fold_lean_begin(lean_allowed()) : -1;
		if (lean >= 0) {
			stp_event an = {.type = STP_EV_MARKER};
			an.u.marker.kind = STP_MARK_ANNOTATION;
			an.u.marker.name = g_lean_annotation_id =
			        stc_intern_string(STP_LEAN_ANNOTATION, strlen(STP_LEAN_ANNOTATION));
			an.u.marker.value = lean;
			stc_emit(&an);
		}
		/* after g_lean_now: torch_lean.c reads both; only where iterations
		 * may go lean (no cost elsewhere) */
		if (kind == STP_MARK_ITER_BEGIN && g_fold_on && lean_allowed())
			__atomic_add_fetch(&g_iter_gen, 1, __ATOMIC_RELEASE);
		int64_t r = stc_sample_marker(kind);
		if (r >= 0) {
			stp_event an = {.type = STP_EV_MARKER};
			an.u.marker.kind = STP_MARK_ANNOTATION;
			an.u.marker.name = g_heap_annotation_id =
			        stc_intern_string(STP_HEAP_SAMPLE_ANNOTATION, strlen(STP_HEAP_SAMPLE_ANNOTATION));
			an.u.marker.value = r;
			stc_emit(&an);
		}
	}
	t_busy = was;
}
