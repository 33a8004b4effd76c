/*
 * decode.h - the record decoder, internal to trace/.  A stp_dec walks one
 * chunk payload; it never reads outside [p, end) and never trusts a count
 * beyond what the remaining bytes could hold.
 */
#ifndef STPROF_TRACE_DECODE_H
#define STPROF_TRACE_DECODE_H
#include <stddef.h>
#include <stdint.h>

#include "stprof/trace_codec.h"

typedef struct stp_dec {
	const uint8_t *start, *p, *end;
	stp_enc_state st;
	stp_range *ranges; /* decoded API ranges (owned) */
	uint32_t ranges_cap;
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
#endif
