/*
 * pickle_read.c - the data-only pickle reader (see pickle.h).
 *
 * A straight interpreter of the pickle machine: a value stack with marks
 * and a memo, one opcode at a time.  Every length and index the input
 * claims is checked against what is left of the input before it is used,
 * so memory stays O(input size); after STOP the graph reachable from the
 * root is walked once (iteratively) to refuse cycles and excessive depth.
 */
#include "pickle.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Nodes and string bytes come from arenas (chunks freed together); only
 * containers' item arrays are separate allocations, listed for pk_free. */
#define NODE_CHUNK 4096
#define BYTE_CHUNK (1u << 20)
typedef struct chunk {
	struct chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char mem[];
} chunk;

struct pk_doc {
	chunk *nodes, *bytes;
	pk_val **containers;
	size_t ncont, contcap;
	pk_val *root;
	int proto;
};

/* chunks grow from 4 KiB to max_chunk: a small pickle stays cheap */
static void *arena(chunk **head, size_t n, size_t max_chunk)
{
	n = (n + 15) & ~(size_t)15;
	chunk *c = *head;
	if (!c || c->cap - c->used < n) {
		size_t chunk_size = c ? (c->cap * 2 < max_chunk ? c->cap * 2 : max_chunk) : 4096;
		if (chunk_size < 4096)
			chunk_size = 4096;
		size_t cap = n > chunk_size ? n : chunk_size;
		c = malloc(sizeof *c + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		if (n > chunk_size / 4 && *head) { /* a big one: behind the current chunk */
			c->next = (*head)->next;
			(*head)->next = c;
		} else {
			c->next = *head;
			*head = c;
		}
	}
	void *r = c->mem + c->used;
	c->used += n;
	return r;
}

static void free_chunks(chunk *c)
{
	while (c) {
		chunk *n = c->next;
		free(c);
		c = n;
	}
}

typedef struct parser {
	const uint8_t *p;
	size_t len, pos, op_at;
	const char *name;
	char *err;
	size_t errlen;
	pk_doc *doc;
	pk_val **stack;
	size_t sn, scap;
	size_t *marks;
	size_t mn, mcap;
	pk_val **memo;
	size_t memo_n;   /* slots allocated (index < memo_n may be set) */
	size_t memo_count; /* values memoized so far (MEMOIZE's next index) */
} parser;

static int fail(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *ps, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s: offset %zu: %s", ps->name, ps->op_at, msg);
	return -1;
}

static pk_val *new_node(parser *ps, pk_type t)
{
	pk_doc *d = ps->doc;
	if (t >= PK_LIST && d->ncont == d->contcap) {
		size_t nc = d->contcap ? d->contcap * 2 : 256;
		pk_val **nn = realloc(d->containers, nc * sizeof *nn);
		if (!nn)
			return NULL;
		d->containers = nn;
		d->contcap = nc;
	}
	pk_val *v = arena(&d->nodes, sizeof *v, NODE_CHUNK * sizeof *v);
	if (!v)
		return NULL;
	memset(v, 0, sizeof *v);
	v->type = (uint8_t)t;
	v->offset = ps->op_at;
	if (t >= PK_LIST)
		d->containers[d->ncont++] = v;
	return v;
}

static int push(parser *ps, pk_val *v)
{
	if (!v)
		return fail(ps, "out of memory");
	if (ps->sn == ps->scap) {
		size_t nc = ps->scap ? ps->scap * 2 : 64;
		pk_val **ns = realloc(ps->stack, nc * sizeof *ns);
		if (!ns)
			return fail(ps, "out of memory");
		ps->stack = ns;
		ps->scap = nc;
	}
	ps->stack[ps->sn++] = v;
	return 0;
}

/* Bytes of the operand; NULL (with the error set) when the input ends. */
static const uint8_t *take(parser *ps, size_t n)
{
	if (n > ps->len - ps->pos) {
		fail(ps, "truncated: operand of %zu bytes, %zu left", n, ps->len - ps->pos);
		return NULL;
	}
	const uint8_t *r = ps->p + ps->pos;
	ps->pos += n;
	return r;
}

static uint64_t le(const uint8_t *b, size_t n)
{
	uint64_t v = 0;
	for (size_t i = n; i-- > 0;)
		v = v << 8 | b[i];
	return v;
}

static int add_item(parser *ps, pk_val *c, pk_val *item)
{
	if (c->n == c->cap) {
		uint32_t nc = c->cap ? c->cap * 2 : 4;
		if (nc < c->cap)
			return fail(ps, "container too large");
		pk_val **ni = realloc(c->u.items, (size_t)nc * sizeof *ni);
		if (!ni)
			return fail(ps, "out of memory");
		c->u.items = ni;
		c->cap = nc;
	}
	c->u.items[c->n++] = item;
	return 0;
}

static int mark_top(parser *ps, size_t *at)
{
	if (!ps->mn)
		return fail(ps, "no MARK before this opcode");
	*at = ps->marks[--ps->mn];
	return 0;
}

static int string_op(parser *ps, size_t lenbytes, pk_type t)
{
	const uint8_t *b = take(ps, lenbytes);
	if (!b)
		return -1;
	uint64_t n = le(b, lenbytes);
	if (n > ps->len - ps->pos)
		return fail(ps, "string of %llu bytes claimed, %zu left in the input", (unsigned long long)n,
		            ps->len - ps->pos);
	if (n > UINT32_MAX)
		return fail(ps, "string too long");
	const uint8_t *s = take(ps, (size_t)n);
	pk_val *v = new_node(ps, t);
	if (!s || !v)
		return v ? -1 : fail(ps, "out of memory");
	v->u.s = arena(&ps->doc->bytes, (size_t)n + 1, BYTE_CHUNK);
	if (!v->u.s)
		return fail(ps, "out of memory");
	memcpy(v->u.s, s, (size_t)n);
	v->u.s[n] = 0;
	v->n = (uint32_t)n;
	return push(ps, v);
}

static int long_op(parser *ps, size_t lenbytes)
{
	const uint8_t *b = take(ps, lenbytes);
	if (!b)
		return -1;
	uint64_t n = le(b, lenbytes);
	if (n > ps->len - ps->pos)
		return fail(ps, "integer of %llu bytes claimed, %zu left in the input", (unsigned long long)n,
		            ps->len - ps->pos);
	const uint8_t *d = take(ps, (size_t)n);
	if (!d)
		return -1;
	pk_val *v = new_node(ps, PK_INT);
	if (!v)
		return fail(ps, "out of memory");
	if (n == 0) {
		v->u.i = 0;
	} else if (n <= 8) {
		uint64_t u = le(d, (size_t)n);
		if (n < 8 && (d[n - 1] & 0x80))
			u |= ~0ull << (8 * n); /* sign-extend */
		v->u.i = (int64_t)u;
	} else {
		/* positive values up to 2^64-1 (addresses) keep their value */
		int fits = !(d[n - 1] & 0x80);
		for (size_t i = 8; i < n && fits; i++)
			fits = d[i] == 0;
		v->type = PK_BIGINT;
		v->n = (uint32_t)fits;
		v->u.i = fits ? (int64_t)le(d, 8) : 0;
	}
	return push(ps, v);
}

static int memo_set(parser *ps, uint64_t idx)
{
	if (!ps->sn || ps->stack[ps->sn - 1] == NULL)
		return fail(ps, "memo put with an empty stack");
	/* indices are dense in every real pickle; a far one is hostile */
	if (idx > ps->memo_count + 1024 || idx >= ps->len)
		return fail(ps, "memo index %llu out of range", (unsigned long long)idx);
	if (idx >= ps->memo_n) {
		size_t nc = ps->memo_n ? ps->memo_n : 64;
		while (nc <= idx)
			nc *= 2;
		pk_val **nm = realloc(ps->memo, nc * sizeof *nm);
		if (!nm)
			return fail(ps, "out of memory");
		memset(nm + ps->memo_n, 0, (nc - ps->memo_n) * sizeof *nm);
		ps->memo = nm;
		ps->memo_n = nc;
	}
	ps->memo[idx] = ps->stack[ps->sn - 1];
	if (idx >= ps->memo_count)
		ps->memo_count = idx + 1;
	return 0;
}

static int memo_get(parser *ps, uint64_t idx)
{
	if (idx >= ps->memo_n || !ps->memo[idx])
		return fail(ps, "memo index %llu was never stored", (unsigned long long)idx);
	return push(ps, ps->memo[idx]);
}

static pk_val *pop(parser *ps)
{
	if (!ps->sn || (ps->mn && ps->marks[ps->mn - 1] == ps->sn)) {
		fail(ps, "stack underflow");
		return NULL;
	}
	return ps->stack[--ps->sn];
}

static int tuple_of(parser *ps, size_t from)
{
	pk_val *t = new_node(ps, PK_TUPLE);
	if (!t)
		return fail(ps, "out of memory");
	for (size_t i = from; i < ps->sn; i++)
		if (add_item(ps, t, ps->stack[i]) < 0)
			return -1;
	ps->sn = from;
	return push(ps, t);
}

static int fill(parser *ps, size_t from, int dict)
{
	if (from == 0)
		return fail(ps, "no container below the MARK");
	pk_val *c = ps->stack[from - 1];
	size_t n = ps->sn - from;
	if (dict ? c->type != PK_DICT : c->type != PK_LIST)
		return fail(ps, "%s on a value that is not a %s", dict ? "SETITEM(S)" : "APPEND(S)", dict ? "dict" : "list");
	if (dict && (n & 1))
		return fail(ps, "SETITEMS with an odd number of values");
	for (size_t i = from; i < ps->sn; i++)
		if (add_item(ps, c, ps->stack[i]) < 0)
			return -1;
	ps->sn = from;
	return 0;
}

/* Refuses cycles and depth over PK_MAX_DEPTH among nodes reachable from root. */
static int check_graph(parser *ps, pk_val *root)
{
	struct fr { pk_val *v; uint32_t next; } st[PK_MAX_DEPTH + 1];
	int sp = 0;
	if (root->type < PK_LIST)
		return 0;
	st[sp++] = (struct fr){root, 0};
	root->state = 1;
	while (sp) {
		struct fr *f = &st[sp - 1];
		if (f->next == f->v->n) {
			f->v->state = 2;
			sp--;
			continue;
		}
		pk_val *c = f->v->u.items[f->next++];
		if (c->type < PK_LIST || c->state == 2)
			continue;
		if (c->state == 1) {
			ps->op_at = c->offset;
			return fail(ps, "a container that contains itself (memo reference loop)");
		}
		if (sp == PK_MAX_DEPTH + 1) {
			ps->op_at = c->offset;
			return fail(ps, "nested deeper than %d", PK_MAX_DEPTH);
		}
		c->state = 1;
		st[sp++] = (struct fr){c, 0};
	}
	return 0;
}

static int step(parser *ps, int *stop)
{
	ps->op_at = ps->pos;
	const uint8_t *b = take(ps, 1);
	if (!b)
		return fail(ps, "no STOP opcode at the end of the pickle");
	uint8_t op = *b;
	size_t at = 0;
	pk_val *v;
	switch (op) {
	case 0x80: /* PROTO */
		if (!(b = take(ps, 1)))
			return -1;
		if (*b > 5)
			return fail(ps, "pickle protocol %u is not supported (2 to 5 are)", *b);
		ps->doc->proto = *b;
		return 0;
	case 0x95: /* FRAME: an 8-byte length we only check */
		if (!(b = take(ps, 8)))
			return -1;
		if (le(b, 8) > ps->len - ps->pos)
			return fail(ps, "FRAME of %llu bytes claimed, %zu left", (unsigned long long)le(b, 8),
			            ps->len - ps->pos);
		return 0;
	case '.': /* STOP */
		if (ps->sn != 1 || ps->mn)
			return fail(ps, "STOP with %zu values and %zu marks on the stack (want 1 and 0)", ps->sn, ps->mn);
		*stop = 1;
		return 0;
	case '}': return push(ps, new_node(ps, PK_DICT));
	case ']': return push(ps, new_node(ps, PK_LIST));
	case ')': return push(ps, new_node(ps, PK_TUPLE));
	case 'N': return push(ps, new_node(ps, PK_NONE));
	case 0x88: case 0x89: /* NEWTRUE, NEWFALSE */
		if (!(v = new_node(ps, PK_BOOL)))
			return fail(ps, "out of memory");
		v->u.i = op == 0x88;
		return push(ps, v);
	case '(': /* MARK */
		if (ps->mn == ps->mcap) {
			size_t nc = ps->mcap ? ps->mcap * 2 : 16;
			size_t *nm = realloc(ps->marks, nc * sizeof *nm);
			if (!nm)
				return fail(ps, "out of memory");
			ps->marks = nm;
			ps->mcap = nc;
		}
		ps->marks[ps->mn++] = ps->sn;
		return 0;
	case '0': /* POP */
		return pop(ps) ? 0 : -1;
	case '1': /* POP_MARK */
		if (mark_top(ps, &at) < 0)
			return -1;
		ps->sn = at;
		return 0;
	case 'K': case 'M': case 'J': { /* BININT1, BININT2, BININT */
		size_t n = op == 'K' ? 1 : op == 'M' ? 2 : 4;
		if (!(b = take(ps, n)) || !(v = new_node(ps, PK_INT)))
			return b ? fail(ps, "out of memory") : -1;
		v->u.i = op == 'J' ? (int64_t)(int32_t)(uint32_t)le(b, 4) : (int64_t)le(b, n);
		return push(ps, v);
	}
	case 0x8a: return long_op(ps, 1); /* LONG1 */
	case 0x8b: return long_op(ps, 4); /* LONG4 */
	case 'G': { /* BINFLOAT, big-endian */
		if (!(b = take(ps, 8)) || !(v = new_node(ps, PK_FLOAT)))
			return b ? fail(ps, "out of memory") : -1;
		uint64_t u = 0;
		for (int i = 0; i < 8; i++)
			u = u << 8 | b[i];
		memcpy(&v->u.f, &u, sizeof u);
		return push(ps, v);
	}
	case 0x8c: return string_op(ps, 1, PK_STR); /* SHORT_BINUNICODE */
	case 'X': return string_op(ps, 4, PK_STR);  /* BINUNICODE */
	case 0x8d: return string_op(ps, 8, PK_STR); /* BINUNICODE8 */
	case 'C': return string_op(ps, 1, PK_BYTES); /* SHORT_BINBYTES */
	case 'B': return string_op(ps, 4, PK_BYTES); /* BINBYTES */
	case 0x8e: return string_op(ps, 8, PK_BYTES); /* BINBYTES8 */
	case 0x94: /* MEMOIZE */
		return memo_set(ps, ps->memo_count);
	case 'q': case 'r': /* BINPUT, LONG_BINPUT */
		if (!(b = take(ps, op == 'q' ? 1 : 4)))
			return -1;
		return memo_set(ps, le(b, op == 'q' ? 1 : 4));
	case 'h': case 'j': /* BINGET, LONG_BINGET */
		if (!(b = take(ps, op == 'h' ? 1 : 4)))
			return -1;
		return memo_get(ps, le(b, op == 'h' ? 1 : 4));
	case 't': /* TUPLE */
		if (mark_top(ps, &at) < 0)
			return -1;
		return tuple_of(ps, at);
	case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
		size_t n = (size_t)(op - 0x84);
		size_t floor = ps->mn ? ps->marks[ps->mn - 1] : 0;
		if (ps->sn - floor < n)
			return fail(ps, "stack underflow");
		return tuple_of(ps, ps->sn - n);
	}
	case 'a': { /* APPEND */
		size_t floor = ps->mn ? ps->marks[ps->mn - 1] : 0;
		if (ps->sn - floor < 2)
			return fail(ps, "stack underflow");
		return fill(ps, ps->sn - 1, 0);
	}
	case 's': { /* SETITEM */
		size_t floor = ps->mn ? ps->marks[ps->mn - 1] : 0;
		if (ps->sn - floor < 3)
			return fail(ps, "stack underflow");
		return fill(ps, ps->sn - 2, 1);
	}
	case 'e': case 'u': /* APPENDS, SETITEMS */
		if (mark_top(ps, &at) < 0)
			return -1;
		return fill(ps, at, op == 'u');
	default:
		if (op == 'c' || op == 0x93 || op == 'R' || op == 'b' || op == 'i' || op == 'o' || op == 0x81 ||
		    op == 0x92)
			return fail(ps, "opcode 0x%02x would import or call code; refused (a memory snapshot holds only data)",
			            op);
		return fail(ps, "opcode 0x%02x is not one a memory snapshot uses; refused", op);
	}
}

pk_doc *pk_parse(const uint8_t *data, size_t len, const char *name, char *err, size_t errlen)
{
	parser ps = {.p = data, .len = len, .name = name ? name : "pickle", .err = err, .errlen = errlen};
	ps.doc = calloc(1, sizeof *ps.doc);
	if (!ps.doc) {
		snprintf(err, errlen, "%s: out of memory", ps.name);
		return NULL;
	}
	int stop = 0, rc = 0;
	if (len == 0 || data[0] != 0x80)
		rc = fail(&ps, "not a pickle (protocol 2 or later starts with byte 0x80)");
	while (!rc && !stop)
		rc = step(&ps, &stop);
	if (!rc) {
		ps.doc->root = ps.stack[0];
		rc = check_graph(&ps, ps.doc->root);
	}
	free(ps.stack);
	free(ps.marks);
	free(ps.memo);
	if (rc) {
		pk_free(ps.doc);
		return NULL;
	}
	return ps.doc;
}

pk_doc *pk_parse_file(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			fclose(f);
			snprintf(err, errlen, "%s: out of memory", path);
			return NULL;
		}
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		if (cap >= ((size_t)4 << 30)) {
			free(buf);
			fclose(f);
			snprintf(err, errlen, "%s: larger than 4 GiB", path);
			return NULL;
		}
		uint8_t *nb = realloc(buf, cap * 2);
		if (!nb)
			free(buf);
		buf = nb;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		snprintf(err, errlen, "%s: read error", path);
		return NULL;
	}
	pk_doc *d = pk_parse(buf, n, path, err, errlen);
	free(buf);
	return d;
}

const pk_val *pk_root(const pk_doc *d) { return d->root; }
int pk_protocol(const pk_doc *d) { return d->proto; }

void pk_free(pk_doc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->ncont; i++)
		free(d->containers[i]->u.items);
	free(d->containers);
	free_chunks(d->nodes);
	free_chunks(d->bytes);
	free(d);
}

const pk_val *pk_get(const pk_val *dict, const char *key)
{
	if (!dict || dict->type != PK_DICT)
		return NULL;
	size_t kl = strlen(key);
	/* real snapshot dicts have a dozen keys; looking at the first 128
	 * pairs keeps a hostile dict shared by many entries cheap */
	uint32_t n = dict->n < 256 ? dict->n : 256;
	for (uint32_t i = 0; i + 1 < n; i += 2) {
		const pk_val *k = dict->u.items[i];
		if (k->type == PK_STR && k->n == kl && !memcmp(k->u.s, key, kl))
			return dict->u.items[i + 1];
	}
	return NULL;
}

int64_t pk_int(const pk_val *v, int64_t dflt)
{
	if (!v)
		return dflt;
	if (v->type == PK_INT || v->type == PK_BOOL)
		return v->u.i;
	if (v->type == PK_FLOAT && v->u.f > -9e18 && v->u.f < 9e18)
		return (int64_t)v->u.f;
	return dflt;
}

uint64_t pk_uint(const pk_val *v, uint64_t dflt)
{
	if (!v)
		return dflt;
	if (v->type == PK_BIGINT && v->n)
		return (uint64_t)v->u.i;
	if (v->type == PK_FLOAT && v->u.f >= 0 && v->u.f < 1.8e19)
		return (uint64_t)v->u.f;
	if ((v->type == PK_INT || v->type == PK_BOOL) && v->u.i >= 0)
		return (uint64_t)v->u.i;
	return dflt;
}

const char *pk_str(const pk_val *v, const char *dflt)
{
	return v && v->type == PK_STR ? v->u.s : dflt;
}

int pk_is_seq(const pk_val *v) { return v && (v->type == PK_LIST || v->type == PK_TUPLE); }
