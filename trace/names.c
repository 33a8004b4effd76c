/* names.c - printable names of the trace model's enumerations. */
#include "stprof/trace.h"

const char *stp_event_type_name(unsigned t)
{
	static const char *n[] = {"?", "process", "thread", "module", "alloc", "free",
	                          "segment_reserve", "segment_release", "api", "marker", "fold", "refused"};
	return t <= STP_EV_TYPE_MAX ? n[t] : "?";
}

const char *stp_mem_kind_name(unsigned k)
{
	static const char *n[] = {"host", "device", "managed", "pinned"};
	return k <= STP_MEM_PINNED ? n[k] : "?";
}

const char *stp_api_kind_name(unsigned k)
{
	static const char *n[] = {"other", "kernel", "memcpy", "memset", "sync", "op"};
	return k <= STP_API_OP ? n[k] : "?";
}

const char *stp_marker_kind_name(unsigned k)
{
	static const char *n[] = {"?", "iteration_begin", "iteration_end", "phase_begin", "phase_end",
	                          "module_enter", "module_exit", "annotation"};
	return k <= STP_MARK_KIND_MAX ? n[k] : "?";
}
