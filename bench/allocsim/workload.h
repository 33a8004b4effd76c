/*
 * workload.h - a synthetic training-loop allocation stream for the allocator
 * model benchmark: parameters and optimizer state allocated once; then per
 * iteration a forward pass (per layer: an activation kept for backward,
 * short-lived temporaries, small scalars), a backward pass in reverse
 * (gradients of activations, temporaries, activations freed), and an
 * optimizer step.  The batch size drifts from iteration to iteration, so
 * activation sizes change and the caching allocator fragments, as in the
 * varying-sequence-length workloads that motivate expandable segments.
 * Deterministic (fixed seed); one stack id per allocation site.
 */
#ifndef STPROF_BENCH_WORKLOAD_H
#define STPROF_BENCH_WORKLOAD_H
#include <stdint.h>

typedef struct wl_sink {
	void (*alloc)(void *ctx, uint64_t id, uint64_t size, uint64_t stream, uint64_t time, uint32_t stack);
	void (*free)(void *ctx, uint64_t id, uint64_t time);
	void *ctx;
} wl_sink;

static uint64_t wl_rng = 0x853c49e6748fea9bull;
static inline uint64_t wl_rnd(void)
{
	wl_rng ^= wl_rng << 13;
	wl_rng ^= wl_rng >> 7;
	wl_rng ^= wl_rng << 17;
	return wl_rng;
}

#define WL_LAYERS 48
#define WL_MAXLIVE (WL_LAYERS * 16)

/* Emits about `events` events (allocs + frees). */
static inline uint64_t wl_run(const wl_sink *s, uint64_t events)
{
	uint64_t n = 0, t = 0, next_id = 1;
	uint64_t act[WL_LAYERS], param[WL_LAYERS * 3];
	const uint64_t MB = 1ull << 20;
	uint64_t hidden = 4096;
	/* parameters and optimizer state: 3 tensors a layer */
	for (int l = 0; l < WL_LAYERS * 3; l++) {
		param[l] = next_id++ << 12;
		uint64_t sz = (l % 3 == 0) ? hidden * hidden * 2 : hidden * 4 * 2;
		s->alloc(s->ctx, param[l], sz, 0, t += 100, (uint32_t)(1 + l % 3));
		n++;
	}
	while (n < events) {
		uint64_t batch = 6 + wl_rnd() % 5;            /* drifting batch size */
		uint64_t seq = 512 + (wl_rnd() % 8) * 64;      /* and sequence length */
		uint64_t tokens = batch * seq;
		/* forward */
		for (int l = 0; l < WL_LAYERS && n < events; l++) {
			act[l] = next_id++ << 12;
			s->alloc(s->ctx, act[l], tokens * hidden * 2, 0, t += 100, 10 + (uint32_t)(l % 4));
			n++;
			for (int k = 0; k < 3; k++) {
				uint64_t id = next_id++ << 12;
				uint64_t sz = k == 0 ? tokens * hidden * 8 : k == 1 ? tokens * seq / 4 : 256 + wl_rnd() % 4096;
				s->alloc(s->ctx, id, sz, 0, t += 100, 20 + (uint32_t)k);
				s->free(s->ctx, id, t += 100);
				n += 2;
			}
		}
		/* backward */
		for (int l = WL_LAYERS - 1; l >= 0 && n < events; l--) {
			uint64_t g = next_id++ << 12;
			s->alloc(s->ctx, g, tokens * hidden * 2, 0, t += 100, 30);
			uint64_t tmp = next_id++ << 12;
			s->alloc(s->ctx, tmp, tokens * hidden * 4, 0, t += 100, 31);
			s->free(s->ctx, tmp, t += 100);
			s->free(s->ctx, act[l], t += 100);
			act[l] = 0;
			s->free(s->ctx, g, t += 100);
			n += 5;
		}
		for (int l = 0; l < WL_LAYERS; l++)
			if (act[l]) {
				s->free(s->ctx, act[l], t += 100);
				act[l] = 0;
				n++;
			}
		/* optimizer step: small temporaries */
		for (int l = 0; l < WL_LAYERS * 3 && n < events; l += 3) {
			uint64_t id = next_id++ << 12;
			s->alloc(s->ctx, id, 2 * MB / 4 + (uint64_t)l * 512, 0, t += 100, 40);
			s->free(s->ctx, id, t += 100);
			n += 2;
		}
	}
	return n;
}
#endif
