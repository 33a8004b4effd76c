/*
 * modbytes.c - bytes by module: each allocation of the analyzed space is
 * charged to the innermost module open (MODULE_ENTER/EXIT markers, e.g. the
 * Python shim's qualified nn.Module names) when it is made; with none open,
 * a tensor a module's backward made (its call path's "<backward>:0 in
 * MODULE" frame: collector/core/pybackward.c) to that module; else to
 * "(no module)", or "(optimizer)" when made in an optimizer phase (its
 * state and its step's temporaries: the shim's phase markers around
 * Optimizer.step).  Pass 2 feeds it; the table lives until stp_det_free().
 * Invariants: one row per distinct name (names are interned by det_intern,
 * so equal names are one pointer); the stack is one per trace (markers of
 * all threads), deeper than 256 modules counts in the 256th.  The rows sum
 * to the analyzed space's allocations less the folded iterations' left-out
 * ones: those made before the first module marker are "(no module)" too.
 *
 * Lean iterations (annotation stprof.lean 1 to 0; docs/record.md) have no
 * module markers: the shim runs no module hooks there.  Their tensors'
 * call paths are those of the full iterations they repeat, so an
 * allocation made there with no module open takes the module that the same
 * occurrence of its call path (the n-th allocation of that stack id in its
 * iteration) was last made under outside lean iterations (none known: "(no
 * module)").  The tables for it exist only in the iterations of a trace
 * with module markers.  A folded iteration (a FOLD event) has its module
 * markers and most of its allocations left out: those it keeps (made in it,
 * freed after it) are "(no module)", lean or not, as their occurrences
 * cannot be counted (the model's output kept until the next step would
 * take the first layer's module).  det_modbytes_stack() says the stack of the
 * allocation the next calls are about.
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
	int optimizer;             /* optimizer phases open now */
	int folded;                /* in a folded iteration now */
	uint32_t cur_stack;        /* of the allocation under way */
	uint32_t gen;              /* iterations begun */
	int cur_done;              /* cur_ix is the allocation's module */
	uint32_t cur_ix;
	det_map mods;              /* stack << 32 | occurrence -> module index + 1 */
	det_map occ;               /* stack -> gen << 32 | allocations of it in iteration gen */
	det_map bwd;               /* stack -> 1 << 32 | the module index + 1 its backward frame names (0: none) */
};

/* The index + 1 of name among the modules entered, added when new; 0 out
 * of memory. */
static uint32_t name_index(det_modbytes *m, const char *name)
{
	uint32_t k = m->nnames;
	while (k > 0 && m->names[k - 1] != name) /* few modules; interned names */
		k--;
	if (k)
		return k;
	if (m->nnames == m->names_cap) {
		uint32_t nc = m->names_cap ? m->names_cap * 2 : 64;
		const char **n = realloc(m->names, nc * sizeof *n);
		if (!n)
			return 0;
		m->names = n;
		m->names_cap = nc;
	}
	m->names[m->nnames++] = name;
	return m->nnames;
}

/* The module whose backward made the allocation of this stack (its native
 * frames are followed by "<backward>:0 in MODULE"), as an index + 1 among
 * the modules entered (its forward entered it first); 0 for none (made
 * outside a backward, or by autograd's own thread where no module was
 * known: "<backward>:0 in backward", which names no module entered). */
static uint32_t backward_module(stp_det *d, det_modbytes *m, uint32_t stack)
{
	uint64_t v = 0;
	if (!stack || !d->rd || (!m->bwd.tab && det_map_init(&m->bwd, 256) < 0))
		return 0;
	if (det_map_get(&m->bwd, stack, &v))
		return (uint32_t)v;
	uint32_t ix1 = 0, parent, s = stack;
	uint64_t ip;
	for (int depth = 0; s && depth < 256 && stp_reader_stack_node(d->rd, s, &parent, &ip) == 0; depth++, s = parent) {
		if (!STP_IS_PYFRAME(ip))
			continue;
		const char *t = det_intern(d, d->rd, (uint32_t)ip);
		static const char bw[] = "<backward>:0 in ";
		if (t && !strncmp(t, bw, sizeof bw - 1))
			for (uint32_t k = 0; k < m->nnames && !ix1; k++) /* a module entered before: its forward's */
				if (!strcmp(m->names[k], t + sizeof bw - 1))
					ix1 = k + 1;
		break; /* the innermost Python frame says it */
	}
	det_map_put(&m->bwd, stack, 1ull << 32 | ix1, NULL); /* out of memory: worked out again */
	return ix1;
}

/* The key of the allocation under way: its stack and how many allocations
 * of that stack came before it in this iteration (the same line runs once
 * per block of a model: the n-th is the n-th block's); 0 out of memory. */
static uint64_t alloc_key(det_modbytes *m)
{
	uint64_t v = 0;
	if (!m->occ.tab && det_map_init(&m->occ, 1024) < 0)
		return 0;
	det_map_get(&m->occ, m->cur_stack, &v);
	uint32_t n = v >> 32 == m->gen ? (uint32_t)v : 0;
	if (det_map_put(&m->occ, m->cur_stack, (uint64_t)m->gen << 32 | (n + 1), NULL) < 0)
		return 0;
	return (uint64_t)m->cur_stack << 32 | n;
}

/* The module of the allocation under way, as an index + 1; 0 none. */
static uint32_t module_of_alloc(stp_det *d, det_modbytes *m)
{
	/* only in iterations of a trace with module markers: no table else */
	uint64_t key = m->cur_stack && m->markers && m->gen ? alloc_key(m) : 0, v = 0;
	if (m->depth) {
		uint32_t ix1 = m->stack_ix[(m->depth < MOD_DEPTH ? m->depth : MOD_DEPTH) - 1] + 1;
		if (!m->lean && key && (m->mods.tab || det_map_init(&m->mods, 1024) == 0))
			det_map_put(&m->mods, key, ix1, NULL); /* out of memory: not learned */
		return ix1;
	}
	if (m->lean && !m->folded && key && m->mods.tab && det_map_get(&m->mods, key, &v))
		return (uint32_t)v;
	return m->markers ? backward_module(d, m, m->cur_stack) : 0;
}

/* The same, worked out once per allocation (it counts the occurrence). */
static uint32_t module_now(stp_det *d, det_modbytes *m)
{
	if (!m->cur_done)
		m->cur_ix = module_of_alloc(d, m), m->cur_done = 1;
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
		d->modbytes->gen++, d->modbytes->folded = 0, d->modbytes->optimizer = 0;
	if ((mk->kind == STP_MARK_PHASE_BEGIN || mk->kind == STP_MARK_PHASE_END) && mk->name) {
		const char *ph = det_intern(d, d->rd, mk->name);
		if (ph && !strcmp(ph, "optimizer") && (d->modbytes || (d->modbytes = calloc(1, sizeof *d->modbytes)))) {
			if (mk->kind == STP_MARK_PHASE_BEGIN)
				d->modbytes->optimizer++;
			else if (d->modbytes->optimizer)
				d->modbytes->optimizer--;
		}
		return;
	}
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
		uint32_t k = name_index(m, name);
		if (!k)
			return;
		m->stack_ix[m->depth] = k - 1;
	}
	m->depth++;
}

void det_modbytes_fold(stp_det *d)
{
	if (d->modbytes)
		d->modbytes->folded = 1;
}

uint32_t det_modbytes_current(stp_det *d)
{
	det_modbytes *m = d->modbytes;
	return m ? module_now(d, m) : 0;
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
	uint32_t ix1 = module_now(d, m);
	const char *name = ix1 ? m->names[ix1 - 1] : m->optimizer ? "(optimizer)" : "(no module)";
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
		det_map_destroy(&d->modbytes->mods);
		det_map_destroy(&d->modbytes->occ);
		det_map_destroy(&d->modbytes->bwd);
	}
	free(d->modbytes);
	d->modbytes = NULL;
}
