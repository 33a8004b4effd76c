/*
 * fold.h - steady-state folding (fold.c) as the files that feed it see it:
 * the chunks it takes instead of the output, the flush rounds that let it
 * decide and write, the ends of a recording.  Internal to collector/core/;
 * every call but stc_fold_activate is made with the output lock held.
 */
#ifndef STPROF_COLLECTOR_FOLD_H
#define STPROF_COLLECTOR_FOLD_H

#include "internal.h"

/* Folding is under way: EVENTS chunks go to stc_fold_chunk_locked. */
STC_HIDDEN extern int g_fold_on;
/* Lean recording (fold.c, "Lean iterations"): wanted, as the folder
 * judges; in force for the iteration under way (set at its ITER_BEGIN). */
STC_HIDDEN extern int g_lean_wanted; /* g_lean_now: face.h */
/* The name of the "stprof.lean" annotation (marker.c interns it). */
STC_HIDDEN extern uint32_t g_lean_annotation_id;
/* At an ITER_BEGIN (marker.c): puts what the folder wants in force (when
 * allowed: a Python process whose frames are read in place); returns
 * the new value (0 or 1) when lean recording starts or stops (an annotation records it), -1
 * when not. */
STC_HIDDEN int stc_fold_lean_begin(int allowed);
/* The first iteration marker was recorded (marker.c): folding starts,
 * unless --full, STPROF_FOLD_KEEP=0 or accesses are recorded. */
STC_HIDDEN void stc_fold_activate(void);
/* An EVENTS chunk's payload (its thread tid), held instead of written. */
STC_HIDDEN void stc_fold_chunk_locked(uint32_t tid, const uint8_t *payload, size_t len);
/* A flush round whose watermark is mark: decides and writes what it can;
 * returns the watermark to write (below every event still held). */
STC_HIDDEN uint64_t stc_fold_round_locked(uint64_t mark);
/* The recording ends (exit, exec): everything held is decided and written. */
STC_HIDDEN void stc_fold_finish_locked(void);
/* A fatal signal: everything held is written as it is. */
STC_HIDDEN void stc_fold_emergency_locked(void);
STC_HIDDEN void stc_fold_atfork_child(void);

#endif
