/*
 * writer.c - stp_writer: a single-threaded trace writer for tools, converters
 * and tests.  Strings and stack nodes are interned in hash tables; their
 * definitions go into a DEFS buffer that is always written before the EVENTS
 * chunk that may refer to them.  A chunk is cut every ~64 KiB, each followed
 * by a WATERMARK, so readers stream it in constant memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/outfile.h"
#include "stprof/trace_codec.h"

#define CHUNK_TARGET (64u << 10)

typedef struct buf {
	uint8_t *data;
	size_t len, cap;
} buf;

typedef struct str_ent { uint64_t hash; uint32_t id; uint32_t len; char *text; } str_ent;
typedef struct stk_ent { uint64_t ip; uint32_t parent, id; } stk_ent;

struct stp_writer {
	stp_outfile out; /* created beside the path, renamed into place at close */
	FILE *f;
	int failed;
	buf defs, events;
	stp_enc_state defs_st, ev_st;
	uint32_t ev_tid;
	uint64_t next_seq;
	int have_events;
	str_ent *strs;
	size_t nstr, str_cap; /* open addressing; cap is a power of two */
	stk_ent *stks;
	size_t nstk, stk_cap;
	uint32_t *node_stack; /* node -> nonzero once its STACK is defined */
	size_t node_stack_cap;
};

static int buf_reserve(buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return 0;
	size_t nc = b->cap ? b->cap : 1024;
	while (nc < b->len + more)
		nc *= 2;
	uint8_t *nd = realloc(b->data, nc);
	if (!nd)
		return -1;
	b->data = nd;
	b->cap = nc;
	return 0;
}

static uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static uint64_t hash_node(uint32_t parent, uint64_t ip)
{
	uint64_t h = (ip ^ ((uint64_t)parent << 32 | parent)) * 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 31);
}

static int write_all(stp_writer *w, const void *p, size_t n)
{
	if (w->failed)
		return -1;
	if (n && fwrite(p, 1, n, w->f) != n) {
		w->failed = 1;
		return -1;
	}
	return 0;
}

/* Writes buf b as one chunk (header space is prepended here). */
static int write_chunk(stp_writer *w, unsigned type, uint32_t tid, buf *b)
{
	uint8_t h[STP_CHUNK_HEADER_SIZE];
	stp_chunk_header(h, type, tid, b->data, (uint32_t)b->len);
	int rc = write_all(w, h, sizeof h) | write_all(w, b->data, b->len);
	b->len = 0;
	return rc;
}

stp_writer *stp_writer_open(const char *path, char *err, size_t errlen)
{
	stp_writer *w = calloc(1, sizeof *w);
	if (!w) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	w->f = stp_outfile_open(&w->out, path, &stp_outkind_trace, err, errlen);
	if (!w->f) {
		free(w);
		return NULL;
	}
	uint8_t h[STP_FILE_HEADER_SIZE];
	stp_file_header(h);
	write_all(w, h, sizeof h);
	stp_enc_reset(&w->defs_st, 0);
	stp_enc_reset(&w->ev_st, 0);
	return w;
}

static int flush_defs(stp_writer *w)
{
	if (!w->defs.len)
		return 0;
	int rc = write_chunk(w, STP_CHUNK_DEFS, 0, &w->defs);
	stp_enc_reset(&w->defs_st, 0);
	return rc;
}

int stp_writer_flush(stp_writer *w)
{
	int rc = flush_defs(w);
	if (w->events.len) {
		rc |= write_chunk(w, STP_CHUNK_EVENTS, w->ev_tid, &w->events);
		stp_enc_reset(&w->ev_st, w->ev_tid);
		uint8_t wm[64];
		rc |= write_all(w, wm, stp_chunk_watermark(wm, w->next_seq));
	}
	if (fflush(w->f))
		w->failed = 1;
	return rc | -w->failed;
}

/* Appends a definition to the DEFS buffer, growing it. */
static int put_def(stp_writer *w, size_t bound, size_t (*enc)(stp_writer *, uint8_t *, size_t, const void *),
                   const void *arg)
{
	if (buf_reserve(&w->defs, bound))
		return -1;
	size_t n = enc(w, w->defs.data + w->defs.len, w->defs.cap - w->defs.len, arg);
	if (!n)
		return -1;
	w->defs.len += n;
	return 0;
}

struct str_arg { uint32_t id; const char *s; size_t len; };
static size_t enc_str(stp_writer *w, uint8_t *out, size_t cap, const void *a)
{
	const struct str_arg *s = a;
	return stp_enc_string(out, cap, s->id, s->s, s->len);
}

uint32_t stp_writer_string(stp_writer *w, const char *s)
{
	if (!s)
		return 0;
	size_t len = strlen(s);
	uint64_t h = hash_bytes(s, len);
	if ((w->nstr + 1) * 2 > w->str_cap) {
		size_t nc = w->str_cap ? w->str_cap * 2 : 256;
		str_ent *nt = calloc(nc, sizeof *nt);
		if (!nt)
			return 0;
		for (size_t i = 0; i < w->str_cap; i++) {
			if (!w->strs[i].id)
				continue;
			size_t j = w->strs[i].hash & (nc - 1);
			while (nt[j].id)
				j = (j + 1) & (nc - 1);
			nt[j] = w->strs[i];
		}
		free(w->strs);
		w->strs = nt;
		w->str_cap = nc;
	}
	size_t j = h & (w->str_cap - 1);
	for (; w->strs[j].id; j = (j + 1) & (w->str_cap - 1))
		if (w->strs[j].hash == h && w->strs[j].len == len && !memcmp(w->strs[j].text, s, len))
			return w->strs[j].id;
	char *copy = malloc(len + 1);
	if (!copy)
		return 0;
	memcpy(copy, s, len + 1);
	uint32_t id = (uint32_t)++w->nstr;
	struct str_arg a = {id, s, len};
	if (put_def(w, len + 32, enc_str, &a)) {
		free(copy);
		w->nstr--;
		return 0;
	}
	w->strs[j] = (str_ent){h, id, (uint32_t)len, copy};
	return id;
}

struct stk_arg { uint32_t id, parent; uint64_t ip; };
static size_t enc_stk(stp_writer *w, uint8_t *out, size_t cap, const void *a)
{
	const struct stk_arg *s = a;
	return stp_enc_node(out, cap, &w->defs_st, s->id, s->parent, s->ip);
}

static uint32_t intern_node(stp_writer *w, uint32_t parent, uint64_t ip)
{
	if ((w->nstk + 1) * 2 > w->stk_cap) {
		size_t nc = w->stk_cap ? w->stk_cap * 2 : 1024;
		stk_ent *nt = calloc(nc, sizeof *nt);
		if (!nt)
			return 0;
		for (size_t i = 0; i < w->stk_cap; i++) {
			if (!w->stks[i].id)
				continue;
			size_t j = hash_node(w->stks[i].parent, w->stks[i].ip) & (nc - 1);
			while (nt[j].id)
				j = (j + 1) & (nc - 1);
			nt[j] = w->stks[i];
		}
		free(w->stks);
		w->stks = nt;
		w->stk_cap = nc;
	}
	size_t j = hash_node(parent, ip) & (w->stk_cap - 1);
	for (; w->stks[j].id; j = (j + 1) & (w->stk_cap - 1))
		if (w->stks[j].parent == parent && w->stks[j].ip == ip)
			return w->stks[j].id;
	uint32_t id = (uint32_t)++w->nstk;
	struct stk_arg a = {id, parent, ip};
	if (put_def(w, 40, enc_stk, &a)) {
		w->nstk--;
		return 0;
	}
	w->stks[j] = (stk_ent){ip, parent, id};
	return id;
}

struct stack_arg { uint32_t stack, node; };
static size_t enc_stack_map(stp_writer *w, uint8_t *out, size_t cap, const void *a)
{
	const struct stack_arg *s = a;
	return stp_enc_stack(out, cap, s->stack, s->node);
}

uint32_t stp_writer_stack(stp_writer *w, const uint64_t *ips, uint32_t n)
{
	uint32_t node = 0;
	for (uint32_t i = n; i-- > 0;) {
		node = intern_node(w, node, ips[i]);
		if (!node)
			return 0;
	}
	if (!n)
		return 0;
	/* one stack id per distinct path, as the collector does */
	if (node >= w->node_stack_cap) {
		size_t nc = w->node_stack_cap ? w->node_stack_cap : 1024;
		while (nc <= node)
			nc *= 2;
		uint32_t *ns = realloc(w->node_stack, nc * sizeof *ns);
		if (!ns)
			return 0;
		memset(ns + w->node_stack_cap, 0, (nc - w->node_stack_cap) * sizeof *ns);
		w->node_stack = ns;
		w->node_stack_cap = nc;
	}
	/* the path's stack id is its node id, so a reader gives back what was
	 * written */
	if (!w->node_stack[node]) {
		struct stack_arg a = {node, node};
		if (put_def(w, 24, enc_stack_map, &a))
			return 0;
		w->node_stack[node] = node;
	}
	return node;
}

int stp_writer_event(stp_writer *w, const stp_event *ev_in)
{
	stp_event ev = *ev_in;
	if (ev.seq == STP_SEQ_AUTO)
		ev.seq = w->next_seq;
	if (ev.seq < w->next_seq)
		return -1; /* seq must increase */
	if (!w->events.len) {
		w->ev_tid = ev.tid;
		stp_enc_reset(&w->ev_st, ev.tid);
	}
	if (buf_reserve(&w->events, stp_enc_event_bound(&ev)))
		return -1;
	size_t n = stp_enc_event(w->events.data + w->events.len, w->events.cap - w->events.len, &w->ev_st, &ev);
	if (!n)
		return -1;
	w->events.len += n;
	w->next_seq = ev.seq + 1;
	if (w->events.len + w->defs.len >= CHUNK_TARGET)
		return stp_writer_flush(w);
	return 0;
}

static void writer_free(stp_writer *w)
{
	for (size_t i = 0; i < w->str_cap; i++)
		free(w->strs[i].text);
	free(w->strs);
	free(w->stks);
	free(w->node_stack);
	free(w->defs.data);
	free(w->events.data);
	free(w);
}

int stp_writer_close(stp_writer *w, uint32_t end_reason, int32_t end_value)
{
	int rc = stp_writer_flush(w);
	uint8_t end[64];
	rc |= write_all(w, end, stp_chunk_end(end, end_reason, end_value, w->next_seq));
	char err[512];
	if (rc)
		stp_outfile_abort(&w->out);
	else if (stp_outfile_commit(&w->out, err, sizeof err))
		rc = -1;
	writer_free(w);
	return rc ? -1 : 0;
}

void stp_writer_abandon(stp_writer *w)
{
	stp_writer_flush(w);
	char err[512];
	stp_outfile_commit(&w->out, err, sizeof err);
	writer_free(w);
}

void stp_writer_discard(stp_writer *w)
{
	stp_outfile_abort(&w->out);
	writer_free(w);
}
