/*
 * pickle_read.c - the data-only pickle reader (see pickle.h).
 *
 * A straight interpreter of the pickle machine: a value stack with marks
 * and a memo, one opcode at a time, over an input read through a window.
 * Every length and index the input claims is checked against what is left
 * of the input before it is used.
 *
 * Nodes live in chunks and are named by 32-bit ids (the memo holds ids: 4
 * bytes a slot); each counts its references (stack slots, container slots,
 * memo slots) and is released, with what it holds, when the last goes.
 * None, True, False, "dropped" and the shape's strings are immortal nodes
 * shared by every use.  A whole read keeps everything and, after STOP,
 * walks the graph once (iteratively) to refuse cycles and excessive depth.
 * A shaped read gives each value its place when it is made (place_at) and
 * pushes the shared "dropped" node instead of any value that has none.
 */
#include "pickle.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NODE_CHUNK 4096u
#define WINDOW (1u << 16)
#define INPUT_MAX (((uint64_t)4 << 30) - 1) /* offsets are 32-bit */
#define MEMO_PAGE 4096u

enum { F_IMMORTAL = 1, F_STREAM = 2, F_STATE1 = 4, F_STATE2 = 8 };
enum { ID_NONE = 1, ID_TRUE, ID_FALSE, ID_DROPPED, ID_FIRST_FREE };
#define PK_FREE 0xff /* type of a node on the free list */

struct pk_doc {
	pk_val **chunks;
	uint32_t nchunks, nnodes; /* ids 1..nnodes-1 handed out (0: none) */
	uint32_t free_head;       /* a free node's u.i is the next free id */
	uint64_t live, peak;
	pk_val *root;
	int proto;
};

typedef struct parser {
	/* input */
	FILE *f;
	const uint8_t *win;
	uint8_t *own;
	size_t at, end;    /* valid window bytes: win[at..end) */
	uint64_t base;     /* input offset of win[0] */
	uint64_t len;      /* input length */
	size_t op_at;
	const char *name;
	char *err;
	size_t errlen;
	int sink_failed;
	/* machine */
	pk_doc *doc;
	const pk_shape *shape;
	pk_val **stack;
	size_t sn, scap;
	size_t *marks;
	size_t mn, mcap;
	/* the memo: a bit per slot (stored or not), and node ids by pages of
	 * MEMO_PAGE slots, a page made when it first holds a kept value and
	 * freed when it holds none (a slot stored with no id holds "dropped") */
	uint8_t *memo_bits;
	uint32_t **memo_pages;
	uint16_t *memo_live; /* per page: the ids it holds */
	uint32_t *memo_spare; /* a page emptied, all zero, for the next one */
	size_t memo_n;     /* slots with room (index < memo_n may be set) */
	size_t memo_count; /* values memoized so far (MEMOIZE's next index) */
	uint32_t *known;   /* ids of the shape's strings (consecutive) */
	size_t nknown;
	uint16_t *key_place; /* [place * nknown + string]: the place of its value */
	pk_val **work;     /* release()'s worklist */
	size_t wn, wcap;
} parser;

static int fail(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *ps, const char *fmt, ...)
{
	if (ps->sink_failed)
		return -1; /* the sink's message stands */
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s: offset %zu: %s", ps->name, ps->op_at, msg);
	return -1;
}

/* ------------------------------------------------------------ input */

static uint64_t pos_of(const parser *ps) { return ps->base + ps->at; }
static uint64_t left(const parser *ps) { return ps->len - pos_of(ps); }

/* Makes n (<= WINDOW) bytes contiguous at win + at; 0, or -1 at the end. */
static int fill_window(parser *ps, size_t n)
{
	if (ps->end - ps->at >= n)
		return 0;
	if (!ps->f)
		return -1;
	size_t keep = ps->end - ps->at;
	memmove(ps->own, ps->own + ps->at, keep);
	ps->base += ps->at;
	ps->at = 0;
	ps->end = keep + fread(ps->own + keep, 1, WINDOW - keep, ps->f);
	return ps->end >= n ? 0 : -1;
}

/* n (<= 64) bytes of operand; NULL (with the error set) when the input ends. */
static const uint8_t *take(parser *ps, size_t n)
{
	if ((uint64_t)n > left(ps) || fill_window(ps, n) < 0) {
		fail(ps, "truncated: operand of %zu bytes, %llu left", n, (unsigned long long)left(ps));
		return NULL;
	}
	const uint8_t *r = ps->win + ps->at;
	ps->at += n;
	return r;
}

/* Copies n bytes to dst (NULL: skips them); checked against left() before. */
static int copy_out(parser *ps, char *dst, uint64_t n)
{
	while (n) {
		if (ps->at == ps->end && fill_window(ps, 1) < 0)
			return fail(ps, "truncated: %llu bytes missing", (unsigned long long)n);
		size_t k = ps->end - ps->at < n ? ps->end - ps->at : (size_t)n;
		if (dst) {
			memcpy(dst, ps->win + ps->at, k);
			dst += k;
		}
		ps->at += k;
		n -= k;
	}
	return 0;
}

static uint64_t le(const uint8_t *b, size_t n)
{
	uint64_t v = 0;
	for (size_t i = n; i-- > 0;)
		v = v << 8 | b[i];
	return v;
}

/* ------------------------------------------------------------ nodes */

static pk_val *node(const pk_doc *d, uint32_t id) { return &d->chunks[id / NODE_CHUNK][id % NODE_CHUNK]; }

static pk_val *new_node(parser *ps, pk_type t)
{
	pk_doc *d = ps->doc;
	uint32_t id = d->free_head;
	if (id) {
		d->free_head = (uint32_t)node(d, id)->u.i;
	} else {
		if (d->nnodes == UINT32_MAX)
			return NULL;
		if (d->nnodes / NODE_CHUNK == d->nchunks) {
			pk_val **nc = realloc(d->chunks, (d->nchunks + 1) * sizeof *nc);
			if (!nc)
				return NULL;
			d->chunks = nc;
			if (!(nc[d->nchunks] = malloc(NODE_CHUNK * sizeof **nc)))
				return NULL;
			for (uint32_t i = 0; i < NODE_CHUNK; i++)
				nc[d->nchunks][i].type = PK_FREE;
			d->nchunks++;
		}
		id = d->nnodes++;
	}
	pk_val *v = node(d, id);
	memset(v, 0, sizeof *v);
	v->type = (uint8_t)t;
	v->id = id;
	v->offset = (uint32_t)ps->op_at;
	if (++d->live > d->peak)
		d->peak = d->live;
	return v;
}

static pk_val *shared(const parser *ps, uint32_t id) { return node(ps->doc, id); }
static int dropped(const pk_val *v) { return v->id == ID_DROPPED; }

static void ref(pk_val *v)
{
	if (!(v->flags & F_IMMORTAL))
		v->refs++;
}

static void free_node(pk_doc *d, pk_val *v)
{
	if (v->type == PK_STR || v->type == PK_BYTES)
		free(v->u.s);
	else if (v->type >= PK_LIST && v->type <= PK_DICT)
		free(v->u.items);
	v->type = PK_FREE;
	v->u.i = d->free_head;
	d->free_head = v->id;
	d->live--;
}

/* Drops one reference; the last one releases the node and what it holds. */
static void release(parser *ps, pk_val *v)
{
	if ((v->flags & F_IMMORTAL) || --v->refs)
		return;
	ps->wn = 0;
	for (;;) {
		if (v->type >= PK_LIST && v->type <= PK_DICT && v->u.items) {
			for (uint32_t i = 0; i < v->n; i++) {
				pk_val *c = v->u.items[i];
				if ((c->flags & F_IMMORTAL) || --c->refs)
					continue;
				if (ps->wn == ps->wcap) { /* no room: leave it to pk_free */
					size_t nc = ps->wcap ? ps->wcap * 2 : 256;
					pk_val **nw = realloc(ps->work, nc * sizeof *nw);
					if (!nw) {
						c->refs = 1;
						continue;
					}
					ps->work = nw;
					ps->wcap = nc;
				}
				ps->work[ps->wn++] = c;
			}
		}
		free_node(ps->doc, v);
		if (!ps->wn)
			return;
		v = ps->work[--ps->wn];
	}
}

static int push(parser *ps, pk_val *v)
{
	if (!v)
		return fail(ps, "out of memory");
	if (ps->sn == ps->scap) {
		if (ps->scap >= PK_STACK_MAX)
			return fail(ps, "more than %u values on the stack (not a memory snapshot)", PK_STACK_MAX);
		size_t nc = ps->scap ? ps->scap * 2 : 64;
		pk_val **ns = realloc(ps->stack, nc * sizeof *ns);
		if (!ns)
			return fail(ps, "out of memory");
		ps->stack = ns;
		ps->scap = nc;
	}
	ref(v);
	ps->stack[ps->sn++] = v;
	return 0;
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

/* ------------------------------------------------------------ places */

typedef struct where {
	uint16_t place;
	uint8_t key;  /* a dict's key: a string */
	uint32_t pos;
	pk_val *after; /* it follows the mark of this list (SETITEMS' items) */
} where;

static const pk_place *place(const parser *ps, uint16_t p) { return &ps->shape->places[p]; }

static uint32_t count_of(const pk_val *c) { return c->flags & F_STREAM ? c->cap : c->n; }

/* 1 when a value of type t is kept at w. */
static int takes(const parser *ps, where w, int t)
{
	if (w.key)
		return t == PK_STR;
	if (!w.place)
		return 0;
	const pk_place *p = place(ps, w.place);
	if (t == PK_DICT)
		return p->keys != NULL;
	if (t == PK_LIST || t == PK_TUPLE)
		return p->items != 0;
	return p->atoms;
}

/* The place of the value of key k in a dict at place p (keys kept are the
 * shape's strings: a table lookup). */
static uint16_t value_place(const parser *ps, uint16_t p, const pk_val *k)
{
	if (!p || !ps->nknown || k->id < ps->known[0] || k->id - ps->known[0] >= ps->nknown)
		return 0;
	return ps->key_place[p * ps->nknown + (k->id - ps->known[0])];
}

/* Where the value made idx-th above a mark on container c goes (below: the
 * value before it, a dict's key).  A list item's position counts the items
 * the list holds and those above the mark: items dropped in an earlier
 * batch are not counted (positions are read for device_traces' lists, which
 * Python writes in one batch). */
static where child_of(const parser *ps, const pk_val *c, size_t idx, const pk_val *below)
{
	where w = {0, 0, 0, NULL};
	if (dropped(c) || c->place == 0)
		return w;
	if (c->type == PK_LIST) {
		w.place = place(ps, c->place)->items;
		w.pos = count_of(c) + (uint32_t)idx;
	} else if (c->type == PK_DICT) {
		if (idx % 2 == 0)
			w.key = 1;
		else
			w.place = value_place(ps, c->place, below);
	}
	return w;
}

/* Where a value of type t made at stack height h goes, the marks below it
 * being marks[0..k).  Two readings, the first that keeps the value wins:
 * it goes into the container just below it (a one-item dict or list
 * written with SETITEM / APPEND), or it follows the top mark (the items of
 * SETITEMS / APPENDS / TUPLE). */
static where place_at(const parser *ps, size_t h, size_t k, int t, int depth)
{
	where none = {0, 0, 0, NULL};
	if (depth > 8)
		return none;
	size_t m = k ? ps->marks[k - 1] : 0;
	if (h > m) {
		const pk_val *top = ps->stack[h - 1];
		where a = none;
		if (top->type == PK_LIST || top->type == PK_DICT)
			a = child_of(ps, top, 0, NULL);
		else if (h >= m + 2 && ps->stack[h - 2]->type == PK_DICT && !dropped(ps->stack[h - 2]))
			a = (where){value_place(ps, ps->stack[h - 2]->place, top), 0, 0, NULL};
		if (takes(ps, a, t))
			return a;
	}
	where b = none;
	if (!k) {
		if (h == 0)
			b.place = 1; /* the top level */
	} else if (m > 0 && (ps->stack[m - 1]->type == PK_LIST || ps->stack[m - 1]->type == PK_DICT)) {
		b = child_of(ps, ps->stack[m - 1], h - m, h > m ? ps->stack[h - 1] : NULL);
		if (ps->stack[m - 1]->type == PK_LIST)
			b.after = ps->stack[m - 1];
	} else if (m == 0 || !dropped(ps->stack[m - 1])) {
		/* a tuple's items: the tuple goes where the mark is */
		where tw = place_at(ps, m, k - 1, PK_TUPLE, depth + 1);
		if (takes(ps, tw, PK_TUPLE))
			b = (where){place(ps, tw.place)->items, 0, (uint32_t)(h - m), NULL};
	}
	return takes(ps, b, t) ? b : none;
}

static int hand_on(parser *ps, pk_val *list, pk_val *item);

/* The place of a value of type t about to be pushed; 0 when it is not kept
 * (a whole read keeps everything: place 0, kept).  The next item of a
 * `stream` list hands on the one before it, complete (as Python writes
 * them), so a list written in one batch is not held whole either. */
static int placed(parser *ps, int t, where *w)
{
	*w = (where){0, 0, 0, NULL};
	if (!ps->shape)
		return 1;
	*w = place_at(ps, ps->sn, ps->mn, t, 0);
	if (w->after && (w->after->flags & F_STREAM) && ps->sn > ps->marks[ps->mn - 1]) {
		if (hand_on(ps, w->after, ps->stack[ps->sn - 1]) < 0)
			return -1;
		release(ps, ps->stack[--ps->sn]);
	}
	return takes(ps, *w, t);
}

/* A new node of type t for place w (NULL when out of memory). */
static pk_val *new_placed(parser *ps, pk_type t, where w)
{
	pk_val *v = new_node(ps, t);
	if (v) {
		v->place = w.place;
		v->pos = w.pos;
		if (ps->shape && w.place && place(ps, w.place)->stream && t == PK_LIST)
			v->flags |= F_STREAM;
	}
	return v;
}

/* Pushes a new node of type t where it is kept, else "dropped". */
static int push_new(parser *ps, pk_type t, pk_val **out)
{
	where w;
	*out = NULL;
	int keep = placed(ps, t, &w);
	if (keep < 0)
		return -1;
	if (!keep)
		return push(ps, shared(ps, ID_DROPPED));
	pk_val *v = new_placed(ps, t, w);
	if (!v)
		return fail(ps, "out of memory");
	*out = v;
	return push(ps, v);
}

static int push_atom(parser *ps, pk_type t, int64_t i, double f)
{
	pk_val *v;
	if (push_new(ps, t, &v) < 0)
		return -1;
	if (v) {
		if (t == PK_FLOAT)
			v->u.f = f;
		else
			v->u.i = i;
	}
	return 0;
}

/* ------------------------------------------------------------ opcodes */

static int mark_top(parser *ps, size_t *at)
{
	if (!ps->mn)
		return fail(ps, "no MARK before this opcode");
	*at = ps->marks[--ps->mn];
	return 0;
}

/* One of the shape's strings equal to s[0..n), else 0. */
static uint32_t known_string(const parser *ps, const char *s, uint64_t n)
{
	for (size_t i = 0; i < ps->nknown; i++) {
		const pk_val *k = node(ps->doc, ps->known[i]);
		if (k->n == n && !memcmp(k->u.s, s, (size_t)n))
			return ps->known[i];
	}
	return 0;
}

static int string_op(parser *ps, size_t lenbytes, pk_type t)
{
	const uint8_t *b = take(ps, lenbytes);
	if (!b)
		return -1;
	uint64_t n = le(b, lenbytes);
	if (n > left(ps))
		return fail(ps, "string of %llu bytes claimed, %llu left in the input", (unsigned long long)n,
		            (unsigned long long)left(ps));
	if (n > UINT32_MAX)
		return fail(ps, "string too long");
	where w;
	int keep = placed(ps, t, &w);
	if (keep < 0)
		return -1;
	if (ps->shape && t == PK_STR && n <= 64) { /* the shape's strings: shared, kept anywhere */
		char tmp[65];
		if (copy_out(ps, tmp, n) < 0)
			return -1;
		uint32_t k = known_string(ps, tmp, n);
		if (k)
			return push(ps, shared(ps, k));
		if (!keep || w.key)
			return push(ps, shared(ps, ID_DROPPED));
		pk_val *v = new_placed(ps, t, w);
		if (!v || !(v->u.s = malloc((size_t)n + 1)))
			return fail(ps, "out of memory");
		memcpy(v->u.s, tmp, (size_t)n);
		v->u.s[n] = 0;
		v->n = (uint32_t)n;
		return push(ps, v);
	}
	if (!keep || w.key)
		return copy_out(ps, NULL, n) < 0 ? -1 : push(ps, shared(ps, ID_DROPPED));
	pk_val *v = new_placed(ps, t, w);
	if (!v || !(v->u.s = malloc((size_t)n + 1)))
		return fail(ps, "out of memory");
	v->n = (uint32_t)n;
	if (push(ps, v) < 0)
		return -1;
	if (copy_out(ps, v->u.s, n) < 0)
		return -1;
	v->u.s[n] = 0;
	return 0;
}

static int long_op(parser *ps, size_t lenbytes)
{
	const uint8_t *b = take(ps, lenbytes);
	if (!b)
		return -1;
	uint64_t n = le(b, lenbytes);
	if (n > left(ps))
		return fail(ps, "integer of %llu bytes claimed, %llu left in the input", (unsigned long long)n,
		            (unsigned long long)left(ps));
	/* the value is in its first 8 bytes and its sign; the rest is read in pieces */
	uint8_t d[8] = {0};
	int fits = 1, neg = 0;
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *c = take(ps, 1);
		if (!c)
			return -1;
		if (i < 8)
			d[i] = *c;
		else if (*c && i + 1 < n)
			fits = 0;
		if (i + 1 == n) {
			neg = (*c & 0x80) != 0;
			if (i >= 8 && *c)
				fits = 0;
		}
	}
	pk_val *v;
	if (push_new(ps, n > 8 ? PK_BIGINT : PK_INT, &v) < 0)
		return -1;
	if (!v)
		return 0; /* not kept */
	if (n == 0) {
		v->u.i = 0;
	} else if (n <= 8) {
		uint64_t u = le(d, (size_t)n);
		if (n < 8 && neg)
			u |= ~0ull << (8 * n); /* sign-extend */
		v->u.i = (int64_t)u;
	} else {
		/* positive values up to 2^64-1 (addresses) keep their value */
		fits = fits && !neg;
		v->n = (uint32_t)fits;
		v->u.i = fits ? (int64_t)le(d, 8) : 0;
	}
	return 0;
}

/* The id in memo slot idx (0: none stored there, or "dropped" with no page). */
static uint32_t memo_at(const parser *ps, size_t idx)
{
	const uint32_t *pg = idx < ps->memo_n ? ps->memo_pages[idx / MEMO_PAGE] : NULL;
	return pg ? pg[idx % MEMO_PAGE] : 0;
}

/* Empties memo slot idx (it then holds "dropped"); the page goes with its
 * last id.  Returns the id it held. */
static uint32_t memo_clear(parser *ps, size_t idx)
{
	uint32_t id = memo_at(ps, idx);
	if (id) {
		ps->memo_pages[idx / MEMO_PAGE][idx % MEMO_PAGE] = 0;
		if (!--ps->memo_live[idx / MEMO_PAGE]) { /* all zero again */
			free(ps->memo_spare);
			ps->memo_spare = ps->memo_pages[idx / MEMO_PAGE];
			ps->memo_pages[idx / MEMO_PAGE] = NULL;
		}
	}
	return id;
}

static int memo_set(parser *ps, uint64_t idx)
{
	if (!ps->sn || (ps->mn && ps->marks[ps->mn - 1] == ps->sn))
		return fail(ps, "memo put with an empty stack");
	/* indices are dense in every real pickle; a far one is hostile */
	if (idx > ps->memo_count + 1024 || idx >= ps->len)
		return fail(ps, "memo index %llu out of range", (unsigned long long)idx);
	if (idx >= ps->memo_n) {
		size_t nc = ps->memo_n ? ps->memo_n : MEMO_PAGE;
		while (nc <= idx)
			nc *= 2;
		uint8_t *nb = realloc(ps->memo_bits, nc / 8);
		if (!nb)
			return fail(ps, "out of memory");
		ps->memo_bits = nb;
		memset(nb + ps->memo_n / 8, 0, (nc - ps->memo_n) / 8);
		uint32_t **np = realloc(ps->memo_pages, nc / MEMO_PAGE * sizeof *np);
		if (!np)
			return fail(ps, "out of memory");
		ps->memo_pages = np;
		memset(np + ps->memo_n / MEMO_PAGE, 0, (nc - ps->memo_n) / MEMO_PAGE * sizeof *np);
		uint16_t *nl = realloc(ps->memo_live, nc / MEMO_PAGE * sizeof *nl);
		if (!nl)
			return fail(ps, "out of memory");
		ps->memo_live = nl;
		memset(nl + ps->memo_n / MEMO_PAGE, 0, (nc - ps->memo_n) / MEMO_PAGE * sizeof *nl);
		ps->memo_n = nc;
	}
	pk_val *v = ps->stack[ps->sn - 1];
	uint32_t old = memo_clear(ps, (size_t)idx);
	ps->memo_bits[idx / 8] |= (uint8_t)(1u << (idx % 8));
	if (!dropped(v)) {
		uint32_t **pg = &ps->memo_pages[idx / MEMO_PAGE];
		if (!*pg) {
			*pg = ps->memo_spare ? ps->memo_spare : calloc(MEMO_PAGE, sizeof **pg);
			ps->memo_spare = NULL;
			if (!*pg)
				return fail(ps, "out of memory");
		}
		ref(v);
		(*pg)[idx % MEMO_PAGE] = v->id;
		ps->memo_live[idx / MEMO_PAGE]++;
		if (!v->memo && !(v->flags & F_IMMORTAL))
			v->memo = (uint32_t)idx + 1;
	}
	if (old)
		release(ps, node(ps->doc, old));
	if (idx >= ps->memo_count)
		ps->memo_count = idx + 1;
	return 0;
}

static int memo_get(parser *ps, uint64_t idx)
{
	if (idx >= ps->memo_n || !(ps->memo_bits[idx / 8] & (1u << (idx % 8))))
		return fail(ps, "memo index %llu was never stored", (unsigned long long)idx);
	uint32_t id = memo_at(ps, (size_t)idx);
	return push(ps, node(ps->doc, id ? id : ID_DROPPED));
}

static int pop_one(parser *ps)
{
	if (!ps->sn || (ps->mn && ps->marks[ps->mn - 1] == ps->sn))
		return fail(ps, "stack underflow");
	release(ps, ps->stack[--ps->sn]);
	return 0;
}

/* Takes the values above height `from` off the stack (the container below
 * owns them now, or nobody). */
static void drop_from(parser *ps, size_t from)
{
	while (ps->sn > from)
		release(ps, ps->stack[--ps->sn]);
}

static int tuple_of(parser *ps, size_t from)
{
	/* the tuple's place is where its items began */
	where w = ps->shape ? place_at(ps, from, ps->mn, PK_TUPLE, 0) : (where){0, 0, 0, NULL};
	if (ps->shape && !takes(ps, w, PK_TUPLE)) {
		drop_from(ps, from);
		return push(ps, shared(ps, ID_DROPPED));
	}
	pk_val *t = new_placed(ps, PK_TUPLE, w);
	if (!t)
		return fail(ps, "out of memory");
	for (size_t i = from; i < ps->sn; i++)
		if (add_item(ps, t, ps->stack[i]) < 0) {
			free_node(ps->doc, t);
			return -1;
		}
	ps->sn = from; /* the stack's references are the tuple's now */
	return push(ps, t);
}

/* A handed-on item leaves the memo with the containers in it that are not
 * in a shared place: nothing may refer to them again. */
static void unmemo(parser *ps, pk_val *v, int depth)
{
	if (depth > 16 || (v->flags & F_IMMORTAL) || (v->place && place(ps, v->place)->shared))
		return;
	if (v->type >= PK_LIST && v->type <= PK_DICT)
		for (uint32_t i = 0; i < v->n; i++)
			unmemo(ps, v->u.items[i], depth + 1);
	if (v->memo) {
		uint32_t idx = v->memo - 1;
		v->memo = 0;
		if (memo_at(ps, idx) == v->id) {
			memo_clear(ps, idx);
			release(ps, v);
		}
	}
}

/* Refuses cycles and depth over PK_MAX_DEPTH among nodes reachable from
 * root, and `within` (a list handing root on) among them.  Nodes found
 * sound are marked so, and not walked again. */
static int check_graph(parser *ps, pk_val *root, const pk_val *within)
{
	struct fr { pk_val *v; uint32_t next; } st[PK_MAX_DEPTH + 1];
	int sp = 0;
	if (root == within) {
		ps->op_at = root->offset;
		return fail(ps, "a container that contains itself (memo reference loop)");
	}
	if (root->type < PK_LIST || root->type > PK_DICT || (root->flags & F_STATE2))
		return 0;
	st[sp++] = (struct fr){root, 0};
	root->flags |= F_STATE1;
	while (sp) {
		struct fr *f = &st[sp - 1];
		if (f->next == f->v->n) {
			f->v->flags = (uint8_t)((f->v->flags & ~F_STATE1) | F_STATE2);
			sp--;
			continue;
		}
		pk_val *c = f->v->u.items[f->next++];
		if (c->type < PK_LIST || c->type > PK_DICT || (c->flags & F_STATE2))
			continue;
		if ((c->flags & F_STATE1) || c == within) {
			ps->op_at = c->offset;
			return fail(ps, "a container that contains itself (memo reference loop)");
		}
		if (sp == PK_MAX_DEPTH + 1) {
			ps->op_at = c->offset;
			return fail(ps, "nested deeper than %d", PK_MAX_DEPTH);
		}
		c->flags |= F_STATE1;
		st[sp++] = (struct fr){c, 0};
	}
	return 0;
}

/* Hands item, complete, to the sink of list (a `stream` one); the caller
 * then drops the item's stack slot, which releases it. */
static int hand_on(parser *ps, pk_val *list, pk_val *item)
{
	list->cap++;
	if (dropped(item))
		return 0;
	if (check_graph(ps, item, list) < 0)
		return -1;
	if (ps->shape->sink(ps->shape->ctx, list, item, ps->err, ps->errlen) < 0) {
		ps->sink_failed = 1;
		return -1;
	}
	unmemo(ps, item, 0);
	return 0;
}

static int fill(parser *ps, size_t from, int dict)
{
	if (from == 0)
		return fail(ps, "no container below the MARK");
	pk_val *c = ps->stack[from - 1];
	size_t n = ps->sn - from;
	if (dropped(c)) {
		drop_from(ps, from);
		return 0;
	}
	if (dict ? c->type != PK_DICT : c->type != PK_LIST)
		return fail(ps, "%s on a value that is not a %s", dict ? "SETITEM(S)" : "APPEND(S)", dict ? "dict" : "list");
	if (dict && (n & 1))
		return fail(ps, "SETITEMS with an odd number of values");
	if (c->flags & F_STREAM) {
		for (size_t i = from; i < ps->sn; i++)
			if (hand_on(ps, c, ps->stack[i]) < 0)
				return -1;
		drop_from(ps, from);
		return 0;
	}
	size_t i = from;
	for (; i < ps->sn; i += dict ? 2 : 1) {
		/* a shaped dict keeps its known keys' values only */
		if (ps->shape && dict && (dropped(ps->stack[i]) || dropped(ps->stack[i + 1]) ||
		                          !value_place(ps, c->place, ps->stack[i]))) {
			release(ps, ps->stack[i]);
			release(ps, ps->stack[i + 1]);
			continue;
		}
		if (ps->shape && !dict && dropped(ps->stack[i]))
			continue; /* not kept (nor counted: see child_of) */
		if (add_item(ps, c, ps->stack[i]) < 0 || (dict && add_item(ps, c, ps->stack[i + 1]) < 0))
			break;
	}
	if (i < ps->sn) { /* out of memory: the rest are released */
		for (size_t j = i; j < ps->sn; j++)
			release(ps, ps->stack[j]);
		ps->sn = from;
		return -1;
	}
	ps->sn = from; /* the stack's references are the container's now */
	return 0;
}

static int step(parser *ps, int *stop)
{
	ps->op_at = (size_t)pos_of(ps);
	const uint8_t *b = left(ps) ? take(ps, 1) : NULL;
	if (!b)
		return fail(ps, "no STOP opcode at the end of the pickle");
	uint8_t op = *b;
	size_t at = 0;
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
		if (le(b, 8) > left(ps))
			return fail(ps, "FRAME of %llu bytes claimed, %llu left", (unsigned long long)le(b, 8),
			            (unsigned long long)left(ps));
		return 0;
	case '.': /* STOP */
		if (ps->sn != 1 || ps->mn)
			return fail(ps, "STOP with %zu values and %zu marks on the stack (want 1 and 0)", ps->sn, ps->mn);
		*stop = 1;
		return 0;
	case '}': { pk_val *v; return push_new(ps, PK_DICT, &v); }
	case ']': { pk_val *v; return push_new(ps, PK_LIST, &v); }
	case ')': return tuple_of(ps, ps->sn);
	case 'N': case 0x88: case 0x89: { /* NONE, NEWTRUE, NEWFALSE: shared */
		where w;
		int keep = placed(ps, op == 'N' ? PK_NONE : PK_BOOL, &w);
		if (keep < 0)
			return -1;
		return push(ps, shared(ps, !keep ? ID_DROPPED : op == 'N' ? ID_NONE : op == 0x88 ? ID_TRUE : ID_FALSE));
	}
	case '(': /* MARK */
		if (ps->mn == ps->mcap) {
			if (ps->mcap >= PK_STACK_MAX)
				return fail(ps, "more than %u marks (not a memory snapshot)", PK_STACK_MAX);
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
		return pop_one(ps);
	case '1': /* POP_MARK */
		if (mark_top(ps, &at) < 0)
			return -1;
		drop_from(ps, at);
		return 0;
	case 'K': case 'M': case 'J': { /* BININT1, BININT2, BININT */
		size_t n = op == 'K' ? 1 : op == 'M' ? 2 : 4;
		if (!(b = take(ps, n)))
			return -1;
		return push_atom(ps, PK_INT, op == 'J' ? (int64_t)(int32_t)(uint32_t)le(b, 4) : (int64_t)le(b, n), 0);
	}
	case 0x8a: return long_op(ps, 1); /* LONG1 */
	case 0x8b: return long_op(ps, 4); /* LONG4 */
	case 'G': { /* BINFLOAT, big-endian */
		if (!(b = take(ps, 8)))
			return -1;
		uint64_t u = 0;
		for (int i = 0; i < 8; i++)
			u = u << 8 | b[i];
		double f;
		memcpy(&f, &u, sizeof u);
		return push_atom(ps, PK_FLOAT, 0, f);
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

/* The immortal nodes: None, True, False, "dropped", the shape's strings. */
static int make_shared(parser *ps)
{
	static const uint8_t types[] = {0, PK_NONE, PK_BOOL, PK_BOOL, PK_NONE};
	pk_val *z = new_node(ps, PK_NONE); /* id 0: "none" */
	if (!z)
		return -1;
	for (uint32_t id = ID_NONE; id < ID_FIRST_FREE; id++) {
		pk_val *v = new_node(ps, (pk_type)types[id]);
		if (!v)
			return -1;
		v->flags = F_IMMORTAL;
		v->u.i = id == ID_TRUE;
	}
	size_t n = 0;
	while (ps->shape && ps->shape->strings && ps->shape->strings[n])
		n++;
	if (n && !(ps->known = malloc(n * sizeof *ps->known)))
		return -1;
	for (size_t i = 0; i < n; i++) {
		pk_val *v = new_node(ps, PK_STR);
		if (!v || !(v->u.s = strdup(ps->shape->strings[i])))
			return -1;
		v->n = (uint32_t)strlen(v->u.s);
		v->flags = F_IMMORTAL;
		ps->known[ps->nknown++] = v->id;
	}
	if (n && !(ps->key_place = calloc(ps->shape->nplaces * n, sizeof *ps->key_place)))
		return -1;
	for (size_t p = 0; n && p < ps->shape->nplaces; p++)
		for (const pk_key *e = ps->shape->places[p].keys; e && e->name; e++)
			for (size_t i = 0; i < n; i++)
				if (!strcmp(e->name, ps->shape->strings[i]))
					ps->key_place[p * n + i] = e->place;
	return 0;
}

pk_doc *pk_read(const char *path, const uint8_t *data, size_t len, const char *name, const pk_shape *shape,
                char *err, size_t errlen)
{
	parser ps = {.name = name ? name : path ? path : "pickle", .err = err, .errlen = errlen, .shape = shape};
	*err = 0;
	if (path && !data) {
		struct stat sb;
		if (!(ps.f = fopen(path, "rb"))) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return NULL;
		}
		if (fstat(fileno(ps.f), &sb) || !S_ISREG(sb.st_mode)) {
			fclose(ps.f);
			snprintf(err, errlen, "%s: not a regular file", path);
			return NULL;
		}
		ps.len = (uint64_t)sb.st_size;
		if (!(ps.own = malloc(WINDOW))) {
			fclose(ps.f);
			snprintf(err, errlen, "%s: out of memory", path);
			return NULL;
		}
		ps.win = ps.own;
	} else {
		ps.win = data;
		ps.len = ps.end = len;
	}
	ps.doc = calloc(1, sizeof *ps.doc);
	int stop = 0, rc = 0;
	if (!ps.doc || make_shared(&ps) < 0) {
		snprintf(err, errlen, "%s: out of memory", ps.name);
		rc = -1;
	} else if (ps.len > INPUT_MAX) {
		rc = fail(&ps, "larger than 4 GiB");
	} else if (fill_window(&ps, 1) < 0 || ps.win[ps.at] != 0x80) {
		rc = fail(&ps, "not a pickle (protocol 2 or later starts with byte 0x80)");
	}
	while (!rc && !stop)
		rc = step(&ps, &stop);
	if (!rc && ps.f && ferror(ps.f))
		rc = fail(&ps, "read error");
	if (!rc) {
		ps.doc->root = ps.stack[0]; /* the stack's reference is the root's */
		ps.sn = 0;
		rc = check_graph(&ps, ps.doc->root, NULL);
	}
	free(ps.stack);
	free(ps.marks);
	for (size_t i = 0; i < ps.memo_n / MEMO_PAGE; i++)
		free(ps.memo_pages[i]);
	free(ps.memo_pages);
	free(ps.memo_live);
	free(ps.memo_spare);
	free(ps.memo_bits);
	free(ps.known);
	free(ps.key_place);
	free(ps.work);
	free(ps.own);
	if (ps.f)
		fclose(ps.f);
	if (rc) {
		pk_free(ps.doc);
		return NULL;
	}
	return ps.doc;
}

pk_doc *pk_parse(const uint8_t *data, size_t len, const char *name, char *err, size_t errlen)
{
	return pk_read(NULL, data, len, name ? name : "pickle", NULL, err, errlen);
}

pk_doc *pk_parse_file(const char *path, char *err, size_t errlen)
{
	return pk_read(path, NULL, 0, path, NULL, err, errlen);
}

const pk_val *pk_root(const pk_doc *d) { return d->root; }
int pk_protocol(const pk_doc *d) { return d->proto; }

void pk_node_counts(const pk_doc *d, uint64_t *now, uint64_t *peak)
{
	*now = d->live;
	*peak = d->peak;
}

void pk_free(pk_doc *d)
{
	if (!d)
		return;
	for (uint32_t c = 0; c < d->nchunks; c++) {
		for (uint32_t i = 0; i < NODE_CHUNK; i++) {
			pk_val *v = &d->chunks[c][i];
			if (v->type == PK_STR || v->type == PK_BYTES)
				free(v->u.s);
			else if (v->type >= PK_LIST && v->type <= PK_DICT)
				free(v->u.items);
		}
		free(d->chunks[c]);
	}
	free(d->chunks);
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
