/* perfetto_util.c - see perfetto_util.h. */
#include <stdlib.h>
#include <string.h>

#include "perfetto_util.h"

#define EMPTY UINT64_MAX

void pf_map_free(pf_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

void pf_map_clear(pf_map *m)
{
	if (m->keys)
		memset(m->keys, 0xff, m->cap * sizeof *m->keys);
	m->n = 0;
	m->has_max = 0;
}

uint64_t *pf_map_get(const pf_map *m, uint64_t key)
{
	if (key == EMPTY)
		return m->has_max ? (uint64_t *)&m->max_val : NULL;
	if (!m->cap)
		return NULL;
	size_t mask = m->cap - 1;
	for (size_t i = pf_hash64(key) & mask;; i = (i + 1) & mask) {
		if (m->keys[i] == key)
			return &m->vals[i];
		if (m->keys[i] == EMPTY)
			return NULL;
	}
}

static int map_grow(pf_map *m)
{
	size_t nc = m->cap ? m->cap * 2 : 64;
	uint64_t *nk = malloc(nc * sizeof *nk), *nv = malloc(nc * sizeof *nv);
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -1;
	}
	memset(nk, 0xff, nc * sizeof *nk);
	size_t mask = nc - 1;
	for (size_t j = 0; j < m->cap; j++) {
		if (m->keys[j] == EMPTY)
			continue;
		size_t i = pf_hash64(m->keys[j]) & mask;
		while (nk[i] != EMPTY)
			i = (i + 1) & mask;
		nk[i] = m->keys[j];
		nv[i] = m->vals[j];
	}
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = nc;
	return 0;
}

int pf_map_put(pf_map *m, uint64_t key, uint64_t val)
{
	if (key == EMPTY) {
		m->has_max = 1;
		m->max_val = val;
		return 0;
	}
	if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m) < 0)
		return -1;
	size_t mask = m->cap - 1;
	size_t i = pf_hash64(key) & mask;
	while (m->keys[i] != EMPTY && m->keys[i] != key)
		i = (i + 1) & mask;
	if (m->keys[i] == EMPTY) {
		m->keys[i] = key;
		m->n++;
	}
	m->vals[i] = val;
	return 0;
}

int pf_map_del(pf_map *m, uint64_t key)
{
	if (key == EMPTY) {
		int had = m->has_max;
		m->has_max = 0;
		return had;
	}
	if (!m->cap)
		return 0;
	size_t mask = m->cap - 1;
	size_t i = pf_hash64(key) & mask;
	while (m->keys[i] != key) {
		if (m->keys[i] == EMPTY)
			return 0;
		i = (i + 1) & mask;
	}
	/* Backward-shift: move later members of the probe run into the hole. */
	size_t hole = i;
	for (size_t j = (i + 1) & mask; m->keys[j] != EMPTY; j = (j + 1) & mask) {
		size_t home = pf_hash64(m->keys[j]) & mask;
		/* j may move to hole if home is not in (hole, j] cyclically */
		int in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
		if (!in_range) {
			m->keys[hole] = m->keys[j];
			m->vals[hole] = m->vals[j];
			hole = j;
		}
	}
	m->keys[hole] = EMPTY;
	m->n--;
	return 1;
}

uint64_t pf_hash_bytes(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return pf_hash64(h ^ n);
}

/* ---- string table */
struct pf_str_ent {
	uint64_t hash;
	const char *text; /* NULL: empty slot */
	uint32_t len;
	uint64_t id;
};

#define BLOCK_MIN (64u << 10)

const char *pf_strtab_keep(pf_strtab *t, const char *s, size_t len)
{
	if (!t->nblocks || t->block_used + len + 1 > t->block_cap) {
		size_t cap = len + 1 > BLOCK_MIN ? len + 1 : BLOCK_MIN;
		char **nb = realloc(t->blocks, (t->nblocks + 1) * sizeof *nb);
		if (!nb)
			return NULL;
		t->blocks = nb;
		char *b = malloc(cap);
		if (!b)
			return NULL;
		t->blocks[t->nblocks++] = b;
		t->block_used = 0;
		t->block_cap = cap;
	}
	char *dst = t->blocks[t->nblocks - 1] + t->block_used;
	memcpy(dst, s, len);
	dst[len] = 0;
	t->block_used += len + 1;
	return dst;
}

const char *pf_strtab_find(const pf_strtab *t, const char *s, size_t len, uint64_t *id)
{
	if (!t->cap)
		return NULL;
	uint64_t h = pf_hash_bytes(s, len);
	size_t mask = t->cap - 1;
	for (size_t i = h & mask; t->ents[i].text; i = (i + 1) & mask) {
		const struct pf_str_ent *e = &t->ents[i];
		if (e->hash == h && e->len == len && !memcmp(e->text, s, len)) {
			*id = e->id;
			return e->text;
		}
	}
	return NULL;
}

const char *pf_strtab_add(pf_strtab *t, const char *s, size_t len, uint64_t id)
{
	if ((t->n + 1) * 4 > t->cap * 3) {
		size_t nc = t->cap ? t->cap * 2 : 256;
		struct pf_str_ent *ne = calloc(nc, sizeof *ne);
		if (!ne)
			return NULL;
		for (size_t j = 0; j < t->cap; j++) {
			if (!t->ents[j].text)
				continue;
			size_t i = t->ents[j].hash & (nc - 1);
			while (ne[i].text)
				i = (i + 1) & (nc - 1);
			ne[i] = t->ents[j];
		}
		free(t->ents);
		t->ents = ne;
		t->cap = nc;
	}
	const char *copy = pf_strtab_keep(t, s, len);
	if (!copy)
		return NULL;
	uint64_t h = pf_hash_bytes(s, len);
	size_t i = h & (t->cap - 1);
	while (t->ents[i].text)
		i = (i + 1) & (t->cap - 1);
	t->ents[i] = (struct pf_str_ent){h, copy, (uint32_t)len, id};
	t->n++;
	return copy;
}

void pf_strtab_free(pf_strtab *t)
{
	for (size_t i = 0; i < t->nblocks; i++)
		free(t->blocks[i]);
	free(t->blocks);
	free(t->ents);
	memset(t, 0, sizeof *t);
}

/* ---- vectors */
int pf_vec_reserve(pf_vec *v, size_t more)
{
	if (v->len + more <= v->cap)
		return 0;
	size_t nc = v->cap ? v->cap : 4096;
	while (nc < v->len + more)
		nc *= 2;
	uint8_t *nd = realloc(v->data, nc);
	if (!nd)
		return -1;
	v->data = nd;
	v->cap = nc;
	return 0;
}

void pf_vec_free(pf_vec *v)
{
	free(v->data);
	memset(v, 0, sizeof *v);
}

int pf_grow(void **arr, size_t *cap, size_t want, size_t elem)
{
	if (want <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 16;
	while (nc < want)
		nc *= 2;
	void *na = realloc(*arr, nc * elem);
	if (!na)
		return -1;
	*arr = na;
	*cap = nc;
	return 0;
}
