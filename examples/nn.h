/*
 * nn.h - the math of the training example: parameters with their gradient
 * and Adam state, and the forward and backward pass of each layer kind
 * (linear, layer norm, GELU, a pre-norm residual MLP block, mean squared
 * error), plus a seeded random number generator.
 *
 * Ownership follows one rule, the one a framework's autograd follows: a
 * forward function returns new tensors, some for its caller (the output) and
 * some it saves for its backward pass (struct block_saved); a backward
 * function returns the gradient of its input as a new tensor and adds the
 * gradients of the parameters into param.grad.  Temporaries are freed inside
 * the function that made them.  Nothing frees a tensor it did not make or
 * was not given, so every free is visible in one place.
 */
#ifndef TRAIN_NN_H
#define TRAIN_NN_H

#include <stdint.h>

#include "tensor.h"

/* splitmix64: a small, fast generator; the same seed gives the same run. */
struct rng {
	uint64_t state;
};
uint64_t rng_next(struct rng *r);
float rng_uniform(struct rng *r); /* in [0, 1) */
float rng_normal(struct rng *r);  /* mean 0, deviation 1 */

/* A learned tensor: its value, gradient and Adam moments, all the same shape,
 * allocated once for the life of the model.  A FROZEN parameter has only its
 * value (the others are NULL). */
struct param {
	struct tensor *value, *grad, *adam_m, *adam_v;
};
enum { FROZEN = 0, TRAINABLE = 1 };
void param_init(struct param *p, int rows, int cols, int trainable);
void param_free(struct param *p);
void param_zero_grad(struct param *p);

/* y = x W^T + b, W being out x in. */
struct linear {
	struct param weight, bias;
};
/* Weights drawn with deviation init_scale / sqrt(in), biases zero. */
void linear_init(struct linear *l, int in, int out, float init_scale, int trainable,
		 struct rng *r);
void linear_free(struct linear *l);
struct tensor *linear_forward(const struct linear *l, const struct tensor *x);
/* Adds dW and db; returns dx, or NULL when want_dx is 0. */
struct tensor *linear_backward(struct linear *l, const struct tensor *x, const struct tensor *dy,
			       int want_dx);

/* y = gamma * (x - mean) / sqrt(var + eps) + beta over each row.  Saves each
 * row's mean and 1/deviation in *stats (rows x 2). */
struct layer_norm {
	struct param gamma, beta;
};
void layer_norm_init(struct layer_norm *ln, int width);
void layer_norm_free(struct layer_norm *ln);
struct tensor *layer_norm_forward(const struct layer_norm *ln, const struct tensor *x,
				  struct tensor **stats);
struct tensor *layer_norm_backward(struct layer_norm *ln, const struct tensor *x,
				   const struct tensor *stats, const struct tensor *dy);

/* GELU, tanh approximation. */
struct tensor *gelu_forward(const struct tensor *u);
struct tensor *gelu_backward(const struct tensor *u, const struct tensor *dg);

/* A pre-norm residual MLP block, the feed-forward half of a transformer
 * layer:  y = x + fc2(gelu(fc1(norm(x)))),  fc1: width -> hidden. */
struct block {
	struct layer_norm norm;
	struct linear fc1, fc2;
};
/* What the block's backward pass needs besides its input x. */
struct block_saved {
	struct tensor *norm_stats; /* rows x 2 */
	struct tensor *a;          /* norm(x) */
	struct tensor *u;          /* fc1(a) */
	struct tensor *g;          /* gelu(u) */
};
void block_init(struct block *b, int width, int hidden, int depth, struct rng *r);
void block_free(struct block *b);
/* Returns y and fills *saved. */
struct tensor *block_forward(const struct block *b, const struct tensor *x,
			     struct block_saved *saved);
/* Frees what block_forward saved. */
void block_saved_free(struct block_saved *saved);
/* Returns dx; frees *saved (its last use). */
struct tensor *block_backward(struct block *b, const struct tensor *x, struct block_saved *saved,
			      const struct tensor *dy);

/* Mean over all elements of (pred - target)^2.  With dpred non-NULL, stores
 * the gradient of scale * loss with respect to pred there. */
double mse_loss(const struct tensor *pred, const struct tensor *target, float scale,
		struct tensor **dpred);

/* One Adam step over n parameters (step counts from 1), then zeroes their
 * gradients. */
struct adam {
	float lr, beta1, beta2, eps;
	int step;
};
void adam_step(struct adam *opt, struct param *const *params, int n);

#endif
