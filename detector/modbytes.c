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
 */
#include <stdlib.h>
#include <string.h>

#include "det.h"
#include "space.h"

#define MOD_DEPTH 256

typedef struct det_modbytes det_modbytes;
struct det_modbytes {
	const char *stack[MOD_DEPTH];
	uint32_t stack_ix[MOD_DEPTH]; /* the names' indexes in `names` */
	uint32_t depth;
	stp_det_module *rows;
	uint32_t nrows, cap;
	int sorted;
	int markers; /* a module marker was seen: the table is shown */
	const char **names;        /* every name entered, in first-seen order */
	uint32_t nnames, names_cap;
};

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
		m->stack[m->depth] = name;
		m->stack_ix[m->depth] = k - 1;
	}
	m->depth++;
}

uint32_t det_modbytes_current(stp_det *d)
{
	det_modbytes *m = d->modbytes;
	if (!m || !m->depth)
		return 0;
	return m->stack_ix[(m->depth < MOD_DEPTH ? m->depth : MOD_DEPTH) - 1] + 1;
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
	const char *name = m->depth ? m->stack[(m->depth < MOD_DEPTH ? m->depth : MOD_DEPTH) - 1] : "(no module)";
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
	}
	free(d->modbytes);
	d->modbytes = NULL;
}
