/*
 * tensor.c - the example's allocation layer (see tensor.h).
 *
 * Invariants: stats.allocs - stats.frees is the number of live blocks and
 * stats.live_bytes their total size; every counter is updated after the C
 * library call, so that call is never in tail position and the caller's
 * frame (train_alloc / train_free) stays in its call path.  The program is
 * single-threaded, so the counters need no locking.
 */
#include "tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct alloc_stats stats;

TRAIN_FRAME void *train_alloc(size_t size)
{
	void *p = malloc(size);
	if (!p) {
		fprintf(stderr, "train: out of memory allocating %zu bytes\n", size);
		exit(1);
	}
	stats.allocs++;
	stats.bytes += size;
	stats.live_bytes += size;
	if (stats.live_bytes > stats.peak_live)
		stats.peak_live = stats.live_bytes;
	return p;
}

TRAIN_FRAME void train_free(void *p, size_t size)
{
	if (!p)
		return;
	free(p);
	stats.frees++;
	stats.live_bytes -= size;
}

const struct alloc_stats *train_alloc_stats(void)
{
	return &stats;
}

TRAIN_FRAME struct tensor *tensor_alloc(int rows, int cols)
{
	size_t bytes = sizeof(struct tensor) + (size_t)rows * (size_t)cols * sizeof(float);
	struct tensor *t = train_alloc(bytes);
	t->rows = rows;
	t->cols = cols;
	t->bytes = bytes;
	return t;
}

struct tensor *tensor_zeros(int rows, int cols)
{
	struct tensor *t = tensor_alloc(rows, cols);
	memset(t->data, 0, tensor_numel(t) * sizeof(float));
	return t;
}

TRAIN_FRAME void tensor_free(struct tensor *t)
{
	if (t)
		train_free(t, t->bytes);
}
