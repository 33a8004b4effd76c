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
#endif
