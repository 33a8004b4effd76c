/*
 * bugs.c - the memory bugs of `train --plant-bugs`, kept in one file so
 * that a reader of stprof's report can find them: each is a named function
 * that appears in the call path of the allocations it gets wrong.
 *
 *  1. A leak.  cache_batch_stats() computes the per-feature mean and mean
 *     square of each input micro-batch for a running normaliser that was
 *     never written, and drops the pointer: one block per micro-batch is
 *     never freed.
 *  2. A late free.  snapshot_activations() copies the embedding output of
 *     each micro-batch for a debug checksum, reads the copy once, right
 *     away, and keeps it in a list that release_snapshots() empties only at
 *     the end of the iteration: each copy stays live for the rest of the
 *     iteration after its last use.
 */
#include "bugs.h"

#include <string.h>

TRAIN_FRAME float cache_batch_stats(const struct tensor *x)
{
	struct tensor *stats = tensor_zeros(2, x->cols);
	for (int r = 0; r < x->rows; r++)
		for (int k = 0; k < x->cols; k++) {
			float v = tensor_crow(x, r)[k];
			stats->data[k] += v / (float)x->rows;
			stats->data[x->cols + k] += v * v / (float)x->rows;
		}
	return stats->data[0]; /* BUG: stats is never freed */
}

void snapshots_init(struct snapshots *s, int cap)
{
	s->kept = train_alloc(sizeof *s->kept * (size_t)cap);
	s->n = 0;
	s->cap = cap;
}

void snapshots_free(struct snapshots *s)
{
	release_snapshots(s);
	if (s->kept)
		train_free(s->kept, sizeof *s->kept * (size_t)s->cap);
	memset(s, 0, sizeof *s);
}

TRAIN_FRAME float snapshot_activations(struct snapshots *s, const struct tensor *h)
{
	struct tensor *copy = tensor_alloc(h->rows, h->cols);
	memcpy(copy->data, h->data, tensor_numel(h) * sizeof(float));
	float checksum = 0;
	for (size_t i = 0; i < tensor_numel(copy); i++)
		checksum += copy->data[i];
	/* BUG: the copy is dead from here on, but is freed only at the end of
	 * the iteration */
	if (s->n < s->cap)
		s->kept[s->n++] = copy;
	else
		tensor_free(copy);
	return checksum;
}

TRAIN_FRAME void release_snapshots(struct snapshots *s)
{
	for (int i = 0; i < s->n; i++)
		tensor_free(s->kept[i]);
	s->n = 0;
}
