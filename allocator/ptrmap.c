/*
 * ptrmap.c - an open-addressing map from u64 to u64 with linear probing and
 * backward-shift deletion (no tombstones), kept at most half full; it grows
 * by doubling into a new mapping.  UINT64_MAX marks an empty slot, so it is
 * no key.  Used for live blocks by address and for size indexes.
 */
#include <string.h>

#include "internal.h"

#define EMPTY UINT64_MAX

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static int grow(st_ptrmap *m)
{
	size_t nc = m->cap ? m->cap * 2 : 1024;
	uint64_t *nk = st_map(nc * sizeof *nk), *nv = st_map(nc * sizeof *nv);
	if (!nk || !nv) {
		st_unmap(nk, nc * sizeof *nk);
		st_unmap(nv, nc * sizeof *nv);
		return -1;
	}
	memset(nk, 0xff, nc * sizeof *nk);
	for (size_t i = 0; i < m->cap; i++) {
		if (m->k[i] == EMPTY)
			continue;
		size_t j = mix(m->k[i]) & (nc - 1);
		while (nk[j] != EMPTY)
			j = (j + 1) & (nc - 1);
		nk[j] = m->k[i];
		nv[j] = m->v[i];
	}
	st_unmap(m->k, m->cap * sizeof *m->k);
	st_unmap(m->v, m->cap * sizeof *m->v);
	m->k = nk;
	m->v = nv;
	m->cap = nc;
	return 0;
}

int st_ptrmap_put(st_ptrmap *m, uint64_t key, uint64_t val)
{
	if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
		return -1;
	size_t j = mix(key) & (m->cap - 1);
	while (m->k[j] != EMPTY && m->k[j] != key)
		j = (j + 1) & (m->cap - 1);
	if (m->k[j] == EMPTY)
		m->n++;
	m->k[j] = key;
	m->v[j] = val;
	return 0;
}

uint64_t *st_ptrmap_get(const st_ptrmap *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	size_t j = mix(key) & (m->cap - 1);
	while (m->k[j] != EMPTY) {
		if (m->k[j] == key)
			return &m->v[j];
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

int st_ptrmap_del(st_ptrmap *m, uint64_t key, uint64_t *val)
{
	if (!m->cap)
		return 0;
	size_t mask = m->cap - 1, j = mix(key) & mask;
	while (m->k[j] != key) {
		if (m->k[j] == EMPTY)
			return 0;
		j = (j + 1) & mask;
	}
	if (val)
		*val = m->v[j];
	/* backward shift: move later entries of the probe run into the hole
	 * when their home slot is not between the hole and them */
	size_t hole = j;
	for (size_t i = (j + 1) & mask; m->k[i] != EMPTY; i = (i + 1) & mask) {
		size_t home = mix(m->k[i]) & mask;
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			m->k[hole] = m->k[i];
			m->v[hole] = m->v[i];
			hole = i;
		}
	}
	m->k[hole] = EMPTY;
	m->n--;
	return 1;
}

void st_ptrmap_free(st_ptrmap *m)
{
	st_unmap(m->k, m->cap * sizeof *m->k);
	st_unmap(m->v, m->cap * sizeof *m->v);
	memset(m, 0, sizeof *m);
}
