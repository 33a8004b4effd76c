/*
 * marker.c - stprof_mark_v1, the one exported entry point of the marker API
 * (include/stprof/stprof.h finds it with dlsym).  Records a MARKER event on
 * the calling thread.
 */
#include <string.h>

#include "internal.h"

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
	stc_emit(&ev);
	t_busy = was;
}
