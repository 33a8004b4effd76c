/*
 * perfetto_objects.c - the live objects of one trace: a pool of pf_obj
 * (freed slots reused through a free list) and a treap keyed by address, so
 * that a free finds its object and an API's address range finds every live
 * object it touches, each in O(log n).
 *
 * Invariants: addresses in the treap are unique (the exporter frees a live
 * object before inserting another at its address); a node's prio is at least
 * its children's; PF_NONE is the empty link.
 */
#include <stdlib.h>
#include <string.h>

#include "perfetto_export.h"

uint32_t pf_obj_new(pf_objs *o)
{
	uint32_t i;
	if (o->free_head != PF_NONE && o->cap) {
		i = o->free_head;
		o->free_head = o->v[i].left;
	} else {
		if (o->n >= PF_NONE - 1 || pf_grow((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v) < 0)
			return PF_NONE;
		i = (uint32_t)o->n++;
	}
	memset(&o->v[i], 0, sizeof o->v[i]);
	o->v[i].left = o->v[i].right = PF_NONE;
	o->v[i].lane = o->v[i].group = PF_NONE;
	o->v[i].prio = (uint32_t)pf_hash64(i * 0x9E3779B97F4A7C15ull + o->live);
	return i;
}

/* Splits the treap t into keys < a (*l) and keys >= a (*r). */
static void split(pf_obj *v, uint32_t t, uint64_t a, uint32_t *l, uint32_t *r)
{
	if (t == PF_NONE) {
		*l = *r = PF_NONE;
		return;
	}
	if (v[t].addr < a) {
		split(v, v[t].right, a, &v[t].right, r);
		*l = t;
	} else {
		split(v, v[t].left, a, l, &v[t].left);
		*r = t;
	}
}

static uint32_t merge(pf_obj *v, uint32_t l, uint32_t r)
{
	if (l == PF_NONE)
		return r;
	if (r == PF_NONE)
		return l;
	if (v[l].prio >= v[r].prio) {
		v[l].right = merge(v, v[l].right, r);
		return l;
	}
	v[r].left = merge(v, l, v[r].left);
	return r;
}

static uint32_t insert(pf_obj *v, uint32_t t, uint32_t i)
{
	if (t == PF_NONE)
		return i;
	if (v[i].prio > v[t].prio) {
		split(v, t, v[i].addr, &v[i].left, &v[i].right);
		return i;
	}
	if (v[i].addr < v[t].addr)
		v[t].left = insert(v, v[t].left, i);
	else
		v[t].right = insert(v, v[t].right, i);
	return t;
}

void pf_obj_insert(pf_objs *o, uint32_t i)
{
	o->v[i].left = o->v[i].right = PF_NONE;
	o->root = o->live ? insert(o->v, o->root, i) : i;
	o->live++;
}

static uint32_t erase(pf_obj *v, uint32_t t, uint64_t a)
{
	if (t == PF_NONE)
		return PF_NONE;
	if (v[t].addr == a)
		return merge(v, v[t].left, v[t].right);
	if (a < v[t].addr)
		v[t].left = erase(v, v[t].left, a);
	else
		v[t].right = erase(v, v[t].right, a);
	return t;
}

void pf_obj_remove(pf_objs *o, uint32_t i)
{
	o->root = erase(o->v, o->root, o->v[i].addr);
	o->live--;
	if (!o->live)
		o->root = PF_NONE;
	o->v[i].left = o->free_head;
	o->free_head = i;
}

uint32_t pf_obj_find(const pf_objs *o, uint64_t addr)
{
	uint32_t t = o->live ? o->root : PF_NONE;
	while (t != PF_NONE) {
		if (o->v[t].addr == addr)
			return t;
		t = addr < o->v[t].addr ? o->v[t].left : o->v[t].right;
	}
	return PF_NONE;
}

uint32_t pf_obj_floor(const pf_objs *o, uint64_t a)
{
	uint32_t t = o->live ? o->root : PF_NONE, best = PF_NONE;
	while (t != PF_NONE) {
		if (o->v[t].addr <= a) {
			best = t;
			t = o->v[t].right;
		} else {
			t = o->v[t].left;
		}
	}
	return best;
}

uint32_t pf_obj_next(const pf_objs *o, uint64_t a)
{
	uint32_t t = o->live ? o->root : PF_NONE, best = PF_NONE;
	while (t != PF_NONE) {
		if (o->v[t].addr > a) {
			best = t;
			t = o->v[t].left;
		} else {
			t = o->v[t].right;
		}
	}
	return best;
}

void pf_objs_free(pf_objs *o)
{
	free(o->v);
	memset(o, 0, sizeof *o);
	o->free_head = o->root = PF_NONE;
}
