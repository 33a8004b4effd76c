/*
 * gen.c - synthetic request sets.
 *
 * stp_gen_megatron: the steady-state iteration of one pipeline stage of a
 * Megatron-like GPT training run.  Each transformer layer's forward
 * allocates a fixed program of tensors (saved activations kept for the
 * backward, transient ones freed within the layer), its backward allocates
 * gradient temporaries and frees the saved activations in reverse order.
 * The schedule orders the forward and backward passes of the micro-batches:
 * GPipe, 1F1B (warm-up of stages - stage - 1 forwards), or Megatron's
 * interleaved 1F1B with `chunks` model chunks per stage.  With recompute only
 * each layer's input is kept and the forward is re-run inside the backward.
 * With experts > 0 the MLP is a mixture of experts whose per-expert tensors
 * have sizes drawn per iteration (token routing): they are marked dynamic.
 * Weights, gradients and optimizer state are persistent; the loss-scale
 * buffer is allocated at the end of an iteration and freed early in the next
 * (a wrapping request).  With jitter, every layer pass also allocates op
 * temporaries (workspaces) of random sizes, each freed a few allocations
 * later, so lifetimes interleave instead of nesting.  Every allocation and
 * every free is one tick.
 *
 * stp_gen_guillotine: cuts a width x period rectangle into n rectangles by
 * random guillotine cuts; as requests they tile the space exactly, so the
 * optimum pool is `width` (the lower bound) by construction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void stp_gen_opts_init(stp_gen_opts *o)
{
	memset(o, 0, sizeof *o);
	o->layers = 8;
	o->micro_batches = 8;
	o->stages = 4;
	o->stage = 0;
	o->chunks = 2;
	o->schedule = STP_GEN_1F1B;
	o->hidden = 4096;
	o->seq = 2048;
	o->batch = 1;
	o->seed = 1;
}

/* requests per micro-batch per layer, roughly (forward + backward) */
static size_t per_layer(const stp_gen_opts *o)
{
	return (o->recompute ? 19 : 16) + (o->experts ? 2 * (size_t)o->experts + 1 : 0) + (o->jitter ? 10 : 0);
}

void stp_gen_opts_for_size(stp_gen_opts *o, size_t n)
{
	size_t per_mb = per_layer(o) * o->layers + 2;
	size_t mb = n / (per_mb ? per_mb : 1);
	if (o->schedule == STP_GEN_INTERLEAVED && o->stages > 1)
		mb = mb / o->stages * o->stages; /* Megatron needs a multiple of the stages */
	if (mb < (o->schedule == STP_GEN_INTERLEAVED && o->stages ? o->stages : 1))
		mb = o->schedule == STP_GEN_INTERLEAVED && o->stages ? o->stages : 1;
	o->micro_batches = (uint32_t)mb;
}

typedef struct gen {
	stp_reqs *r;
	uint64_t tick;
	uint32_t ordinal;
	uint64_t rng;
	/* open allocations: request index by handle */
	int oom;
} gen;

static uint64_t next_rand(gen *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return g->rng;
}

static uint64_t site(uint32_t kind, uint32_t idx)
{
	uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)kind << 32 | idx);
	h *= 0x100000001b3ull;
	h ^= h >> 29;
	return h;
}

static long galloc(gen *g, uint64_t size, uint32_t phase, uint32_t layer, uint32_t kind, uint32_t idx, uint32_t flags)
{
	stp_req q = {0};
	q.size = size ? size : 1;
	q.t_start = g->tick++;
	q.phase_start = phase;
	q.layer_start = layer;
	q.flags = flags;
	q.ordinal = g->ordinal++;
	q.callsite = site(kind, idx);
	long i = stp_reqs_add(g->r, &q);
	if (i < 0)
		g->oom = 1;
	return i;
}

static void gfree(gen *g, long i, uint32_t phase, uint32_t layer)
{
	if (i < 0)
		return;
	stp_req *q = &g->r->req[i];
	q->t_end = g->tick++;
	q->phase_end = phase;
	q->layer_end = layer;
}

/* saved activations of one (micro-batch, chunk): handles per layer */
typedef struct saved {
	long *h;       /* layers x SAVED_MAX(o) */
	uint32_t *n;   /* per layer */
	uint32_t *lf;  /* forward layer segment of each layer (for MoE groups) */
} saved;
/* saved tensors per layer: at most 10 + 2 per expert are kept */
#define SAVED_MAX(o) (16 + 2 * (size_t)(o)->experts)

/* jitter: up to 4 pending temporaries, each freed after a random number of
 * later allocations */
typedef struct pending {
	long h[4];
	int left[4];
} pending;

static void jitter_tick(gen *g, const stp_gen_opts *o, pending *pd, uint32_t phase, uint32_t layer)
{
	if (!o->jitter)
		return;
	for (int k = 0; k < 4; k++)
		if (pd->h[k] >= 0 && --pd->left[k] <= 0) {
			gfree(g, pd->h[k], phase, layer);
			pd->h[k] = -1;
		}
	int k = (int)(next_rand(g) % 4);
	if (pd->h[k] >= 0 || next_rand(g) % 3 == 0)
		return;
	uint64_t sbh = o->seq * o->batch * o->hidden * 2;
	uint64_t sz = (sbh / 16 + next_rand(g) % sbh) / 512 * 512 + 512;
	pd->h[k] = galloc(g, sz, phase, layer, 50, (uint32_t)(sz / 512 % 64), 0);
	pd->left[k] = 1 + (int)(next_rand(g) % 4);
}

static void jitter_flush(gen *g, pending *pd, uint32_t phase, uint32_t layer)
{
	for (int k = 0; k < 4; k++)
		if (pd->h[k] >= 0) {
			gfree(g, pd->h[k], phase, layer);
			pd->h[k] = -1;
		}
}

static void layer_forward(gen *g, const stp_gen_opts *o, saved *sv, uint32_t l, uint32_t phase,
                          int keep_all, const char *tag)
{
	pending pd = {{-1, -1, -1, -1}, {0, 0, 0, 0}};
	uint64_t sbh = o->seq * o->batch * o->hidden * 2; /* bf16 activation */
	uint32_t lseg = stp_reqs_add_layer(g->r, tag, l, g->tick, g->tick);
	long *hs = sv->h + (size_t)l * SAVED_MAX(o);
	uint32_t *ns = &sv->n[l];
	sv->lf[l] = lseg;
#define SAVE(x) do { long h_ = (x); if (*ns < SAVED_MAX(o)) hs[(*ns)++] = h_; jitter_tick(g, o, &pd, phase, lseg); } while (0)
	/* layer input (the checkpoint under recompute) */
	SAVE(galloc(g, sbh, phase, lseg, 1, 0, 0));
	if (keep_all) {
		long ln = galloc(g, sbh, phase, lseg, 1, 1, 0);
		SAVE(ln);
		long qkv = galloc(g, 3 * sbh, phase, lseg, 1, 2, 0);
		SAVE(qkv);
		long tmp = galloc(g, sbh, phase, lseg, 1, 3, 0); /* rotary temp */
		gfree(g, tmp, phase, lseg);
		SAVE(galloc(g, sbh, phase, lseg, 1, 4, 0)); /* attention out (flash) */
		SAVE(galloc(g, o->seq * o->batch * 32 * 4, phase, lseg, 1, 5, 0)); /* softmax lse */
		SAVE(galloc(g, sbh, phase, lseg, 1, 6, 0)); /* proj out */
		SAVE(galloc(g, sbh / 2, phase, lseg, 1, 7, 0)); /* dropout mask */
		SAVE(galloc(g, sbh, phase, lseg, 1, 8, 0)); /* ln2 */
		if (o->experts) {
			long route = galloc(g, o->seq * o->batch * o->experts * 4, phase, lseg, 1, 9, 0);
			SAVE(route);
			uint64_t tokens = o->seq * o->batch;
			for (uint32_t x = 0; x < o->experts; x++) {
				/* tokens routed to expert x vary per iteration */
				uint64_t tk = tokens / o->experts;
				tk = tk / 2 + next_rand(g) % (tk + 1);
				uint64_t fc1 = tk * o->hidden * 4 * 2 / (o->experts > 1 ? 2 : 1);
				SAVE(galloc(g, tk * o->hidden * 2, phase, lseg, 2, x, STP_REQ_DYNAMIC));
				SAVE(galloc(g, fc1, phase, lseg, 3, x, STP_REQ_DYNAMIC));
			}
		} else {
			SAVE(galloc(g, 4 * sbh, phase, lseg, 1, 10, 0)); /* fc1 */
			SAVE(galloc(g, 4 * sbh, phase, lseg, 1, 11, 0)); /* gelu */
		}
		long t2 = galloc(g, 4 * sbh, phase, lseg, 1, 12, 0); /* fc2 workspace */
		gfree(g, t2, phase, lseg);
		SAVE(galloc(g, sbh / 2, phase, lseg, 1, 13, 0)); /* dropout mask 2 */
	} else {
		long tmp = galloc(g, 4 * sbh, phase, lseg, 1, 14, 0);
		long t3 = galloc(g, 3 * sbh, phase, lseg, 1, 15, 0);
		gfree(g, t3, phase, lseg);
		gfree(g, tmp, phase, lseg);
	}
	jitter_flush(g, &pd, phase, lseg);
	g->r->layers[lseg].t_end = g->tick;
#undef SAVE
}

static void layer_backward(gen *g, const stp_gen_opts *o, saved *sv, uint32_t l, uint32_t phase, const char *tag)
{
	uint64_t sbh = o->seq * o->batch * o->hidden * 2;
	if (o->recompute) {
		/* re-run the forward: the checkpoint stays, the rest is rebuilt */
		uint32_t keep = sv->n[l];
		long saved_in = keep ? sv->h[(size_t)l * SAVED_MAX(o)] : -1;
		sv->n[l] = 0;
		layer_forward(g, o, sv, l, phase, 1, tag);
		/* the recomputed input duplicate is freed at once: keep the original */
		long dup = sv->h[(size_t)l * SAVED_MAX(o)];
		gfree(g, dup, phase, sv->lf[l]);
		sv->h[(size_t)l * SAVED_MAX(o)] = saved_in;
	}
	uint32_t lseg = stp_reqs_add_layer(g->r, tag, l, g->tick, g->tick);
	pending pd = {{-1, -1, -1, -1}, {0, 0, 0, 0}};
	long dout = galloc(g, sbh, phase, lseg, 4, 0, 0);
	long dfc = galloc(g, 4 * sbh, phase, lseg, 4, 1, 0);
	long *hs = sv->h + (size_t)l * SAVED_MAX(o);
	for (uint32_t k = sv->n[l]; k-- > 0;) {
		if (k == sv->n[l] / 2) {
			gfree(g, dfc, phase, lseg);
			dfc = -1;
			long dq = galloc(g, 3 * sbh, phase, lseg, 4, 2, 0);
			gfree(g, dq, phase, lseg);
		}
		gfree(g, hs[k], phase, lseg);
		jitter_tick(g, o, &pd, phase, lseg);
	}
	jitter_flush(g, &pd, phase, lseg);
	gfree(g, dfc, phase, lseg);
	gfree(g, dout, phase, lseg);
	sv->n[l] = 0;
	g->r->layers[lseg].t_end = g->tick;
}

typedef struct step {
	int fwd;
	uint32_t mb, chunk;
} step;

/* the order of forward/backward passes of this stage */
static step *schedule(const stp_gen_opts *o, size_t *nsteps)
{
	uint32_t m = o->micro_batches, p = o->stages ? o->stages : 1, v = 1;
	if (o->schedule == STP_GEN_INTERLEAVED)
		v = o->chunks ? o->chunks : 1;
	size_t total = (size_t)m * v;
	step *s = malloc(2 * total * sizeof *s);
	if (!s)
		return NULL;
	size_t k = 0;
	if (o->schedule == STP_GEN_GPIPE) {
		for (uint32_t i = 0; i < m; i++)
			s[k++] = (step){1, i, 0};
		for (uint32_t i = 0; i < m; i++)
			s[k++] = (step){0, i, 0};
		*nsteps = k;
		return s;
	}
	/* virtual micro-batch k -> (chunk, micro-batch), as Megatron numbers them */
	size_t warm;
	if (v == 1)
		warm = p - o->stage - 1;
	else
		warm = (size_t)(p - o->stage - 1) * 2 + (size_t)(v - 1) * p;
	if (warm > total)
		warm = total;
	size_t f = 0, b = 0;
#define VF(x) (step){1, (uint32_t)(((x) / ((size_t)p * v)) * p + (x) % p), (uint32_t)(((x) % ((size_t)p * v)) / p)}
#define VB(x) (step){0, (uint32_t)(((x) / ((size_t)p * v)) * p + (x) % p), (uint32_t)(v - 1 - ((x) % ((size_t)p * v)) / p)}
	for (; f < warm; f++)
		s[k++] = VF(f);
	while (f < total) {
		s[k++] = VF(f);
		f++;
		s[k++] = VB(b);
		b++;
	}
	while (b < total) {
		s[k++] = VB(b);
		b++;
	}
#undef VF
#undef VB
	*nsteps = k;
	return s;
}

int stp_gen_megatron(const stp_gen_opts *o, stp_reqs *r, char *err, size_t errlen)
{
	stp_reqs_init(r);
	if (!o->layers || !o->micro_batches || !o->hidden || !o->seq || !o->batch || o->stage >= (o->stages ? o->stages : 1)) {
		snprintf(err, errlen, "generator: bad shape");
		return -1;
	}
	if (o->schedule == STP_GEN_INTERLEAVED && o->stages && o->micro_batches % o->stages) {
		snprintf(err, errlen, "generator: interleaved schedule needs micro-batches (%u) to be a multiple of stages (%u)",
		         o->micro_batches, o->stages);
		return -1;
	}
	gen g = {r, 0, 0, o->seed * 0x9E3779B97F4A7C15ull + 1, 0};
	uint32_t v = o->schedule == STP_GEN_INTERLEAVED ? (o->chunks ? o->chunks : 1) : 1;
	uint32_t lpc = (o->layers + v - 1) / v; /* layers per chunk */
	uint64_t h = o->hidden;
	/* persistent: per layer weights (bf16), grads (fp32 main grads), Adam state */
	for (uint32_t l = 0; l < o->layers; l++) {
		uint64_t wsz[4] = {3 * h * h * 2, h * h * 2, 4 * h * h * 2, 4 * h * h * 2};
		for (int k = 0; k < 4; k++) {
			for (int c = 0; c < 3; c++) {
				uint64_t sz = c == 0 ? wsz[k] : wsz[k] * (c == 1 ? 2 : 4);
				long i = galloc(&g, sz, 0, 0, 10 + c, l * 4 + k, STP_REQ_PERSISTENT);
				if (i >= 0) {
					r->req[i].t_start = 0;
					r->req[i].t_end = 0;
				}
				g.tick--; /* persistent objects are not events of the iteration */
			}
		}
	}
	g.tick = 0;
	/* tick 1: the loss-scale buffer of the previous iteration is freed */
	long st0 = galloc(&g, 4096, 0, 0, 21, 0, 0);
	uint64_t wrap_free = g.tick++;
	gfree(&g, st0, 0, 0);
	size_t nsteps;
	step *st = schedule(o, &nsteps);
	size_t slots = (size_t)o->micro_batches * v;
	saved *sv = calloc(slots, sizeof *sv);
	if (!st || !sv) {
		free(st);
		free(sv);
		snprintf(err, errlen, "generator: out of memory");
		return -1;
	}
	char tag[64];
	for (size_t k = 0; k < nsteps && !g.oom; k++) {
		step s = st[k];
		saved *x = &sv[(size_t)s.mb * v + s.chunk];
		if (!x->h) {
			x->h = malloc((size_t)lpc * SAVED_MAX(o) * sizeof *x->h);
			x->n = calloc(lpc, sizeof *x->n);
			x->lf = calloc(lpc, sizeof *x->lf);
			if (!x->h || !x->n || !x->lf) {
				g.oom = 1;
				break;
			}
		}
		snprintf(tag, sizeof tag, "%s", s.fwd ? "forward" : "backward");
		uint32_t ph = stp_reqs_add_phase(r, tag, s.mb, g.tick, g.tick);
		/* pipeline receive buffer for the stage input */
		long recv = galloc(&g, o->seq * o->batch * h * 2, ph, 0, 30, s.fwd, 0);
		if (s.fwd) {
			for (uint32_t l = 0; l < lpc; l++) {
				snprintf(tag, sizeof tag, "chunk%u.layers.%u", s.chunk, l);
				layer_forward(&g, o, x, l, ph, !o->recompute, tag);
			}
		} else {
			for (uint32_t l = lpc; l-- > 0;) {
				snprintf(tag, sizeof tag, "chunk%u.layers.%u", s.chunk, l);
				layer_backward(&g, o, x, l, ph, tag);
			}
		}
		gfree(&g, recv, ph, 0);
		if (ph)
			r->phases[ph].t_end = g.tick;
	}
	/* optimizer step: a few transient buffers */
	uint32_t ph = stp_reqs_add_phase(r, "optimizer", 0, g.tick, g.tick);
	for (uint32_t l = 0; l < o->layers && !g.oom; l++) {
		long t = galloc(&g, 4 * h * h * 4, ph, 0, 40, 0, 0);
		gfree(&g, t, ph, 0);
	}
	long wrap_next = -1;
	if (!g.oom)
		wrap_next = galloc(&g, 4096, ph, 0, 20, 0, 0);
	if (ph)
		r->phases[ph].t_end = g.tick;
	r->period = g.tick;
	/* the wrapping request: allocated at the end, freed at wrap_free next time */
	if (wrap_next >= 0) {
		r->req[wrap_next].t_end = wrap_free;
		r->req[wrap_next].phase_end = 0;
	}
	for (size_t i = 0; i < slots; i++) {
		free(sv[i].h);
		free(sv[i].n);
		free(sv[i].lf);
	}
	free(sv);
	free(st);
	if (g.oom) {
		snprintf(err, errlen, "generator: out of memory");
		stp_reqs_free(r);
		return -1;
	}
	r->source = stp_reqs_string(r, "generated: Megatron-like schedule");
	return stp_reqs_check(r, err, errlen);
}

typedef struct box {
	uint64_t x0, x1, t0, t1;
} box;

int stp_gen_guillotine(uint64_t width, uint64_t period, size_t n, uint64_t seed, stp_reqs *r)
{
	stp_reqs_init(r);
	box *b = malloc((n + 1) * sizeof *b);
	if (!b || !n || width < 1 || period < 1)
		return free(b), -1;
	uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 7;
	size_t nb = 1;
	b[0] = (box){0, width, 0, period};
	int stuck = 0;
	while (nb < n && stuck < 1000) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		size_t k = rng % nb;
		box x = b[k];
		int cut_time = (rng >> 20) & 1;
		uint64_t lo = cut_time ? x.t0 : x.x0, hi = cut_time ? x.t1 : x.x1;
		if (hi - lo < 2) {
			stuck++;
			continue;
		}
		uint64_t c = lo + 1 + (rng >> 24) % (hi - lo - 1);
		if (cut_time) {
			b[k].t1 = c;
			b[nb] = x;
			b[nb++].t0 = c;
		} else {
			b[k].x1 = c;
			b[nb] = x;
			b[nb++].x0 = c;
		}
		stuck = 0;
	}
	r->period = period;
	for (size_t i = 0; i < nb; i++) {
		stp_req q = {0};
		q.size = b[i].x1 - b[i].x0;
		q.t_start = b[i].t0;
		q.t_end = b[i].t1;
		q.ordinal = (uint32_t)i;
		q.callsite = b[i].x0; /* remembers the constructed offset */
		if (q.t_start == 0 && q.t_end == period)
			q.flags = STP_REQ_PERSISTENT;
		if (stp_reqs_add(r, &q) < 0)
			return free(b), -1;
	}
	free(b);
	r->source = stp_reqs_string(r, "generated: guillotine");
	return 0;
}
