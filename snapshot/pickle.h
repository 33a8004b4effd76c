/*
 * pickle.h - a data-only pickle reader and writer (snapshot/ internal).
 *
 * The reader turns a pickle into a graph of pk_val nodes.  It knows only the
 * opcodes that carry plain data (dict, list, tuple, str, bytes, int, float,
 * bool, None) in protocols 2 to 5 and the memo; GLOBAL, REDUCE, BUILD and
 * every other opcode that could name or call code are refused with a
 * one-line error naming the byte offset.  Nothing is ever executed.
 *
 * Invariants of a parsed graph (pk_parse returned non-NULL):
 *   - it is acyclic and at most PK_MAX_DEPTH deep (a memo reference loop is
 *     refused), so a recursive walk terminates;
 *   - a node fetched from the memo is the same node (shared, not copied):
 *     callers that convert shared nodes should cache by node pointer;
 *   - memory is O(input size): every node, edge and string byte comes from
 *     at least one input byte, and counts claimed by the input (string
 *     lengths, frame sizes, memo indices) are checked against what is left
 *     of the input before anything is allocated.
 * All nodes live in one arena freed by pk_free.
 */
#ifndef STP_SNAPSHOT_PICKLE_H
#define STP_SNAPSHOT_PICKLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PK_MAX_DEPTH 256

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
	uint8_t state;     /* reader-internal (cycle check) */
	uint32_t n;        /* items (list/tuple), 2 x pairs (dict), bytes (str/bytes) */
	uint32_t cap;
	uint64_t offset;   /* byte offset of the opcode that made it */
	union {
		int64_t i;     /* PK_BOOL, PK_INT */
		double f;      /* PK_FLOAT */
		char *s;       /* PK_STR, PK_BYTES */
		pk_val **items;
	} u;
};

typedef struct pk_doc pk_doc;

/* Parses a whole pickle held in memory.  On failure returns NULL and writes
 * "NAME: offset N: what" into err (name: what to call the input). */
pk_doc *pk_parse(const uint8_t *data, size_t len, const char *name, char *err, size_t errlen);
/* The same for a file (read whole, at most 4 GiB). */
pk_doc *pk_parse_file(const char *path, char *err, size_t errlen);
const pk_val *pk_root(const pk_doc *d);
/* The highest protocol the pickle announced (0 when it had no PROTO). */
int pk_protocol(const pk_doc *d);
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
