/*
 * cfi.c - the unwind rule of one instruction address, from the DWARF call
 * frame information of the module that holds it (x86-64 only).
 *
 * The module's PT_GNU_EH_FRAME segment (.eh_frame_hdr) has a sorted table of
 * FDEs; the FDE's and CIE's CFA programs are run up to the address, and the
 * outcome is reduced to what a frame walk needs:
 *     CFA = RSP + off  or  RBP + off;  return address at CFA - 8;
 *     RBP saved at CFA + rbp_off, or left unchanged.
 * Anything else (CFA expressions, the return address kept elsewhere, signal
 * frames, realigned stacks through another register) yields STC_RULE_NONE and
 * the caller falls back to libunwind for the rest of that stack.
 *
 * All reads are of the loaded, read-only .eh_frame data of mapped modules,
 * bounded by the segment sizes the loader reports.
 */
#include <link.h>
#include <string.h>

#include "unwind_rule.h"

/* DWARF register numbers on x86-64 */
#define DW_RBP 6
#define DW_RSP 7
#define DW_RA 16

typedef struct span { const uint8_t *p, *end; } span;

static int rd_u8(span *s, uint8_t *v)
{
	if (s->p >= s->end)
		return -1;
	*v = *s->p++;
	return 0;
}

static int rd_n(span *s, void *v, size_t n)
{
	if ((size_t)(s->end - s->p) < n)
		return -1;
	memcpy(v, s->p, n);
	s->p += n;
	return 0;
}

static int rd_uleb(span *s, uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned sh = 0; sh < 64; sh += 7) {
		uint8_t b;
		if (rd_u8(s, &b))
			return -1;
		r |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

static int rd_sleb(span *s, int64_t *v)
{
	int64_t r = 0;
	unsigned sh = 0;
	uint8_t b;
	do {
		if (sh >= 64 || rd_u8(s, &b))
			return -1;
		r |= (int64_t)((uint64_t)(b & 0x7f) << sh);
		sh += 7;
	} while (b & 0x80);
	if (sh < 64 && (b & 0x40))
		r |= -((int64_t)1 << sh);
	*v = r;
	return 0;
}

/* Reads a pointer in DW_EH_PE encoding enc; datarel is relative to `data`. */
static int rd_ptr(span *s, uint8_t enc, uintptr_t data, uint64_t *out)
{
	if (enc == 0xff) /* DW_EH_PE_omit */
		return -1;
	uintptr_t at = (uintptr_t)s->p;
	uint64_t v = 0;
	switch (enc & 0x0f) {
	case 0x00: { uint64_t x; if (rd_n(s, &x, 8)) return -1; v = x; break; }
	case 0x01: if (rd_uleb(s, &v)) return -1; break;
	case 0x02: { uint16_t x; if (rd_n(s, &x, 2)) return -1; v = x; break; }
	case 0x03: { uint32_t x; if (rd_n(s, &x, 4)) return -1; v = x; break; }
	case 0x04: { uint64_t x; if (rd_n(s, &x, 8)) return -1; v = x; break; }
	case 0x09: { int64_t x; if (rd_sleb(s, &x)) return -1; v = (uint64_t)x; break; }
	case 0x0a: { int16_t x; if (rd_n(s, &x, 2)) return -1; v = (uint64_t)(int64_t)x; break; }
	case 0x0b: { int32_t x; if (rd_n(s, &x, 4)) return -1; v = (uint64_t)(int64_t)x; break; }
	case 0x0c: { int64_t x; if (rd_n(s, &x, 8)) return -1; v = (uint64_t)x; break; }
	default: return -1;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += at; break;   /* pcrel */
	case 0x30: v += data; break; /* datarel */
	default: return -1;          /* textrel, funcrel, aligned: not used on x86-64 Linux */
	}
	if (enc & 0x80)
		return -1; /* indirect: never for the fields we read */
	*out = v;
	return 0;
}

typedef struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	int has_z, signal_frame;
	span insns;
} cie;

static int parse_cie(const uint8_t *at, const uint8_t *limit, cie *c)
{
	span s = {at, limit};
	uint32_t len32;
	uint64_t len;
	if (rd_n(&s, &len32, 4) || len32 == 0)
		return -1;
	if (len32 == 0xffffffffu) {
		if (rd_n(&s, &len, 8))
			return -1;
	} else {
		len = len32;
	}
	if (len > (uint64_t)(s.end - s.p))
		return -1;
	span body = {s.p, s.p + len};
	uint32_t id;
	uint8_t version;
	if (rd_n(&body, &id, 4) || id != 0 || rd_u8(&body, &version) || (version != 1 && version != 3))
		return -1;
	const char *aug = (const char *)body.p;
	size_t auglen = strnlen(aug, (size_t)(body.end - body.p));
	if (body.p + auglen >= body.end)
		return -1;
	body.p += auglen + 1;
	memset(c, 0, sizeof *c);
	c->fde_enc = 0; /* absptr */
	if (aug[0] == 'e' && aug[1] == 'h')
		return -1; /* old GCC "eh" augmentation: not expected */
	if (rd_uleb(&body, &c->code_align) || rd_sleb(&body, &c->data_align))
		return -1;
	if (version == 1) {
		uint8_t r;
		if (rd_u8(&body, &r))
			return -1;
		c->ra_reg = r;
	} else if (rd_uleb(&body, &c->ra_reg)) {
		return -1;
	}
	if (aug[0] == 'z') {
		uint64_t alen;
		c->has_z = 1;
		if (rd_uleb(&body, &alen) || alen > (uint64_t)(body.end - body.p))
			return -1;
		span a = {body.p, body.p + alen};
		for (size_t i = 1; i < auglen; i++) {
			uint8_t enc;
			uint64_t dummy;
			switch (aug[i]) {
			case 'R': if (rd_u8(&a, &c->fde_enc)) return -1; break;
			case 'L': if (rd_u8(&a, &enc)) return -1; break;
			case 'P':
				if (rd_u8(&a, &enc) || rd_ptr(&a, enc & 0x7f, 0, &dummy))
					return -1;
				break;
			case 'S': c->signal_frame = 1; break;
			case 'B': break;
			default: return -1; /* unknown augmentation: cannot skip it safely */
			}
		}
		body.p += alen;
	} else if (auglen) {
		return -1;
	}
	c->insns = body;
	return 0;
}

/* The CFA program's state. */
typedef struct row {
	uint8_t cfa_reg;
	int64_t cfa_off;
	uint8_t rbp_saved; /* 0 same value, 1 at CFA + rbp_off */
	int64_t rbp_off;
	uint8_t ra_ok;     /* return address at CFA - 8 */
	uint8_t bad;       /* a rule we do not follow */
	uint8_t ra_undef;  /* the outermost frame */
} row;

#define STATE_DEPTH 8

/* Runs insns from loc while loc <= target. */
static int run_cfa(span s, const cie *c, uint64_t loc, uint64_t target, row *r, const row *initial)
{
	row stack[STATE_DEPTH];
	int depth = 0;
	while (s.p < s.end) {
		uint8_t op;
		uint64_t a, b;
		int64_t sa;
		if (rd_u8(&s, &op))
			return -1;
		uint8_t hi = op & 0xc0, lo = op & 0x3f;
		if (hi == 0x40) { /* advance_loc */
			loc += lo * c->code_align;
			if (loc > target)
				return 0;
			continue;
		}
		if (hi == 0x80) { /* offset: reg lo saved at CFA + n*data_align */
			if (rd_uleb(&s, &a))
				return -1;
			if (lo == DW_RBP) {
				r->rbp_saved = 1;
				r->rbp_off = (int64_t)a * c->data_align;
			} else if (lo == DW_RA) {
				r->ra_ok = (int64_t)a * c->data_align == -8;
			}
			continue;
		}
		if (hi == 0xc0) { /* restore */
			if (lo == DW_RBP) {
				r->rbp_saved = initial->rbp_saved;
				r->rbp_off = initial->rbp_off;
			} else if (lo == DW_RA) {
				r->ra_ok = initial->ra_ok;
			}
			continue;
		}
		switch (op) {
		case 0x00: break; /* nop */
		case 0x01: /* set_loc */
			if (rd_ptr(&s, c->fde_enc, 0, &a))
				return -1;
			loc = a;
			if (loc > target)
				return 0;
			break;
		case 0x02: { uint8_t d; if (rd_u8(&s, &d)) return -1; loc += d * c->code_align; if (loc > target) return 0; break; }
		case 0x03: { uint16_t d; if (rd_n(&s, &d, 2)) return -1; loc += d * c->code_align; if (loc > target) return 0; break; }
		case 0x04: { uint32_t d; if (rd_n(&s, &d, 4)) return -1; loc += d * c->code_align; if (loc > target) return 0; break; }
		case 0x05: /* offset_extended */
			if (rd_uleb(&s, &a) || rd_uleb(&s, &b))
				return -1;
			if (a == DW_RBP) {
				r->rbp_saved = 1;
				r->rbp_off = (int64_t)b * c->data_align;
			} else if (a == DW_RA) {
				r->ra_ok = (int64_t)b * c->data_align == -8;
			}
			break;
		case 0x06: /* restore_extended */
		case 0x07: /* undefined */
		case 0x08: /* same_value */
			if (rd_uleb(&s, &a))
				return -1;
			if (a == DW_RBP) {
				r->rbp_saved = op == 0x06 ? initial->rbp_saved : 0;
				r->rbp_off = op == 0x06 ? initial->rbp_off : 0;
			} else if (a == DW_RA) {
				if (op == 0x07)
					r->ra_undef = 1; /* the outermost frame */
				else if (op == 0x06)
					r->ra_ok = initial->ra_ok;
				else
					r->bad = 1;
			}
			break;
		case 0x09: /* register */
			if (rd_uleb(&s, &a) || rd_uleb(&s, &b))
				return -1;
			if (a == DW_RBP || a == DW_RA)
				r->bad = 1;
			break;
		case 0x0a: /* remember_state */
			if (depth == STATE_DEPTH)
				return -1;
			stack[depth++] = *r;
			break;
		case 0x0b: /* restore_state */
			if (!depth)
				return -1;
			*r = stack[--depth];
			break;
		case 0x0c: /* def_cfa */
			if (rd_uleb(&s, &a) || rd_uleb(&s, &b))
				return -1;
			r->cfa_reg = (uint8_t)(a < 255 ? a : 255);
			r->cfa_off = (int64_t)b;
			break;
		case 0x0d: /* def_cfa_register */
			if (rd_uleb(&s, &a))
				return -1;
			r->cfa_reg = (uint8_t)(a < 255 ? a : 255);
			break;
		case 0x0e: /* def_cfa_offset */
			if (rd_uleb(&s, &a))
				return -1;
			r->cfa_off = (int64_t)a;
			break;
		case 0x0f: /* def_cfa_expression */
			if (rd_uleb(&s, &a) || a > (uint64_t)(s.end - s.p))
				return -1;
			s.p += a;
			r->cfa_reg = 255;
			break;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			if (rd_uleb(&s, &a) || rd_uleb(&s, &b) || b > (uint64_t)(s.end - s.p))
				return -1;
			s.p += b;
			if (a == DW_RBP || a == DW_RA)
				r->bad = 1;
			break;
		case 0x11: /* offset_extended_sf */
			if (rd_uleb(&s, &a) || rd_sleb(&s, &sa))
				return -1;
			if (a == DW_RBP) {
				r->rbp_saved = 1;
				r->rbp_off = sa * c->data_align;
			} else if (a == DW_RA) {
				r->ra_ok = sa * c->data_align == -8;
			}
			break;
		case 0x12: /* def_cfa_sf */
			if (rd_uleb(&s, &a) || rd_sleb(&s, &sa))
				return -1;
			r->cfa_reg = (uint8_t)(a < 255 ? a : 255);
			r->cfa_off = sa * c->data_align;
			break;
		case 0x13: /* def_cfa_offset_sf */
			if (rd_sleb(&s, &sa))
				return -1;
			r->cfa_off = sa * c->data_align;
			break;
		case 0x14: /* val_offset */
		case 0x15: /* val_offset_sf */
			if (rd_uleb(&s, &a) || rd_uleb(&s, &b))
				return -1;
			if (a == DW_RBP || a == DW_RA)
				r->bad = 1;
			break;
		case 0x2e: /* GNU_args_size */
			if (rd_uleb(&s, &a))
				return -1;
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			if (rd_uleb(&s, &a) || rd_uleb(&s, &b))
				return -1;
			if (a == DW_RBP || a == DW_RA)
				r->bad = 1;
			break;
		default:
			return -1;
		}
	}
	return 0;
}

/* Reduces a row to a rule. */
static stc_rule to_rule(const row *r)
{
	if (r->ra_undef && !r->bad)
		return STC_RULE_END;
	if (r->bad || !r->ra_ok || (r->cfa_reg != DW_RSP && r->cfa_reg != DW_RBP) || r->cfa_off < INT32_MIN ||
	    r->cfa_off > INT32_MAX || r->rbp_off < INT16_MIN || r->rbp_off > INT16_MAX)
		return STC_RULE_NONE;
	return stc_rule_make(r->cfa_reg == DW_RBP, (int32_t)r->cfa_off, r->rbp_saved, (int16_t)r->rbp_off);
}

stc_rule stc_cfi_rule(const stc_module *m, uint64_t ip)
{
	if (!m->eh_frame_hdr)
		return STC_RULE_NONE;
	span h = {m->eh_frame_hdr, m->eh_frame_hdr + m->eh_frame_hdr_size};
	uintptr_t hdr = (uintptr_t)m->eh_frame_hdr;
	uint8_t version, ptr_enc, count_enc, table_enc;
	uint64_t eh_frame, count;
	if (rd_u8(&h, &version) || version != 1 || rd_u8(&h, &ptr_enc) || rd_u8(&h, &count_enc) ||
	    rd_u8(&h, &table_enc) || rd_ptr(&h, ptr_enc, hdr, &eh_frame) || rd_ptr(&h, count_enc, hdr, &count))
		return STC_RULE_NONE;
	/* the common table encoding: datarel sdata4 pairs */
	if (table_enc != 0x3b || count == 0 || count > (uint64_t)(h.end - h.p) / 8)
		return STC_RULE_NONE;
	const uint8_t *table = h.p;
	uint64_t lo = 0, hi = count;
	while (hi - lo > 1) {
		uint64_t mid = (lo + hi) / 2;
		int32_t loc;
		memcpy(&loc, table + mid * 8, 4);
		if ((uint64_t)(hdr + (int64_t)loc) <= ip)
			lo = mid;
		else
			hi = mid;
	}
	int32_t loc0, fde_rel;
	memcpy(&loc0, table + lo * 8, 4);
	memcpy(&fde_rel, table + lo * 8 + 4, 4);
	if ((uint64_t)(hdr + (int64_t)loc0) > ip)
		return STC_RULE_NONE;
	const uint8_t *fde = (const uint8_t *)(hdr + (int64_t)fde_rel);
	/* bounds: FDEs live in .eh_frame, inside the module's mapped span */
	const uint8_t *limit = (const uint8_t *)m->hi;
	if (fde < (const uint8_t *)m->lo || fde + 8 > limit)
		return STC_RULE_NONE;

	span s = {fde, limit};
	uint32_t len32, cie_off;
	if (rd_n(&s, &len32, 4) || len32 == 0 || len32 == 0xffffffffu || len32 > (uint64_t)(limit - s.p))
		return STC_RULE_NONE;
	span body = {s.p, s.p + len32};
	const uint8_t *cie_field = body.p;
	if (rd_n(&body, &cie_off, 4) || cie_off == 0)
		return STC_RULE_NONE;
	const uint8_t *cie_at = cie_field - cie_off;
	if (cie_at < (const uint8_t *)m->lo || cie_at >= limit)
		return STC_RULE_NONE;
	cie c;
	if (parse_cie(cie_at, limit, &c) || c.ra_reg != DW_RA || c.signal_frame)
		return STC_RULE_NONE;
	uint64_t pc_begin, pc_range;
	if (rd_ptr(&body, c.fde_enc, 0, &pc_begin) || rd_ptr(&body, c.fde_enc & 0x0f, 0, &pc_range))
		return STC_RULE_NONE;
	if (ip < pc_begin || ip >= pc_begin + pc_range)
		return STC_RULE_NONE;
	if (c.has_z) {
		uint64_t alen;
		if (rd_uleb(&body, &alen) || alen > (uint64_t)(body.end - body.p))
			return STC_RULE_NONE;
		body.p += alen;
	}
	row init = {.cfa_reg = DW_RSP, .cfa_off = 8, .ra_ok = 1};
	row r = init;
	if (run_cfa(c.insns, &c, pc_begin, UINT64_MAX, &r, &init))
		return STC_RULE_NONE;
	init = r; /* the CIE's row is what DW_CFA_restore goes back to */
	if (run_cfa(body, &c, pc_begin, ip, &r, &init))
		return STC_RULE_NONE;
	return to_rule(&r);
}
