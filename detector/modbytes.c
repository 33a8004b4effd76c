/*
 * modbytes.c - bytes by module: each allocation of the analyzed space is
 * charged to the innermost module open (MODULE_ENTER/EXIT markers, e.g. the
 * Python shim's qualified nn.Module names) when it is made, or to "(no
 * module)".  Pass 2 feeds it; the table lives until stp_det_free().
 * Invariants: one row per distinct name (names are interned by det_intern,
 * so equal names are one pointer); the stack is one per trace (markers of
 * all threads), deeper than 256 modules counts in the 256th.  The rows sum
 * to the analyzed space's allocations: those made before the first module
 * marker are "(no module)" too.
 *
 * Lean iterations (annotation stprof.lean 1 to 0; docs/record.md) have no
 * module markers: the shim runs no module hooks there.  Their tensors'
 * call paths are those of the full iterations they repeat, so an
 * allocation made there with no module open takes the module its call
 * path (stack id) was last made under outside lean iterations (a table
 * stack -> module; none known: "(no module)").  det_modbytes_stack() says
 * the stack of the allocation the next calls are about.
 */
#include <stdlib.h>
#include <string.h>

#include "det.h"
#include "space.h"

#define MOD_DEPTH 256

typedef struct det_modbytes det_modbytes;
struct det_modbytes {
	uint32_t stack_ix[MOD_DEPTH]; /* the open modules' indexes in `names` */
	uint32_t depth;
	stp_det_module *rows;
	uint32_t nrows, cap;
	int sorted;
	int markers; /* a module marker was seen: the table is shown */
	const char **names;        /* every name entered, in first-seen order */
	uint32_t nnames, names_cap;
	int lean;                  /* in a lean iteration now */
	uint32_t cur_stack;        /* of the allocation under way */
	uint32_t gen;              /* iterations begun */
	int cur_done;              /* cur_ix is the allocation's module */
	uint32_t cur_ix;
	struct tab { uint64_t *key; uint32_t *val, *gen; uint32_t n, cap; } mods, occ;
};

/* Open addressing, keys >= 1; an entry of another generation is free for
 * its key only (occ: counts per iteration without clearing the table). */
static uint32_t *slot(struct tab *t, uint64_t key)
{
	uint32_t mask = t->cap - 1, i = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & mask;
	while (t->key[i] && t->key[i] != key)
		i = (i + 1) & mask;
	if (!t->key[i])
		t->key[i] = key, t->val[i] = 0, t->gen[i] = 0, t->n++;
	return &t->val[i];
}

static uint32_t find(const struct tab *t, uint64_t key)
{
	if (!t->cap)
		return 0;
	uint32_t mask = t->cap - 1, i = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & mask;
	while (t->key[i] && t->key[i] != key)
		i = (i + 1) & mask;
	return t->key[i] ? t->val[i] : 0;
}

static int reserve(struct tab *t)
{
	if (2 * (t->n + 1) <= t->cap)
		return 0;
	struct tab o = *t;
	uint32_t nc = t->cap ? t->cap * 2 : 1024;
	t->key = calloc(nc, sizeof *t->key);
	t->val = calloc(nc, sizeof *t->val);
	t->gen = calloc(nc, sizeof *t->gen);
	if (!t->key || !t->val || !t->gen) {
		free(t->key), free(t->val), free(t->gen);
		*t = o;
		return -1;
	}
	t->cap = nc, t->n = 0;
	for (uint32_t i = 0; i < o.cap; i++)
		if (o.key[i]) {
			uint32_t *v = slot(t, o.key[i]);
			*v = o.val[i], t->gen[v - t->val] = o.gen[i];
		}
	free(o.key), free(o.val), free(o.gen);
	return 0;
}

static void tab_free(struct tab *t) { free(t->key), free(t->val), free(t->gen); }

/* The key of the allocation under way: its stack and how many allocations
 * of that stack came before it in this iteration (the same line runs once
 * per block of a model: the n-th is the n-th block's). */
static uint64_t alloc_key(det_modbytes *m)
{
	if (reserve(&m->occ) < 0)
		return 0;
	uint32_t *c = slot(&m->occ, m->cur_stack), *g = &m->occ.gen[c - m->occ.val];
	if (*g != m->gen)
		*g = m->gen, *c = 0;
	return (uint64_t)m->cur_stack << 32 | (*c)++;
}

/* The module of the allocation under way, as an index + 1; 0 none. */
static uint32_t module_of_alloc(det_modbytes *m)
{
	/* only in iterations of a trace with module markers: no table else */
	uint64_t key = m->cur_stack && m->markers && m->gen ? alloc_key(m) : 0;
	if (m->depth) {
		uint32_t ix1 = m->stack_ix[(m->depth < MOD_DEPTH ? m->depth : MOD_DEPTH) - 1] + 1;
		if (!m->lean && key && reserve(&m->mods) == 0)
			*slot(&m->mods, key) = ix1;
		return ix1;
	}
	return m->lean && key ? find(&m->mods, key) : 0;
}

/* The same, worked out once per allocation (it counts the occurrence). */
static uint32_t module_now(det_modbytes *m)
{
	if (!m->cur_done)
		m->cur_ix = module_of_alloc(m), m->cur_done = 1;
	return m->cur_ix;
}

void det_modbytes_stack(stp_det *d, uint32_t stack)
{
	if (d->modbytes)
		d->modbytes->cur_stack = stack, d->modbytes->cur_done = 0;
}

static stp_det_module *row_of(det_modbytes *m, const char *name)
{
	for (uint32_t i = m->nrows; i-- > 0;) /* few modules; recent ones last */
		if (m->rows[i].name == name)
			return &m->rows[i];
	if (m->nrows == m->cap) {
		uint32_t nc = m->cap ? m->cap * 2 : 64;
		stp_det_module *n = realloc(m->rows, nc * sizeof *n);
		if (!n)
			return NULL;
		m->rows = n;
		m->cap = nc;
	}
	m->rows[m->nrows] = (stp_det_module){.name = name};
	return &m->rows[m->nrows++];
}

void det_modbytes_marker(stp_det *d, const stp_event *ev)
{
	const stp_marker_info *mk = &ev->u.marker;
	if (mk->kind == STP_MARK_ANNOTATION && mk->name) {
		const char *an = det_intern(d, d->rd, mk->name);
		if (an && !strcmp(an, STP_LEAN_ANNOTATION) &&
		    (d->modbytes || (d->modbytes = calloc(1, sizeof *d->modbytes))))
			d->modbytes->lean = mk->value == 1;
		return;
	}
	if (mk->kind == STP_MARK_ITER_BEGIN && d->modbytes)
		d->modbytes->gen++;
	if (mk->kind != STP_MARK_MODULE_ENTER && mk->kind != STP_MARK_MODULE_EXIT)
		return;
	if (!d->modbytes && !(d->modbytes = calloc(1, sizeof *d->modbytes)))
		return;
	det_modbytes *m = d->modbytes;
	m->markers = 1;
	if (mk->kind == STP_MARK_MODULE_EXIT) {
		if (m->depth)
			m->depth--;
		return;
	}
	const char *name = det_intern(d, d->rd, mk->name);
	if (m->depth < MOD_DEPTH) {
		uint32_t k = m->nnames;
		while (k > 0 && m->names[k - 1] != name) /* few modules; interned names */
			k--;
		if (!k) {
			if (m->nnames == m->names_cap) {
				uint32_t nc = m->names_cap ? m->names_cap * 2 : 64;
				const char **n = realloc(m->names, nc * sizeof *n);
				if (!n)
					return;
				m->names = n;
				m->names_cap = nc;
			}
			m->names[m->nnames++] = name;
			k = m->nnames;
		}
		m->stack_ix[m->depth] = k - 1;
	}
	m->depth++;
}

uint32_t det_modbytes_current(stp_det *d)
{
	det_modbytes *m = d->modbytes;
	return m ? module_now(m) : 0;
}

const char *det_modbytes_name(const stp_det *d, uint32_t k)
{
	const det_modbytes *m = d->modbytes;
	return m && k < m->nnames ? m->names[k] : NULL;
}

void det_modbytes_alloc(stp_det *d, uint64_t size)
{
	if (!d->modbytes && !(d->modbytes = calloc(1, sizeof *d->modbytes)))
		return;
	det_modbytes *m = d->modbytes;
	uint32_t ix1 = module_now(m);
	const char *name = ix1 ? m->names[ix1 - 1] : "(no module)";
	stp_det_module *r = row_of(m, name);
	if (r) {
		r->allocs++;
		r->bytes += size;
	}
}

static int by_bytes(const void *a, const void *b)
{
	const stp_det_module *x = a, *y = b;
	return x->bytes != y->bytes ? (x->bytes < y->bytes ? 1 : -1) : strcmp(x->name, y->name);
}

uint32_t stp_det_modules(stp_det *d, const stp_det_module **out)
{
	det_modbytes *m = d->modbytes;
	*out = NULL;
	if (!m || !m->markers)
		return 0;
	if (!m->sorted && m->nrows)
		qsort(m->rows, m->nrows, sizeof *m->rows, by_bytes);
	m->sorted = 1;
	*out = m->rows;
	return m->nrows;
}

void det_modbytes_free(stp_det *d)
{
	if (d->modbytes) {
		free(d->modbytes->rows);
		free(d->modbytes->names);
		tab_free(&d->modbytes->mods);
		tab_free(&d->modbytes->occ);
	}
	free(d->modbytes);
	d->modbytes = NULL;
}
