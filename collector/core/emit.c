/*
 * emit.c - recording one event on the calling thread: the entry every
 * recorder calls (the heap interposers, the marker and API entry points,
 * the backends through face.h).
 *
 * The path of an event: the thread's slot (made at its first event, with
 * its THREAD event), the trace open (opened lazily in a fork child), the
 * event encoded into the thread's buffer under its lock (stc_tbuf_put,
 * inline), and while the flusher thread is not running yet, whether it is
 * due (flusher.c starts it lazily).  Nothing else: no hook, no indirect call.
 */
#include "tbuf.h"

void stc_emit(stp_event *ev)
{
	stc_tbuf *b = stc_tbuf_self();
	if (STC_UNLIKELY(!b) || STC_UNLIKELY(!stc_ensure_output()))
		return;
	if (STC_UNLIKELY(!stc_tbuf_put(b, ev, 0, 0, NULL)))
		return;
	if (STC_UNLIKELY(!atomic_load_explicit(&g_flusher_on, memory_order_relaxed)))
		stc_flusher_lazy(ev->time_ns);
}

void stc_emit_span(stp_event *ev, uint64_t begin_ns)
{
	stc_tbuf *b = stc_tbuf_self();
	if (STC_UNLIKELY(!b) || STC_UNLIKELY(!stc_ensure_output()))
		return;
	uint64_t now;
	if (STC_UNLIKELY(!stc_tbuf_put(b, ev, 1, begin_ns, &now)))
		return;
	if (STC_UNLIKELY(!atomic_load_explicit(&g_flusher_on, memory_order_relaxed)))
		stc_flusher_lazy(now);
}
