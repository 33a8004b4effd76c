/*
 * u64map.c - linear probing with backward-shift deletion (see u64map.h).
 * The table is kept at most half full.
 */
#include "u64map.h"

#include <stdlib.h>

static size_t slot(uint64_t k, size_t cap) { return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1); }

void u64map_free(u64map *m)
{
	free(m->keys);
	free(m->vals);
	*m = (u64map){0};
}

static int grow(u64map *m)
{
	size_t nc = m->cap ? m->cap * 2 : 64;
	uint64_t *nk = calloc(nc, sizeof *nk), *nv = malloc(nc * sizeof *nv);
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = slot(m->keys[i], nc);
		while (nk[j])
			j = (j + 1) & (nc - 1);
		nk[j] = m->keys[i];
		nv[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = nc;
	return 0;
}

int u64map_put(u64map *m, uint64_t key, uint64_t val)
{
	if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
		return -1;
	uint64_t k = key + 1;
	size_t j = slot(k, m->cap);
	while (m->keys[j] && m->keys[j] != k)
		j = (j + 1) & (m->cap - 1);
	if (!m->keys[j])
		m->n++;
	m->keys[j] = k;
	m->vals[j] = val;
	return 0;
}

int u64map_get(const u64map *m, uint64_t key, uint64_t *val)
{
	if (!m->cap)
		return 0;
	uint64_t k = key + 1;
	size_t j = slot(k, m->cap);
	while (m->keys[j]) {
		if (m->keys[j] == k) {
			if (val)
				*val = m->vals[j];
			return 1;
		}
		j = (j + 1) & (m->cap - 1);
	}
	return 0;
}

int u64map_del(u64map *m, uint64_t key)
{
	if (!m->cap)
		return 0;
	uint64_t k = key + 1;
	size_t j = slot(k, m->cap), mask = m->cap - 1;
	while (m->keys[j] && m->keys[j] != k)
		j = (j + 1) & mask;
	if (!m->keys[j])
		return 0;
	/* shift later members of the cluster back into the hole */
	size_t hole = j;
	for (size_t i = (j + 1) & mask; m->keys[i]; i = (i + 1) & mask) {
		size_t home = slot(m->keys[i], m->cap);
		/* move i to hole when home is not in (hole, i] cyclically */
		int between = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
		if (!between) {
			m->keys[hole] = m->keys[i];
			m->vals[hole] = m->vals[i];
			hole = i;
		}
	}
	m->keys[hole] = 0;
	m->n--;
	return 1;
}
