/*
 * viewer_models.c - the allocator states the viewer scrubs through when
 * the trace has no segments of its own (and beside them when it has): the
 * models the report ran (PyTorch's caching allocator as run, with
 * expandable segments flipped, BFC; the detector's r->sim configurations)
 * replayed on the objects of the space analyzed that the report's models
 * were fed (device memory: the framework allocator's when it was recorded;
 * host memory: allocations of at least r->sim_min_size), in trace order,
 * so the page and the report's model section describe the same run.  For each embedded object: its block's address and how much the
 * block exceeds the object; for each range a model maps or unmaps
 * (allocsim_model_watch): the embedded event it comes before.
 *
 * Invariants: objects are named by their ALLOC seq (unique); a model sees
 * an object's free exactly when the detector ended it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "viewer.h"

static void on_range(void *ctx, int mapped, uint64_t addr, uint64_t size, uint32_t segment)
{
	vw_state *s = ctx;
	vw_push(&s->ev, s->pending_ev);
	vw_push(&s->at, addr);
	vw_push(&s->sz, mapped ? size : (uint64_t)-(int64_t)size);
	vw_push(&s->id, segment);
}

static const char *model_title(const allocsim_config *c)
{
	if (c->model == ALLOCSIM_BFC)
		return "BFC allocator (XLA/TensorFlow)";
	return c->expandable_segments ? "PyTorch caching allocator, expandable segments"
	                              : "PyTorch caching allocator";
}

int vw_models_fed(const stp_det_result *r, const stp_alloc_info *a)
{
	const stp_det_space *sp = &r->spaces[r->primary];
	if (sp->kind == STP_MEM_DEVICE)
		return !sp->pool_allocs || a->pool == STP_POOL_TENSORS;
	return a->size >= r->sim_min_size;
}

int vw_models_open(stp_det *d, vw_state *st, int max)
{
	const stp_det_result *r = stp_det_result_of(d);
	if (!r->sim || r->primary < 0)
		return 0;
	const stp_det_space *sp = &r->spaces[r->primary];
	const allocsim_device_report *dr = NULL;
	for (size_t i = 0; i < r->sim->ndevices; i++) {
		const allocsim_device_report *x = &r->sim->devices[i];
		if (sp->kind == STP_MEM_DEVICE ? x->device == sp->device : x->host_fallback)
			dr = x;
	}
	if (!dr)
		return 0;
	int n = 0;
	for (size_t m = 0; m < dr->nresults && n < max; m++) {
		const allocsim_result *res = &dr->results[m];
		if (res->config.model == ALLOCSIM_RAW)
			continue;
		vw_state *s = &st[n];
		memset(s, 0, sizeof *s);
		char err[256];
		s->model = allocsim_model_new(&res->config, err, sizeof err);
		if (!s->model)
			continue;
		allocsim_model_watch(s->model, on_range, s);
		snprintf(s->key, sizeof s->key, "m%d", n & 7);
		snprintf(s->name, sizeof s->name, "%s (model: %s)", model_title(&res->config), res->label);
		char fed[96];
		if (sp->kind != STP_MEM_DEVICE)
			snprintf(fed, sizeof fed, "the allocations of at least %" PRIu64 " B", r->sim_min_size);
		else
			snprintf(fed, sizeof fed, "%s", sp->pool_allocs ? "the framework allocator's allocations" : "every allocation");
		snprintf(s->note, sizeof s->note,
		         "The model replays what the report's model section fed it (%s of this space; peak reserved "
		         "%.1f MiB); addresses are the model's own; objects without a block were not fed.",
		         fed, (double)res->peak_reserved / 1048576.0);
		n++;
	}
	return n;
}

void vw_models_alloc(vw_state *st, int n, const stp_event *ev, uint64_t t, int fed, int embedded)
{
	const stp_alloc_info *a = &ev->u.alloc;
	for (int i = 0; i < n; i++) {
		/* a refused request (a size no device has) gets no block */
		if (fed)
			allocsim_model_alloc(st[i].model, ev->seq, a->size, a->stream, t, a->stack, NULL);
		if (!embedded)
			continue;
		uint64_t at = 0, block = allocsim_model_block(st[i].model, ev->seq, &at);
		vw_push(&st[i].addr, block ? at : UINT64_MAX);
		vw_push(&st[i].extra, block > a->size ? block - a->size : 0);
	}
}

void vw_models_free(vw_state *st, int n, uint64_t seq, uint64_t t)
{
	for (int i = 0; i < n; i++)
		allocsim_model_free(st[i].model, seq, t);
}

void vw_states_free(vw_state *st, int n)
{
	for (int i = 0; i < n; i++) {
		if (st[i].model)
			allocsim_model_destroy(st[i].model);
		vw_u64s_free(&st[i].addr);
		vw_u64s_free(&st[i].extra);
		vw_u64s_free(&st[i].ev);
		vw_u64s_free(&st[i].at);
		vw_u64s_free(&st[i].sz);
		vw_u64s_free(&st[i].id);
		vw_map_free(&st[i].seg_size);
	}
}
