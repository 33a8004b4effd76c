/*
 * train.c - a small training program to profile with stprof.
 *
 * It trains a residual MLP (the feed-forward half of a transformer layer,
 * stacked) to imitate a fixed random "teacher" network on random inputs,
 * with real forward, backward and Adam arithmetic, the way a framework lays
 * out memory:
 *
 *   - parameters, their gradients and Adam state: allocated once;
 *   - activations: allocated in the forward pass of each micro-batch and kept
 *     until the backward pass has used them (with --recompute, only each
 *     layer's input is kept and the rest is computed again in backward);
 *   - temporaries: freed as soon as they have been used.
 *
 * A global batch of --batch rows is split into --micro-batches whose
 * gradients accumulate before one optimizer step, so more micro-batches mean
 * fewer live activations at once.  The program marks iterations, phases and
 * layers with the stprof marker API, which costs nothing when it does not run
 * under stprof and needs no library to link against.
 *
 * --plant-bugs adds two memory bugs for stprof to find (bugs.c): a leak
 * (cache_batch_stats) and a late free (snapshot_activations, freed only by
 * release_snapshots at the end of the iteration).  They do not change the
 * arithmetic: the loss printed is the same with or without them.
 *
 * All memory goes through tensor.c, which counts it; --stats prints the
 * counts as one line for tests to compare with a profiler's record.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bugs.h"
#include "nn.h"
#include "stprof/stprof.h"
#include "tensor.h"

#define IN_DIM 16         /* features of an input row */
#define OUT_DIM 4         /* outputs to predict */
#define TEACHER_HIDDEN 32 /* width of the teacher's one hidden layer */

struct options {
	int iters, layers, width, batch, micro_batches;
	int recompute, plant_bugs, stats;
	unsigned long seed;
	float lr;
};

/* ---- the model --------------------------------------------------------- */

struct layer {
	struct block block;
	char name[24]; /* "layers.N", the module name in markers */
};

struct model {
	struct linear embed; /* IN_DIM -> width */
	struct layer *layers;
	int nlayers;
	struct linear head; /* width -> OUT_DIM */
	struct param **params; /* every trainable parameter, for the optimizer */
	int nparams;
};

static void model_init(struct model *m, const struct options *o, struct rng *r)
{
	linear_init(&m->embed, IN_DIM, o->width, 1.0f, TRAINABLE, r);
	m->nlayers = o->layers;
	m->layers = train_alloc(sizeof *m->layers * (size_t)o->layers);
	for (int i = 0; i < o->layers; i++) {
		block_init(&m->layers[i].block, o->width, 4 * o->width, o->layers, r);
		snprintf(m->layers[i].name, sizeof m->layers[i].name, "layers.%d", i);
	}
	linear_init(&m->head, o->width, OUT_DIM, 1.0f, TRAINABLE, r);

	m->nparams = 4 + 6 * o->layers;
	m->params = train_alloc(sizeof *m->params * (size_t)m->nparams);
	struct param **p = m->params;
	*p++ = &m->embed.weight;
	*p++ = &m->embed.bias;
	for (int i = 0; i < o->layers; i++) {
		struct block *b = &m->layers[i].block;
		*p++ = &b->norm.gamma;
		*p++ = &b->norm.beta;
		*p++ = &b->fc1.weight;
		*p++ = &b->fc1.bias;
		*p++ = &b->fc2.weight;
		*p++ = &b->fc2.bias;
	}
	*p++ = &m->head.weight;
	*p++ = &m->head.bias;
}

static void model_free(struct model *m)
{
	linear_free(&m->embed);
	for (int i = 0; i < m->nlayers; i++)
		block_free(&m->layers[i].block);
	linear_free(&m->head);
	train_free(m->layers, sizeof *m->layers * (size_t)m->nlayers);
	train_free(m->params, sizeof *m->params * (size_t)m->nparams);
}

/* What one micro-batch keeps from its forward pass for its backward pass. */
struct tape {
	struct tensor *x;          /* the input rows */
	struct tensor **h;         /* h[0] = embed(x), h[i + 1] = layers.i(h[i]) */
	struct block_saved *saved; /* per layer; empty when recomputing */
	struct tensor *dpred;      /* gradient of the loss at the head's output */
};

static void tape_init(struct tape *t, int nlayers)
{
	t->h = train_alloc(sizeof *t->h * (size_t)(nlayers + 1));
	t->saved = train_alloc(sizeof *t->saved * (size_t)nlayers);
	memset(t->saved, 0, sizeof *t->saved * (size_t)nlayers);
}

static void tape_free(struct tape *t, int nlayers)
{
	train_free(t->h, sizeof *t->h * (size_t)(nlayers + 1));
	train_free(t->saved, sizeof *t->saved * (size_t)nlayers);
}

/* Runs the model on t->x and returns its loss against target; leaves on the
 * tape what backward needs, including the loss gradient scaled by
 * loss_scale. */
static double model_forward(struct model *m, struct tape *t, const struct tensor *target,
			    int recompute, float loss_scale)
{
	stprof_module_enter("embed");
	t->h[0] = linear_forward(&m->embed, t->x);
	stprof_module_exit("embed");

	for (int i = 0; i < m->nlayers; i++) {
		stprof_module_enter(m->layers[i].name);
		t->h[i + 1] = block_forward(&m->layers[i].block, t->h[i], &t->saved[i]);
		if (recompute)
			block_saved_free(&t->saved[i]); /* keep only the layer input */
		stprof_module_exit(m->layers[i].name);
	}

	stprof_module_enter("head");
	struct tensor *pred = linear_forward(&m->head, t->h[m->nlayers]);
	stprof_module_exit("head");

	double loss = mse_loss(pred, target, loss_scale, &t->dpred);
	tensor_free(pred); /* the head's backward needs its input, not its output */
	return loss;
}

/* Adds the micro-batch's gradients into the parameters' and frees the tape's
 * tensors, each right after its last use. */
static void model_backward(struct model *m, struct tape *t, int recompute)
{
	int n = m->nlayers;
	stprof_module_enter("head");
	struct tensor *dh = linear_backward(&m->head, t->h[n], t->dpred, 1);
	tensor_free(t->dpred);
	tensor_free(t->h[n]);
	stprof_module_exit("head");

	for (int i = n - 1; i >= 0; i--) {
		struct block *b = &m->layers[i].block;
		stprof_module_enter(m->layers[i].name);
		if (recompute)
			tensor_free(block_forward(b, t->h[i], &t->saved[i]));
		struct tensor *dx = block_backward(b, t->h[i], &t->saved[i], dh);
		tensor_free(dh);
		tensor_free(t->h[i]);
		dh = dx;
		stprof_module_exit(m->layers[i].name);
	}

	stprof_module_enter("embed");
	linear_backward(&m->embed, t->x, dh, 0);
	tensor_free(dh);
	tensor_free(t->x);
	stprof_module_exit("embed");
}

/* ---- synthetic data ---------------------------------------------------- */

/* A fixed random network; the model learns to imitate it. */
struct teacher {
	struct linear fc1, fc2;
};

static void teacher_init(struct teacher *t, struct rng *r)
{
	linear_init(&t->fc1, IN_DIM, TEACHER_HIDDEN, 2.0f, FROZEN, r);
	linear_init(&t->fc2, TEACHER_HIDDEN, OUT_DIM, 1.0f, FROZEN, r);
}

static void teacher_free(struct teacher *t)
{
	linear_free(&t->fc1);
	linear_free(&t->fc2);
}

/* Draws rows random inputs into *x and the teacher's answers into *target. */
static void load_batch(const struct teacher *t, struct rng *r, int rows, struct tensor **x,
		       struct tensor **target)
{
	*x = tensor_alloc(rows, IN_DIM);
	for (size_t i = 0; i < tensor_numel(*x); i++)
		(*x)->data[i] = rng_normal(r);
	struct tensor *h = linear_forward(&t->fc1, *x);
	for (size_t i = 0; i < tensor_numel(h); i++)
		h->data[i] = tanhf(h->data[i]);
	*target = linear_forward(&t->fc2, h);
	tensor_free(h);
}

/* ---- training ---------------------------------------------------------- */

struct trainer {
	const struct options *opt;
	struct model model;
	struct teacher teacher;
	struct adam adam;
	struct rng data_rng;
	struct tape tape;
	struct snapshots snaps;
};

static void trainer_init(struct trainer *t, const struct options *o)
{
	memset(t, 0, sizeof *t);
	t->opt = o;
	struct rng init_rng = {o->seed};
	teacher_init(&t->teacher, &init_rng);
	model_init(&t->model, o, &init_rng);
	t->adam = (struct adam){.lr = o->lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
	t->data_rng.state = o->seed ^ 0x5eed5eed5eedull;
	tape_init(&t->tape, o->layers);
	if (o->plant_bugs)
		snapshots_init(&t->snaps, o->micro_batches);
}

static void trainer_free(struct trainer *t)
{
	snapshots_free(&t->snaps);
	tape_free(&t->tape, t->opt->layers);
	model_free(&t->model);
	teacher_free(&t->teacher);
}

/* One forward and backward pass over a micro-batch; returns its loss. */
static double train_micro_batch(struct trainer *t, int mb)
{
	const struct options *o = t->opt;
	int rows = o->batch / o->micro_batches;
	struct tensor *target;

	stprof_phase_begin("forward", mb);
	load_batch(&t->teacher, &t->data_rng, rows, &t->tape.x, &target);
	if (o->plant_bugs)
		cache_batch_stats(t->tape.x);
	/* the micro-batches' gradients add up to that of the batch's mean loss */
	double loss = model_forward(&t->model, &t->tape, target, o->recompute,
				    1.0f / (float)o->micro_batches);
	tensor_free(target);
	if (o->plant_bugs)
		snapshot_activations(&t->snaps, t->tape.h[0]);
	stprof_phase_end("forward", mb);

	stprof_phase_begin("backward", mb);
	model_backward(&t->model, &t->tape, o->recompute);
	stprof_phase_end("backward", mb);
	return loss;
}

static double train_iteration(struct trainer *t, int it)
{
	const struct options *o = t->opt;
	double loss = 0;
	stprof_iteration_begin(it);
	for (int mb = 0; mb < o->micro_batches; mb++)
		loss += train_micro_batch(t, mb);
	stprof_phase_begin("optimizer", 0);
	adam_step(&t->adam, t->model.params, t->model.nparams);
	stprof_phase_end("optimizer", 0);
	if (o->plant_bugs)
		release_snapshots(&t->snaps);
	stprof_iteration_end(it);
	return loss / o->micro_batches;
}

/* ---- options ----------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: train [OPTION]...\n\n"
		"Trains a small residual MLP (a stack of transformer feed-forward blocks) to\n"
		"imitate a fixed random network, and prints the loss of each iteration.  It is\n"
		"the example program of stprof: run it as `stprof ./train`.  Output depends only\n"
		"on the options (fixed seed, no timings).\n\n"
		"  -i, --iters N          training iterations (default 20)\n"
		"  -l, --layers N         residual blocks (default 4)\n"
		"  -w, --width N          model width; blocks are 4N wide inside (default 64)\n"
		"  -b, --batch N          rows per iteration (default 64)\n"
		"  -m, --micro-batches N  split each batch into N micro-batches whose gradients\n"
		"                         accumulate; N must divide the batch (default 4)\n"
		"  -r, --recompute        activation recomputation: keep only each layer's input\n"
		"                         and recompute the rest in the backward pass\n"
		"      --lr X             Adam learning rate (default 0.001)\n"
		"      --seed N           random seed of weights and data (default 1)\n"
		"      --plant-bugs       plant a leak (cache_batch_stats) and a late free\n"
		"                         (snapshot_activations) for stprof to find\n"
		"      --stats            print, at the end, what the program allocated:\n"
		"                         train-stats: allocs=N frees=N bytes=N peak_live=N\n"
		"                                      leaked=N leaked_bytes=N\n"
		"                         (counts of malloc/free calls, bytes requested, the peak\n"
		"                         of live bytes, blocks and bytes never freed)\n"
		"  -h, --help             this help\n\n"
		"Exit status: 0 on success, 2 on a bad option.\n");
}

static int parse_long(const char *name, const char *arg, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi) {
		fprintf(stderr, "train: --%s: expected an integer from %ld to %ld, got '%s'\n", name,
			lo, hi, arg);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_int(const char *name, const char *arg, int lo, int hi, int *out)
{
	long v;
	if (parse_long(name, arg, lo, hi, &v))
		return -1;
	*out = (int)v;
	return 0;
}

/* Returns 0 to run, 1 after --help, -1 on a bad option (message printed). */
static int parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_LR = 256, OPT_SEED, OPT_PLANT_BUGS, OPT_STATS };
	static const struct option longopts[] = {
		{"iters", required_argument, 0, 'i'},
		{"layers", required_argument, 0, 'l'},
		{"width", required_argument, 0, 'w'},
		{"batch", required_argument, 0, 'b'},
		{"micro-batches", required_argument, 0, 'm'},
		{"recompute", no_argument, 0, 'r'},
		{"lr", required_argument, 0, OPT_LR},
		{"seed", required_argument, 0, OPT_SEED},
		{"plant-bugs", no_argument, 0, OPT_PLANT_BUGS},
		{"stats", no_argument, 0, OPT_STATS},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	*o = (struct options){.iters = 20, .layers = 4, .width = 64, .batch = 64,
			      .micro_batches = 4, .seed = 1, .lr = 0.001f};
	int c, rc = 0;
	opterr = 0;
	while (rc == 0 && (c = getopt_long(argc, argv, ":i:l:w:b:m:rh", longopts, NULL)) != -1) {
		long seed;
		char *end;
		switch (c) {
		case 'i': rc = parse_int("iters", optarg, 0, 1000000, &o->iters); break;
		case 'l': rc = parse_int("layers", optarg, 1, 1024, &o->layers); break;
		case 'w': rc = parse_int("width", optarg, 1, 16384, &o->width); break;
		case 'b': rc = parse_int("batch", optarg, 1, 1 << 20, &o->batch); break;
		case 'm': rc = parse_int("micro-batches", optarg, 1, 1 << 20, &o->micro_batches); break;
		case 'r': o->recompute = 1; break;
		case OPT_LR:
			errno = 0;
			o->lr = strtof(optarg, &end);
			if (errno || end == optarg || *end || !(o->lr > 0 && o->lr < 1)) {
				fprintf(stderr, "train: --lr: expected a number between 0 and 1, got '%s'\n",
					optarg);
				rc = -1;
			}
			break;
		case OPT_SEED:
			rc = parse_long("seed", optarg, 0, LONG_MAX, &seed);
			o->seed = (unsigned long)seed;
			break;
		case OPT_PLANT_BUGS: o->plant_bugs = 1; break;
		case OPT_STATS: o->stats = 1; break;
		case 'h': usage(stdout); return 1;
		case ':':
			fprintf(stderr, "train: option '%s' needs an argument (see train --help)\n",
				argv[optind - 1]);
			return -1;
		default:
			fprintf(stderr, "train: unknown option '%s' (see train --help)\n", argv[optind - 1]);
			return -1;
		}
	}
	if (rc)
		return -1;
	if (optind < argc) {
		fprintf(stderr, "train: unexpected argument '%s' (see train --help)\n", argv[optind]);
		return -1;
	}
	if (o->batch % o->micro_batches) {
		fprintf(stderr, "train: --micro-batches %d does not divide --batch %d\n",
			o->micro_batches, o->batch);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options opt;
	int rc = parse_options(argc, argv, &opt);
	if (rc)
		return rc > 0 ? 0 : 2;

	printf("train: %d layer%s, width %d, batch %d in %d micro-batch%s, %d iteration%s%s%s\n",
	       opt.layers, opt.layers == 1 ? "" : "s", opt.width, opt.batch, opt.micro_batches,
	       opt.micro_batches == 1 ? "" : "es", opt.iters, opt.iters == 1 ? "" : "s",
	       opt.recompute ? ", recompute" : "", opt.plant_bugs ? ", planted bugs" : "");
	struct trainer t;
	trainer_init(&t, &opt);
	for (int it = 0; it < opt.iters; it++)
		printf("iter %4d  loss %.6f\n", it, train_iteration(&t, it));
	trainer_free(&t);

	if (opt.stats) {
		const struct alloc_stats *s = train_alloc_stats();
		printf("train-stats: allocs=%" PRIu64 " frees=%" PRIu64 " bytes=%" PRIu64
		       " peak_live=%" PRIu64 " leaked=%" PRIu64 " leaked_bytes=%" PRIu64 "\n",
		       s->allocs, s->frees, s->bytes, s->peak_live, s->allocs - s->frees,
		       s->live_bytes);
	}
	return 0;
}
