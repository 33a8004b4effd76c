/*
 * test_nn.c - the training example's math and allocation layer
 * (examples/nn.c, examples/tensor.c): every backward pass agrees with
 * central finite differences of its forward pass, on odd shapes that
 * exercise the vector loops' tails; the allocation layer counts calls, bytes
 * and the live peak exactly, and a forward + backward pass frees all it
 * allocates; Adam moves a parameter against its gradient.
 */
#include "check.h"
#include "nn.h"
#include "tensor.h"

#include <math.h>

static struct rng rng = {12345};

static struct tensor *random_tensor(int rows, int cols)
{
	struct tensor *t = tensor_alloc(rows, cols);
	for (size_t i = 0; i < tensor_numel(t); i++)
		t->data[i] = rng_normal(&rng);
	return t;
}

static void randomize(struct param *p, float scale)
{
	for (size_t i = 0; i < tensor_numel(p->value); i++)
		p->value->data[i] += scale * rng_normal(&rng);
}

/* The function under test: y = f(x), and its loss sum(r * y) for fixed r. */
enum layer_kind { LINEAR, LAYER_NORM, GELU, BLOCK };
struct layer_case {
	enum layer_kind kind;
	struct linear linear;
	struct layer_norm norm;
	struct block block;
	const struct tensor *r;
};

static struct tensor *run_forward(const struct layer_case *c, const struct tensor *x,
				  struct block_saved *saved, struct tensor **stats)
{
	switch (c->kind) {
	case LINEAR: return linear_forward(&c->linear, x);
	case LAYER_NORM: return layer_norm_forward(&c->norm, x, stats);
	case GELU: return gelu_forward(x);
	case BLOCK: return block_forward(&c->block, x, saved);
	}
	return NULL;
}

static double loss_of(const struct layer_case *c, const struct tensor *x)
{
	struct block_saved saved = {0};
	struct tensor *stats = NULL;
	struct tensor *y = run_forward(c, x, &saved, &stats);
	double l = 0;
	for (size_t i = 0; i < tensor_numel(y); i++)
		l += (double)c->r->data[i] * y->data[i];
	tensor_free(y);
	tensor_free(stats);
	block_saved_free(&saved);
	return l;
}

/* The gradient of the loss with respect to x, by the backward pass. */
static struct tensor *run_backward(struct layer_case *c, const struct tensor *x)
{
	struct block_saved saved = {0};
	struct tensor *stats = NULL;
	struct tensor *y = run_forward(c, x, &saved, &stats);
	struct tensor *dx = NULL;
	switch (c->kind) {
	case LINEAR: dx = linear_backward(&c->linear, x, c->r, 1); break;
	case LAYER_NORM: dx = layer_norm_backward(&c->norm, x, stats, c->r); break;
	case GELU: dx = gelu_backward(x, c->r); break;
	case BLOCK: dx = block_backward(&c->block, x, &saved, c->r); break;
	}
	tensor_free(y);
	tensor_free(stats);
	return dx;
}

/* Compares an analytic gradient with central differences of the loss in
 * each element of v (an input or a parameter); returns the worst relative
 * error. */
static double worst_error(const struct layer_case *c, const struct tensor *x, float *v,
			  const float *analytic, size_t n)
{
	const float h = 1e-2f;
	double worst = 0;
	for (size_t i = 0; i < n; i++) {
		float keep = v[i];
		v[i] = keep + h;
		double up = loss_of(c, x);
		v[i] = keep - h;
		double down = loss_of(c, x);
		v[i] = keep;
		double numeric = (up - down) / (2.0 * h);
		double err = fabs(numeric - analytic[i]) / (fabs(numeric) + fabs(analytic[i]) + 1e-2);
		if (err > worst)
			worst = err;
	}
	return worst;
}

static void check_params(struct layer_case *c, struct tensor *x, struct param **ps, int np,
			 const char *what)
{
	for (int i = 0; i < np; i++)
		param_zero_grad(ps[i]);
	struct tensor *dx = run_backward(c, x);
	double e = worst_error(c, x, x->data, dx->data, tensor_numel(x));
	if (e > 2e-2)
		fprintf(stderr, "%s: dx off by %g\n", what, e);
	CHECK(e <= 2e-2);
	for (int i = 0; i < np; i++) {
		e = worst_error(c, x, ps[i]->value->data, ps[i]->grad->data,
				tensor_numel(ps[i]->value));
		if (e > 2e-2)
			fprintf(stderr, "%s: gradient of parameter %d off by %g\n", what, i, e);
		CHECK(e <= 2e-2);
	}
	tensor_free(dx);
}

static void test_gradients(void)
{
	const int n = 3, width = 11, out = 5;
	struct layer_case c = {0};
	struct tensor *x = random_tensor(n, width);

	c.kind = LINEAR;
	linear_init(&c.linear, width, out, 1.0f, TRAINABLE, &rng);
	randomize(&c.linear.bias, 0.5f);
	struct tensor *r = random_tensor(n, out);
	c.r = r;
	struct param *lp[] = {&c.linear.weight, &c.linear.bias};
	check_params(&c, x, lp, 2, "linear");
	linear_free(&c.linear);
	tensor_free(r);

	r = random_tensor(n, width);
	c.r = r;
	c.kind = LAYER_NORM;
	layer_norm_init(&c.norm, width);
	randomize(&c.norm.gamma, 0.3f);
	randomize(&c.norm.beta, 0.3f);
	struct param *np[] = {&c.norm.gamma, &c.norm.beta};
	check_params(&c, x, np, 2, "layer norm");
	layer_norm_free(&c.norm);

	c.kind = GELU;
	check_params(&c, x, NULL, 0, "gelu");

	c.kind = BLOCK;
	block_init(&c.block, width, 23, 2, &rng);
	randomize(&c.block.norm.gamma, 0.3f);
	randomize(&c.block.fc2.weight, 0.3f);
	struct param *bp[] = {&c.block.norm.gamma, &c.block.norm.beta, &c.block.fc1.weight,
			      &c.block.fc1.bias, &c.block.fc2.weight, &c.block.fc2.bias};
	check_params(&c, x, bp, 6, "block");
	block_free(&c.block);
	tensor_free(r);
	tensor_free(x);
}

static void test_alloc_stats(void)
{
	struct alloc_stats before = *train_alloc_stats();
	struct tensor *a = tensor_alloc(3, 4);
	struct tensor *b = tensor_zeros(10, 10);
	const struct alloc_stats *s = train_alloc_stats();
	size_t sa = sizeof(struct tensor) + 12 * sizeof(float);
	size_t sb = sizeof(struct tensor) + 100 * sizeof(float);
	CHECK_EQ_U(a->bytes, sa);
	CHECK_EQ_U(s->allocs - before.allocs, 2);
	CHECK_EQ_U(s->bytes - before.bytes, sa + sb);
	CHECK_EQ_U(s->live_bytes - before.live_bytes, sa + sb);
	CHECK(s->peak_live >= before.live_bytes + sa + sb);
	CHECK(b->data[99] == 0.0f);
	tensor_free(a);
	tensor_free(b);
	tensor_free(NULL);
	CHECK_EQ_U(s->frees - before.frees, 2);
	CHECK_EQ_U(s->live_bytes, before.live_bytes);

	/* a whole forward and backward pass gives back all it took */
	struct block blk;
	block_init(&blk, 16, 64, 1, &rng);
	struct tensor *x = random_tensor(4, 16), *dy = random_tensor(4, 16);
	struct alloc_stats mid = *s;
	struct block_saved saved;
	struct tensor *y = block_forward(&blk, x, &saved);
	struct tensor *dx = block_backward(&blk, x, &saved, dy);
	tensor_free(y);
	tensor_free(dx);
	CHECK(s->allocs > mid.allocs);
	CHECK_EQ_U(s->allocs - mid.allocs, s->frees - mid.frees);
	CHECK_EQ_U(s->live_bytes, mid.live_bytes);
	block_free(&blk);
	tensor_free(x);
	tensor_free(dy);
}

static void test_adam(void)
{
	struct param p;
	param_init(&p, 1, 2, TRAINABLE);
	p.value->data[0] = 1.0f;
	p.value->data[1] = 1.0f;
	p.grad->data[0] = 0.5f;
	p.grad->data[1] = -2.0f;
	struct adam opt = {.lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
	struct param *ps[] = {&p};
	adam_step(&opt, ps, 1);
	/* the first bias-corrected step is lr * sign(grad) */
	CHECK_NEAR(p.value->data[0], 0.9, 1e-5);
	CHECK_NEAR(p.value->data[1], 1.1, 1e-5);
	CHECK(p.grad->data[0] == 0.0f && p.grad->data[1] == 0.0f);
	CHECK_EQ_I(opt.step, 1);
	param_free(&p);
}

int main(void)
{
	test_gradients();
	test_alloc_stats();
	test_adam();
	CHECK_EQ_U(train_alloc_stats()->live_bytes, 0);
	return check_done();
}
