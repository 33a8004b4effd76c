/*
 * jax_entry.c - the JAX backend of libstprof.so (collector/jax/): the two
 * exported entry points through which the Python shim (stprof.jax_buffers,
 * jax/python/) records JAX's buffers as events of their own pool,
 * STP_POOL_JAX (docs/jax.md).  It sees the core through core/face.h and
 * needs no hooks: it records whenever the shim calls it.
 *
 *   stprof_jax_stack_v1(frames)   interns a call path given as text, one
 *                                 "FILE:LINE in FUNCTION" a line, innermost
 *                                 first (Python frames: STP_PYFRAME_TAG |
 *                                 string id, as the torch backend's walks
 *                                 make them); returns its stack id, 0 when
 *                                 not recording or empty
 *   stprof_jax_buffer_v1(op, kind, device, addr, size, stack)
 *                                 op 1: ALLOC of a buffer (size, host or
 *                                 device memory of an ordinal, the stack);
 *                                 op 2: its FREE
 *
 * The shim owns what a buffer is and where it came from (JAX keeps it
 * from C: a buffer is made by XLA's allocators out of the program's
 * sight); this file only turns calls into events.  Buffers are not added
 * to the live device-object table: their addresses are stand-ins unless
 * the shim says otherwise.  Both run with t_busy set, so the collector's
 * own allocations are not recorded.
 */
#include <string.h>

#include "../core/face.h"
#include "stprof/trace.h"

#define STC_JAX_FRAMES_MAX 64

STC_EXPORT uint32_t stprof_jax_stack_v1(const char *frames);
STC_EXPORT void stprof_jax_buffer_v1(int op, int kind, int device, uint64_t addr, uint64_t size, uint32_t stack);

uint32_t stprof_jax_stack_v1(const char *frames)
{
	if (atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON || !frames)
		return 0;
	int was = t_busy;
	t_busy = 1;
	uint64_t ips[STC_JAX_FRAMES_MAX];
	uint32_t n = 0;
	const char *p = frames;
	while (*p && n < STC_JAX_FRAMES_MAX) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len) {
			uint32_t id = stc_intern_string(p, len < 4096 ? len : 4096);
			if (id)
				ips[n++] = STP_PYFRAME_TAG | id;
		}
		if (!e)
			break;
		p = e + 1;
	}
	uint32_t s = n ? stc_intern_stack(ips, n) : 0;
	t_busy = was;
	return s;
}

void stprof_jax_buffer_v1(int op, int kind, int device, uint64_t addr, uint64_t size, uint32_t stack)
{
	if (atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON || (op != 1 && op != 2) ||
	    (kind != STP_MEM_HOST && kind != STP_MEM_DEVICE))
		return;
	int was = t_busy;
	t_busy = 1;
	stp_event ev = {.type = op == 1 ? STP_EV_ALLOC : STP_EV_FREE};
	int32_t dev = kind == STP_MEM_HOST ? -1 : device;
	if (op == 1)
		ev.u.alloc = (stp_alloc_info){.addr = addr, .size = size, .requested = size, .stack = stack,
		                              .kind = (uint8_t)kind, .device = dev, .pool = STP_POOL_JAX};
	else
		ev.u.free = (stp_free_info){.addr = addr, .size = size, .kind = (uint8_t)kind, .device = dev,
		                            .pool = STP_POOL_JAX};
	stc_emit(&ev);
	t_busy = was;
}
