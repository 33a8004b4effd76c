/*
 * varint.h - LEB128 varints and zigzag, with explicit bounds.  Internal to
 * trace/.  Put functions return the new write position or NULL when the value
 * does not fit before end; get functions return NULL on overrun or on a varint
 * longer than 10 bytes.
 */
#ifndef STPROF_TRACE_VARINT_H
#define STPROF_TRACE_VARINT_H
#include <stdint.h>
#include <string.h>

static inline uint64_t zz_enc(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t zz_dec(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

static inline uint8_t *put_var(uint8_t *p, const uint8_t *end, uint64_t v)
{
	while (v >= 0x80) {
		if (p >= end)
			return NULL;
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	if (p >= end)
		return NULL;
	*p++ = (uint8_t)v;
	return p;
}

static inline uint8_t *put_u8(uint8_t *p, const uint8_t *end, unsigned v)
{
	if (!p || p >= end)
		return NULL;
	*p++ = (uint8_t)v;
	return p;
}

static inline uint8_t *put_bytes(uint8_t *p, const uint8_t *end, const void *src, size_t n)
{
	if (!p || (size_t)(end - p) < n)
		return NULL;
	memcpy(p, src, n);
	return p + n;
}

/* put_var that passes NULL through, for chaining. */
static inline uint8_t *put_v(uint8_t *p, const uint8_t *end, uint64_t v)
{
	return p ? put_var(p, end, v) : NULL;
}

static inline const uint8_t *get_var(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
	/* most varints are one or two bytes: decode those without the loop */
	if (p && end - p >= 2) {
		if (!(p[0] & 0x80)) {
			*out = p[0];
			return p + 1;
		}
		if (!(p[1] & 0x80)) {
			*out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
			return p + 2;
		}
	}
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (!p || p >= end)
			return NULL;
		uint8_t b = *p++;
		if (shift == 63 && b > 1)
			return NULL; /* overflows 64 bits */
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return p;
		}
	}
	return NULL;
}

static inline const uint8_t *get_u8(const uint8_t *p, const uint8_t *end, uint8_t *out)
{
	if (!p || p >= end)
		return NULL;
	*out = *p++;
	return p;
}

static inline void st_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void st_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void st_le64(uint8_t *p, uint64_t v) { st_le32(p, (uint32_t)v); st_le32(p + 4, (uint32_t)(v >> 32)); }
static inline uint16_t ld_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t ld_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t ld_le64(const uint8_t *p) { return ld_le32(p) | (uint64_t)ld_le32(p + 4) << 32; }
#endif
