/*
 * tensor.h - the example's one allocation layer and its 2-D float tensor.
 *
 * Every byte the training example allocates goes through train_alloc() and
 * comes back through train_free(); each is exactly one malloc() or free() of
 * the C library.  The layer counts calls, bytes, live bytes and the peak of
 * live bytes, so the program can say what it allocated (train --stats) and a
 * profiler's record can be checked against it: an allocation of this program
 * is a malloc() whose caller is train_alloc, a free() whose caller is
 * train_free.  These functions, and tensor_alloc/tensor_free above them, are
 * real calls (never inlined, cloned or tail-called) so that call paths show
 * them.
 *
 * A tensor is one allocation: a small header followed by rows * cols floats,
 * row-major.  Sizes are the malloc() sizes, header included.
 */
#ifndef TRAIN_TENSOR_H
#define TRAIN_TENSOR_H

#include <stddef.h>
#include <stdint.h>

/* A function that must stay a frame of its own in call paths. */
#if defined(__has_attribute)
#if __has_attribute(noipa)
#define TRAIN_FRAME __attribute__((noipa))
#endif
#endif
#ifndef TRAIN_FRAME
#define TRAIN_FRAME __attribute__((noinline))
#endif

struct tensor {
	int rows, cols;
	size_t bytes; /* the malloc() size of this tensor, header included */
	float data[];
};

/* What the allocation layer has seen since the program started. */
struct alloc_stats {
	uint64_t allocs;     /* train_alloc calls */
	uint64_t frees;      /* train_free calls */
	uint64_t bytes;      /* bytes requested by all train_alloc calls */
	uint64_t live_bytes; /* bytes allocated and not yet freed */
	uint64_t peak_live;  /* the most live_bytes ever reached */
};

/* malloc(size); exits with a message when memory runs out. */
void *train_alloc(size_t size);
/* free(p) of a block train_alloc(size) returned; p may be NULL. */
void train_free(void *p, size_t size);
const struct alloc_stats *train_alloc_stats(void);

/* A rows x cols tensor, uninitialised / zero-filled. */
struct tensor *tensor_alloc(int rows, int cols);
struct tensor *tensor_zeros(int rows, int cols);
/* Frees t (NULL allowed). */
void tensor_free(struct tensor *t);

static inline size_t tensor_numel(const struct tensor *t)
{
	return (size_t)t->rows * (size_t)t->cols;
}

static inline float *tensor_row(struct tensor *t, int r)
{
	return t->data + (size_t)r * (size_t)t->cols;
}

static inline const float *tensor_crow(const struct tensor *t, int r)
{
	return t->data + (size_t)r * (size_t)t->cols;
}

#endif
