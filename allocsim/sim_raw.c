/*
 * sim_raw.c - raw cudaMalloc / cudaFree for every allocation: no cache, so
 * reserved equals allocated (each request rounded up to raw_alignment, 512 B
 * by default).  The floor any caching allocator is measured against: its
 * peak is the peak of live (rounded) bytes.  With a capacity, a request that
 * does not fit counts as an OOM.
 *
 * Invariant: allocated == reserved == sum of live rounded sizes.
 */
#include "allocsim_internal.h"

typedef struct raw_model {
	sim_base b;
	uint64_t *sizes; /* by slot */
	uint32_t nsizes;
} raw_model;

static int raw_alloc(sim_base *base, uint32_t slot, uint64_t size, uint16_t stream, uint32_t stack, uint64_t *addr)
{
	raw_model *m = (raw_model *)base;
	(void)stream;
	uint64_t a = base->cfg.raw_alignment;
	uint64_t r = (size + a - 1) / a * a;
	if (!r)
		r = a;
	if (slot >= m->nsizes) {
		uint32_t n = m->nsizes ? m->nsizes : 1024;
		while (n <= slot)
			n *= 2;
		uint64_t *s = realloc(m->sizes, (size_t)n * sizeof *s);
		if (!s)
			abort();
		m->sizes = s;
		m->nsizes = n;
	}
	m->sizes[slot] = r;
	int oom = base->cfg.capacity && base->reserved + r > base->cfg.capacity;
	if (oom)
		base->ooms++;
	base->allocated += r;
	base->reserved += r;
	base->segment_allocs++;
	if (r > base->largest_segment)
		base->largest_segment = r;
	if (addr)
		*addr = sim_va_alloc(base, r, a < 512 ? 512 : a);
	(void)stack;
	return oom;
}

static void raw_free(sim_base *base, uint32_t slot)
{
	raw_model *m = (raw_model *)base;
	base->allocated -= m->sizes[slot];
	base->reserved -= m->sizes[slot];
	base->segment_frees++;
}

static void raw_empty_cache(sim_base *base)
{
	(void)base;
}

static void raw_destroy(sim_base *base)
{
	raw_model *m = (raw_model *)base;
	free(m->sizes);
	sim_base_release(base);
	free(m);
}

static int raw_check(sim_base *base, char *why, size_t len)
{
	if (base->allocated != base->reserved) {
		snprintf(why, len, "raw: allocated != reserved");
		return -1;
	}
	return 0;
}

static const sim_ops raw_ops = {raw_alloc, raw_free, raw_empty_cache, raw_destroy, raw_check};

sim_base *sim_raw_new(const allocsim_config *c)
{
	raw_model *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	sim_base_init(&m->b, &raw_ops, c);
	return &m->b;
}
