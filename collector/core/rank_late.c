/*
 * rank_late.c - a rank known only once the program says so.
 *
 * torch.multiprocessing.spawn starts its workers without RANK in their
 * environment (output.c names a rank's trace from it at start); each learns
 * its rank in torch.distributed.init_process_group(rank=R).  The Python
 * shim (stprof/ranks.py) calls stprof_rank_v1 after that returns: the trace
 * becomes <path>.rank<R> (output.c's stc_out_take_rank), so `stprof report`
 * and the one-shot mode find and compare the ranks as they do torchrun's,
 * and ANNOTATION markers stprof.rank / stprof.world_size (and
 * stprof.local_rank when known) say it inside the trace, whose PROCESS event
 * was written with rank -1 (the detector takes them: scan.c).  A process
 * that is a rank from the start, or that holds the configured path itself
 * (a single process), keeps its name and gets no markers.
 */
#include <unistd.h>

#include "internal.h"

STC_EXPORT void stprof_rank_v1(int rank, int local_rank, int world_size);
void stprof_mark_v1(int kind, const char *name, int64_t value);

void stprof_rank_v1(int rank, int local_rank, int world_size)
{
	if (atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON || rank < 0 || getpid() != g_pid)
		return;
	if (stc_out_take_rank(rank) < 0)
		return;
	stprof_mark_v1(STP_MARK_ANNOTATION, "stprof.rank", rank);
	if (world_size > 0)
		stprof_mark_v1(STP_MARK_ANNOTATION, "stprof.world_size", world_size);
	if (local_rank >= 0)
		stprof_mark_v1(STP_MARK_ANNOTATION, "stprof.local_rank", local_rank);
}
