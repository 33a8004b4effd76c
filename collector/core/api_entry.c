/*
 * api_entry.c - stprof_api_v1, the exported entry point through which a
 * framework shim records one operator's accesses: an API event (kind, name)
 * with the address ranges it read and wrote (STP_ACCESS_* modes).  The
 * Python shim's access recorder (collector/torch/python/stprof/accesses.py) calls
 * it once per aten op.  At most STC_API_RANGES_MAX ranges are kept per
 * event (an op with more inputs is rare; the rest are dropped).
 */
#include <string.h>

#include "internal.h"
#include "stprof/trace.h"

#define STC_API_RANGES_MAX 64

__attribute__((visibility("default"))) void stprof_api_v1(int kind, const char *name, uint32_t n,
                                                          const uint64_t *addr, const uint64_t *size,
                                                          const uint8_t *mode);

void stprof_api_v1(int kind, const char *name, uint32_t n, const uint64_t *addr, const uint64_t *size,
                   const uint8_t *mode)
{
	if (atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON || kind < 0 || kind > STP_API_OP)
		return;
	if (n > STC_API_RANGES_MAX)
		n = STC_API_RANGES_MAX;
	stp_range r[STC_API_RANGES_MAX];
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		if (addr[i] && size[i] && (mode[i] & 3))
			r[k++] = (stp_range){.addr = addr[i], .size = size[i], .mode = mode[i] & 3u};
	int was = t_busy;
	t_busy = 1;
	stp_event ev = {.type = STP_EV_API};
	ev.u.api.kind = (uint8_t)kind;
	ev.u.api.name = name && *name ? stc_intern_string(name, strnlen(name, 4096)) : 0;
	ev.u.api.device = -1;
	ev.u.api.nranges = k;
	ev.u.api.ranges = k ? r : NULL;
	stc_emit(&ev);
	t_busy = was;
}
