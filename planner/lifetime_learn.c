/*
 * lifetime_learn.c - learns a lifetime model (stprof/lifetimes.h) from
 * traces: every host-heap allocation's calling context and lifetime.
 *
 * A trace's allocations are joined with their frees by address; an object
 * still live when the trace ends was never freed (class STP_LT_NEVER).  A
 * full context is the innermost `depth` native frames of the allocation's
 * call path (Python frames are left out: libstalloc sees native frames
 * only); each frame is hashed from its module's file name and its address
 * in the module's ELF image (the runtime address less the module's load
 * bias, from the trace's MODULE events).  Each full context keeps a
 * histogram of its objects' classes; the model gives every prefix of every
 * context (k innermost frames) the p95 class of the merged histograms of
 * the contexts it starts (Llama §5.1).
 *
 * Memory: the live objects of one trace, the distinct stacks and contexts;
 * never the trace's length.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifetime_internal.h"
#include "stprof/trace.h"


static int map_grow(lt_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	uint64_t *k = calloc(cap, 8), *v = calloc(cap, 8);
	if (!k || !v) {
		free(k);
		free(v);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->k[i])
			continue;
		size_t j = stp_lt_mix(m->k[i]) & (cap - 1);
		while (k[j])
			j = (j + 1) & (cap - 1);
		k[j] = m->k[i];
		v[j] = m->v[i];
	}
	free(m->k);
	free(m->v);
	m->k = k;
	m->v = v;
	m->cap = cap;
	return 0;
}

uint64_t *stp_lt_map_slot(lt_map *m, uint64_t key, int insert)
{
	if (insert && (m->n + 1) * 2 > m->cap && map_grow(m) < 0)
		return NULL;
	if (!m->cap)
		return NULL;
	size_t j = stp_lt_mix(key) & (m->cap - 1);
	while (m->k[j] && m->k[j] != key)
		j = (j + 1) & (m->cap - 1);
	if (!m->k[j]) {
		if (!insert)
			return NULL;
		m->k[j] = key;
		m->v[j] = 0;
		m->n++;
	}
	return &m->v[j];
}

/* Removal by backward shift (linear probing stays exact). */
int stp_lt_map_del(lt_map *m, uint64_t key, uint64_t *val)
{
	if (!m->cap)
		return 0;
	size_t j = stp_lt_mix(key) & (m->cap - 1);
	while (m->k[j] && m->k[j] != key)
		j = (j + 1) & (m->cap - 1);
	if (!m->k[j])
		return 0;
	*val = m->v[j];
	m->k[j] = 0;
	m->n--;
	size_t i = j;
	for (;;) {
		i = (i + 1) & (m->cap - 1);
		if (!m->k[i])
			break;
		size_t h = stp_lt_mix(m->k[i]) & (m->cap - 1);
		/* move i to j when its home is not in (j, i] */
		if ((j < i) ? (h <= j || h > i) : (h <= j && h > i)) {
			m->k[j] = m->k[i];
			m->v[j] = m->v[i];
			m->k[i] = 0;
			j = i;
		}
	}
	return 1;
}

void stp_lt_map_free(lt_map *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof *m);
}

typedef struct lt_mod {
	uint64_t lo, hi, bias, hash, name;
} lt_mod;


stp_lt_learner *stp_lt_learner_new(uint32_t depth)
{
	if (!depth || depth > STP_LT_DEPTH_MAX)
		return NULL;
	stp_lt_learner *l = calloc(1, sizeof *l);
	if (l)
		l->depth = depth;
	return l;
}

void stp_lt_learner_free(stp_lt_learner *l)
{
	if (!l)
		return;
	free(l->ctx);
	stp_lt_map_free(&l->by_key);
	for (size_t i = 0; i < l->nnames; i++) {
		free(l->names[i]);
		free(l->paths[i]);
	}
	free(l->names);
	free(l->paths);
	free(l->vlo);
	free(l->vsize);
	free(l);
}

uint64_t stp_lt_learner_allocs(const stp_lt_learner *l) { return l->allocs; }
uint64_t stp_lt_learner_contexts(const stp_lt_learner *l) { return l->nctx; }

void stp_lt_learner_histogram(const stp_lt_learner *l, uint64_t out[STP_LT_CLASSES])
{
	memset(out, 0, sizeof(uint64_t) * STP_LT_CLASSES);
	for (size_t i = 0; i < l->nctx; i++)
		for (unsigned c = 0; c < STP_LT_CLASSES; c++)
			out[c] += l->ctx[i].hist[c];
}

/* The index of a module file name; the first path and ELF address range
 * seen with it are kept for symbolizing. */
static uint64_t name_index(stp_lt_learner *l, const char *s, const char *path, uint64_t vlo, uint64_t vsize)
{
	for (size_t i = 0; i < l->nnames; i++)
		if (!strcmp(l->names[i], s))
			return i;
	if (l->nnames == l->cap_names) {
		size_t cap = l->cap_names ? l->cap_names * 2 : 64;
		char **n = realloc(l->names, cap * sizeof *n), **p = n ? realloc(l->paths, cap * sizeof *p) : NULL;
		if (n)
			l->names = n;
		if (p)
			l->paths = p;
		uint64_t *a = p ? realloc(l->vlo, cap * sizeof *a) : NULL;
		if (a)
			l->vlo = a;
		uint64_t *b = a ? realloc(l->vsize, cap * sizeof *b) : NULL;
		if (!b)
			return UINT64_MAX;
		l->vsize = b;
		l->cap_names = cap;
	}
	l->names[l->nnames] = strdup(s);
	l->paths[l->nnames] = strdup(path);
	l->vlo[l->nnames] = vlo;
	l->vsize[l->nnames] = vsize;
	return l->names[l->nnames] && l->paths[l->nnames] ? l->nnames++ : UINT64_MAX;
}

static const char *basename_of(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* The full context of a stack: its index in l->ctx, made on first sight. */
static int64_t context_of(stp_lt_learner *l, stp_reader *r, uint32_t stack, const lt_mod *mods, size_t nmods)
{
	uint64_t ips[64];
	uint32_t depth = stp_reader_stack(r, stack, ips, 64);
	lt_ctx c;
	memset(&c, 0, sizeof c);
	uint64_t h = 0;
	for (uint32_t i = 0; i < depth && c.n < l->depth; i++) {
		if (STP_IS_PYFRAME(ips[i]))
			continue;
		const lt_mod *m = NULL;
		for (size_t j = 0; j < nmods; j++)
			if (ips[i] >= mods[j].lo && ips[i] < mods[j].hi) {
				m = &mods[j];
				break;
			}
		uint64_t mh = m ? m->hash : stp_lt_module_hash("?");
		uint64_t va = m ? ips[i] - m->bias : 0;
		h = stp_lt_extend(h, stp_lt_frame_hash(mh, va));
		c.frame_mod[c.n] = m ? m->name : UINT64_MAX;
		c.frame_va[c.n] = va;
		c.pre[c.n++] = h;
	}
	uint64_t key = c.n ? stp_lt_key(c.n, c.pre[c.n - 1]) : 1;
	uint64_t *slot = stp_lt_map_slot(&l->by_key, key ? key : 1, 1);
	if (!slot)
		return -1;
	if (*slot)
		return (int64_t)*slot - 1;
	if (l->nctx == l->cap_ctx) {
		size_t cap = l->cap_ctx ? l->cap_ctx * 2 : 256;
		lt_ctx *n = realloc(l->ctx, cap * sizeof *n);
		if (!n)
			return -1;
		l->ctx = n;
		l->cap_ctx = cap;
	}
	l->ctx[l->nctx] = c;
	*slot = ++l->nctx;
	return (int64_t)l->nctx - 1;
}

int stp_lt_learner_add(stp_lt_learner *l, const char *trace, char *err, size_t errlen)
{
	stp_reader *r = stp_reader_open(trace, err, errlen);
	if (!r)
		return -1;
	lt_mod *mods = NULL;
	size_t nmods = 0, cap_mods = 0;
	int64_t *stack_ctx = NULL; /* stack id -> context + 1, 0 unknown */
	size_t cap_stacks = 0;
	lt_map live = {0};          /* address + 1 -> allocation time */
	lt_map live_ctx = {0};      /* address + 1 -> context */
	stp_event ev;
	int rc = 0, got;
	while ((got = stp_reader_next(r, &ev)) > 0) {
		if (ev.type == STP_EV_MODULE) {
			if (nmods == cap_mods) {
				cap_mods = cap_mods ? cap_mods * 2 : 64;
				lt_mod *n = realloc(mods, cap_mods * sizeof *n);
				if (!n)
					goto oom;
				mods = n;
			}
			const char *path = stp_reader_string(r, ev.u.module.path), *bn = basename_of(path);
			mods[nmods++] = (lt_mod){ev.u.module.base, ev.u.module.base + ev.u.module.size, ev.u.module.bias,
			                         stp_lt_module_hash(bn),
			                         name_index(l, bn, path, ev.u.module.base - ev.u.module.bias, ev.u.module.size)};
			/* a module mapped later may change what earlier stacks meant:
			 * recompute contexts of stacks first seen from now on */
			if (stack_ctx)
				memset(stack_ctx, 0, cap_stacks * sizeof *stack_ctx);
		} else if (ev.type == STP_EV_ALLOC && ev.u.alloc.kind == STP_MEM_HOST && ev.u.alloc.pool == 0) {
			uint32_t s = ev.u.alloc.stack;
			if (s >= cap_stacks) {
				size_t cap = cap_stacks ? cap_stacks : 1024;
				while (cap <= s)
					cap *= 2;
				int64_t *n = realloc(stack_ctx, cap * sizeof *n);
				if (!n)
					goto oom;
				memset(n + cap_stacks, 0, (cap - cap_stacks) * sizeof *n);
				stack_ctx = n;
				cap_stacks = cap;
			}
			if (!stack_ctx[s]) {
				int64_t c = context_of(l, r, s, mods, nmods);
				if (c < 0)
					goto oom;
				stack_ctx[s] = c + 1;
			}
			uint64_t *t = stp_lt_map_slot(&live, ev.u.alloc.addr + 1, 1);
			uint64_t *cx = stp_lt_map_slot(&live_ctx, ev.u.alloc.addr + 1, 1);
			if (!t || !cx)
				goto oom;
			*t = ev.time_ns;
			*cx = (uint64_t)stack_ctx[s] - 1;
			if (l->hooks)
				l->hooks->on_alloc(l->hooks->data, l->allocs, ev.time_ns, ev.u.alloc.addr, ev.u.alloc.requested,
				                   (size_t)*cx, &l->ctx[*cx]);
			l->allocs++;
		} else if (ev.type == STP_EV_FREE && ev.u.free.kind == STP_MEM_HOST && ev.u.free.pool == 0) {
			uint64_t t0, c;
			if (stp_lt_map_del(&live, ev.u.free.addr + 1, &t0) && stp_lt_map_del(&live_ctx, ev.u.free.addr + 1, &c)) {
				l->ctx[c].hist[stp_lt_class_of(ev.time_ns >= t0 ? ev.time_ns - t0 : 0)]++;
				if (l->hooks)
					l->hooks->on_free(l->hooks->data, ev.time_ns, ev.u.free.addr);
			}
		}
	}
	if (got < 0) {
		snprintf(err, errlen, "%s", stp_reader_error(r));
		rc = -1;
	}
	/* still live at the end: never freed while the program ran */
	for (size_t i = 0; i < live_ctx.cap; i++)
		if (live_ctx.k[i])
			l->ctx[live_ctx.v[i]].hist[STP_LT_NEVER]++;
	goto out;
oom:
	snprintf(err, errlen, "%s: out of memory", trace);
	rc = -1;
out:
	stp_lt_map_free(&live);
	stp_lt_map_free(&live_ctx);
	free(stack_ctx);
	free(mods);
	stp_reader_close(r);
	return rc;
}

/* The class of the 95th percentile of a histogram. */
unsigned stp_lt_p95(const uint64_t *h)
{
	uint64_t n = 0, acc = 0;
	for (unsigned c = 0; c < STP_LT_CLASSES; c++)
		n += h[c];
	for (unsigned c = 0; c < STP_LT_CLASSES; c++) {
		acc += h[c];
		if (n && acc * 100 >= n * 95)
			return c;
	}
	return STP_LT_NEVER;
}

typedef struct lt_acc {
	uint64_t key, hist[STP_LT_CLASSES];
	uint8_t level;
} lt_acc;

static int cmp_acc(const void *a, const void *b)
{
	const lt_acc *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

int stp_lt_learner_model(const stp_lt_learner *l, stp_lt_model *m)
{
	memset(m, 0, sizeof *m);
	m->depth = l->depth;
	lt_map idx = {0};
	lt_acc *a = NULL;
	size_t na = 0, cap = 0;
	uint64_t all[STP_LT_CLASSES] = {0};
	for (size_t i = 0; i < l->nctx; i++) {
		const lt_ctx *c = &l->ctx[i];
		for (unsigned k = 0; k < STP_LT_CLASSES; k++)
			all[k] += c->hist[k];
		for (uint32_t k = 1; k <= c->n; k++) {
			uint64_t key = stp_lt_key(k, c->pre[k - 1]);
			uint64_t *slot = stp_lt_map_slot(&idx, key ? key : 1, 1);
			if (!slot)
				goto oom;
			if (!*slot) {
				if (na == cap) {
					cap = cap ? cap * 2 : 1024;
					lt_acc *n = realloc(a, cap * sizeof *n);
					if (!n)
						goto oom;
					a = n;
				}
				memset(&a[na], 0, sizeof a[na]);
				a[na].key = key;
				a[na].level = (uint8_t)k;
				*slot = ++na;
			}
			for (unsigned h = 0; h < STP_LT_CLASSES; h++)
				a[*slot - 1].hist[h] += c->hist[h];
		}
	}
	if (na)
		qsort(a, na, sizeof *a, cmp_acc);
	m->e = na ? calloc(na, sizeof *m->e) : NULL;
	if (na && !m->e)
		goto oom;
	for (size_t i = 0; i < na; i++) {
		uint64_t count = 0;
		for (unsigned h = 0; h < STP_LT_CLASSES; h++)
			count += a[i].hist[h];
		m->e[i] = (stp_lt_entry){a[i].key, count, a[i].level, (uint8_t)stp_lt_p95(a[i].hist)};
	}
	m->n = na;
	m->fallback = (uint8_t)stp_lt_p95(all);
	free(a);
	stp_lt_map_free(&idx);
	return 0;
oom:
	free(a);
	stp_lt_map_free(&idx);
	stp_lt_model_free(m);
	return -1;
}

int stp_lt_evaluate(const stp_lt_model *m, const stp_lt_learner *t, stp_lt_accuracy *a)
{
	memset(a, 0, sizeof *a);
	for (size_t i = 0; i < t->nctx; i++) {
		const lt_ctx *c = &t->ctx[i];
		uint64_t n = 0;
		for (unsigned h = 0; h < STP_LT_CLASSES; h++)
			n += c->hist[h];
		if (!n)
			continue;
		unsigned truth = stp_lt_p95(c->hist), level;
		unsigned pred = stp_lt_predict(m, c->pre, c->n, &level);
		int exact = pred == truth, near = pred + 1 >= truth && pred <= truth + 1;
		a->contexts++;
		a->allocs += n;
		a->ctx_exact += exact;
		a->alloc_exact += exact ? n : 0;
		a->ctx_near += near;
		a->alloc_near += near ? n : 0;
		int known = c->n && level == (c->n < m->depth ? c->n : m->depth);
		a->ctx_known += known;
		a->alloc_known += known ? n : 0;
		a->ctx_backoff += !known;
		a->alloc_backoff += !known ? n : 0;
		a->confusion[truth][pred] += n;
	}
	return 0;
}

/* ---- comments for the model file: the heaviest contexts' frames */

typedef struct heavy { uint64_t n; size_t i; } heavy;

static int cmp_heavy_q(const void *a, const void *b)
{
	const heavy *x = a, *y = b;
	return x->n > y->n ? -1 : x->n < y->n;
}

size_t stp_lt_learner_comments(const stp_lt_learner *l, const stp_lt_model *m, char ***out, size_t max)
{
	*out = NULL;
	heavy *h = calloc(l->nctx ? l->nctx : 1, sizeof *h);
	if (!h)
		return 0;
	for (size_t i = 0; i < l->nctx; i++) {
		h[i].i = i;
		for (unsigned c = 0; c < STP_LT_CLASSES; c++)
			h[i].n += l->ctx[i].hist[c];
	}
	qsort(h, l->nctx, sizeof *h, cmp_heavy_q);
	size_t n = l->nctx < max ? l->nctx : max;
	char **lines = calloc(n ? n : 1, sizeof *lines);
	if (!lines) {
		free(h);
		return 0;
	}
	size_t k = 0;
	for (; k < n; k++) {
		const lt_ctx *c = &l->ctx[h[k].i];
		char buf[2048];
		unsigned lv;
		unsigned pred = c->n ? stp_lt_predict(m, c->pre, c->n, &lv) : m->fallback;
		int at = snprintf(buf, sizeof buf, "%" PRIu64 " allocations, class %s:", h[k].n, stp_lt_class_name(pred));
		for (uint32_t f = 0; f < c->n && at > 0 && (size_t)at < sizeof buf - 64; f++)
			at += snprintf(buf + at, sizeof buf - (size_t)at, " %s+0x%" PRIx64,
			               c->frame_mod[f] < l->nnames ? l->names[c->frame_mod[f]] : "?", c->frame_va[f]);
		lines[k] = strdup(buf);
		if (!lines[k])
			break;
	}
	free(h);
	*out = lines;
	return k;
}
