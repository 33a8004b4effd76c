/*
 * bugs.h - the two memory bugs that `train --plant-bugs` plants for stprof
 * to find (see bugs.c).  Neither changes the training arithmetic.
 */
#ifndef TRAIN_BUGS_H
#define TRAIN_BUGS_H

#include "tensor.h"

/* Leak: allocates a statistics tensor of x and never frees it. */
float cache_batch_stats(const struct tensor *x);

/* Late free: copies of activations, each used once when taken and freed
 * only by release_snapshots() at the end of the iteration. */
struct snapshots {
	struct tensor **kept;
	int n, cap;
};
void snapshots_init(struct snapshots *s, int cap);
void snapshots_free(struct snapshots *s); /* releases the list itself */
float snapshot_activations(struct snapshots *s, const struct tensor *h);
void release_snapshots(struct snapshots *s);

#endif
