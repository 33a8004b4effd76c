/*
 * u64map.h - an open-addressing map from uint64 keys to uint64 values
 * (snapshot/ internal).  Key 0 is reserved by the caller's convention: the
 * map stores key + 1 internally, so every uint64 but UINT64_MAX is a valid
 * key.  Deletion shifts back (no tombstones), so memory stays O(live keys).
 */
#ifndef STP_SNAPSHOT_U64MAP_H
#define STP_SNAPSHOT_U64MAP_H
#include <stddef.h>
#include <stdint.h>

typedef struct u64map {
	uint64_t *keys, *vals;
	size_t cap, n;
} u64map;

void u64map_free(u64map *m);
/* 0, or -1 when out of memory. */
int u64map_put(u64map *m, uint64_t key, uint64_t val);
/* 1 and *val when present. */
int u64map_get(const u64map *m, uint64_t key, uint64_t *val);
/* 1 when it was present. */
int u64map_del(u64map *m, uint64_t key);
#endif
