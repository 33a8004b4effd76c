/*
 * host.c - the host heap models' face (stprof/allocsim.h, allocsim_host_*):
 * the map from a trace's addresses to each live object's placement in its
 * model (host_spans.c: size classes, the lifetime heap; host_glibc.c), and
 * the models' usage figures.
 *
 * Invariants: an address is in the map iff it is live in the model; its
 * slot's placement word is what the model returned for it.
 */
#include <stdlib.h>

#include "allocsim_internal.h"
#include "host_internal.h"

struct allocsim_host {
	allocsim_host_kind kind;
	const host_ops *ops;
	void *model;
	sim_idmap ids;   /* addr -> slot */
	uint64_t *where; /* slot -> placement */
	uint32_t cap_where;
	allocsim_host_usage u;
};

allocsim_host *allocsim_host_new(allocsim_host_kind kind)
{
	allocsim_host *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->kind = kind;
	h->ops = kind == ALLOCSIM_HOST_GLIBC ? &host_glibc_ops : &host_spans_ops;
	if (sim_idmap_init(&h->ids) || !(h->model = h->ops->create())) {
		allocsim_host_delete(h);
		return NULL;
	}
	return h;
}

void allocsim_host_delete(allocsim_host *h)
{
	if (!h)
		return;
	if (h->model)
		h->ops->destroy(h->model);
	sim_idmap_release(&h->ids);
	free(h->where);
	free(h);
}

int allocsim_host_alloc(allocsim_host *h, uint64_t addr, uint64_t size, unsigned lifetime_class)
{
	if (sim_idmap_find(&h->ids, addr) >= 0)
		allocsim_host_free(h, addr);
	int was_live;
	int64_t slot = sim_idmap_add(&h->ids, addr, size, &was_live);
	if (slot < 0)
		return -1;
	if ((uint64_t)slot >= h->cap_where) {
		uint32_t cap = h->cap_where ? h->cap_where * 2 : 1024;
		while (cap <= (uint64_t)slot)
			cap *= 2;
		uint64_t *w = realloc(h->where, (size_t)cap * sizeof *w);
		if (!w)
			return -1;
		h->where = w;
		h->cap_where = cap;
	}
	h->where[slot] = HOST_NOWHERE;
	unsigned lc = h->kind == ALLOCSIM_HOST_LIFETIME ? lifetime_class : 7;
	return h->ops->alloc(h->model, &h->u, size, lc, &h->where[slot]);
}

void allocsim_host_free(allocsim_host *h, uint64_t addr)
{
	uint64_t size;
	int64_t slot = sim_idmap_remove(&h->ids, addr, &size);
	if (slot < 0 || h->where[slot] == HOST_NOWHERE)
		return;
	h->ops->free(h->model, &h->u, h->where[slot]);
}

allocsim_host_usage allocsim_host_usage_of(const allocsim_host *h) { return h->u; }

const char *allocsim_host_name(allocsim_host_kind kind)
{
	switch (kind) {
	case ALLOCSIM_HOST_SIZE_CLASSES: return "size classes";
	case ALLOCSIM_HOST_GLIBC: return "glibc-like";
	case ALLOCSIM_HOST_LIFETIME: return "lifetime heap";
	}
	return "?";
}
