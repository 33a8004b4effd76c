/*
 * allocsim_xla.c - the allocator report of a JAX device: XLA's BFC as the
 * program ran it (XLA_PYTHON_CLIENT_PREALLOCATE, _MEM_FRACTION, _ALLOCATOR
 * as recorded), the model's error against XLA's own statistics sampled in
 * the trace (memory_stats(): bytes in use, pool bytes, largest free
 * block), and XLA_PYTHON_CLIENT_* settings with their simulated effect.
 *
 * How JAX sizes its BFC (xla/pjrt/gpu, CreateBFCAllocator): the memory
 * limit is mem_fraction x the device's total memory; preallocate takes it
 * all in one region at the first allocation, otherwise regions grow from
 * 2 MiB (allow_growth).  So the device's memory is bytes_limit /
 * mem_fraction when XLA reported its limit, and a fraction f gives the
 * limit f x that.  The platform allocator has no pool: every buffer is its
 * own device allocation (the raw model).
 *
 * Advice, each simulated on the whole log at the device's memory:
 *   - the smallest MEM_FRACTION (in steps of .05) with no OOM when
 *     preallocating, and the step below it with its OOMs;
 *   - PREALLOCATE flipped at the run's limit (peak pool bytes, OOMs);
 *   - ALLOCATOR=platform (peak device bytes, OOMs).
 * Invariant: results[0] is the as-run model, the one probed and compared.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "allocsim_internal.h"

static const char *const key_names[ALLOCSIM_XLA_NKEYS] = {
	"bytes_in_use",        "peak_bytes_in_use", "pool_bytes",   "peak_pool_bytes",
	"largest_free_block_bytes", "bytes_limit",  "bytes_reserved", "peak_bytes_reserved",
	"num_allocs",          "largest_alloc_size"};

const char *allocsim_xla_key_name(int key)
{
	return key >= 0 && key < ALLOCSIM_XLA_NKEYS ? key_names[key] : NULL;
}

int allocsim_xla_key_of(const char *name, size_t n)
{
	for (int k = 0; k < ALLOCSIM_XLA_NKEYS; k++)
		if (strlen(key_names[k]) == n && !memcmp(key_names[k], name, n))
			return k;
	return -1;
}

void allocsim_xla_settings_default(allocsim_xla_settings *s)
{
	memset(s, 0, sizeof *s);
	s->preallocate = 1;
	s->mem_fraction = 0.75;
}

/* The largest free (mapped, not allocated) block of a model. */
static uint64_t largest_free(const sim_base *m)
{
	uint64_t best = 0;
	for (uint32_t i = 1; i < m->nB; i++) {
		const sim_block *b = &m->B[i];
		if ((b->flags & (SB_LIVE | SB_ALLOCATED | SB_MAPPED)) == (SB_LIVE | SB_MAPPED) && b->size > best)
			best = b->size;
	}
	return best;
}

static void probe_take(const sim_base *m, allocsim_xla_probe *p)
{
	p->model_in_use = m->allocated;
	p->model_pool = m->reserved;
	p->model_largest_free = largest_free(m);
}

int allocsim_xla_probe_run(const allocsim_events *e, const allocsim_config *c, allocsim_xla_probe *probes,
                           size_t nprobes, char *err, size_t errlen)
{
	sim_base *m = sim_new(c, err, errlen);
	if (!m)
		return -1;
	sim_slots_reserve(m, e->ids.nslots ? e->ids.nslots : 1);
	size_t p = 0;
	for (size_t k = 0; k <= e->n && p < nprobes; k++) {
		while (p < nprobes && probes[p].events <= k)
			probe_take(m, &probes[p++]);
		if (k == e->n)
			break;
		const sim_ev *v = &e->ev[k];
		if (v->slot & SIM_EV_FREE)
			m->ops->free(m, v->slot & ~SIM_EV_FREE);
		else
			m->ops->alloc(m, v->slot, v->size_stream & SIM_SIZE_MASK, (uint16_t)(v->size_stream >> 48), v->stack,
			              NULL);
	}
	for (; p < nprobes; p++)
		probe_take(m, &probes[p]);
	m->ops->destroy(m);
	return 0;
}

/* ---------------------------------------------------------------- report */

static void fmt_fraction(double f, char *buf, size_t len)
{
	int pct = (int)lround(f * 100);
	if (pct >= 100)
		snprintf(buf, len, "1.0");
	else if (pct % 10 == 0)
		snprintf(buf, len, ".%d", pct / 10);
	else
		snprintf(buf, len, ".%02d", pct);
}

static void bfc_config(allocsim_config *c, int preallocate, uint64_t limit, uint64_t capacity)
{
	allocsim_config_default(c, ALLOCSIM_BFC);
	c->bfc_allow_growth = !preallocate || !limit;
	c->bfc_memory_limit = limit;
	c->capacity = capacity;
}

/* Runs a candidate to its OOM count (stopping past `enough` OOMs). */
static int run_quiet(const allocsim_events *e, const allocsim_config *c, uint64_t enough, allocsim_result *r)
{
	allocsim_run_opts o = {.max_samples = 2, .abort_ooms_at = enough};
	int rc = allocsim_run(e, c, &o, r, NULL, 0);
	allocsim_result_clear(r);
	return rc;
}

static void add_rec(allocsim_device_report *dr, size_t max, const char *settings, const allocsim_result *r,
                    uint64_t reserved)
{
	if (dr->nrecs >= max)
		return;
	allocsim_recommendation *rc = &dr->recs[dr->nrecs++];
	memset(rc, 0, sizeof *rc);
	snprintf(rc->settings, sizeof rc->settings, "%s", settings);
	rc->peak_allocated = r->peak_allocated;
	rc->peak_reserved = reserved;
	rc->efficiency = reserved ? (double)r->peak_allocated / (double)reserved : 1.0;
	rc->ooms = r->ooms;
	const allocsim_result *base = &dr->results[0];
	rc->reserved_delta = (int64_t)reserved - (int64_t)base->peak_reserved;
	rc->efficiency_delta = rc->efficiency - base->efficiency;
}

static void recommend(const allocsim_events *e, allocsim_device_report *dr, uint64_t limit, uint64_t capacity,
                      size_t max)
{
	const allocsim_xla_settings *s = &dr->xla_settings;
	char set[160], f[16];
	allocsim_config c;
	allocsim_result r;
	/* the smallest preallocated fraction without an OOM: the count of OOMs
	 * falls as the limit grows, so a binary search over k/20 */
	int lo = 1, hi = 20, best = 0;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		bfc_config(&c, 1, (uint64_t)((double)capacity * mid / 20.0) / 256 * 256, capacity);
		if (run_quiet(e, &c, 1, &r) == 0 && !r.ooms)
			best = hi = mid;
		else
			lo = mid + 1;
	}
	/* best = 0: even .95 OOMs; show .95 with its OOMs */
	for (int k = best ? best : 19; k >= (best ? best - 1 : 19) && k >= 1; k--) {
		uint64_t lim = (uint64_t)((double)capacity * k / 20.0) / 256 * 256;
		bfc_config(&c, 1, lim, capacity);
		if (run_quiet(e, &c, UINT64_MAX, &r))
			continue;
		fmt_fraction(k / 20.0, f, sizeof f);
		snprintf(set, sizeof set, "XLA_PYTHON_CLIENT_MEM_FRACTION=%s%s", f,
		         s->preallocate && !s->platform ? "" : " XLA_PYTHON_CLIENT_PREALLOCATE=true");
		add_rec(dr, max, set, &r, lim);
	}
	/* preallocation flipped at the run's limit */
	if (!s->platform && limit) {
		bfc_config(&c, !s->preallocate, limit, capacity);
		if (!run_quiet(e, &c, UINT64_MAX, &r)) {
			snprintf(set, sizeof set, "XLA_PYTHON_CLIENT_PREALLOCATE=%s", s->preallocate ? "false" : "true");
			add_rec(dr, max, set, &r, r.peak_reserved);
		}
	}
	if (!s->platform) {
		allocsim_config_default(&c, ALLOCSIM_RAW);
		c.capacity = capacity;
		if (!run_quiet(e, &c, UINT64_MAX, &r))
			add_rec(dr, max, "XLA_PYTHON_CLIENT_ALLOCATOR=platform", &r, r.peak_reserved);
	}
}

int sim_xla_report(const allocsim_events *e, allocsim_xla_probe *probes, size_t nprobes,
                   const allocsim_replay_opts *o, allocsim_device_report *dr, char *err, size_t errlen)
{
	dr->xla = 1;
	if (o->xla)
		dr->xla_settings = *o->xla;
	else
		allocsim_xla_settings_default(&dr->xla_settings);
	const allocsim_xla_settings *s = &dr->xla_settings;
	double frac = s->mem_fraction > 0 && s->mem_fraction <= 1 ? s->mem_fraction : 0.75;
	uint64_t limit = 0;
	for (size_t i = 0; i < nprobes; i++)
		if ((probes[i].have >> ALLOCSIM_XLA_BYTES_LIMIT & 1) && probes[i].value[ALLOCSIM_XLA_BYTES_LIMIT] > limit)
			limit = probes[i].value[ALLOCSIM_XLA_BYTES_LIMIT];
	uint64_t capacity = o->capacity ? o->capacity : limit ? (uint64_t)((double)limit / frac) : 0;
	if (!limit && capacity && !s->platform)
		limit = (uint64_t)((double)capacity * frac) / 256 * 256;
	dr->xla_capacity = capacity;

	allocsim_config cfgs[16];
	size_t nc = 0;
	char f[16];
	fmt_fraction(frac, f, sizeof f);
	if (s->platform) {
		allocsim_config_default(&cfgs[nc], ALLOCSIM_RAW);
		cfgs[nc].capacity = capacity;
		snprintf(cfgs[nc++].name, sizeof cfgs[0].name, "platform allocator (as run)");
	} else {
		bfc_config(&cfgs[nc], s->preallocate, limit, capacity);
		if (!limit)
			snprintf(cfgs[nc].name, sizeof cfgs[0].name, "bfc allow_growth (as run; no limit known)");
		else
			snprintf(cfgs[nc].name, sizeof cfgs[0].name, "bfc %s %s (as run)",
			         s->preallocate ? "preallocate" : "allow_growth", f);
		nc++;
		if (limit && !o->no_bfc) {
			bfc_config(&cfgs[nc], !s->preallocate, limit, capacity);
			snprintf(cfgs[nc].name, sizeof cfgs[0].name, "bfc %s %s", s->preallocate ? "allow_growth" : "preallocate",
			         f);
			nc++;
		}
	}
	if (!o->no_raw && !s->platform) {
		allocsim_config_default(&cfgs[nc], ALLOCSIM_RAW);
		cfgs[nc].capacity = capacity;
		snprintf(cfgs[nc++].name, sizeof cfgs[0].name, "platform allocator (raw)");
	}
	allocsim_config_default(&cfgs[nc], ALLOCSIM_PYTORCH);
	cfgs[nc].capacity = capacity;
	snprintf(cfgs[nc++].name, sizeof cfgs[0].name, "pytorch (what-if)");
	for (size_t i = 0; i < o->nextra && nc < sizeof cfgs / sizeof *cfgs; i++) {
		char e2[256];
		allocsim_config_default(&cfgs[nc], ALLOCSIM_PYTORCH);
		if (allocsim_config_parse(&cfgs[nc], o->extra[i], e2, sizeof e2) ||
		    allocsim_config_check(&cfgs[nc], e2, sizeof e2)) {
			snprintf(err, errlen, "config \"%s\": %s", o->extra[i], e2);
			return -1;
		}
		if (!cfgs[nc].capacity)
			cfgs[nc].capacity = capacity;
		nc++;
	}

	if (sim_run_configs(e, cfgs, nc, o, dr, err, errlen))
		return -1;

	/* the as-run model at XLA's samples */
	if (nprobes) {
		dr->probes = malloc(nprobes * sizeof *dr->probes);
		if (!dr->probes) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		memcpy(dr->probes, probes, nprobes * sizeof *probes);
		dr->nprobes = nprobes;
		if (allocsim_xla_probe_run(e, &cfgs[0], dr->probes, nprobes, err, errlen))
			return -1;
		allocsim_actual *ac = &dr->actual;
		ac->xla = 1;
		ac->xla_samples = nprobes;
		ac->bytes_limit = limit;
		/* the peaks: XLA's own peak counters (samples of the current
		 * figures can miss a peak inside a program's run), the pool's
		 * samples when no peak is given (it grows only, but for
		 * garbage collection) */
		uint64_t pa = 0, pr = 0;
		for (size_t i = 0; i < nprobes; i++) {
			const allocsim_xla_probe *p = &dr->probes[i];
			if ((p->have >> ALLOCSIM_XLA_PEAK_BYTES_IN_USE & 1) && p->value[ALLOCSIM_XLA_PEAK_BYTES_IN_USE] > pa)
				pa = p->value[ALLOCSIM_XLA_PEAK_BYTES_IN_USE];
			for (int k = ALLOCSIM_XLA_POOL_BYTES; k <= ALLOCSIM_XLA_PEAK_POOL_BYTES; k++)
				if ((p->have >> k & 1) && p->value[k] > pr)
					pr = p->value[k];
			if ((p->have >> ALLOCSIM_XLA_BYTES_IN_USE & 1) && p->value[ALLOCSIM_XLA_BYTES_IN_USE]) {
				double a = (double)p->value[ALLOCSIM_XLA_BYTES_IN_USE];
				double err1 = fabs((double)p->model_in_use - a) / a;
				if (err1 > ac->in_use_error)
					ac->in_use_error = err1;
				ac->in_use_samples++;
			}
			if (p->have >> ALLOCSIM_XLA_LARGEST_FREE_BLOCK & 1) {
				ac->has_largest_free = 1;
				ac->largest_free = p->value[ALLOCSIM_XLA_LARGEST_FREE_BLOCK];
				ac->model_largest_free = p->model_largest_free;
			}
		}
		if (pr) {
			ac->present = 1;
			ac->peak_allocated = pa;
			ac->peak_reserved = pr;
			ac->efficiency = pr ? (double)pa / (double)pr : 1.0;
			const allocsim_result *r0 = &dr->results[0];
			if (pa)
				ac->allocated_error = ((double)r0->peak_allocated - (double)pa) / (double)pa;
			if (pr)
				ac->reserved_error = ((double)r0->peak_reserved - (double)pr) / (double)pr;
		}
	}
	if (!o->no_recommend && capacity) {
		size_t max = o->max_recommendations ? o->max_recommendations : 4;
		if (max < 4)
			max = 4;
		dr->recs = calloc(max, sizeof *dr->recs);
		if (!dr->recs) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		recommend(e, dr, limit, capacity, max);
		dr->recommend_tried = 1;
	}
	return 0;
}
