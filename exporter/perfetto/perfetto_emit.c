/*
 * perfetto_emit.c - what every writer of an export's events shares (the
 * helpers of perfetto_export.h): the first error of an export, the times an
 * event is written at (trace time moved by the process's offset, then
 * clamped into the window), whether an allocation was selected by --top,
 * and event names and annotation values interned once per process.
 *
 * Below perfetto_export.c, perfetto_memory.c, perfetto_markers.c and
 * perfetto_extras.c, which call it; it calls only the writer
 * (perfetto_writer.c) and the containers (perfetto_util.c).
 *
 * Invariants: an export keeps its first error (later ones are dropped); a
 * name key maps to one interned id per process for the whole export.
 */
#include <stdarg.h>
#include <stdio.h>

#include "perfetto_export.h"

void pf_fail(pf_export *x, const char *fmt, ...)
{
	if (!x->err || !x->errlen || x->err[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->err, x->errlen, fmt, ap);
	va_end(ap);
}

uint64_t pf_conv(const pf_proc *p, uint64_t t)
{
	int64_t v = (int64_t)t + p->offset;
	return v < 0 ? 0 : (uint64_t)v;
}

/* Time an event is written at: inside the window. */
uint64_t pf_at(const pf_proc *p, uint64_t t)
{
	if (p->x->has_window) {
		if (t < p->x->lo)
			return p->x->lo;
		if (t > p->x->hi)
			return p->x->hi;
	}
	return t;
}

int pf_is_selected(const pf_proc *p, uint64_t seq)
{
	if (!p->selected)
		return 1;
	return seq < p->nselected_bits && (p->selected[seq / 64] >> (seq % 64) & 1);
}


/* Names an event through p->names: key identifies text, which is only
 * looked at the first time. */
void pf_name_key(pf_proc *p, pf_pkt *k, uint64_t key, const char *text)
{
	uint64_t *v = pf_map_get(&p->names, key);
	if (v) {
		pf_name_iid(k, *v);
		return;
	}
	uint64_t iid = pf_intern_name(k, text);
	if (pf_map_put(&p->names, key, iid) < 0)
		k->failed = 1;
	pf_name_iid(k, iid);
}

/* Names an event with a string literal. */
void pf_name_lit(pf_proc *p, pf_pkt *k, const char *lit)
{
	pf_name_key(p, k, PF_KEY_LITERAL | (uint64_t)(uintptr_t)lit, lit);
}

/* An annotation whose value is a string literal. */
void pf_arg_lit(pf_proc *p, pf_pkt *k, const char *key, const char *lit)
{
	uint64_t *v = pf_map_get(&p->names, PF_KEY_VALUE | (uint64_t)(uintptr_t)lit);
	uint64_t iid = v ? *v : pf_intern_str(k, lit);
	if (!v && pf_map_put(&p->names, PF_KEY_VALUE | (uint64_t)(uintptr_t)lit, iid) < 0)
		k->failed = 1;
	pf_arg_str_iid(k, key, iid);
}
