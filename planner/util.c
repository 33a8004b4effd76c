/*
 * util.c - the planner's small shared tools: a stable LSD radix sort of
 * (key, value) pairs, CRC32C (Castagnoli, the plan file's checksum) and a
 * monotonic clock.
 */
#include <string.h>
#include <time.h>

#include "internal.h"

void pl_sort_kv(pl_kv *a, pl_kv *tmp, size_t n)
{
	if (n < 2)
		return;
	uint64_t all_or = 0, all_and = ~(uint64_t)0;
	for (size_t i = 0; i < n; i++) {
		all_or |= a[i].k;
		all_and &= a[i].k;
	}
	uint64_t differ = all_or ^ all_and;
	pl_kv *src = a, *dst = tmp;
	for (unsigned shift = 0; shift < 64; shift += 11) {
		if (!((differ >> shift) & 0x7ff))
			continue; /* every key has the same digit here */
		size_t cnt[2048];
		memset(cnt, 0, sizeof cnt);
		for (size_t i = 0; i < n; i++)
			cnt[(src[i].k >> shift) & 0x7ff]++;
		size_t sum = 0;
		for (size_t d = 0; d < 2048; d++) {
			size_t c = cnt[d];
			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[cnt[(src[i].k >> shift) & 0x7ff]++] = src[i];
		pl_kv *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof *a);
}

void pl_sort_kv_small(pl_kv *a, pl_kv *tmp, size_t n)
{
	if (n < 2)
		return;
	if (n <= 48) {
		for (size_t i = 1; i < n; i++) {
			pl_kv x = a[i];
			size_t j = i;
			while (j && a[j - 1].k > x.k) {
				a[j] = a[j - 1];
				j--;
			}
			a[j] = x;
		}
		return;
	}
	uint64_t all_or = 0, all_and = ~(uint64_t)0;
	for (size_t i = 0; i < n; i++) {
		all_or |= a[i].k;
		all_and &= a[i].k;
	}
	uint64_t differ = all_or ^ all_and;
	pl_kv *src = a, *dst = tmp;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		if (!((differ >> shift) & 0xff))
			continue;
		size_t cnt[256] = {0};
		for (size_t i = 0; i < n; i++)
			cnt[(src[i].k >> shift) & 0xff]++;
		size_t sum = 0;
		for (size_t d = 0; d < 256; d++) {
			size_t c = cnt[d];
			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[cnt[(src[i].k >> shift) & 0xff]++] = src[i];
		pl_kv *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof *a);
}

static uint32_t crc_table[256];
static int crc_ready;

uint32_t pl_crc32c(uint32_t crc, const void *data, size_t len)
{
	if (!crc_ready) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
			crc_table[i] = c;
		}
		crc_ready = 1;
	}
	const unsigned char *p = data;
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

double pl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
