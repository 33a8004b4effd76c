/*
 * wf_src.h - a source of values for the structure-aware fuzz targets: fuzz
 * bytes are read as choices, and numbers lean to the extremes a reader must
 * survive (0, 1, powers of two, 2^46, 2^62, 2^63, 2^64-1 and their
 * neighbours), so every generated input is well-formed and legal while the
 * values are not gentle.  Out of bytes, every read returns 0.
 */
#ifndef STP_WF_SRC_H
#define STP_WF_SRC_H
#include <stddef.h>
#include <stdint.h>

typedef struct wf_src { const uint8_t *p; size_t n; } wf_src;

static inline uint8_t wf_u8(wf_src *s)
{
	if (!s->n)
		return 0;
	s->n--;
	return *s->p++;
}

static inline uint64_t wf_raw64(wf_src *s)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | wf_u8(s);
	return v;
}

/* A number that is often extreme. */
static inline uint64_t wf_u64(wf_src *s)
{
	uint8_t k = wf_u8(s);
	switch (k & 15) {
	case 0: return 0;
	case 1: return 1;
	case 2: return UINT64_MAX - (wf_u8(s) & 7);
	case 3: return (1ull << 63) + (wf_u8(s) & 7) - 4;
	case 4: return 1ull << (wf_u8(s) & 63);
	case 5: return (1ull << (wf_u8(s) & 63)) - 1;
	case 6: return (1ull << 46) + wf_u8(s);
	case 7: return (1ull << 62) + wf_u8(s);
	case 8: return (uint64_t)INT64_MAX - (wf_u8(s) & 7);
	case 9: return wf_raw64(s);
	default: return (uint64_t)wf_u8(s) << ((k >> 4) * 4); /* small to middling */
	}
}

static inline uint32_t wf_u32(wf_src *s)
{
	uint8_t k = wf_u8(s);
	switch (k & 7) {
	case 0: return 0;
	case 1: return UINT32_MAX - (wf_u8(s) & 3);
	case 2: return 1u << (wf_u8(s) & 31);
	case 3: return (uint32_t)wf_raw64(s);
	default: return wf_u8(s);
	}
}
#endif
