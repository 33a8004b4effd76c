/*
 * symbolize_dwarf.c - source lines and inline frames from DWARF (libdwarf).
 *
 * Owns one module file's DWARF: which compile unit (CU) covers a pc (from
 * .debug_aranges, else from the CU DIEs' own ranges), and per CU, parsed
 * the first time a pc lands in it: the line table as sorted address
 * intervals, and the tree of functions (DW_TAG_subprogram) and inlined
 * calls (DW_TAG_inlined_subroutine) with their address ranges.  A lookup
 * walks from the function containing pc down to the innermost inlined call
 * containing it; names are resolved only for the nodes a lookup returns
 * (through DW_AT_abstract_origin / DW_AT_specification to the linkage name,
 * demangled, or the plain name).
 *
 * Invariants: every libdwarf call gets an error pointer (libdwarf would
 * otherwise abort) and every error is freed; a broken CU keeps what was
 * read before the error.  DIE walks are bounded in depth and count and
 * require strictly increasing DIE offsets, so hostile input cannot loop;
 * a subtree libdwarf would read to find the next DIE is walked here first
 * (libdwarf 20210528 itself loops on a DW_AT_sibling naming its own DIE).
 * A CU's line table reaches libdwarf only after its header passed
 * sym_line_header_ok() (libdwarf 20210528 trusts its DWARF 5 counts).
 * Pointers handed out (names, files) live until sym_dwarf_close().
 *
 * Written against libdwarf 20210528 (Debian 12); the two calls whose
 * signatures changed in libdwarf 0.x (dwarf_init_path, dwarf_finish) are
 * switched on DW_LIBDWARF_VERSION_MAJOR, which only 0.x and later define.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize_int.h"

#ifndef STPROF_HAVE_LIBDWARF

int sym_dwarf_available(void)
{
	return 0;
}

sym_dwarf *sym_dwarf_open(const char *path, const sym_elf *elf, int demangle, char *err,
			  size_t errlen)
{
	snprintf(err, errlen, "built without libdwarf");
	return NULL;
}

void sym_dwarf_close(sym_dwarf *d)
{
}

int sym_dwarf_lookup(sym_dwarf *d, uint64_t pc, sym_dframe *out, int max, int *bad, char *err,
		     size_t errlen)
{
	return 0;
}

uint32_t sym_dwarf_cus_loaded(const sym_dwarf *d)
{
	return 0;
}

#else /* STPROF_HAVE_LIBDWARF */

#include <dwarf.h>
#include <libdwarf.h>

#ifdef DW_LIBDWARF_VERSION_MAJOR /* libdwarf 0.x and later */
#define SYM_DWARF_INIT(path, dbg, err)                                                      \
	dwarf_init_path((path), NULL, 0, DW_GROUPNUMBER_ANY, NULL, NULL, (dbg), (err))
#define SYM_DWARF_FINISH(dbg, err) dwarf_finish(dbg)
#else /* libdwarf 2018-2021 */
#define SYM_DWARF_INIT(path, dbg, err)                                                      \
	dwarf_init_path((path), NULL, 0, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL, (dbg),  \
			NULL, 0, NULL, (err))
#define SYM_DWARF_FINISH(dbg, err) dwarf_finish((dbg), (err))
#endif

#define MAX_DEPTH 256          /* DIE nesting followed */
#define MAX_DIES (1u << 24)    /* DIEs walked in one CU */
#define MAX_CHASE 8            /* origin/specification hops for a name */

typedef struct dw_node {
	Dwarf_Off off;               /* the DIE, for resolving the name later */
	int32_t first_child, next_sibling;
	uint32_t range_first, range_count; /* into cu->ranges */
	uint32_t call_file, call_line, call_col;
	uint8_t inlined, name_done;
	const char *name;
} dw_node;

typedef struct dw_span {
	uint64_t lo, hi;
	uint32_t idx; /* node (tops, ranges) or CU (module index) */
} dw_span;

typedef struct dw_line {
	uint64_t lo, hi;
	uint32_t line, col, file;
} dw_line;

typedef struct dw_cu {
	Dwarf_Off off; /* CU DIE offset in .debug_info */
	int parsed;
	int from_aranges;
	dw_node *nodes;
	size_t nnodes, capnodes;
	dw_span *ranges; /* every node's ranges, grouped by node */
	size_t nranges, capranges;
	dw_span *tops;   /* ranges of outermost functions, sorted */
	uint64_t *tops_max;
	size_t ntops;
	dw_line *lines;  /* line intervals, sorted */
	uint64_t *lines_max;
	size_t nlines;
	const char **files;
	size_t nfiles;
	unsigned file_base; /* file number of files[0]: 1 before DWARF 5, 0 from it */
	uint64_t base;      /* CU base address (DW_AT_low_pc) */
} dw_cu;

struct sym_dwarf {
	Dwarf_Debug dbg;
	Dwarf_Error err;
	int demangle;
	dw_cu *cus;
	size_t ncus, capcus;
	uint64_t *hkeys; /* CU DIE offset + 1 -> index in cus */
	uint32_t *hvals;
	size_t hcap;
	dw_span *spans;  /* pc ranges of CUs, sorted */
	uint64_t *spans_max;
	size_t nspans, capspans;
	int indexed;     /* spans built (aranges, or the CU scan) */
	int scanned;     /* CU DIEs scanned for ranges */
	char **owned;
	size_t nowned, capowned;
	uint32_t cus_loaded;
	int legacy_v5_file; /* libdwarf's DWARF 5 initial file number is 0 */
	const sym_elf *elf; /* the same file through libelf: its .debug_line */
	char msg[200];   /* first error not yet reported */
};

/* ---------------------------------------------------------------- helpers */

/* Records a libdwarf error (the first one since the last report) and frees
 * it.  Returns rc. */
static int chk(sym_dwarf *d, int rc, const char *what)
{
	if (rc == DW_DLV_ERROR) {
		if (!d->msg[0])
			snprintf(d->msg, sizeof(d->msg), "%s: %s", what,
				 d->err ? dwarf_errmsg(d->err) : "error");
		if (d->err)
			dwarf_dealloc(d->dbg, d->err, DW_DLA_ERROR);
	}
	d->err = NULL;
	return rc;
}

static const char *own(sym_dwarf *d, char *s)
{
	if (!s)
		return NULL;
	if (stp_sym_grow_((void **)&d->owned, &d->capowned, d->nowned + 1, sizeof(char *))) {
		free(s);
		return NULL;
	}
	d->owned[d->nowned++] = s;
	return s;
}

static void free_die(Dwarf_Die die)
{
	if (die)
		dwarf_dealloc_die(die);
}

/* The containing interval with the largest start, in an array of n
 * elements of `stride` bytes that begin with uint64_t lo, hi (dw_span,
 * dw_line), sorted by lo; max[i] is the largest hi in elements 0..i.
 * -1 if none. */
static long interval_find(const void *base, size_t stride, const uint64_t *max, size_t n, uint64_t pc)
{
	const unsigned char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t start;

		memcpy(&start, b + mid * stride, sizeof start);
		if (start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0;) {
		uint64_t end;

		if (max[i] <= pc)
			break;
		memcpy(&end, b + i * stride + sizeof(uint64_t), sizeof end);
		if (pc < end)
			return (long)i;
	}
	return -1;
}

static long span_find(const dw_span *v, const uint64_t *max, size_t n, uint64_t pc)
{
	return interval_find(v, sizeof *v, max, n, pc);
}

static long line_find(const dw_line *v, const uint64_t *max, size_t n, uint64_t pc)
{
	return interval_find(v, sizeof *v, max, n, pc);
}

static int span_cmp(const void *a, const void *b)
{
	const dw_span *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int line_cmp(const void *a, const void *b)
{
	const dw_line *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static uint64_t *prefix_max_spans(const dw_span *v, size_t n)
{
	uint64_t *m = malloc((n ? n : 1) * sizeof(*m)), cur = 0;

	for (size_t i = 0; m && i < n; i++) {
		if (v[i].hi > cur)
			cur = v[i].hi;
		m[i] = cur;
	}
	return m;
}

/* ---------------------------------------------------------------- attributes */

static int attr_udata(sym_dwarf *d, Dwarf_Die die, Dwarf_Half at, Dwarf_Unsigned *out)
{
	Dwarf_Attribute a = NULL;
	int rc = chk(d, dwarf_attr(die, at, &a, &d->err), "attribute");

	Dwarf_Half form = 0;
	Dwarf_Signed sv = 0;

	if (rc != DW_DLV_OK)
		return rc;
	rc = chk(d, dwarf_whatform(a, &form, &d->err), "attribute form");
	if (rc == DW_DLV_OK && form == DW_FORM_implicit_const) {
		/* a value in the abbreviation (GCC 11+ for call_file): libdwarf
		 * 20210528 reads it only as signed */
		rc = chk(d, dwarf_formsdata(a, &sv, &d->err), "attribute value");
		if (rc == DW_DLV_OK && sv < 0)
			rc = DW_DLV_NO_ENTRY;
		*out = (Dwarf_Unsigned)sv;
	} else if (rc == DW_DLV_OK) {
		rc = chk(d, dwarf_formudata(a, out, &d->err), "attribute value");
	}
	dwarf_dealloc(d->dbg, a, DW_DLA_ATTR);
	return rc;
}

static const char *attr_string(sym_dwarf *d, Dwarf_Die die, Dwarf_Half at)
{
	Dwarf_Attribute a = NULL;
	char *s = NULL;

	if (chk(d, dwarf_attr(die, at, &a, &d->err), "attribute") != DW_DLV_OK)
		return NULL;
	if (chk(d, dwarf_formstring(a, &s, &d->err), "string") != DW_DLV_OK)
		s = NULL;
	dwarf_dealloc(d->dbg, a, DW_DLA_ATTR);
	return s && *s ? s : NULL;
}

static int attr_ref(sym_dwarf *d, Dwarf_Die die, Dwarf_Half at, Dwarf_Off *out)
{
	Dwarf_Attribute a = NULL;
	int rc = chk(d, dwarf_attr(die, at, &a, &d->err), "attribute");

	if (rc != DW_DLV_OK)
		return rc;
	rc = chk(d, dwarf_global_formref(a, out, &d->err), "reference");
	dwarf_dealloc(d->dbg, a, DW_DLA_ATTR);
	return rc;
}

typedef int (*range_fn)(void *arg, uint64_t lo, uint64_t hi);

/* DW_AT_ranges through .debug_rnglists (DWARF 5): libdwarf cooks the
 * entries into addresses. */
static int rnglists(sym_dwarf *d, Dwarf_Attribute a, Dwarf_Half form, range_fn fn, void *arg)
{
	Dwarf_Unsigned val = 0, count = 0, goff = 0;
	Dwarf_Rnglists_Head head = NULL;
	Dwarf_Off off = 0;
	int found = 0;

	if (form == DW_FORM_rnglistx) {
		if (chk(d, dwarf_formudata(a, &val, &d->err), "rnglistx") != DW_DLV_OK)
			return 0;
	} else {
		if (chk(d, dwarf_global_formref(a, &off, &d->err), "ranges offset") != DW_DLV_OK)
			return 0;
		val = off;
	}
	if (chk(d, dwarf_rnglists_get_rle_head(a, form, val, &head, &count, &goff, &d->err),
		"rnglists") != DW_DLV_OK)
		return 0;
	for (Dwarf_Unsigned i = 0; i < count; i++) {
		unsigned len = 0, code = 0;
		Dwarf_Unsigned r1, r2, c1 = 0, c2 = 0;
		Dwarf_Bool unavailable = 0;

		if (chk(d, dwarf_get_rnglists_entry_fields_a(head, i, &len, &code, &r1, &r2,
							     &unavailable, &c1, &c2, &d->err),
			"rnglists entry") != DW_DLV_OK)
			break;
		if (unavailable || c2 <= c1)
			continue;
		switch (code) {
		case DW_RLE_offset_pair:
		case DW_RLE_start_end:
		case DW_RLE_start_length:
		case DW_RLE_startx_endx:
		case DW_RLE_startx_length:
			if (fn(arg, c1, c2))
				goto out;
			found = 1;
			break;
		default:
			break;
		}
	}
out:
	dwarf_dealloc_rnglists_head(head);
	return found;
}

/* DW_AT_ranges through .debug_ranges (DWARF 2-4): offsets from the CU base,
 * which base-address entries change. */
static int ranges_v4(sym_dwarf *d, Dwarf_Die die, Dwarf_Attribute a, Dwarf_Half form,
		     uint64_t base, range_fn fn, void *arg)
{
	Dwarf_Off off = 0, real = 0;
	Dwarf_Unsigned uoff = 0, bytes = 0;
	Dwarf_Ranges *r = NULL;
	Dwarf_Signed n = 0;
	int found = 0;

	if (form == DW_FORM_data4 || form == DW_FORM_data8) {
		if (chk(d, dwarf_formudata(a, &uoff, &d->err), "ranges offset") != DW_DLV_OK)
			return 0;
		off = uoff;
	} else if (chk(d, dwarf_global_formref(a, &off, &d->err), "ranges offset") != DW_DLV_OK) {
		return 0;
	}
	if (chk(d, dwarf_get_ranges_b(d->dbg, off, die, &real, &r, &n, &bytes, &d->err),
		"ranges") != DW_DLV_OK)
		return 0;
	for (Dwarf_Signed i = 0; i < n; i++) {
		if (r[i].dwr_type == DW_RANGES_END)
			break;
		if (r[i].dwr_type == DW_RANGES_ADDRESS_SELECTION) {
			base = r[i].dwr_addr2;
			continue;
		}
		if (r[i].dwr_addr2 > r[i].dwr_addr1) {
			if (fn(arg, base + r[i].dwr_addr1, base + r[i].dwr_addr2))
				break;
			found = 1;
		}
	}
	dwarf_ranges_dealloc(d->dbg, r, n);
	return found;
}

/* Calls fn for every address range of die; returns 1 if it had any. */
static int die_ranges(sym_dwarf *d, Dwarf_Die die, uint64_t base, range_fn fn, void *arg)
{
	Dwarf_Addr lo = 0, hi = 0;
	Dwarf_Half form = 0, version = 0, offsize = 0;
	enum Dwarf_Form_Class cls = DW_FORM_CLASS_UNKNOWN;
	Dwarf_Attribute a = NULL;
	int found = 0;

	if (chk(d, dwarf_lowpc(die, &lo, &d->err), "low_pc") == DW_DLV_OK) {
		if (chk(d, dwarf_highpc_b(die, &hi, &form, &cls, &d->err), "high_pc") ==
		    DW_DLV_OK) {
			if (cls != DW_FORM_CLASS_ADDRESS)
				hi = lo + hi;
		} else {
			hi = lo + 1;
		}
		if (hi > lo) {
			fn(arg, lo, hi);
			return 1;
		}
		return 0;
	}
	if (chk(d, dwarf_attr(die, DW_AT_ranges, &a, &d->err), "ranges") != DW_DLV_OK)
		return 0;
	if (chk(d, dwarf_whatform(a, &form, &d->err), "ranges form") == DW_DLV_OK) {
		if (dwarf_get_version_of_die(die, &version, &offsize) != DW_DLV_OK)
			version = 4;
		if (form == DW_FORM_rnglistx || version >= 5)
			found = rnglists(d, a, form, fn, arg);
		else
			found = ranges_v4(d, die, a, form, base, fn, arg);
	}
	dwarf_dealloc(d->dbg, a, DW_DLA_ATTR);
	return found;
}

/* ---------------------------------------------------------------- CU index */

static size_t hash_off(Dwarf_Off off, size_t cap)
{
	return (size_t)((off * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static int cu_rehash(sym_dwarf *d, size_t cap)
{
	uint64_t *k = calloc(cap, sizeof(*k));
	uint32_t *v = calloc(cap, sizeof(*v));

	if (!k || !v) {
		free(k);
		free(v);
		return -1;
	}
	for (size_t i = 0; i < d->ncus; i++) {
		size_t h = hash_off(d->cus[i].off, cap);

		while (k[h])
			h = (h + 1) & (cap - 1);
		k[h] = d->cus[i].off + 1;
		v[h] = (uint32_t)i;
	}
	free(d->hkeys);
	free(d->hvals);
	d->hkeys = k;
	d->hvals = v;
	d->hcap = cap;
	return 0;
}

/* Index of the CU whose DIE is at off, added if new; -1 on no memory. */
static long cu_index(sym_dwarf *d, Dwarf_Off off)
{
	size_t h;

	if (d->hcap) {
		for (h = hash_off(off, d->hcap); d->hkeys[h]; h = (h + 1) & (d->hcap - 1))
			if (d->hkeys[h] == off + 1)
				return d->hvals[h];
	}
	if ((d->ncus + 1) * 2 > d->hcap && cu_rehash(d, d->hcap ? d->hcap * 2 : 64))
		return -1;
	if (d->ncus >= UINT32_MAX ||
	    stp_sym_grow_((void **)&d->cus, &d->capcus, d->ncus + 1, sizeof(*d->cus)))
		return -1;
	memset(&d->cus[d->ncus], 0, sizeof(*d->cus));
	d->cus[d->ncus].off = off;
	for (h = hash_off(off, d->hcap); d->hkeys[h]; h = (h + 1) & (d->hcap - 1))
		;
	d->hkeys[h] = off + 1;
	d->hvals[h] = (uint32_t)d->ncus;
	return (long)d->ncus++;
}

static int add_span(sym_dwarf *d, uint64_t lo, uint64_t hi, uint32_t cu)
{
	if (stp_sym_grow_((void **)&d->spans, &d->capspans, d->nspans + 1, sizeof(*d->spans)))
		return -1;
	d->spans[d->nspans++] = (dw_span){lo, hi, cu};
	return 0;
}

static void sort_spans(sym_dwarf *d)
{
	if (d->nspans)
		qsort(d->spans, d->nspans, sizeof(*d->spans), span_cmp);
	free(d->spans_max);
	d->spans_max = prefix_max_spans(d->spans, d->nspans);
	if (!d->spans_max)
		d->nspans = 0;
}

static void index_aranges(sym_dwarf *d)
{
	Dwarf_Arange *ar = NULL;
	Dwarf_Signed n = 0;

	if (chk(d, dwarf_get_aranges(d->dbg, &ar, &n, &d->err), "aranges") != DW_DLV_OK)
		return;
	for (Dwarf_Signed i = 0; i < n; i++) {
		Dwarf_Unsigned seg = 0, segsz = 0, len = 0;
		Dwarf_Addr start = 0;
		Dwarf_Off cu_off = 0;
		long cu;

		if (chk(d, dwarf_get_arange_info_b(ar[i], &seg, &segsz, &start, &len, &cu_off,
						   &d->err),
			"arange") == DW_DLV_OK &&
		    len > 0 && start + len > start && (cu = cu_index(d, cu_off)) >= 0) {
			d->cus[cu].from_aranges = 1;
			add_span(d, start, start + len, (uint32_t)cu);
		}
		dwarf_dealloc(d->dbg, ar[i], DW_DLA_ARANGE);
	}
	dwarf_dealloc(d->dbg, ar, DW_DLA_LIST);
}

typedef struct cu_span_arg {
	sym_dwarf *d;
	uint32_t cu;
} cu_span_arg;

static int cu_span_cb(void *arg, uint64_t lo, uint64_t hi)
{
	cu_span_arg *a = arg;

	return add_span(a->d, lo, hi, a->cu);
}

/* Adds the ranges of every CU not described by .debug_aranges (clang
 * emits no aranges; some objects in a link may lack them). */
static void index_scan_cus(sym_dwarf *d)
{
	Dwarf_Unsigned hlen, abbr, toff, next = 0;
	Dwarf_Half ver, asz, lsz, esz, utype;
	Dwarf_Sig8 sig;
	uint32_t guard = 0;

	d->scanned = 1;
	for (;;) {
		Dwarf_Die cu_die = NULL;
		Dwarf_Off off = 0;
		Dwarf_Addr low = 0;
		long cu;
		int rc = chk(d, dwarf_next_cu_header_d(d->dbg, 1, &hlen, &ver, &abbr, &asz, &lsz,
						       &esz, &sig, &toff, &next, &utype, &d->err),
			     "CU header");

		if (rc != DW_DLV_OK || ++guard > (1u << 24))
			break;
		if (chk(d, dwarf_siblingof_b(d->dbg, NULL, 1, &cu_die, &d->err), "CU DIE") !=
		    DW_DLV_OK)
			continue;
		if (chk(d, dwarf_dieoffset(cu_die, &off, &d->err), "CU offset") == DW_DLV_OK &&
		    (cu = cu_index(d, off)) >= 0 && !d->cus[cu].from_aranges) {
			cu_span_arg a = {d, (uint32_t)cu};

			if (chk(d, dwarf_lowpc(cu_die, &low, &d->err), "CU low_pc") != DW_DLV_OK)
				low = 0;
			die_ranges(d, cu_die, low, cu_span_cb, &a);
		}
		free_die(cu_die);
	}
}

/* ---------------------------------------------------------------- one CU */

typedef struct node_range_arg {
	sym_dwarf *d;
	dw_cu *cu;
	uint32_t node;
} node_range_arg;

static int node_range_cb(void *arg, uint64_t lo, uint64_t hi)
{
	node_range_arg *a = arg;
	dw_cu *cu = a->cu;

	if (stp_sym_grow_((void **)&cu->ranges, &cu->capranges, cu->nranges + 1, sizeof(*cu->ranges)))
		return -1;
	cu->ranges[cu->nranges++] = (dw_span){lo, hi, a->node};
	return 0;
}

/* Adds a node for a subprogram / inlined call die under parent (-1: an
 * outermost function).  Returns its index, or -1 when it has no code. */
static long add_node(sym_dwarf *d, dw_cu *cu, Dwarf_Die die, Dwarf_Half tag, long parent)
{
	node_range_arg a = {d, cu, (uint32_t)cu->nnodes};
	size_t first = cu->nranges;
	Dwarf_Unsigned v;
	dw_node *n;

	if (cu->nnodes >= UINT32_MAX ||
	    stp_sym_grow_((void **)&cu->nodes, &cu->capnodes, cu->nnodes + 1, sizeof(*cu->nodes)))
		return -1;
	if (!die_ranges(d, die, cu->base, node_range_cb, &a) || cu->nranges == first) {
		cu->nranges = first;
		return -1;
	}
	n = &cu->nodes[cu->nnodes];
	memset(n, 0, sizeof(*n));
	if (chk(d, dwarf_dieoffset(die, &n->off, &d->err), "DIE offset") != DW_DLV_OK)
		n->off = 0;
	n->first_child = -1;
	n->next_sibling = -1;
	n->range_first = (uint32_t)first;
	n->range_count = (uint32_t)(cu->nranges - first);
	if (tag == DW_TAG_inlined_subroutine && parent >= 0) {
		n->inlined = 1;
		if (attr_udata(d, die, DW_AT_call_file, &v) == DW_DLV_OK)
			n->call_file = (uint32_t)v;
		if (attr_udata(d, die, DW_AT_call_line, &v) == DW_DLV_OK)
			n->call_line = (uint32_t)v;
		if (attr_udata(d, die, DW_AT_call_column, &v) == DW_DLV_OK)
			n->call_col = (uint32_t)v;
	}
	if (parent >= 0) {
		n->next_sibling = cu->nodes[parent].first_child;
		cu->nodes[parent].first_child = (int32_t)cu->nnodes;
	}
	return (long)cu->nnodes++;
}

/* Whether the children of a DIE with this tag can hold code. */
static int descend_into(Dwarf_Half tag)
{
	switch (tag) {
	case DW_TAG_namespace:
	case DW_TAG_lexical_block:
	case DW_TAG_module:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
		return 1;
	default:
		return 0;
	}
}

typedef struct walk_entry {
	Dwarf_Die die;
	long node;
	int quiet;
} walk_entry;

/* Whether libdwarf, asked for the DIE after die, reads die's subtree to
 * find it: die has children and no DW_AT_sibling that libdwarf uses. */
static int subtree_read(sym_dwarf *d, Dwarf_Die die)
{
	Dwarf_Attribute a = NULL;
	Dwarf_Half kids = 0, form = 0;
	int rc;

	if (dwarf_die_abbrev_children_flag(die, &kids) != DW_DLV_OK || !kids)
		return 0;
	if (chk(d, dwarf_attr(die, DW_AT_sibling, &a, &d->err), "DIE sibling") != DW_DLV_OK)
		return 1;
	rc = chk(d, dwarf_whatform(a, &form, &d->err), "DIE sibling");
	dwarf_dealloc(d->dbg, a, DW_DLA_ATTR);
	return rc != DW_DLV_OK || form == DW_FORM_ref_addr; /* which libdwarf ignores */
}

/* Depth-first over the CU's DIEs, making nodes of functions and inlined
 * calls.  Skips types and data (their children hold no code) unless
 * libdwarf would read their subtree to find the next DIE: then the subtree
 * is walked first ("quiet", making no nodes).  libdwarf 20210528 loops for
 * ever inside one call when a DIE of a subtree it reads has a DW_AT_sibling
 * pointing at that DIE itself; walked here, every such DIE has been asked
 * for its sibling on its own (where libdwarf just returns the same DIE,
 * caught below) before its parent is. */
static void walk_dies(sym_dwarf *d, dw_cu *cu, Dwarf_Die cu_die)
{
	walk_entry stack[MAX_DEPTH];
	size_t depth = 0;
	uint32_t count = 0;
	Dwarf_Die cur = NULL;
	long parent = -1;
	int quiet = 0;

	if (chk(d, dwarf_child(cu_die, &cur, &d->err), "DIE child") != DW_DLV_OK)
		return;
	while (cur) {
		Dwarf_Half tag = 0;
		Dwarf_Die next = NULL;
		Dwarf_Off off = 0, noff = 0;
		long node = parent;
		int descend = 0, read_by_libdwarf, rc;

		if (++count > MAX_DIES) {
			free_die(cur);
			break;
		}
		if (!quiet && chk(d, dwarf_tag(cur, &tag, &d->err), "DIE tag") == DW_DLV_OK) {
			if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
			    tag == DW_TAG_entry_point) {
				/* a nested function is a function of its own */
				node = add_node(d, cu, cur, tag,
						tag == DW_TAG_inlined_subroutine ? parent : -1);
				descend = node >= 0;
			} else {
				descend = descend_into(tag);
			}
		}
		read_by_libdwarf = subtree_read(d, cur);
		if (read_by_libdwarf && !descend)
			descend = 2; /* only for the sibling pointers libdwarf will follow */
		if (read_by_libdwarf && depth >= MAX_DEPTH) {
			if (!d->msg[0])
				snprintf(d->msg, sizeof(d->msg), "DIEs nested deeper than %d", MAX_DEPTH);
			goto drop;
		}
		rc = descend && depth < MAX_DEPTH ? chk(d, dwarf_child(cur, &next, &d->err), "DIE child")
						  : DW_DLV_NO_ENTRY;
		if (rc == DW_DLV_ERROR && read_by_libdwarf)
			goto drop; /* its subtree cannot be walked first */
		if (rc == DW_DLV_OK) {
			stack[depth].die = cur;
			stack[depth].node = parent;
			stack[depth].quiet = quiet;
			depth++;
			parent = node;
			quiet = quiet || descend == 2;
			cur = next;
			continue;
		}
		/* on to the next sibling, climbing out of finished levels */
		for (;;) {
			next = NULL;
			rc = chk(d, dwarf_siblingof_b(d->dbg, cur, 1, &next, &d->err), "DIE sibling");
			if (rc == DW_DLV_OK &&
			    (chk(d, dwarf_dieoffset(cur, &off, &d->err), "DIE offset") != DW_DLV_OK ||
			     chk(d, dwarf_dieoffset(next, &noff, &d->err), "DIE offset") !=
				     DW_DLV_OK ||
			     noff <= off)) {
				if (!d->msg[0])
					snprintf(d->msg, sizeof(d->msg), "DIE sibling goes backwards");
				free_die(next);
				rc = DW_DLV_ERROR;
			}
			free_die(cur);
			cur = NULL;
			if (rc == DW_DLV_OK) {
				cur = next;
				break;
			}
			if (rc == DW_DLV_ERROR)
				goto drop;
			if (!depth)
				return;
			depth--;
			cur = stack[depth].die;
			parent = stack[depth].node;
			quiet = stack[depth].quiet;
		}
	}
	while (depth)
		free_die(stack[--depth].die);
	return;
drop: /* the whole walk: nodes made so far stay */
	free_die(cur);
	while (depth)
		free_die(stack[--depth].die);
}

static void read_files(sym_dwarf *d, dw_cu *cu, Dwarf_Die cu_die)
{
	char **files = NULL;
	Dwarf_Signed n = 0;

	if (chk(d, dwarf_srcfiles(cu_die, &files, &n, &d->err), "source files") != DW_DLV_OK)
		return;
	cu->files = calloc(n > 0 ? (size_t)n : 1, sizeof(*cu->files));
	for (Dwarf_Signed i = 0; i < n; i++) {
		if (cu->files && files[i])
			cu->files[i] = own(d, strdup(files[i]));
		dwarf_dealloc(d->dbg, files[i], DW_DLA_STRING);
	}
	if (cu->files)
		cu->nfiles = (size_t)n;
	dwarf_dealloc(d->dbg, files, DW_DLA_LIST);
}

typedef struct line_row {
	uint64_t addr;
	uint32_t line, col, file;
	int end;
} line_row;

static void read_lines(sym_dwarf *d, dw_cu *cu, Dwarf_Die cu_die)
{
	Dwarf_Unsigned version = 0;
	Dwarf_Small tables = 0;
	Dwarf_Line_Context ctx = NULL;
	Dwarf_Line *lines = NULL;
	Dwarf_Signed n = 0;
	line_row *rows = NULL;
	size_t nrows = 0, nout = 0;
	uint64_t seq_start = 0;
	int in_seq = 0, skip_seq = 0, zero_is_one = 0;

	if (chk(d, dwarf_srclines_b(cu_die, &version, &tables, &ctx, &d->err), "line table") !=
	    DW_DLV_OK)
		return;
	cu->file_base = version >= 5 ? 0 : 1;
	if (version >= 5 && d->legacy_v5_file) {
		/* libdwarf 2018-2021 starts each DWARF 5 sequence with file 0
		 * where DWARF 5 says 1.  GCC never names file 0 in its line
		 * programs, so there a 0 can only be that initial value. */
		const char *producer = attr_string(d, cu_die, DW_AT_producer);

		zero_is_one = producer && !strncmp(producer, "GNU ", 4);
	}
	if (chk(d, dwarf_srclines_from_linecontext(ctx, &lines, &n, &d->err), "line rows") !=
		    DW_DLV_OK ||
	    n <= 0)
		goto out;
	rows = malloc((size_t)n * sizeof(*rows));
	if (!rows)
		goto out;
	for (Dwarf_Signed i = 0; i < n; i++) {
		Dwarf_Addr addr = 0;
		Dwarf_Unsigned line = 0, col = 0, file = 0;
		Dwarf_Bool end = 0;

		if (chk(d, dwarf_lineaddr(lines[i], &addr, &d->err), "line address") != DW_DLV_OK ||
		    chk(d, dwarf_lineendsequence(lines[i], &end, &d->err), "line end") != DW_DLV_OK)
			break;
		if (chk(d, dwarf_lineno(lines[i], &line, &d->err), "line") != DW_DLV_OK)
			line = 0;
		if (chk(d, dwarf_lineoff_b(lines[i], &col, &d->err), "column") != DW_DLV_OK)
			col = 0;
		if (chk(d, dwarf_line_srcfileno(lines[i], &file, &d->err), "line file") !=
		    DW_DLV_OK)
			file = UINT32_MAX;
		if (file == 0 && zero_is_one)
			file = 1;
		rows[nrows++] = (line_row){addr, (uint32_t)line, (uint32_t)col,
					   file > UINT32_MAX ? UINT32_MAX : (uint32_t)file, end != 0};
	}
	/* rows -> [addr, next addr) intervals within each sequence; sequences
	 * the linker discarded (placed at 0 or a tombstone) are dropped */
	cu->lines = malloc((nrows ? nrows : 1) * sizeof(*cu->lines));
	if (!cu->lines)
		goto out;
	for (size_t i = 0; i < nrows; i++) {
		if (!in_seq) {
			in_seq = 1;
			seq_start = rows[i].addr;
			skip_seq = seq_start == 0 || seq_start >= UINT64_MAX - 1 ||
				   seq_start == 0xffffffffull || seq_start == 0xfffffffeull;
		}
		if (rows[i].end) {
			in_seq = 0;
			continue;
		}
		if (skip_seq || i + 1 >= nrows || rows[i + 1].addr <= rows[i].addr)
			continue;
		cu->lines[nout++] = (dw_line){rows[i].addr, rows[i + 1].addr, rows[i].line,
					      rows[i].col, rows[i].file};
	}
	qsort(cu->lines, nout, sizeof(*cu->lines), line_cmp);
	cu->lines_max = malloc((nout ? nout : 1) * sizeof(*cu->lines_max));
	if (cu->lines_max) {
		uint64_t m = 0;

		for (size_t i = 0; i < nout; i++) {
			if (cu->lines[i].hi > m)
				m = cu->lines[i].hi;
			cu->lines_max[i] = m;
		}
		cu->nlines = nout;
	}
out:
	free(rows);
	dwarf_srclines_dealloc_b(ctx);
}

/* Whether the CU's line table may be given to libdwarf: the header at its
 * DW_AT_stmt_list offset (read as libdwarf reads it) passes
 * sym_line_header_ok().  No offset: libdwarf stops before any header. */
static int lines_ok(sym_dwarf *d, Dwarf_Die cu_die)
{
	Dwarf_Attribute a = NULL;
	Dwarf_Half form = 0;
	Dwarf_Off off = 0;
	int rc, ok;

	if (!d->elf || d->elf->lines_unsafe) {
		if (!d->msg[0])
			snprintf(d->msg, sizeof(d->msg),
				 "line tables not read: several line sections, relocations applied "
				 "to them or a DWARF package index");
		return 0;
	}
	if (chk(d, dwarf_attr(cu_die, DW_AT_stmt_list, &a, &d->err), "line table") != DW_DLV_OK)
		return 1;
	rc = chk(d, dwarf_whatform(a, &form, &d->err), "line table");
	if (rc == DW_DLV_OK && form == DW_FORM_addr) {
		Dwarf_Addr addr = 0;

		rc = chk(d, dwarf_formaddr(a, &addr, &d->err), "line table");
		off = addr;
	} else if (rc == DW_DLV_OK) {
		rc = chk(d, dwarf_global_formref(a, &off, &d->err), "line table");
	}
	dwarf_dealloc(d->dbg, a, DW_DLA_ATTR);
	if (rc != DW_DLV_OK)
		return 0;
	ok = sym_line_header_ok(d->elf->debug_line, d->elf->debug_line_size, off,
				d->elf->big_endian);
	if (!ok && !d->msg[0])
		snprintf(d->msg, sizeof(d->msg),
			 "line table: malformed header at .debug_line offset %llu",
			 (unsigned long long)off);
	return ok;
}

static void parse_cu(sym_dwarf *d, dw_cu *cu)
{
	Dwarf_Die cu_die = NULL;
	Dwarf_Addr low = 0;
	size_t ntops = 0;

	cu->parsed = 1;
	d->cus_loaded++;
	if (chk(d, dwarf_offdie_b(d->dbg, cu->off, 1, &cu_die, &d->err), "CU DIE") != DW_DLV_OK)
		return;
	if (chk(d, dwarf_lowpc(cu_die, &low, &d->err), "CU low_pc") == DW_DLV_OK)
		cu->base = low;
	if (lines_ok(d, cu_die)) {
		read_files(d, cu, cu_die);
		read_lines(d, cu, cu_die);
	}
	walk_dies(d, cu, cu_die);
	free_die(cu_die);

	/* outermost functions: the ranges of nodes that are no one's child */
	{
		uint8_t *is_child = calloc(cu->nnodes ? cu->nnodes : 1, 1);

		if (!is_child)
			return;
		for (size_t i = 0; i < cu->nnodes; i++)
			for (int32_t c = cu->nodes[i].first_child; c >= 0;
			     c = cu->nodes[c].next_sibling)
				is_child[c] = 1;
		cu->tops = malloc((cu->nranges ? cu->nranges : 1) * sizeof(*cu->tops));
		if (cu->tops)
			for (size_t i = 0; i < cu->nranges; i++)
				if (!is_child[cu->ranges[i].idx])
					cu->tops[ntops++] = cu->ranges[i];
		free(is_child);
	}
	if (!cu->tops)
		return;
	qsort(cu->tops, ntops, sizeof(*cu->tops), span_cmp);
	cu->tops_max = prefix_max_spans(cu->tops, ntops);
	if (cu->tops_max)
		cu->ntops = ntops;
}

/* ---------------------------------------------------------------- names */

/* The name of a function DIE, found on it or on what it refers to
 * (abstract origin, specification): a C++ linkage name, demangled, else the
 * source name.  (A C function renamed with an asm label has a linkage name
 * too, __GI_qsort for glibc's qsort: the source name is the better one.) */
static const char *resolve_name(sym_dwarf *d, Dwarf_Off off)
{
	const char *link = NULL, *plain = NULL;
	Dwarf_Die die = NULL;

	if (chk(d, dwarf_offdie_b(d->dbg, off, 1, &die, &d->err), "DIE") != DW_DLV_OK)
		return NULL;
	for (int hop = 0; hop < MAX_CHASE && die && !(link && plain); hop++) {
		Dwarf_Off ref = 0;
		Dwarf_Die next = NULL;

		if (!link)
			link = attr_string(d, die, DW_AT_linkage_name);
		if (!link)
			link = attr_string(d, die, DW_AT_MIPS_linkage_name);
		if (!plain)
			plain = attr_string(d, die, DW_AT_name);
		if (attr_ref(d, die, DW_AT_abstract_origin, &ref) != DW_DLV_OK &&
		    attr_ref(d, die, DW_AT_specification, &ref) != DW_DLV_OK)
			break;
		if (chk(d, dwarf_offdie_b(d->dbg, ref, 1, &next, &d->err), "DIE") != DW_DLV_OK)
			break;
		free_die(die);
		die = next;
	}
	free_die(die);
	if (link && link[0] == '_' && link[1] == 'Z') {
		char *dem = d->demangle ? sym_demangle(link) : NULL;

		if (dem)
			return own(d, dem);
		if (!d->demangle)
			return link;
	}
	return plain ? plain : link;
}

static const char *node_name(sym_dwarf *d, dw_node *n)
{
	if (!n->name_done) {
		n->name_done = 1;
		n->name = resolve_name(d, n->off);
	}
	return n->name;
}

static int node_contains(const dw_cu *cu, const dw_node *n, uint64_t pc)
{
	for (uint32_t i = 0; i < n->range_count; i++) {
		const dw_span *r = &cu->ranges[n->range_first + i];

		if (r->lo <= pc && pc < r->hi)
			return 1;
	}
	return 0;
}

static const char *cu_file(const dw_cu *cu, uint32_t file)
{
	if (file < cu->file_base || file - cu->file_base >= cu->nfiles)
		return NULL;
	return cu->files[file - cu->file_base];
}

/* ---------------------------------------------------------------- API */

int sym_dwarf_available(void)
{
	return 1;
}

sym_dwarf *sym_dwarf_open(const char *path, const sym_elf *elf, int demangle, char *err,
			  size_t errlen)
{
	sym_dwarf *d = calloc(1, sizeof(*d));
	int rc;

	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->demangle = demangle;
	d->elf = elf;
	/* dated releases (20210528) predate the 0.x series */
	d->legacy_v5_file = !strncmp(dwarf_package_version(), "20", 2);
	rc = SYM_DWARF_INIT(path, &d->dbg, &d->err);
	if (rc != DW_DLV_OK) {
		if (rc == DW_DLV_ERROR)
			snprintf(err, errlen, "DWARF: %s",
				 d->err ? dwarf_errmsg(d->err) : "cannot open");
		else
			snprintf(err, errlen, "no DWARF");
		if (d->err)
			dwarf_dealloc(d->dbg, d->err, DW_DLA_ERROR);
		if (d->dbg) {
			Dwarf_Error e2 = NULL;

			(void)e2;
			SYM_DWARF_FINISH(d->dbg, &e2);
		}
		free(d);
		return NULL;
	}
	return d;
}

void sym_dwarf_close(sym_dwarf *d)
{
	Dwarf_Error e2 = NULL;

	if (!d)
		return;
	for (size_t i = 0; i < d->ncus; i++) {
		dw_cu *cu = &d->cus[i];

		free(cu->nodes);
		free(cu->ranges);
		free(cu->tops);
		free(cu->tops_max);
		free(cu->lines);
		free(cu->lines_max);
		free(cu->files);
	}
	for (size_t i = 0; i < d->nowned; i++)
		free(d->owned[i]);
	free(d->owned);
	free(d->cus);
	free(d->hkeys);
	free(d->hvals);
	free(d->spans);
	free(d->spans_max);
	(void)e2;
	SYM_DWARF_FINISH(d->dbg, &e2);
	free(d);
}

uint32_t sym_dwarf_cus_loaded(const sym_dwarf *d)
{
	return d ? d->cus_loaded : 0;
}

static long find_cu(sym_dwarf *d, uint64_t pc)
{
	long i;

	if (!d->indexed) {
		d->indexed = 1;
		index_aranges(d);
		if (!d->nspans)
			index_scan_cus(d);
		sort_spans(d);
	}
	i = span_find(d->spans, d->spans_max, d->nspans, pc);
	if (i < 0 && !d->scanned) {
		/* aranges may leave some CUs out: look at the CUs themselves */
		index_scan_cus(d);
		sort_spans(d);
		i = span_find(d->spans, d->spans_max, d->nspans, pc);
	}
	return i < 0 ? -1 : (long)d->spans[i].idx;
}

int sym_dwarf_lookup(sym_dwarf *d, uint64_t pc, sym_dframe *out, int max, int *bad, char *err,
		     size_t errlen)
{
	int32_t chain[MAX_DEPTH];
	int depth = 0, total;
	long ci, top, li;
	dw_cu *cu;
	const dw_line *ln = NULL;

	ci = find_cu(d, pc);
	if (ci >= 0) {
		cu = &d->cus[ci];
		if (!cu->parsed)
			parse_cu(d, cu);
		top = span_find(cu->tops, cu->tops_max, cu->ntops, pc);
		if (top >= 0) {
			chain[depth++] = (int32_t)cu->tops[top].idx;
			while (depth < MAX_DEPTH) {
				int32_t c = cu->nodes[chain[depth - 1]].first_child;

				while (c >= 0 && !node_contains(cu, &cu->nodes[c], pc))
					c = cu->nodes[c].next_sibling;
				if (c < 0)
					break;
				chain[depth++] = c;
			}
		}
		li = line_find(cu->lines, cu->lines_max, cu->nlines, pc);
		if (li >= 0)
			ln = &cu->lines[li];
	} else {
		cu = NULL;
	}
	total = !cu || (!depth && !ln) ? 0 : depth ? depth : 1;
	for (int j = 0; j < total && j < max; j++) {
		sym_dframe *f = &out[j];

		memset(f, 0, sizeof(*f));
		if (!depth) {
			f->file = cu_file(cu, ln->file);
			f->line = ln->line;
			f->column = ln->col;
			break;
		}
		/* frame j is chain[depth-1-j]: the innermost first */
		f->function = node_name(d, &cu->nodes[chain[depth - 1 - j]]);
		f->inlined = depth - 1 - j > 0;
		if (j == 0) {
			if (ln) {
				f->file = cu_file(cu, ln->file);
				f->line = ln->line;
				f->column = ln->col;
			}
		} else {
			const dw_node *callee = &cu->nodes[chain[depth - j]];

			f->file = cu_file(cu, callee->call_file);
			f->line = callee->call_line;
			f->column = callee->call_col;
		}
		if (!f->line)
			f->file = NULL;
	}
	if (d->msg[0]) {
		*bad = 1;
		snprintf(err, errlen, "%s", d->msg);
		d->msg[0] = 0;
	}
	return total;
}

#endif /* STPROF_HAVE_LIBDWARF */
