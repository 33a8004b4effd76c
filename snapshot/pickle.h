/*
 * pickle.h - a data-only pickle reader and writer (snapshot/ internal).
 *
 * The reader runs the pickle machine over a stream (a file is read through
 * a 64 KiB window, never whole).  It knows only the opcodes that carry plain
 * data (dict, list, tuple, str, bytes, int, float, bool, None) in protocols
 * 2 to 5 and the memo; GLOBAL, REDUCE, BUILD and every other opcode that
 * could name or call code are refused with a one-line error naming the byte
 * offset.  Nothing is ever executed.
 *
 * Two ways to read:
 *   - whole (pk_parse, pk_parse_file): every value becomes a pk_val node;
 *     the graph is acyclic and at most PK_MAX_DEPTH deep (a memo reference
 *     loop is refused), so a recursive walk terminates; memory is O(input);
 *   - shaped (pk_read with a pk_shape): only what the shape names is built.
 *     Each value gets its place from where it is made (the container below
 *     it on the stack, the key before it); a value in no place of the shape
 *     is not built at all (a container, and everything in it) or released
 *     at once, a list marked `stream` hands each item to the sink when it is
 *     added and keeps nothing, and the containers inside a handed-on item
 *     leave the memo with it (unless their place is `shared`: frames, which
 *     PyTorch's snapshots refer to again).  Memory is then what the shape
 *     keeps plus what the memo may still refer to (shared places, 4 bytes a
 *     memo slot), not the input: 50 MB of empty lists cost nothing.
 * Either way: the value stack and the marks hold at most PK_STACK_MAX
 * entries; a node fetched from the memo is the same node (shared, not
 * copied: callers that convert shared nodes cache by pk_val.offset, which
 * is unique to the opcode that made the node); counts claimed by the input
 * (string lengths, frame sizes, memo indices) are checked against what is
 * left of the input before anything is allocated.
 */
#ifndef STP_SNAPSHOT_PICKLE_H
#define STP_SNAPSHOT_PICKLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PK_MAX_DEPTH 256
#define PK_STACK_MAX (1u << 20)

typedef enum pk_type {
	PK_NONE = 0,
	PK_BOOL,
	PK_INT,   /* fits int64; larger LONG1/LONG4 values are PK_BIGINT */
	PK_BIGINT,
	PK_FLOAT,
	PK_STR,   /* UTF-8 as in the pickle, NUL-terminated (may hold NULs) */
	PK_BYTES,
	PK_LIST,
	PK_TUPLE,
	PK_DICT   /* items: key0, value0, key1, value1, ... */
} pk_type;

typedef struct pk_val pk_val;
struct pk_val {
	uint8_t type;      /* pk_type */
	uint8_t flags;     /* reader-internal */
	uint16_t place;    /* shaped: its place in the shape (0: none) */
	uint32_t id;       /* reader-internal: its handle */
	uint32_t refs;     /* reader-internal */
	uint32_t n;        /* items (list/tuple), 2 x pairs (dict), bytes (str/bytes) */
	uint32_t cap;      /* reader-internal (a streamed list: the items handed on) */
	uint32_t pos;      /* shaped: its index in the list it was made for */
	uint32_t memo;     /* reader-internal: first memo slot + 1, 0: none */
	uint32_t offset;   /* byte offset of the opcode that made it */
	union {
		int64_t i;     /* PK_BOOL, PK_INT */
		double f;      /* PK_FLOAT */
		char *s;       /* PK_STR, PK_BYTES */
		pk_val **items;
	} u;
};

typedef struct pk_doc pk_doc;

/* ------------------------------------------------------------- shapes */

/* A key of a dict place and the place of its value. */
typedef struct pk_key {
	const char *name;
	uint16_t place;
} pk_key;

/* A place: what is kept there. */
typedef struct pk_place {
	const pk_key *keys;  /* a dict here, with these keys (each one of the shape's
	                      * strings; others are dropped with their values; ended
	                      * by a NULL name); NULL: no dict */
	uint16_t items;      /* a list or tuple here, of items in this place; 0: none */
	uint8_t atoms;       /* a scalar here (str, bytes, int, float, bool, None) */
	uint8_t stream;      /* a list here hands each item to the sink as it comes */
	uint8_t shared;      /* values here may be referenced again from the memo:
	                      * they stay in it when what holds them is handed on */
} pk_place;

typedef struct pk_shape {
	const pk_place *places;      /* [0]: nowhere (all zero), [1]: the top level */
	size_t nplaces;
	const char *const *strings;  /* strings the consumer compares (keys, names of
	                              * actions and states): kept wherever they are,
	                              * as one shared node each; NULL-ended */
	/* called with a `stream` list and each item added to it, complete (when
	 * the next one starts, or at APPENDS); the item is released after.
	 * Returns 0, or -1 with err written. */
	int (*sink)(void *ctx, const pk_val *list, const pk_val *item, char *err, size_t errlen);
	void *ctx;
} pk_shape;

/* Parses a whole pickle held in memory.  On failure returns NULL and writes
 * "NAME: offset N: what" into err (name: what to call the input). */
pk_doc *pk_parse(const uint8_t *data, size_t len, const char *name, char *err, size_t errlen);
/* The same for a file (at most 4 GiB). */
pk_doc *pk_parse_file(const char *path, char *err, size_t errlen);
/* Reads the file at path (data NULL), or data[0..len) (named name), whole
 * (shape NULL) or shaped. */
pk_doc *pk_read(const char *path, const uint8_t *data, size_t len, const char *name, const pk_shape *shape,
                char *err, size_t errlen);
const pk_val *pk_root(const pk_doc *d);
/* The highest protocol the pickle announced (0 when it had no PROTO). */
int pk_protocol(const pk_doc *d);
/* Nodes alive now, and the most alive at once (for tests of the bound). */
void pk_node_counts(const pk_doc *d, uint64_t *now, uint64_t *peak);
void pk_free(pk_doc *d);

/* Lookups; NULL / the default when absent or of another type. */
const pk_val *pk_get(const pk_val *dict, const char *key);
int64_t pk_int(const pk_val *v, int64_t dflt);     /* PK_INT, PK_BOOL, PK_FLOAT */
uint64_t pk_uint(const pk_val *v, uint64_t dflt);  /* non-negative PK_INT */
const char *pk_str(const pk_val *v, const char *dflt);
int pk_is_seq(const pk_val *v); /* list or tuple */

/* ------------------------------------------------------------- writer */

/* Writes a protocol 2 pickle (what PyTorch's C++ writer emits and every
 * Python 3 reads).  Containers are written as they are opened and closed;
 * pkw_memo_put/get share a value written once (frames, frame lists). */
typedef struct pk_writer pk_writer;
pk_writer *pkw_open(FILE *f);
/* The stream written to (tests write raw opcodes between values). */
FILE *pkw_stream(pk_writer *w);
void pkw_dict_begin(pk_writer *w);
void pkw_dict_end(pk_writer *w);   /* after key, value, key, value ... */
void pkw_list_begin(pk_writer *w);
void pkw_list_end(pk_writer *w);
void pkw_tuple_begin(pk_writer *w);
void pkw_tuple_end(pk_writer *w);
void pkw_str(pk_writer *w, const char *s);
/* A string written once and memoized: for keys and other constants (by
 * pointer: pass string literals).  What Python's pickler does for the
 * shared key objects of PyTorch's snapshots. */
void pkw_const(pk_writer *w, const char *s);
void pkw_int(pk_writer *w, int64_t v);
void pkw_uint(pk_writer *w, uint64_t v);
void pkw_float(pk_writer *w, double v);
void pkw_bool(pk_writer *w, int v);
void pkw_none(pk_writer *w);
/* Memoizes the value just written; returns its memo index. */
uint32_t pkw_memo_put(pk_writer *w);
/* Pushes the memoized value idx again. */
void pkw_memo_get(pk_writer *w, uint32_t idx);
/* Writes STOP and flushes; returns 0, or -1 when a write failed. */
int pkw_close(pk_writer *w);
#endif
