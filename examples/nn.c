/*
 * nn.c - forward and backward passes of the example's layers, and Adam
 * (see nn.h for the ownership rule every function here follows).
 *
 * The matrix products are plain loops ordered so that the innermost loop
 * walks memory contiguously; the compiler vectorises them well enough for a
 * small model.  Shapes are checked by the callers' construction, not here.
 */
#include "nn.h"

#include <math.h>
#include <string.h>

/* ---- random numbers ---------------------------------------------------- */

uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

float rng_uniform(struct rng *r)
{
	return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

float rng_normal(struct rng *r)
{
	/* Box-Muller; 1 - u keeps the logarithm finite. */
	double u = 1.0 - (double)rng_uniform(r), v = rng_uniform(r);
	return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* ---- vector helpers ---------------------------------------------------- */

/* Sum of a[k] * b[k] in eight interleaved partial sums: a fixed order (so
 * results do not depend on the compiler) that vectorises. */
static float dot(const float *restrict a, const float *restrict b, int n)
{
	float acc[8] = {0};
	int k = 0;
	for (; k + 8 <= n; k += 8)
		for (int j = 0; j < 8; j++)
			acc[j] += a[k + j] * b[k + j];
	float s = 0;
	for (; k < n; k++)
		s += a[k] * b[k];
	for (int j = 0; j < 8; j++)
		s += acc[j];
	return s;
}

/* y[k] += alpha * x[k], in blocks of eight that vectorise at -O2. */
static void axpy(float *restrict y, float alpha, const float *restrict x, int n)
{
	int k = 0;
	for (; k + 8 <= n; k += 8)
		for (int j = 0; j < 8; j++)
			y[k + j] += alpha * x[k + j];
	for (; k < n; k++)
		y[k] += alpha * x[k];
}

/* ---- parameters -------------------------------------------------------- */

void param_init(struct param *p, int rows, int cols, int trainable)
{
	memset(p, 0, sizeof *p);
	p->value = tensor_zeros(rows, cols);
	if (!trainable)
		return;
	p->grad = tensor_zeros(rows, cols);
	p->adam_m = tensor_zeros(rows, cols);
	p->adam_v = tensor_zeros(rows, cols);
}

void param_free(struct param *p)
{
	tensor_free(p->value);
	tensor_free(p->grad);
	tensor_free(p->adam_m);
	tensor_free(p->adam_v);
	memset(p, 0, sizeof *p);
}

void param_zero_grad(struct param *p)
{
	memset(p->grad->data, 0, tensor_numel(p->grad) * sizeof(float));
}

/* ---- linear ------------------------------------------------------------ */

void linear_init(struct linear *l, int in, int out, float init_scale, int trainable,
		 struct rng *r)
{
	param_init(&l->weight, out, in, trainable);
	param_init(&l->bias, 1, out, trainable);
	float std = init_scale / sqrtf((float)in);
	for (size_t i = 0; i < tensor_numel(l->weight.value); i++)
		l->weight.value->data[i] = std * rng_normal(r);
}

void linear_free(struct linear *l)
{
	param_free(&l->weight);
	param_free(&l->bias);
}

struct tensor *linear_forward(const struct linear *l, const struct tensor *x)
{
	const struct tensor *w = l->weight.value;
	int n = x->rows, in = x->cols, out = w->rows;
	struct tensor *y = tensor_alloc(n, out);
	for (int r = 0; r < n; r++) {
		const float *xr = tensor_crow(x, r);
		float *yr = tensor_row(y, r);
		for (int o = 0; o < out; o++)
			yr[o] = l->bias.value->data[o] + dot(xr, tensor_crow(w, o), in);
	}
	return y;
}

struct tensor *linear_backward(struct linear *l, const struct tensor *x, const struct tensor *dy,
			       int want_dx)
{
	const struct tensor *w = l->weight.value;
	struct tensor *dw = l->weight.grad;
	float *db = l->bias.grad->data;
	int n = x->rows, in = x->cols, out = w->rows;
	/* dW += dy^T x,  db += column sums of dy */
	for (int r = 0; r < n; r++) {
		const float *xr = tensor_crow(x, r), *dyr = tensor_crow(dy, r);
		for (int o = 0; o < out; o++) {
			axpy(tensor_row(dw, o), dyr[o], xr, in);
			db[o] += dyr[o];
		}
	}
	if (!want_dx)
		return NULL;
	/* dx = dy W */
	struct tensor *dx = tensor_zeros(n, in);
	for (int r = 0; r < n; r++) {
		const float *dyr = tensor_crow(dy, r);
		float *dxr = tensor_row(dx, r);
		for (int o = 0; o < out; o++)
			axpy(dxr, dyr[o], tensor_crow(w, o), in);
	}
	return dx;
}

/* ---- layer norm -------------------------------------------------------- */

#define LN_EPS 1e-5f

void layer_norm_init(struct layer_norm *ln, int width)
{
	param_init(&ln->gamma, 1, width, TRAINABLE);
	param_init(&ln->beta, 1, width, TRAINABLE);
	for (int i = 0; i < width; i++)
		ln->gamma.value->data[i] = 1.0f;
}

void layer_norm_free(struct layer_norm *ln)
{
	param_free(&ln->gamma);
	param_free(&ln->beta);
}

struct tensor *layer_norm_forward(const struct layer_norm *ln, const struct tensor *x,
				  struct tensor **stats)
{
	int n = x->rows, w = x->cols;
	const float *gamma = ln->gamma.value->data, *beta = ln->beta.value->data;
	struct tensor *y = tensor_alloc(n, w);
	struct tensor *st = tensor_alloc(n, 2);
	for (int r = 0; r < n; r++) {
		const float *xr = tensor_crow(x, r);
		float *yr = tensor_row(y, r);
		float mean = 0, var = 0;
		for (int k = 0; k < w; k++)
			mean += xr[k];
		mean /= (float)w;
		for (int k = 0; k < w; k++)
			var += (xr[k] - mean) * (xr[k] - mean);
		float rstd = 1.0f / sqrtf(var / (float)w + LN_EPS);
		for (int k = 0; k < w; k++)
			yr[k] = (xr[k] - mean) * rstd * gamma[k] + beta[k];
		tensor_row(st, r)[0] = mean;
		tensor_row(st, r)[1] = rstd;
	}
	*stats = st;
	return y;
}

struct tensor *layer_norm_backward(struct layer_norm *ln, const struct tensor *x,
				   const struct tensor *stats, const struct tensor *dy)
{
	int n = x->rows, w = x->cols;
	const float *gamma = ln->gamma.value->data;
	float *dgamma = ln->gamma.grad->data, *dbeta = ln->beta.grad->data;
	struct tensor *dx = tensor_alloc(n, w);
	for (int r = 0; r < n; r++) {
		const float *xr = tensor_crow(x, r), *dyr = tensor_crow(dy, r);
		float *dxr = tensor_row(dx, r);
		float mean = tensor_crow(stats, r)[0], rstd = tensor_crow(stats, r)[1];
		/* with xhat = (x - mean) * rstd and dxhat = dy * gamma:
		 * dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) */
		float sum_d = 0, sum_dx = 0;
		for (int k = 0; k < w; k++) {
			float xhat = (xr[k] - mean) * rstd, dxhat = dyr[k] * gamma[k];
			dgamma[k] += dyr[k] * xhat;
			dbeta[k] += dyr[k];
			sum_d += dxhat;
			sum_dx += dxhat * xhat;
		}
		sum_d /= (float)w;
		sum_dx /= (float)w;
		for (int k = 0; k < w; k++) {
			float xhat = (xr[k] - mean) * rstd, dxhat = dyr[k] * gamma[k];
			dxr[k] = rstd * (dxhat - sum_d - xhat * sum_dx);
		}
	}
	return dx;
}

/* ---- GELU -------------------------------------------------------------- */

#define GELU_K 0.7978845608f /* sqrt(2 / pi) */
#define GELU_C 0.044715f

struct tensor *gelu_forward(const struct tensor *u)
{
	struct tensor *g = tensor_alloc(u->rows, u->cols);
	for (size_t i = 0; i < tensor_numel(u); i++) {
		float x = u->data[i];
		g->data[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + GELU_C * x * x * x)));
	}
	return g;
}

struct tensor *gelu_backward(const struct tensor *u, const struct tensor *dg)
{
	struct tensor *du = tensor_alloc(u->rows, u->cols);
	for (size_t i = 0; i < tensor_numel(u); i++) {
		float x = u->data[i];
		float t = tanhf(GELU_K * (x + GELU_C * x * x * x));
		float d = 0.5f * (1.0f + t) +
			  0.5f * x * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_C * x * x);
		du->data[i] = dg->data[i] * d;
	}
	return du;
}

/* ---- residual MLP block ------------------------------------------------ */

void block_init(struct block *b, int width, int hidden, int depth, struct rng *r)
{
	layer_norm_init(&b->norm, width);
	linear_init(&b->fc1, width, hidden, 1.0f, TRAINABLE, r);
	/* scale the residual branch down with depth, as GPT-2 does */
	linear_init(&b->fc2, hidden, width, 1.0f / sqrtf(2.0f * (float)depth), TRAINABLE, r);
}

void block_free(struct block *b)
{
	layer_norm_free(&b->norm);
	linear_free(&b->fc1);
	linear_free(&b->fc2);
}

struct tensor *block_forward(const struct block *b, const struct tensor *x,
			     struct block_saved *s)
{
	s->a = layer_norm_forward(&b->norm, x, &s->norm_stats);
	s->u = linear_forward(&b->fc1, s->a);
	s->g = gelu_forward(s->u);
	struct tensor *v = linear_forward(&b->fc2, s->g);
	struct tensor *y = tensor_alloc(x->rows, x->cols);
	for (size_t i = 0; i < tensor_numel(y); i++)
		y->data[i] = x->data[i] + v->data[i];
	tensor_free(v);
	return y;
}

void block_saved_free(struct block_saved *s)
{
	tensor_free(s->norm_stats);
	tensor_free(s->a);
	tensor_free(s->u);
	tensor_free(s->g);
	memset(s, 0, sizeof *s);
}

struct tensor *block_backward(struct block *b, const struct tensor *x, struct block_saved *s,
			      const struct tensor *dy)
{
	struct tensor *dg = linear_backward(&b->fc2, s->g, dy, 1);
	tensor_free(s->g);
	struct tensor *du = gelu_backward(s->u, dg);
	tensor_free(dg);
	tensor_free(s->u);
	struct tensor *da = linear_backward(&b->fc1, s->a, du, 1);
	tensor_free(du);
	tensor_free(s->a);
	struct tensor *dx = layer_norm_backward(&b->norm, x, s->norm_stats, da);
	tensor_free(da);
	tensor_free(s->norm_stats);
	memset(s, 0, sizeof *s);
	/* the residual path passes dy straight through */
	for (size_t i = 0; i < tensor_numel(dx); i++)
		dx->data[i] += dy->data[i];
	return dx;
}

/* ---- loss and optimizer ------------------------------------------------ */

double mse_loss(const struct tensor *pred, const struct tensor *target, float scale,
		struct tensor **dpred)
{
	size_t n = tensor_numel(pred);
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		double d = (double)pred->data[i] - (double)target->data[i];
		sum += d * d;
	}
	if (dpred) {
		struct tensor *g = tensor_alloc(pred->rows, pred->cols);
		float k = 2.0f * scale / (float)n;
		for (size_t i = 0; i < n; i++)
			g->data[i] = k * (pred->data[i] - target->data[i]);
		*dpred = g;
	}
	return sum / (double)n;
}

void adam_step(struct adam *opt, struct param *const *params, int n)
{
	opt->step++;
	float bc1 = 1.0f - powf(opt->beta1, (float)opt->step);
	float bc2 = 1.0f - powf(opt->beta2, (float)opt->step);
	float step_size = opt->lr / bc1, bc2_sqrt = sqrtf(bc2);
	for (int i = 0; i < n; i++) {
		struct param *p = params[i];
		size_t len = tensor_numel(p->value);
		float *w = p->value->data, *g = p->grad->data;
		float *m = p->adam_m->data, *v = p->adam_v->data;
		/* the denominator is a temporary, as in PyTorch's (unfused) Adam */
		struct tensor *denom = tensor_alloc(p->value->rows, p->value->cols);
		for (size_t k = 0; k < len; k++) {
			m[k] = opt->beta1 * m[k] + (1.0f - opt->beta1) * g[k];
			v[k] = opt->beta2 * v[k] + (1.0f - opt->beta2) * g[k] * g[k];
			denom->data[k] = sqrtf(v[k]) / bc2_sqrt + opt->eps;
		}
		for (size_t k = 0; k < len; k++)
			w[k] -= step_size * m[k] / denom->data[k];
		tensor_free(denom);
		param_zero_grad(p);
	}
}
