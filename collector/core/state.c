/*
 * state.c - the state of the recording that every part of the collector
 * reads: where the process image stands (g_state: off, starting, on,
 * finished), the process it belongs to (g_pid, renewed in a fork child),
 * the per-thread "inside the collector" flag (t_busy), the sequence
 * counter every event takes its seq from, and the thread id.  Leaf of
 * the core: it calls nothing of the collector.
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

_Atomic int g_state;
pid_t g_pid;
STC_TLS int t_busy;
atomic_uint_fast64_t g_seq;
atomic_int g_main_exited;

uint32_t stc_gettid(void) { return (uint32_t)syscall(SYS_gettid); }
