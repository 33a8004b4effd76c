/*
 * allocsim_events.c - the compact event log the models replay, and the maps
 * that make it compact: object ids (any 64-bit value, usually an address)
 * become dense "slots" (recycled on free, so there are at most as many
 * slots as objects ever live at once), stream handles become 16-bit indices.
 *
 * Each event is 24 bytes (sim_ev).  A free carries the slot and the freed
 * object's requested size, so a replay needs no lookup at all: models index
 * their per-slot arrays directly.
 *
 * Invariants: a free in the log always names a slot that is live at that
 * point of the log (frees of unknown ids are counted and dropped here); an
 * alloc of an id that is live is logged as a free of the old object first.
 */
#include <string.h>

#include "allocsim_internal.h"

/* ---------------------------------------------------------------- idmap */

static inline uint32_t hash64(uint64_t k, uint32_t mask)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (uint32_t)k & mask;
}

int sim_idmap_init(sim_idmap *m)
{
	memset(m, 0, sizeof *m);
	m->mask = 1023;
	m->ent = calloc(m->mask + 1, sizeof *m->ent);
	return m->ent ? 0 : -1;
}

void sim_idmap_release(sim_idmap *m)
{
	free(m->ent);
	free(m->sizes);
	free(m->free_slots);
	memset(m, 0, sizeof *m);
}

static int grow(sim_idmap *m)
{
	uint32_t omask = m->mask, nmask = omask * 2 + 1;
	sim_id_ent *ne = calloc((size_t)nmask + 1, sizeof *ne);
	if (!ne)
		return -1;
	for (uint32_t i = 0; i <= omask; i++) {
		if (!m->ent[i].val)
			continue;
		uint32_t h = hash64(m->ent[i].key, nmask);
		while (ne[h].val)
			h = (h + 1) & nmask;
		ne[h] = m->ent[i];
	}
	free(m->ent);
	m->ent = ne;
	m->mask = nmask;
	return 0;
}

static int64_t find(const sim_idmap *m, uint64_t id)
{
	uint32_t h = hash64(id, m->mask);
	while (m->ent[h].val) {
		if (m->ent[h].key == id)
			return h;
		h = (h + 1) & m->mask;
	}
	return -1;
}

static int64_t new_slot(sim_idmap *m, uint64_t size)
{
	uint32_t s;
	if (m->nfree) {
		s = m->free_slots[--m->nfree];
	} else {
		if (m->nslots == m->capslots) {
			uint32_t cap = m->capslots ? m->capslots * 2 : 1024;
			uint64_t *ns = realloc(m->sizes, (size_t)cap * sizeof *ns);
			if (!ns)
				return -1;
			m->sizes = ns;
			m->capslots = cap;
		}
		if (m->nslots >= 0x7fffffffu)
			return -1;
		s = m->nslots++;
	}
	m->sizes[s] = size;
	return s;
}

int64_t sim_idmap_find(const sim_idmap *m, uint64_t id)
{
	int64_t at = find(m, id);
	return at < 0 ? -1 : (int64_t)m->ent[at].val - 1;
}

int64_t sim_idmap_add(sim_idmap *m, uint64_t id, uint64_t size, int *was_live)
{
	*was_live = 0;
	int64_t at = find(m, id);
	if (at >= 0) {
		*was_live = 1;
		return (int64_t)m->ent[at].val - 1;
	}
	if ((m->count + 1) * 4 > (m->mask + 1) * 3 && grow(m))
		return -1;
	int64_t s = new_slot(m, size);
	if (s < 0)
		return -1;
	uint32_t h = hash64(id, m->mask);
	while (m->ent[h].val)
		h = (h + 1) & m->mask;
	m->ent[h].key = id;
	m->ent[h].val = (uint32_t)s + 1;
	m->count++;
	return s;
}

int64_t sim_idmap_remove(sim_idmap *m, uint64_t id, uint64_t *size)
{
	int64_t at = find(m, id);
	if (at < 0)
		return -1;
	uint32_t s = m->ent[at].val - 1;
	/* backward-shift deletion keeps probe chains intact */
	uint32_t i = (uint32_t)at;
	for (;;) {
		m->ent[i].val = 0;
		uint32_t j = i;
		for (;;) {
			j = (j + 1) & m->mask;
			if (!m->ent[j].val)
				goto done;
			uint32_t h = hash64(m->ent[j].key, m->mask);
			/* can the entry at j move to i? yes unless h lies in (i, j] */
			if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
				continue;
			break;
		}
		m->ent[i] = m->ent[j];
		i = j;
	}
done:
	m->count--;
	if (size)
		*size = m->sizes[s];
	if (m->nfree == m->capfree) {
		uint32_t cap = m->capfree ? m->capfree * 2 : 1024;
		uint32_t *nf = realloc(m->free_slots, (size_t)cap * sizeof *nf);
		if (!nf)
			abort();
		m->free_slots = nf;
		m->capfree = cap;
	}
	m->free_slots[m->nfree++] = s;
	return s;
}

/* ---------------------------------------------------------------- streams */

int sim_stream_index(sim_streams *s, uint64_t handle)
{
	/* few streams in practice; the last one used is checked first */
	for (uint32_t i = s->n; i-- > 0;)
		if (s->handles[i] == handle)
			return (int)i;
	if (s->n >= 65535)
		return -1;
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 8;
		uint64_t *h = realloc(s->handles, cap * sizeof *h);
		if (!h)
			return -1;
		s->handles = h;
		s->cap = cap;
	}
	s->handles[s->n] = handle;
	return (int)s->n++;
}

/* ---------------------------------------------------------------- log */

allocsim_events *allocsim_events_new(void)
{
	allocsim_events *e = calloc(1, sizeof *e);
	if (!e)
		return NULL;
	if (sim_idmap_init(&e->ids)) {
		sim_idmap_release(&e->ids);
		free(e);
		return NULL;
	}
	return e;
}

void allocsim_events_destroy(allocsim_events *e)
{
	if (!e)
		return;
	free(e->ev);
	sim_idmap_release(&e->ids);
	free(e->streams.handles);
	free(e);
}

static sim_ev *push(allocsim_events *e)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 4096;
		sim_ev *n = realloc(e->ev, cap * sizeof *n);
		if (!n)
			return NULL;
		e->ev = n;
		e->cap = cap;
	}
	return &e->ev[e->n++];
}

int64_t sim_events_free_slot(allocsim_events *e, uint64_t id, uint64_t time)
{
	uint64_t size = 0;
	int64_t s = sim_idmap_remove(&e->ids, id, &size);
	if (s < 0) {
		e->unmatched_frees++;
		return -1;
	}
	sim_ev *v = push(e);
	if (!v)
		return -2;
	v->slot = (uint32_t)s | SIM_EV_FREE;
	v->stack = 0;
	v->size_stream = size;
	v->time = time;
	e->frees++;
	return s;
}

int64_t sim_events_alloc_slot2(allocsim_events *e, uint64_t id, uint64_t size, uint64_t stream, uint64_t time,
                               uint32_t stack, int64_t *dup_slot)
{
	*dup_slot = -1;
	if (size > SIM_SIZE_MASK)
		return -1;
	int si = sim_stream_index(&e->streams, stream);
	if (si < 0)
		return -1;
	int live;
	int64_t s = sim_idmap_add(&e->ids, id, size, &live);
	if (s >= 0 && live) {
		e->duplicate_allocs++;
		*dup_slot = sim_events_free_slot(e, id, time);
		if (*dup_slot < 0)
			return -1;
		s = sim_idmap_add(&e->ids, id, size, &live);
	}
	if (s < 0)
		return -1;
	sim_ev *v = push(e);
	if (!v)
		return -1;
	v->slot = (uint32_t)s;
	v->stack = stack;
	v->size_stream = size | ((uint64_t)si << 48);
	v->time = time;
	e->allocs++;
	return s;
}

/* Caller-numbered objects: the slot is the caller's (dense, not live) and
 * no id map is kept. */
static int direct_size(sim_idmap *m, uint32_t slot, uint64_t size)
{
	if (slot >= m->capslots) {
		uint32_t cap = m->capslots ? m->capslots : 1024;
		while (cap <= slot)
			cap *= 2;
		uint64_t *ns = realloc(m->sizes, (size_t)cap * sizeof *ns);
		if (!ns)
			return -1;
		m->sizes = ns;
		m->capslots = cap;
	}
	if (slot >= m->nslots)
		m->nslots = slot + 1;
	m->sizes[slot] = size;
	return 0;
}

int64_t sim_events_alloc_direct(allocsim_events *e, uint32_t slot, uint64_t size, uint64_t stream, uint64_t time,
                                uint32_t stack)
{
	if (size > SIM_SIZE_MASK || slot >= SIM_EV_FREE)
		return -1;
	int si = sim_stream_index(&e->streams, stream);
	if (si < 0 || direct_size(&e->ids, slot, size) < 0)
		return -1;
	sim_ev *v = push(e);
	if (!v)
		return -1;
	v->slot = slot;
	v->stack = stack;
	v->size_stream = size | ((uint64_t)si << 48);
	v->time = time;
	e->allocs++;
	return slot;
}

int64_t sim_events_free_direct(allocsim_events *e, uint32_t slot, uint64_t time)
{
	if (slot >= e->ids.nslots)
		return -1;
	sim_ev *v = push(e);
	if (!v)
		return -2;
	v->slot = slot | SIM_EV_FREE;
	v->stack = 0;
	v->size_stream = e->ids.sizes[slot];
	v->time = time;
	e->frees++;
	return slot;
}

int64_t sim_events_alloc_slot(allocsim_events *e, uint64_t id, uint64_t size, uint64_t stream, uint64_t time,
                              uint32_t stack)
{
	int64_t dup;
	return sim_events_alloc_slot2(e, id, size, stream, time, stack, &dup);
}

int allocsim_events_alloc(allocsim_events *e, uint64_t id, uint64_t size, uint64_t stream, uint64_t time,
                          uint32_t stack)
{
	return sim_events_alloc_slot(e, id, size, stream, time, stack) < 0 ? -1 : 0;
}

int allocsim_events_free(allocsim_events *e, uint64_t id, uint64_t time)
{
	int64_t s = sim_events_free_slot(e, id, time);
	return s >= 0 ? 0 : s == -1 ? 1 : -1;
}

void allocsim_events_trim(allocsim_events *e)
{
	if (e->n && e->n < e->cap) {
		sim_ev *v = realloc(e->ev, e->n * sizeof *v);
		if (v) {
			e->ev = v;
			e->cap = e->n;
		}
	}
}

size_t allocsim_events_count(const allocsim_events *e)
{
	return e->n;
}

uint64_t allocsim_events_allocs(const allocsim_events *e)
{
	return e->allocs;
}

size_t allocsim_events_memory(const allocsim_events *e)
{
	return e->cap * sizeof *e->ev + ((size_t)e->ids.mask + 1) * sizeof *e->ids.ent +
	       (size_t)e->ids.capslots * sizeof *e->ids.sizes + (size_t)e->ids.capfree * sizeof *e->ids.free_slots +
	       e->streams.cap * sizeof *e->streams.handles;
}
