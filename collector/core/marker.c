/*
 * marker.c - stprof_mark_v1, the one exported entry point of the marker API
 * (include/stprof/stprof.h finds it with dlsym).  Records a MARKER event on
 * the calling thread; the first iteration marker starts the folding of
 * steady iterations (fold.c), and an iteration marker may switch the host
 * heap's sampling (sample.c), which an annotation right after it records.
 */
#include <string.h>

#include "fold.h"
#include "sample.h"

__attribute__((visibility("default"))) void stprof_mark_v1(int kind, const char *name, int64_t value);

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
