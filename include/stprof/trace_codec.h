/*
 * stprof/trace_codec.h - the byte-level encoder and record decoder of the
 * .stp format, for writers that manage their own buffers (the collector's
 * per-thread buffers and its folding of steady iterations, stp_writer).
 * Readers of files use stprof/trace.h.  docs/trace-format.md is the spec.
 *
 * A file is a 24-byte header followed by chunks.  A chunk is a 20-byte header
 * (magic, type, tid, payload length, CRC-32C) and a payload of records.  Delta
 * state (stp_enc_state) starts afresh in every chunk, so each chunk decodes on
 * its own; only string and stack ids refer to definitions in earlier chunks.
 *
 * Every encode function writes into out[0..cap) and returns the bytes
 * written, or 0 when they do not fit, in which case neither out nor the state
 * changed: the caller flushes the chunk and encodes again into a fresh one.
 * Nothing here allocates, locks or calls into libc beyond memcpy, so the
 * collector may call it from any context, signal handlers included.
 */
#ifndef STPROF_TRACE_CODEC_H
#define STPROF_TRACE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STP_FILE_MAGIC "\x89STP\r\n\x1a\n"
#define STP_FILE_HEADER_SIZE 24u
#define STP_CHUNK_MAGIC 0x43505453u /* "STPC" little-endian */
#define STP_CHUNK_HEADER_SIZE 20u
#define STP_CHUNK_MAX_PAYLOAD (64u << 20) /* readers refuse larger chunks */

enum stp_chunk_type {
	STP_CHUNK_DEFS = 1,      /* definitions, and events that came with them */
	STP_CHUNK_EVENTS = 2,    /* one thread's events, in seq order */
	STP_CHUNK_WATERMARK = 3, /* every seq below the mark has been written */
	STP_CHUNK_END = 4        /* the process image ended; last chunk */
};

/* Record tags below 16 are stp_event_type; these are definitions. */
enum stp_def_tag {
	STP_DEF_STRING = 16,
	STP_DEF_NODE = 17,  /* a call-path node: (id, parent, frame) */
	STP_DEF_STACK = 18  /* a stack id used by events -> its innermost node (1.1) */
};

typedef struct stp_enc_state {
	uint32_t tid;       /* the chunk's thread; an event of another tid says so */
	uint64_t prev_seq;  /* UINT64_MAX at chunk start */
	uint64_t prev_time;
	uint64_t prev_addr;
	uint64_t prev_ip;
	uint32_t prev_stack;
} stp_enc_state;

void stp_enc_reset(stp_enc_state *s, uint32_t tid);

/* An event record; api ranges are included. */
size_t stp_enc_event(uint8_t *out, size_t cap, stp_enc_state *s, const stp_event *ev);
/* Upper bound of stp_enc_event's output for ev. */
size_t stp_enc_event_bound(const stp_event *ev);
/* Definitions (DEFS chunks only).  String and node ids are dense: 1, 2, 3,
 * ... in file order.  Stack ids (what events carry) may be defined in any
 * order, each once, before the first chunk that uses them. */
size_t stp_enc_string(uint8_t *out, size_t cap, uint32_t id, const char *s, size_t len);
size_t stp_enc_node(uint8_t *out, size_t cap, stp_enc_state *s, uint32_t id, uint32_t parent, uint64_t ip);
size_t stp_enc_stack(uint8_t *out, size_t cap, uint32_t stack, uint32_t node);

/* The file header: magic, version, header size, flags. */
void stp_file_header(uint8_t out[STP_FILE_HEADER_SIZE]);
/* Fills a chunk header in front of a payload already in place. */
void stp_chunk_header(uint8_t out[STP_CHUNK_HEADER_SIZE], unsigned type, uint32_t tid,
                      const uint8_t *payload, uint32_t len);
/* Whole chunks with tiny payloads; out must hold 64 bytes. */
size_t stp_chunk_watermark(uint8_t *out, uint64_t next_seq);
size_t stp_chunk_end(uint8_t *out, uint32_t reason, int32_t value, uint64_t next_seq);

/* The record decoder: walks one chunk payload; it never reads outside
 * [p, end) and never trusts a count beyond what the remaining bytes could
 * hold.  API ranges and FOLD spaces and sites it decodes live in buffers it
 * owns (malloc'd: stp_dec_free), valid until its next record. */
typedef struct stp_dec {
	const uint8_t *start, *p, *end;
	stp_enc_state st;
	stp_range *ranges; /* decoded API ranges (owned) */
	uint32_t ranges_cap;
	stp_fold_space *fold_spaces;
	stp_fold_site *fold_sites;
	uint32_t fold_spaces_cap, fold_sites_cap;
} stp_dec;

enum stp_dec_kind { STP_DEC_END = 0, STP_DEC_EVENT = 1, STP_DEC_STRING = 2, STP_DEC_NODE = 3, STP_DEC_STACK = 4 };

typedef struct stp_def {
	uint32_t id;
	uint32_t parent;      /* NODE; STACK: the node */
	uint64_t ip;          /* NODE */
	const char *str;      /* STRING: not NUL-terminated */
	size_t len;
} stp_def;

void stp_dec_init(stp_dec *d, const uint8_t *p, size_t n, uint32_t tid);
void stp_dec_free(stp_dec *d);
/* Decodes the next record: an STP_DEC_* kind, or -1 on malformed input
 * (d->p then points at the bad record). */
int stp_dec_next(stp_dec *d, stp_event *ev, stp_def *def);

uint32_t stp_crc32c(uint32_t crc, const void *data, size_t n);
/* The portable table version (stp_crc32c uses the CPU's instruction when it
 * can); exposed for tests. */
uint32_t stp_crc32c_table(uint32_t crc, const void *data, size_t n);

#ifdef __cplusplus
}
#endif
#endif
