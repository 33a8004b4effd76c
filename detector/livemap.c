/*
 * livemap.c - the address hash map (see livemap.h).  The hash is a 64-bit
 * multiply-xorshift of the address, good enough for allocator addresses,
 * which share their low bits (alignment) and high bits (arena).
 */
#include "livemap.h"

#include <stdlib.h>
#include <string.h>

static inline uint64_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

int det_map_init(det_map *m, uint64_t initial)
{
	memset(m, 0, sizeof *m);
	uint64_t cap = 64;
	while (cap < initial * 2)
		cap *= 2;
	m->tab = calloc(cap, sizeof *m->tab);
	if (!m->tab)
		return -1;
	m->mask = cap - 1;
	return 0;
}

void det_map_destroy(det_map *m)
{
	free(m->tab);
	memset(m, 0, sizeof *m);
}

static int grow(det_map *m)
{
	uint64_t ncap = (m->mask + 1) * 2;
	det_map_entry *nt = calloc(ncap, sizeof *nt);
	if (!nt)
		return -1;
	for (uint64_t i = 0; i <= m->mask; i++) {
		det_map_entry e = m->tab[i];
		if (!e.key)
			continue;
		uint64_t j = hash64(e.key) & (ncap - 1);
		while (nt[j].key)
			j = (j + 1) & (ncap - 1);
		nt[j] = e;
	}
	free(m->tab);
	m->tab = nt;
	m->mask = ncap - 1;
	return 0;
}

int det_map_put(det_map *m, uint64_t key, uint64_t val, uint64_t *old)
{
	if (!key) {
		if (m->has_zero) {
			if (old)
				*old = m->zero_val;
			m->zero_val = val;
			return 0;
		}
		m->has_zero = 1;
		m->zero_val = val;
		m->count++;
		return 1;
	}
	if ((m->count + 1) * 2 > m->mask + 1 && grow(m) < 0)
		return -1;
	uint64_t i = hash64(key) & m->mask;
	for (;;) {
		det_map_entry *e = &m->tab[i];
		if (!e->key) {
			e->key = key;
			e->val = val;
			m->count++;
			return 1;
		}
		if (e->key == key) {
			if (old)
				*old = e->val;
			e->val = val;
			return 0;
		}
		i = (i + 1) & m->mask;
	}
}

int det_map_get(const det_map *m, uint64_t key, uint64_t *val)
{
	if (!key) {
		if (m->has_zero)
			*val = m->zero_val;
		return m->has_zero;
	}
	uint64_t i = hash64(key) & m->mask;
	for (;;) {
		const det_map_entry *e = &m->tab[i];
		if (e->key == key) {
			*val = e->val;
			return 1;
		}
		if (!e->key)
			return 0;
		i = (i + 1) & m->mask;
	}
}

int det_map_del(det_map *m, uint64_t key, uint64_t *val)
{
	if (!key) {
		if (!m->has_zero)
			return 0;
		if (val)
			*val = m->zero_val;
		m->has_zero = 0;
		m->count--;
		return 1;
	}
	uint64_t i = hash64(key) & m->mask;
	for (;;) {
		det_map_entry *e = &m->tab[i];
		if (!e->key)
			return 0;
		if (e->key == key)
			break;
		i = (i + 1) & m->mask;
	}
	if (val)
		*val = m->tab[i].val;
	/* backward shift: move later entries of the cluster into the hole when
	 * their home slot is not between the hole and themselves */
	uint64_t hole = i, j = i;
	for (;;) {
		j = (j + 1) & m->mask;
		if (!m->tab[j].key)
			break;
		uint64_t home = hash64(m->tab[j].key) & m->mask;
		int movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
		if (movable) {
			m->tab[hole] = m->tab[j];
			hole = j;
		}
	}
	m->tab[hole].key = 0;
	m->tab[hole].val = 0;
	m->count--;
	return 1;
}

size_t det_map_bytes(const det_map *m) { return (size_t)(m->mask + 1) * sizeof *m->tab; }

int det_map_next(const det_map *m, uint64_t *i, uint64_t *key, uint64_t *val)
{
	/* index 0 .. mask are table slots; mask + 1 is the zero key */
	while (*i <= m->mask) {
		const det_map_entry *e = &m->tab[(*i)++];
		if (e->key) {
			*key = e->key;
			*val = e->val;
			return 1;
		}
	}
	if (*i == m->mask + 1) {
		(*i)++;
		if (m->has_zero) {
			*key = 0;
			*val = m->zero_val;
			return 1;
		}
	}
	return 0;
}
