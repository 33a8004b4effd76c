/*
 * pprof.h - a reader of pprof profiles (snapshot/ internal): the gzip'd
 * protocol buffer perftools.profiles.Profile (github.com/google/pprof,
 * proto/profile.proto) that jax.profiler.save_device_memory_profile writes.
 *
 * pp_parse takes the bytes, gunzips them when they start with the gzip
 * magic (1f 8b), and decodes the protobuf wire format into flat tables:
 * every repeated message becomes an array, every reference an index or id
 * as the file has it.  Nothing is resolved or trusted: ids may be missing,
 * string indices out of range; the importer (pprof_import.c) checks each
 * one where it uses it and names the offset of the message that holds it.
 *
 * Invariants of a parsed profile (pp_parse returned 0):
 *   - every span (strings) points into p->data, which p owns;
 *   - the tables hold at most one entry per input byte that made them, so
 *     memory is O(decompressed size); the decompressed size is at most
 *     max_bytes (the caller's bound), else the parse fails;
 *   - offsets are byte offsets into the decompressed stream (the file
 *     itself when it was not compressed).
 * Errors: one line "NAME: offset N: what" (" (uncompressed)" after N when
 * the file was gzip'd), or "NAME: what" for a gzip stream zlib refuses.
 */
#ifndef STP_SNAPSHOT_PPROF_H
#define STP_SNAPSHOT_PPROF_H

#include <stddef.h>
#include <stdint.h>

typedef struct pp_span {
	const char *p;
	uint32_t n;
} pp_span;

typedef struct pp_valtype {
	int64_t type, unit; /* string indices */
} pp_valtype;

typedef struct pp_label {
	int64_t key, str, num, num_unit; /* key, str, num_unit: string indices */
} pp_label;

typedef struct pp_sample {
	uint64_t offset;            /* of the Sample message */
	uint32_t loc0, nloc;        /* into pp_profile.loc_ids */
	uint32_t val0, nval;        /* into pp_profile.values */
	uint32_t lab0, nlab;        /* into pp_profile.labels */
} pp_sample;

typedef struct pp_line {
	uint64_t function_id;
	int64_t line;
} pp_line;

typedef struct pp_location {
	uint64_t offset;
	uint64_t id, mapping_id, address;
	uint32_t line0, nline;      /* into pp_profile.lines */
} pp_location;

typedef struct pp_function {
	uint64_t offset;
	uint64_t id;
	int64_t name, system_name, filename, start_line; /* string indices but start_line */
} pp_function;

typedef struct pp_mapping {
	uint64_t offset;
	uint64_t id, memory_start, memory_limit, file_offset;
	int64_t filename, build_id; /* string indices */
} pp_mapping;

typedef struct pp_profile {
	uint8_t *data;              /* the decompressed bytes (owned) */
	size_t len;
	int gzipped;
	pp_span *strings; size_t nstrings;
	pp_valtype *sample_types; size_t nsample_types;
	pp_sample *samples; size_t nsamples;
	uint64_t *loc_ids; size_t nloc_ids;
	uint64_t *values; size_t nvalues; /* int64 values, as stored */
	pp_label *labels; size_t nlabels;
	pp_location *locations; size_t nlocations;
	pp_line *lines; size_t nlines;
	pp_function *functions; size_t nfunctions;
	pp_mapping *mappings; size_t nmappings;
	int64_t time_nanos, duration_nanos, period, default_sample_type;
	pp_valtype period_type;
} pp_profile;

/* 1 when the bytes start like a gzip stream. */
static inline int pp_is_gzip(const uint8_t *p, size_t n)
{
	return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

/* Parses buf (gzip'd or not; copied).  0, or -1 with err. */
int pp_parse(const uint8_t *buf, size_t len, const char *name, size_t max_bytes, pp_profile *p, char *err,
             size_t errlen);
/* The same on a file. */
int pp_parse_file(const char *path, size_t max_bytes, pp_profile *p, char *err, size_t errlen);
void pp_free(pp_profile *p);
/* String by index: "" for index 0, NULL when out of range. */
const pp_span *pp_string(const pp_profile *p, int64_t idx);
/* 1 when the span equals the C string s. */
int pp_span_is(const pp_span *s, const char *c);
#endif
