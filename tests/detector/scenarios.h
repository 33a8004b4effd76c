/*
 * scenarios.h - crafted traces with exact expected answers, shared by the
 * unit tests (test_detector.c) and the trace maker (mktrace.c) that the
 * script tests use.  Each scenario's comment states what it must produce.
 */
#ifndef STP_TEST_SCENARIOS_H
#define STP_TEST_SCENARIOS_H

#include "tracegen.h"

/* "train": 5 iterations of forward / backward / optimizer with markers.
 *   weights   1 x 1,000,000 B at +0x100, before the loop, freed after: persistent
 *   activ.    4 x 50,000 B per iteration at +0x200, forward -> backward: scoped (20)
 *   temp      100 B at +0x300, 4 per forward + 1 per optimizer: transient (25)
 *   leak      64 B at +0x400 once per forward, never freed: leaked (5)
 *   late      20,000 B at +0x500 per forward, freed after the optimizer phase: scoped (5),
 *             the late free (its peers die in forward or backward)
 * Peak: 1,220,320 B at the end of iteration 4's forward (the leak grows it).
 * With cut = 1 the trace stops (no end record) in iteration 4 after the
 * backward phase. */
static inline void scenario_train(tg *g, int cut)
{
	uint32_t sw = tg_stack(g, 0x100, 0x900, 0), sa = tg_stack(g, 0x200, 0x900, 0), st = tg_stack(g, 0x300, 0x900, 0),
	         sl = tg_stack(g, 0x400, 0x900, 0), slf = tg_stack(g, 0x500, 0x900, 0);
	tg_alloc(g, 0x1000, 1000000, sw);
	for (int it = 0; it < 5; it++) {
		tg_mark(g, STP_MARK_ITER_BEGIN, 0, it);
		tg_mark(g, STP_MARK_PHASE_BEGIN, "forward", 0);
		for (int l = 0; l < 4; l++) {
			tg_alloc(g, 0x100000 + (uint64_t)l * 0x10000, 50000, sa);
			tg_alloc(g, 0x200000, 100, st);
			tg_free(g, 0x200000);
		}
		tg_alloc(g, 0x300000 + (uint64_t)it * 0x1000, 64, sl);
		tg_alloc(g, 0x400000, 20000, slf);
		tg_mark(g, STP_MARK_PHASE_END, "forward", 0);
		tg_mark(g, STP_MARK_PHASE_BEGIN, "backward", 0);
		for (int l = 3; l >= 0; l--)
			tg_free(g, 0x100000 + (uint64_t)l * 0x10000);
		tg_mark(g, STP_MARK_PHASE_END, "backward", 0);
		if (cut && it == 4) {
			tg_abandon(g);
			return;
		}
		tg_mark(g, STP_MARK_PHASE_BEGIN, "optimizer", 0);
		tg_alloc(g, 0x200000, 100, st);
		tg_free(g, 0x200000);
		tg_mark(g, STP_MARK_PHASE_END, "optimizer", 0);
		tg_free(g, 0x400000);
		tg_mark(g, STP_MARK_ITER_END, 0, it);
	}
	tg_free(g, 0x1000);
	tg_close(g);
}

/* "patterns": one stream, device memory, every DrGPUM pattern once.  Each
 * vertex (alloc, API, free) is one level after the previous:
 *   L1 alloc U (+0x110, 1000 B)     L2 alloc A (+0x120, 4096)   L3 alloc B (+0x130, 4096)
 *   L4 k1 writes B   L5 k2 reads B   L6 k3 writes A   L7 free B
 *   L8 memcpy writes A   L9 memset writes A   L10 k4 reads A   L11 k5, L12 k6 (nothing)
 *   L13 k7 reads A   L14 free A   L15 alloc D (+0x140, 4000)   L16 k8 writes D
 *   L17 k9 reads D   L18 free D   L19 free U   L20 alloc K (+0x150, 64)  L21 k10 writes K
 * Expected: unused U (distance 18); early allocation A (4); late
 * deallocation B (2); dead write A (1); temporary idleness A (2 levels
 * idle); redundant allocation: D reuses A (distance 3), A reuses B (1);
 * leak K (never freed, no iterations). */
static inline void scenario_patterns(tg *g)
{
	uint32_t su = tg_stack(g, 0x110, 0x900, 0), sa = tg_stack(g, 0x120, 0x900, 0), sb = tg_stack(g, 0x130, 0x900, 0),
	         sd = tg_stack(g, 0x140, 0x900, 0), sk = tg_stack(g, 0x150, 0x900, 0);
	const uint64_t U = 0x7000000, A = 0x7100000, B = 0x7200000, D = 0x7300000, K = 0x7400000;
	stp_range wa = {A, 4096, STP_ACCESS_WRITE}, ra = {A + 100, 8, STP_ACCESS_READ};
	stp_range wb = {B, 4096, STP_ACCESS_WRITE}, rb = {B, 4096, STP_ACCESS_READ};
	stp_range wd = {D, 4000, STP_ACCESS_WRITE}, rd = {D, 4000, STP_ACCESS_READ}, wk = {K, 64, STP_ACCESS_WRITE};
	tg_alloc_k(g, U, 1000, su, STP_MEM_DEVICE, 0, 0);
	tg_alloc_k(g, A, 4096, sa, STP_MEM_DEVICE, 0, 0);
	tg_alloc_k(g, B, 4096, sb, STP_MEM_DEVICE, 0, 0);
	tg_api(g, STP_API_KERNEL, "k1", 0, &wb, 1);
	tg_api(g, STP_API_KERNEL, "k2", 0, &rb, 1);
	tg_api(g, STP_API_KERNEL, "k3", 0, &wa, 1);
	tg_free_k(g, B, 0, 0);
	tg_api(g, STP_API_MEMCPY, "memcpy", 0, &wa, 1);
	tg_api(g, STP_API_MEMSET, "memset", 0, &wa, 1);
	tg_api(g, STP_API_KERNEL, "k4", 0, &ra, 1);
	tg_api(g, STP_API_KERNEL, "k5", 0, NULL, 0);
	tg_api(g, STP_API_KERNEL, "k6", 0, NULL, 0);
	tg_api(g, STP_API_KERNEL, "k7", 0, &ra, 1);
	tg_free_k(g, A, 0, 0);
	tg_alloc_k(g, D, 4000, sd, STP_MEM_DEVICE, 0, 0);
	tg_api(g, STP_API_KERNEL, "k8", 0, &wd, 1);
	tg_api(g, STP_API_KERNEL, "k9", 0, &rd, 1);
	tg_free_k(g, D, 0, 0);
	tg_free_k(g, U, 0, 0);
	tg_alloc_k(g, K, 64, sk, STP_MEM_DEVICE, 0, 0);
	tg_api(g, STP_API_KERNEL, "k10", 0, &wk, 1);
	tg_close(g);
}

/* "streams": two streams; levels follow RAW/WAR edges (DrGPUM 5.3):
 *   s1: alloc X (+0x160) L1;  s2: alloc Y (+0x170) L1;  s1: k1 writes X L2;
 *   s2: k2 reads X L3 (RAW);  s1: k3 writes X L4 (WAR on k2);  s2: k4 writes Y L4;
 *   s1: free X L5;  s2: free Y L5.
 * Expected: early allocation Y, distance 3 (L4 - L1); none for X; no late
 * deallocation (each free follows its last access). */
static inline void scenario_streams(tg *g)
{
	uint32_t sx = tg_stack(g, 0x160, 0x900, 0), sy = tg_stack(g, 0x170, 0x900, 0);
	const uint64_t X = 0x8000000, Y = 0x8100000;
	stp_range wx = {X, 256, STP_ACCESS_WRITE}, rx = {X, 256, STP_ACCESS_READ}, wy = {Y, 256, STP_ACCESS_WRITE};
	tg_alloc_k(g, X, 256, sx, STP_MEM_DEVICE, 0, 1);
	tg_alloc_k(g, Y, 256, sy, STP_MEM_DEVICE, 0, 2);
	tg_api(g, STP_API_KERNEL, "k1", 1, &wx, 1);
	tg_api(g, STP_API_KERNEL, "k2", 2, &rx, 1);
	tg_api(g, STP_API_KERNEL, "k3", 1, &wx, 1);
	tg_api(g, STP_API_KERNEL, "k4", 2, &wy, 1);
	tg_free_k(g, X, 0, 1);
	tg_free_k(g, Y, 0, 2);
	tg_close(g);
}

/* "adjacent": the shapes of PyTorch ops under --accesses=exact (issue 28:
 * planted_train.py and gpt.py on an H200 listed these as findings):
 *   E (+0x180): allocated, a kernel of another tensor, then written (an op
 *     allocates its output, then its kernels run): 1 kernel between;
 *     read, a temporary T allocated, written and freed (3 levels), read
 *     again: 1 kernel between two uses.
 *   M (+0x190, 16 KiB): idle 2 kernels (2 us) between two uses, then kept
 *     20 ms past 20 kernels after its last use before its free.
 * Expected: no early allocation and no temporary idleness finding; E none
 * at all; M's late deallocation a finding and its idleness (1/10000 of
 * that waste) kept apart as minor (T may reuse O: a redundant allocation). */
static inline void scenario_adjacent(tg *g)
{
	uint32_t so = tg_stack(g, 0x1a0, 0x900, 0), se = tg_stack(g, 0x180, 0x900, 0), st = tg_stack(g, 0x1b0, 0x900, 0),
	         sm = tg_stack(g, 0x190, 0x900, 0);
	const uint64_t O = 0x9000000, E = 0x9100000, T = 0x9200000, M = 0x9300000;
	stp_range wo = {O, 4096, STP_ACCESS_WRITE}, kb[2] = {{O, 4096, STP_ACCESS_READ}, {E, 4096, STP_ACCESS_WRITE}};
	stp_range re = {E, 4096, STP_ACCESS_READ}, wt = {T, 4096, STP_ACCESS_READ | STP_ACCESS_WRITE};
	stp_range wm = {M, 16384, STP_ACCESS_WRITE}, rm = {M, 16384, STP_ACCESS_READ};
	tg_alloc_k(g, O, 4096, so, STP_MEM_DEVICE, 0, 0);
	tg_alloc_k(g, E, 4096, se, STP_MEM_DEVICE, 0, 0);
	tg_api(g, STP_API_KERNEL, "kA", 0, &wo, 1);
	tg_api(g, STP_API_KERNEL, "kB", 0, kb, 2);
	tg_free_k(g, O, 0, 0);
	tg_api(g, STP_API_KERNEL, "kC", 0, &re, 1);
	tg_alloc_k(g, T, 4096, st, STP_MEM_DEVICE, 0, 0);
	tg_api(g, STP_API_KERNEL, "kD", 0, &wt, 1);
	tg_free_k(g, T, 0, 0);
	tg_api(g, STP_API_KERNEL, "kE", 0, &re, 1);
	tg_free_k(g, E, 0, 0);
	tg_alloc_k(g, M, 16384, sm, STP_MEM_DEVICE, 0, 0);
	tg_api(g, STP_API_KERNEL, "k1", 0, &wm, 1);
	tg_api(g, STP_API_KERNEL, "k2", 0, NULL, 0);
	tg_api(g, STP_API_KERNEL, "k3", 0, NULL, 0);
	tg_api(g, STP_API_KERNEL, "k4", 0, &rm, 1);
	g->step_ns = 1000000;
	for (int k = 0; k < 20; k++)
		tg_api(g, STP_API_KERNEL, "k5", 0, NULL, 0);
	tg_free_k(g, M, 0, 0);
	tg_close(g);
}

/* "lagging": kernels timed on the device, which runs 50 ms behind the host
 * (--accesses=exact under a slow patch): L (+0x1c0, 1 MiB) is allocated on
 * the host while an earlier kernel still runs until 50 ms, then 2 kernels
 * (1 ms each) run before the one that writes it.  Expected: an early
 * allocation of distance 2 wasting 1 MiB x 2 ms (from the earlier
 * kernel's end on the device, when the allocation takes effect), not
 * 1 MiB x 52 ms (from the host's time of the allocation). */
static inline void tg_api_dev(tg *g, const char *name, const stp_range *r, uint32_t n, uint64_t b, uint64_t e)
{
	stp_event ev = {.type = STP_EV_API, .seq = STP_SEQ_AUTO, .tid = g->tid, .time_ns = b};
	ev.u.api = (stp_api_info){.kind = STP_API_KERNEL, .name = stp_writer_string(g->w, name), .device = 0,
	                          .stream = 0, .nranges = n, .ranges = r, .end_ns = e};
	stp_writer_event(g->w, &ev);
}
static inline void scenario_lagging(tg *g)
{
	uint32_t sl = tg_stack(g, 0x1c0, 0x900, 0);
	const uint64_t L = 0xa000000, ms = 1000000, t = g->now;
	stp_range wl = {L, 1 << 20, STP_ACCESS_WRITE}, rl = {L, 1 << 20, STP_ACCESS_READ};
	tg_api_dev(g, "kP", NULL, 0, t + 1 * ms, t + 50 * ms);
	tg_alloc_k(g, L, 1 << 20, sl, STP_MEM_DEVICE, 0, 0);
	tg_api_dev(g, "kQ", NULL, 0, t + 50 * ms, t + 51 * ms);
	tg_api_dev(g, "kR", NULL, 0, t + 51 * ms, t + 52 * ms);
	tg_api_dev(g, "kS", &wl, 1, t + 52 * ms, t + 53 * ms);
	tg_api_dev(g, "kT", &rl, 1, t + 53 * ms, t + 54 * ms);
	tg_free_k(g, L, 0, 0);
	g->now = t + 60 * ms;
	tg_api(g, STP_API_KERNEL, "kU", 0, NULL, 0);
	tg_close(g);
}

/* "residual": 3 iterations with markers; in each forward, X (+0x1d0, 1 MiB)
 * is written, read, idle for 4 kernels, read again (a residual's input
 * around attention), and read by the backward (saved for it), then freed;
 * Y (+0x1e0, 1 MiB) the same in the forward, but never read by the
 * backward, freed at the forward's end.  Expected: X's idle gap kept apart
 * (phases: it stays allocated for the backward anyway), Y's a finding. */
static inline void scenario_residual(tg *g)
{
	uint32_t sx = tg_stack(g, 0x1d0, 0x900, 0), sy = tg_stack(g, 0x1e0, 0x900, 0);
	const uint64_t X = 0xb000000, Y = 0xb100000;
	stp_range wx = {X, 1 << 20, STP_ACCESS_WRITE}, rx = {X, 1 << 20, STP_ACCESS_READ};
	stp_range wy = {Y, 1 << 20, STP_ACCESS_WRITE}, ry = {Y, 1 << 20, STP_ACCESS_READ};
	for (int it = 0; it < 3; it++) {
		tg_mark(g, STP_MARK_ITER_BEGIN, 0, it);
		tg_mark(g, STP_MARK_PHASE_BEGIN, "forward", 0);
		tg_alloc_k(g, X, 1 << 20, sx, STP_MEM_DEVICE, 0, 0);
		tg_alloc_k(g, Y, 1 << 20, sy, STP_MEM_DEVICE, 0, 0);
		tg_api(g, STP_API_KERNEL, "w", 0, &wx, 1);
		tg_api(g, STP_API_KERNEL, "w", 0, &wy, 1);
		tg_api(g, STP_API_KERNEL, "r", 0, &rx, 1);
		tg_api(g, STP_API_KERNEL, "r", 0, &ry, 1);
		for (int k = 0; k < 4; k++)
			tg_api(g, STP_API_KERNEL, "attn", 0, NULL, 0);
		tg_api(g, STP_API_KERNEL, "r", 0, &rx, 1);
		tg_api(g, STP_API_KERNEL, "r", 0, &ry, 1);
		tg_free_k(g, Y, 0, 0);
		tg_mark(g, STP_MARK_PHASE_END, "forward", 0);
		tg_mark(g, STP_MARK_PHASE_BEGIN, "backward", 0);
		tg_api(g, STP_API_KERNEL, "bw", 0, NULL, 0);
		tg_api(g, STP_API_KERNEL, "r", 0, &rx, 1);
		tg_free_k(g, X, 0, 0);
		tg_mark(g, STP_MARK_PHASE_END, "backward", 0);
		tg_mark(g, STP_MARK_ITER_END, 0, it);
	}
	tg_close(g);
}
/* "retry": PyTorch's caching allocator near the device's limit, as the
 * collector records it (cuda_record.c's attempts, requested 0; the
 * allocator's oom report, torch_cuda_caching.c), on cuda:0's tensor pool:
 *   thread 1: a 20 MiB segment, tensors A and B (8 MiB each), B freed
 *     (cached); its cudaMalloc of 20 MiB refused (+0x1c0), the cache
 *     released, a 20 MiB segment, tensor C (12 MiB): served on retry;
 *   thread 2: a tensor of its own while thread 1's attempt was open
 *     (it resolves nothing);
 *   thread 1: a cudaMalloc of 40 MiB refused twice (+0x1c8), then the
 *     request of 36 MiB refused (the oom report, +0x1c8): one request;
 *   thread 2: a cudaMalloc of 2 MiB refused, then the trace ends.
 * Expected: refused 1 request (36 MiB, 21 MiB live of 42 reserved), 4
 * attempts, retried 1 (first: 12 MiB asked, at the attempt, with 8 MiB
 * live of 20 reserved), 1 unknown. */
static inline void tg_dev_ev(tg *g, int type, uint64_t addr, uint64_t size, uint64_t req, uint32_t stack,
                             uint32_t pool)
{
	stp_event ev = {.type = (uint8_t)type};
	ev.u.alloc = (stp_alloc_info){.addr = addr, .size = size, .requested = req, .stack = stack,
	                              .kind = STP_MEM_DEVICE, .device = 0, .pool = pool};
	tg_emit(g, &ev);
}
static inline void scenario_retry(tg *g)
{
	const uint64_t M = 1 << 20, S1 = 0x7f0000000000, S2 = 0x7f0010000000, S3 = 0x7f0020000000;
	uint32_t sa = tg_stack(g, 0x1b8, 0x900, 0), sr = tg_stack(g, 0x1c0, 0x900, 0), so = tg_stack(g, 0x1c8, 0x900, 0);
	tg_dev_ev(g, STP_EV_SEGMENT_RESERVE, S1, 20 * M, 20 * M, sa, 0);
	tg_dev_ev(g, STP_EV_ALLOC, S1, 8 * M, 8 * M, sa, STP_POOL_TENSORS);
	tg_dev_ev(g, STP_EV_ALLOC, S1 + 8 * M, 8 * M, 8 * M, sa, STP_POOL_TENSORS);
	stp_event fe = {.type = STP_EV_FREE};
	fe.u.free = (stp_free_info){.addr = S1 + 8 * M, .kind = STP_MEM_DEVICE, .device = 0, .pool = STP_POOL_TENSORS};
	tg_emit(g, &fe);
	tg_dev_ev(g, STP_EV_REFUSED, 0, 20 * M, 0, sr, STP_POOL_TENSORS);
	g->tid = 2;
	tg_dev_ev(g, STP_EV_SEGMENT_RESERVE, S3, 2 * M, 2 * M, sa, 0);
	tg_dev_ev(g, STP_EV_ALLOC, S3, M, M, sa, STP_POOL_TENSORS);
	g->tid = 1;
	tg_dev_ev(g, STP_EV_SEGMENT_RESERVE, S2, 20 * M, 20 * M, sr, 0);
	tg_dev_ev(g, STP_EV_ALLOC, S2, 12 * M, 12 * M, sr, STP_POOL_TENSORS);
	tg_dev_ev(g, STP_EV_REFUSED, 0, 40 * M, 0, so, STP_POOL_TENSORS);
	tg_dev_ev(g, STP_EV_REFUSED, 0, 40 * M, 0, so, STP_POOL_TENSORS);
	tg_dev_ev(g, STP_EV_REFUSED, 0, 36 * M, 36 * M, so, STP_POOL_TENSORS);
	g->tid = 2;
	tg_dev_ev(g, STP_EV_REFUSED, 0, 2 * M, 0, sa, STP_POOL_TENSORS);
	tg_close(g);
}
/* "oomfrag": an out-of-memory error that fragmentation made, on cuda:0's
 * tensor pool with the caching allocator's segments: two 100 MiB tensors
 * (a segment each: 200 MiB reserved), both freed (cached); two 60 MiB
 * tensors split them (40 MiB free left in each, pinned); a 70 MiB request
 * then finds no free block that fits and no room for a segment: refused
 * (two attempts, then the request), though 120 MiB live + 70 fit in the
 * 200 MiB the device gave.  Expected: the as-run model refuses it too;
 * expandable segments (one contiguous free range) and raw cudaMalloc serve
 * it, within 200 MiB. */
static inline void scenario_oomfrag(tg *g)
{
	const uint64_t M = 1 << 20, SX = 0x7f0000000000, SQ = 0x7f0010000000;
	uint32_t sa = tg_stack(g, 0x1d8, 0x900, 0), sw = tg_stack(g, 0x1e8, 0x900, 0);
	tg_dev_ev(g, STP_EV_SEGMENT_RESERVE, SX, 100 * M, 100 * M, sa, 0);
	tg_dev_ev(g, STP_EV_ALLOC, SX, 100 * M, 100 * M, sa, STP_POOL_TENSORS);
	tg_dev_ev(g, STP_EV_SEGMENT_RESERVE, SQ, 100 * M, 100 * M, sa, 0);
	tg_dev_ev(g, STP_EV_ALLOC, SQ, 100 * M, 100 * M, sa, STP_POOL_TENSORS);
	stp_event fe = {.type = STP_EV_FREE};
	fe.u.free = (stp_free_info){.addr = SX, .kind = STP_MEM_DEVICE, .device = 0, .pool = STP_POOL_TENSORS};
	tg_emit(g, &fe);
	fe.u.free.addr = SQ;
	tg_emit(g, &fe);
	tg_dev_ev(g, STP_EV_ALLOC, SX, 60 * M, 60 * M, sa, STP_POOL_TENSORS);
	tg_dev_ev(g, STP_EV_ALLOC, SQ, 60 * M, 60 * M, sa, STP_POOL_TENSORS);
	tg_dev_ev(g, STP_EV_REFUSED, 0, 70 * M, 0, sw, STP_POOL_TENSORS);
	tg_dev_ev(g, STP_EV_REFUSED, 0, 70 * M, 0, sw, STP_POOL_TENSORS);
	tg_dev_ev(g, STP_EV_REFUSED, 0, 70 * M, 70 * M, sw, STP_POOL_TENSORS);
	tg_close(g);
}
#endif
