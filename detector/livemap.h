/*
 * livemap.h - address -> 64-bit value, open addressing with linear probing
 * and backward-shift deletion (no tombstones), so a map that sees millions
 * of insert/remove pairs stays as small as its live set.  Used for the live
 * objects of a pass (value = a slot index or a packed size).
 *
 * Invariants: keys are unique; the table is a power of two, at most 1/2
 * full; key 0 is stored out of line (address 0 can be a device address).
 */
#ifndef STP_DET_LIVEMAP_H
#define STP_DET_LIVEMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct det_map_entry {
	uint64_t key;
	uint64_t val;
} det_map_entry;

typedef struct det_map {
	det_map_entry *tab;
	uint64_t mask;   /* capacity - 1 */
	uint64_t count;  /* keys stored, key 0 included */
	int has_zero;
	uint64_t zero_val;
} det_map;

int det_map_init(det_map *m, uint64_t initial);
void det_map_destroy(det_map *m);
/* Inserts or replaces; returns 1 if the key was new, 0 if replaced (old
 * value in *old when not NULL), -1 on out of memory. */
int det_map_put(det_map *m, uint64_t key, uint64_t val, uint64_t *old);
/* 1 and *val when found, 0 when not. */
int det_map_get(const det_map *m, uint64_t key, uint64_t *val);
/* Removes; 1 and *val when it was there, 0 when not. */
int det_map_del(det_map *m, uint64_t key, uint64_t *val);
/* Bytes held by the table. */
size_t det_map_bytes(const det_map *m);

/* Iteration: i from 0; returns 1 with the entry while there are more. */
int det_map_next(const det_map *m, uint64_t *i, uint64_t *key, uint64_t *val);
#endif
