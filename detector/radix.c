/*
 * radix.c - a stable LSD radix sort of (64-bit key, 32-bit value) pairs,
 * for the detector's large sorts (redundant allocation sorts every
 * accessed object by size, then each size group's accesses by level).
 * Byte positions where every key has the same byte are skipped, so small
 * keys (sizes, levels) cost two to four passes.  Equal keys keep their
 * input order.
 */
#include <stdlib.h>
#include <string.h>

#include "det.h"

int det_radix_kv(uint64_t *key, uint32_t *val, size_t n)
{
	if (n < 2)
		return 0;
	uint64_t *k2 = malloc(n * sizeof *k2);
	uint32_t *v2 = malloc(n * sizeof *v2);
	size_t(*cnt)[256] = calloc(8, sizeof *cnt);
	if (!k2 || !v2 || !cnt) {
		free(k2), free(v2), free(cnt);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t x = key[i];
		for (int b = 0; b < 8; b++)
			cnt[b][(x >> (8 * b)) & 0xff]++;
	}
	uint64_t *ks = key, *kd = k2;
	uint32_t *vs = val, *vd = v2;
	for (int b = 0; b < 8; b++) {
		size_t *c = cnt[b];
		if (c[(ks[0] >> (8 * b)) & 0xff] == n)
			continue; /* every key has this byte */
		size_t sum = 0;
		for (int j = 0; j < 256; j++) {
			size_t t = c[j];
			c[j] = sum;
			sum += t;
		}
		for (size_t i = 0; i < n; i++) {
			size_t at = c[(ks[i] >> (8 * b)) & 0xff]++;
			kd[at] = ks[i];
			vd[at] = vs[i];
		}
		uint64_t *tk = ks;
		ks = kd, kd = tk;
		uint32_t *tv = vs;
		vs = vd, vd = tv;
	}
	if (ks != key) {
		memcpy(key, ks, n * sizeof *key);
		memcpy(val, vs, n * sizeof *val);
	}
	free(k2), free(v2), free(cnt);
	return 0;
}
