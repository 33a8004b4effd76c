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
#endif
