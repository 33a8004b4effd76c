/*
 * symbolize_linehdr.c - checks one DWARF line-table header before libdwarf
 * reads it.
 *
 * Owns sym_line_header_ok(): given the bytes of .debug_line and the offset a
 * compile unit's DW_AT_stmt_list names, it says whether libdwarf 20210528
 * may be handed that header.  That release trusts two counts of a DWARF 5
 * header: it mallocs directories_count pointers before checking anything
 * (a count of 2^59 asks for 4 EiB; 2^61 + 1 wraps to 8 bytes, then writes
 * past them) and allocates one file entry per file_names_count even when
 * an entry reads no bytes.  fuzz_symbolize_elf found the first.
 *
 * Invariants: pure function of its arguments, reads only [0, size); every
 * count is accepted only when each of its entries takes at least one byte
 * and the count is at most the bytes left in the unit, so whatever libdwarf
 * does per entry is bounded by the unit's size.  Versions 2 to 4 (whose
 * lists end with an empty entry) are accepted as they are; any other
 * version, a reserved or zero length, a unit past the section's end, an
 * unknown entry form: rejected (the caller then skips the CU's lines and
 * keeps its functions).
 */
#include <string.h>

#include "symbolize_int.h"

typedef struct cursor {
	const unsigned char *p;
	uint64_t pos, end;
	int big, offsize;
	int bad;
} cursor;

static uint64_t fixed(cursor *c, unsigned n)
{
	uint64_t v;

	if (c->bad || c->end - c->pos < n) {
		c->bad = 1;
		return 0;
	}
	v = sym_get_uint(c->p + c->pos, n, c->big);
	c->pos += n;
	return v;
}

static uint64_t uleb(cursor *c)
{
	uint64_t v = 0;

	for (unsigned shift = 0; !c->bad; shift += 7) {
		unsigned char b;

		if (c->pos >= c->end || shift > 63) {
			c->bad = 1;
			break;
		}
		b = c->p[c->pos++];
		if (shift == 63 && (b & 0x7e)) { /* more than 64 bits */
			c->bad = 1;
			break;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	return 0;
}

static void skip(cursor *c, uint64_t n)
{
	if (c->bad || c->end - c->pos < n)
		c->bad = 1;
	else
		c->pos += n;
}

/* Bytes the form takes at the least (0: unknown here, rejected). */
static unsigned form_min(uint64_t form, int offsize)
{
	switch (form) {
	case 0x0b: case 0x0c: case 0x25: /* data1 flag strx1 */
	case 0x08: case 0x09: case 0x0a: /* string block block1 */
	case 0x0d: case 0x0f: case 0x1a: /* sdata udata strx */
	case 0x1f02:                     /* GNU_str_index */
		return 1;
	case 0x05: case 0x26: return 2;  /* data2 strx2 */
	case 0x03: return 2;             /* block2 */
	case 0x27: return 3;             /* strx3 */
	case 0x06: case 0x28: return 4;  /* data4 strx4 */
	case 0x04: return 4;             /* block4 */
	case 0x07: return 8;             /* data8 */
	case 0x1e: return 16;            /* data16 */
	case 0x0e: case 0x1f: case 0x17: /* strp line_strp sec_offset */
	case 0x1d: case 0x1f21:          /* strp_sup GNU_strp_alt */
		return (unsigned)offsize;
	default:
		return 0;
	}
}

static void skip_form(cursor *c, uint64_t form)
{
	switch (form) {
	case 0x08: /* string */
		while (!c->bad && fixed(c, 1) != 0)
			;
		break;
	case 0x09: skip(c, uleb(c)); break;
	case 0x0a: skip(c, fixed(c, 1)); break;
	case 0x03: skip(c, fixed(c, 2)); break;
	case 0x04: skip(c, fixed(c, 4)); break;
	case 0x0d: case 0x0f: case 0x1a: case 0x1f02: (void)uleb(c); break;
	default: skip(c, form_min(form, c->offsize)); break;
	}
}

/* An entry-format list and its count, then the entries themselves. */
static void entries(cursor *c)
{
	uint64_t forms[255];
	unsigned nformats = (unsigned)fixed(c, 1), min = 0;
	uint64_t count;

	for (unsigned i = 0; i < nformats && !c->bad; i++) {
		unsigned m;

		(void)uleb(c); /* content type: any */
		forms[i] = uleb(c);
		m = form_min(forms[i], c->offsize);
		if (!m)
			c->bad = 1;
		min += m;
	}
	count = uleb(c);
	if (c->bad || (count && (!min || count > (c->end - c->pos) / min))) {
		c->bad = 1;
		return;
	}
	for (uint64_t i = 0; i < count && !c->bad; i++)
		for (unsigned j = 0; j < nformats && !c->bad; j++)
			skip_form(c, forms[j]);
}

int sym_line_header_ok(const unsigned char *p, uint64_t size, uint64_t off, int big)
{
	cursor c = {p, off, size, big, 4, 0};
	uint64_t len, version, opcode_base;

	if (off >= size)
		return 1; /* libdwarf rejects the offset itself */
	len = fixed(&c, 4);
	if (len == 0xffffffffu) {
		len = fixed(&c, 8);
		c.offsize = 8;
	} else if (len == 0 || len >= 0xfffffff0u) {
		return 0;
	}
	if (c.bad || len > size - c.pos)
		return 0;
	c.end = c.pos + len;
	version = fixed(&c, 2);
	if (!c.bad && version >= 2 && version <= 4)
		return 1;
	if (c.bad || version != 5)
		return 0;
	skip(&c, 2);          /* address_size, segment_selector_size */
	skip(&c, c.offsize);  /* header_length */
	skip(&c, 5);          /* min_inst_length .. line_range */
	opcode_base = fixed(&c, 1);
	if (c.bad || opcode_base == 0)
		return 0;
	skip(&c, opcode_base - 1);
	entries(&c); /* directories */
	entries(&c); /* file names */
	return !c.bad;
}
