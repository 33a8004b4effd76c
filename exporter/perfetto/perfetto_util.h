/*
 * perfetto_util.h - containers the Perfetto exporter and lint share: a
 * u64 -> u64 hash map, a string table that never moves its strings, and a
 * growable byte vector.  Internal to exporter/perfetto/.
 *
 * Invariants: a pf_map holds any u64 key (UINT64_MAX included); pointers
 * returned by pf_strtab stay valid until pf_strtab_free(); every function
 * that allocates reports failure by returning -1 / NULL and leaves the
 * container unchanged.
 */
#ifndef STPROF_EXPORTER_PERFETTO_UTIL_H
#define STPROF_EXPORTER_PERFETTO_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* ---- u64 -> u64 map (linear probing, backward-shift deletion) */
typedef struct pf_map {
	uint64_t *keys, *vals;
	size_t n, cap;             /* cap: 0 or a power of two */
	int has_max;               /* key UINT64_MAX is kept aside */
	uint64_t max_val;
} pf_map;

void pf_map_free(pf_map *m);
/* Pointer to the value of key, or NULL. */
uint64_t *pf_map_get(const pf_map *m, uint64_t key);
/* Inserts or overwrites. 0 or -1 (out of memory). */
int pf_map_put(pf_map *m, uint64_t key, uint64_t val);
/* Removes key; 1 if it was there. */
int pf_map_del(pf_map *m, uint64_t key);
void pf_map_clear(pf_map *m);

static inline uint64_t pf_hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

uint64_t pf_hash_bytes(const void *p, size_t n);

/* ---- string table: text -> id, text kept in blocks that never move */
typedef struct pf_strtab {
	struct pf_str_ent *ents;   /* open addressing */
	size_t n, cap;
	char **blocks;
	size_t nblocks, block_used, block_cap;
} pf_strtab;

/* Looks s up.  Returns the stored copy and sets *id (its value), or NULL. */
const char *pf_strtab_find(const pf_strtab *t, const char *s, size_t len, uint64_t *id);
/* Adds s (not present) with id; returns the stored copy, NULL on OOM. */
const char *pf_strtab_add(pf_strtab *t, const char *s, size_t len, uint64_t id);
/* A copy of s kept with the table (not indexed). */
const char *pf_strtab_keep(pf_strtab *t, const char *s, size_t len);
void pf_strtab_free(pf_strtab *t);

/* ---- byte vector */
typedef struct pf_vec {
	uint8_t *data;
	size_t len, cap;
} pf_vec;

int pf_vec_reserve(pf_vec *v, size_t more);
void pf_vec_free(pf_vec *v);

/* Grows an array of elem-sized items so that it holds want items. */
int pf_grow(void **arr, size_t *cap, size_t want, size_t elem);

#endif
