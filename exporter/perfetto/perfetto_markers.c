/*
 * perfetto_markers.c - iteration, phase and module markers as slices: one
 * stack per track (the process's "training" track for iterations and phases,
 * a thread track per thread for modules).  An iteration begin closes what is
 * open; an end closes the innermost open entry of its kind (and name) and
 * everything above it; an end that matches nothing is counted and skipped;
 * what is open at the end is closed there.  Timestamps on a track never go
 * back (a late marker is moved to the last time written), so the stack order
 * is also the time order.  The training track also has an instant for each
 * folded iteration and each request an allocator refused (REFUSED).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_export.h"

#define MAX_MARK_DEPTH 256

static const char *mark_name(pf_proc *p, const pf_mark *m, char *buf, size_t len)
{
	const char *s = stp_reader_string(p->r, m->name);
	switch (m->kind) {
	case STP_MARK_ITER_BEGIN:
		snprintf(buf, len, "iteration %" PRId64, m->value);
		return buf;
	case STP_MARK_PHASE_BEGIN: return *s ? s : "phase";
	case STP_MARK_MODULE_ENTER: return *s ? s : "module";
	default: return *s ? s : "marker";
	}
}

static int mark_begin_packet(pf_proc *p, pf_mtrack *mt, pf_mark *m, uint64_t t)
{
	char buf[64];
	if (t < mt->last_ts)
		t = mt->last_ts;
	mt->last_ts = t;
	pf_pkt *k = pf_event(&p->seq, t, T_BEGIN, mt->uuid);
	pf_name(k, mark_name(p, m, buf, sizeof buf));
	if (m->kind == STP_MARK_PHASE_BEGIN && m->value)
		pf_arg_int(k, "micro-batch", m->value);
	if (p->x->has_window && m->t < p->x->lo)
		pf_arg_bool(k, "began before the window", 1);
	m->emitted = 1;
	return pf_emit(k);
}

static int mark_push(pf_proc *p, pf_mtrack *mt, const stp_marker_info *mi, uint64_t t)
{
	if (mt->n >= MAX_MARK_DEPTH) {
		p->x->st.unmatched_markers++;
		return 0;
	}
	if (pf_grow((void **)&mt->stack, &mt->cap, mt->n + 1, sizeof *mt->stack) < 0)
		return -1;
	pf_mark *m = &mt->stack[mt->n++];
	*m = (pf_mark){.kind = mi->kind, .name = mi->name, .value = mi->value, .t = t};
	return p->wstate == 1 ? mark_begin_packet(p, mt, m, pf_at(p, t)) : 0;
}

/* Closes stack entries from index i up, innermost first. */
int pf_mark_pop_to(pf_proc *p, pf_mtrack *mt, size_t i, uint64_t t)
{
	int rc = 0;
	while (mt->n > i) {
		pf_mark *m = &mt->stack[--mt->n];
		if (!m->emitted || p->wstate != 1)
			continue;
		uint64_t te = pf_at(p, t);
		if (te < mt->last_ts)
			te = mt->last_ts;
		mt->last_ts = te;
		rc |= pf_emit(pf_event(&p->seq, te, T_END, mt->uuid));
	}
	return rc;
}

/* Index of the innermost entry of kind (and name, if non-zero); -1. */
static long mark_find(const pf_mtrack *mt, unsigned kind, uint32_t name)
{
	for (size_t i = mt->n; i-- > 0;)
		if (mt->stack[i].kind == kind && (!name || mt->stack[i].name == name))
			return (long)i;
	return -1;
}

int pf_on_marker(pf_proc *p, const stp_event *ev, uint64_t t)
{
	const stp_marker_info *m = &ev->u.marker;
	pf_mtrack *mt;
	long i;
	switch (m->kind) {
	case STP_MARK_ITER_BEGIN:
	case STP_MARK_ITER_END:
	case STP_MARK_PHASE_BEGIN:
	case STP_MARK_PHASE_END:
	case STP_MARK_ANNOTATION:
		if (pf_training_track(p, pf_at(p, t)) < 0)
			return -1;
		mt = &p->training;
		break;
	case STP_MARK_MODULE_ENTER:
	case STP_MARK_MODULE_EXIT:
		mt = pf_thread_track(p, ev->tid, pf_at(p, t));
		if (!mt)
			return -1;
		break;
	default:
		return 0;
	}
	switch (m->kind) {
	case STP_MARK_ITER_BEGIN:
		if (pf_mark_pop_to(p, mt, 0, t) < 0)
			return -1;
		return mark_push(p, mt, m, t);
	case STP_MARK_PHASE_BEGIN:
	case STP_MARK_MODULE_ENTER:
		return mark_push(p, mt, m, t);
	case STP_MARK_ITER_END:
		i = mark_find(mt, STP_MARK_ITER_BEGIN, 0);
		break;
	case STP_MARK_PHASE_END:
		i = mark_find(mt, STP_MARK_PHASE_BEGIN, m->name);
		break;
	case STP_MARK_MODULE_EXIT:
		i = mark_find(mt, STP_MARK_MODULE_ENTER, m->name);
		break;
	default: { /* annotation: an instant */
		if (p->wstate != 1)
			return 0;
		const char *s = stp_reader_string(p->r, m->name);
		pf_pkt *k = pf_event(&p->seq, pf_at(p, t), T_INSTANT, mt->uuid);
		pf_name(k, *s ? s : "annotation");
		pf_arg_int(k, "value", m->value);
		return pf_emit(k);
	}
	}
	if (i < 0) {
		p->x->st.unmatched_markers++;
		return 0;
	}
	return pf_mark_pop_to(p, mt, (size_t)i, t);
}

/* A memory space in an instant's words. */
static const char *space_words(uint8_t kind, uint32_t pool)
{
	return kind == STP_MEM_HOST ? (pool == STP_POOL_TENSORS ? "cpu tensors" : "host") : stp_mem_kind_name(kind);
}

/* An instant named name on the training track at t; NULL when there is
 * nothing to write (*rc 0: outside the window) or on an error (*rc -1). */
static pf_pkt *training_instant(pf_proc *p, uint64_t t, const char *name, int *rc)
{
	*rc = pf_training_track(p, pf_at(p, t)) < 0 ? -1 : 0;
	if (*rc || p->wstate != 1)
		return NULL;
	pf_pkt *k = pf_event(&p->seq, pf_at(p, t), T_INSTANT, p->training.uuid);
	pf_name(k, name);
	return k;
}

int pf_on_fold(pf_proc *p, const stp_event *ev, uint64_t t)
{
	const stp_fold_info *f = &ev->u.fold;
	char name[96];
	snprintf(name, sizeof name, "folded: like iteration %" PRId64, f->like);
	int rc;
	pf_pkt *k = training_instant(p, t, name, &rc);
	if (!k)
		return rc;
	pf_arg_uint(k, "events left out", f->elided);
	pf_arg_uint(k, "API events", f->apis);
	for (uint32_t i = 0; i < f->nspaces; i++) {
		const stp_fold_space *x = &f->spaces[i];
		char key[96];
		const char *sp = space_words(x->kind, x->pool);
		snprintf(key, sizeof key, "%s%s allocations left out", sp, x->kind == STP_MEM_HOST ? "" : " device");
		pf_arg_uint(k, key, x->allocs);
		snprintf(key, sizeof key, "%s peak above the iteration's start (bytes)", sp);
		pf_arg_uint(k, key, x->carried_in + x->peak);
	}
	return pf_emit(k);
}

int pf_on_refused(pf_proc *p, const stp_event *ev, uint64_t t)
{
	const stp_alloc_info *a = &ev->u.alloc;
	char name[96], b[32];
	snprintf(name, sizeof name, "%s: %s of %s", stp_refused_attempt(a) ? "refused, retried" : "refused",
	         pf_size_label(stp_refused_bytes(a), b, sizeof b), space_words(a->kind, a->pool));
	int rc;
	pf_pkt *k = training_instant(p, t, name, &rc);
	if (!k)
		return rc;
	pf_arg_uint(k, "bytes asked for", stp_refused_bytes(a)); /* an attempt's: the allocator retries it */
	pf_arg_int(k, "device", a->device);
	return pf_emit(k);
}

int pf_open_marks(pf_proc *p, pf_mtrack *mt, uint64_t t)
{
	for (size_t i = 0; i < mt->n; i++)
		if (!mt->stack[i].emitted && mark_begin_packet(p, mt, &mt->stack[i], t) < 0)
			return -1;
	return 0;
}
