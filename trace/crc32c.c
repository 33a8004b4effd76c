/*
 * crc32c.c - CRC-32C (Castagnoli), slicing-by-8 over a table built once.
 * The table is built under an atomic flag on first use; building it twice
 * from two threads is harmless (same values).  The collector calls
 * stp_crc32c(0, "", 0) at start-up so a signal handler never builds it.
 */
#include <stdint.h>
#include <stddef.h>

#include "stprof/trace_codec.h"

static uint32_t table[8][256];
static int table_ready;

static void build_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
	__atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t stp_crc32c(uint32_t crc, const void *data, size_t n)
{
	if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
		build_table();
	const uint8_t *p = data;
	crc = ~crc;
	while (n && ((uintptr_t)p & 7)) {
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		n--;
	}
	while (n >= 8) {
		uint32_t lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
		lo ^= crc;
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
		      table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		      table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
