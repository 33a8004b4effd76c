/*
 * reader.c - the streaming .stp reader.
 *
 * Chunks are read in file order.  DEFS chunks define strings and stack nodes
 * at once; EVENTS chunks (one thread each, seq increasing inside) become
 * cursors in a min-heap keyed by their next event's seq.  An event is
 * returned when it is the next expected seq, or when a WATERMARK says no
 * earlier seq can still come (the gap is counted as lost), or once the file
 * has no more chunks.  So events come out in seq order while memory holds only
 * the chunks of the recording's flush window.
 *
 * Stack ids in events are mapped to call-path nodes as events are decoded
 * (format 1.1 defines the map; in 1.0 files the two are the same), so every
 * consumer sees one id per distinct call path.
 *
 * Errors (a corrupt chunk, a malformed record, seq going back) stop the
 * reading: every event before the bad chunk is still returned, then
 * stp_reader_next() returns -1 and stp_reader_error() names file and offset.
 * A file that ends inside a chunk is no error: it was cut short (its writer
 * stopped mid-write), and reads to its last whole chunk; stats.cut_bytes
 * says how much was left unread.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "decode.h"
#include "format.h"
#include "stprof/trace.h"
#include "varint.h"

typedef struct cursor {
	uint8_t *buf;      /* the chunk payload, owned */
	uint64_t offset;   /* file offset of the chunk header */
	int defs;          /* a DEFS chunk: skip definitions (already applied) */
	stp_dec dec;
	stp_event next;
} cursor;

struct stp_reader {
	FILE *f;
	char *path;
	uint64_t file_size;
	uint64_t pos;
	stp_trace_header hdr;
	stp_trace_stats stats;

	/* strings: dense ids 1..n; offsets into one arena of NUL-terminated text */
	char *str_arena;
	size_t str_len, str_cap;
	size_t *str_off;
	uint32_t nstr, str_off_cap;

	/* call-path trie: dense node ids 1..n */
	uint32_t *stk_parent;
	uint64_t *stk_ip;
	uint32_t nstk, stk_cap;
	/* stack id (as events carry it) -> node; 0 = undefined */
	uint32_t *stack_node;
	uint32_t stack_cap, nstack_defs;

	cursor **heap;
	size_t nheap, heap_cap;
	cursor *popped;       /* returned last; advanced on the next call */

	uint64_t next_seq;    /* the seq expected next */
	uint64_t fold_end, fold_left; /* the last FOLD's range end, its seqs still to be skipped */
	uint64_t watermark;
	int done_reading;     /* no more chunks will be read */
	int failed;           /* an error is pending (after the heap drains) */
	int fatal;            /* error right now: stop returning events */
	char err[512];
};

static void set_err(stp_reader *r, uint64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(stp_reader *r, uint64_t off, const char *fmt, ...)
{
	if (r->failed)
		return;
	int n = snprintf(r->err, sizeof r->err, "%s: offset %llu: ", r->path, (unsigned long long)off);
	va_list ap;
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof r->err)
		vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
	va_end(ap);
	r->failed = 1;
	r->done_reading = 1;
}

/* ------------------------------------------------------------ tables */

static int add_string(stp_reader *r, const stp_def *d)
{
	if (d->id != r->nstr + 1)
		return -1;
	if (r->nstr + 1 >= r->str_off_cap) {
		uint32_t nc = r->str_off_cap ? r->str_off_cap * 2 : 256;
		size_t *no = realloc(r->str_off, nc * sizeof *no);
		if (!no)
			return -1;
		r->str_off = no;
		r->str_off_cap = nc;
	}
	if (r->str_len + d->len + 1 > r->str_cap) {
		size_t nc = r->str_cap ? r->str_cap : 4096;
		while (nc < r->str_len + d->len + 1)
			nc *= 2;
		char *na = realloc(r->str_arena, nc);
		if (!na)
			return -1;
		r->str_arena = na;
		r->str_cap = nc;
	}
	r->str_off[++r->nstr] = r->str_len;
	memcpy(r->str_arena + r->str_len, d->str, d->len);
	/* an embedded NUL would cut the string short: replace it */
	for (size_t i = 0; i < d->len; i++)
		if (!r->str_arena[r->str_len + i])
			r->str_arena[r->str_len + i] = '?';
	r->str_arena[r->str_len + d->len] = 0;
	r->str_len += d->len + 1;
	r->stats.strings++;
	return 0;
}

/* A stack id may be defined in any order, but never far ahead of the
 * definitions seen (bounds what a corrupt id can make us allocate). */
#define STACK_ID_SLACK (1u << 24)

static int add_stack_map(stp_reader *r, const stp_def *d)
{
	if (d->parent > r->nstk || d->id > r->nstack_defs + STACK_ID_SLACK)
		return -1;
	if (d->id >= r->stack_cap) {
		uint32_t nc = r->stack_cap ? r->stack_cap : 1024;
		while (nc <= d->id)
			nc *= 2;
		uint32_t *nm = realloc(r->stack_node, nc * sizeof *nm);
		if (!nm)
			return -1;
		memset(nm + r->stack_cap, 0, (nc - r->stack_cap) * sizeof *nm);
		r->stack_node = nm;
		r->stack_cap = nc;
	}
	if (r->stack_node[d->id] && r->stack_node[d->id] != d->parent)
		return -1; /* defined twice, differently */
	r->stack_node[d->id] = d->parent;
	r->nstack_defs++;
	return 0;
}

/* The node of a stack id in an event; 0 when it is not defined. */
static int map_stack(const stp_reader *r, uint32_t *stack)
{
	if (!*stack)
		return 0;
	if (*stack < r->stack_cap && r->stack_node[*stack]) {
		*stack = r->stack_node[*stack];
		return 0;
	}
	/* format 1.0: events carry node ids */
	return r->hdr.minor == 0 && *stack <= r->nstk ? 0 : -1;
}

static int add_stack(stp_reader *r, const stp_def *d)
{
	if (d->id != r->nstk + 1 || d->parent >= d->id)
		return -1;
	if (r->nstk + 1 >= r->stk_cap) {
		uint32_t nc = r->stk_cap ? r->stk_cap * 2 : 1024;
		uint32_t *np = realloc(r->stk_parent, nc * sizeof *np);
		if (!np)
			return -1;
		r->stk_parent = np;
		uint64_t *ni = realloc(r->stk_ip, nc * sizeof *ni);
		if (!ni)
			return -1;
		r->stk_ip = ni;
		r->stk_cap = nc;
	}
	r->nstk++;
	r->stk_parent[r->nstk] = d->parent;
	r->stk_ip[r->nstk] = d->ip;
	r->stats.stack_nodes++;
	return 0;
}

/* ------------------------------------------------------------ heap */

static int cur_less(const cursor *a, const cursor *b) { return a->next.seq < b->next.seq; }

static int heap_push(stp_reader *r, cursor *c)
{
	if (r->nheap == r->heap_cap) {
		size_t nc = r->heap_cap ? r->heap_cap * 2 : 16;
		cursor **nh = realloc(r->heap, nc * sizeof *nh);
		if (!nh)
			return -1;
		r->heap = nh;
		r->heap_cap = nc;
	}
	size_t i = r->nheap++;
	while (i > 0) {
		size_t pa = (i - 1) / 2;
		if (!cur_less(c, r->heap[pa]))
			break;
		r->heap[i] = r->heap[pa];
		i = pa;
	}
	r->heap[i] = c;
	return 0;
}

static cursor *heap_pop(stp_reader *r)
{
	cursor *top = r->heap[0];
	cursor *last = r->heap[--r->nheap];
	size_t i = 0, n = r->nheap;
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		const cursor *best = last;
		if (l < n && cur_less(r->heap[l], best))
			m = l, best = r->heap[l];
		if (l + 1 < n && cur_less(r->heap[l + 1], best))
			m = l + 1;
		if (m == i)
			break;
		r->heap[i] = r->heap[m];
		i = m;
	}
	if (n)
		r->heap[i] = last;
	return top;
}

static void cursor_free(cursor *c)
{
	if (!c)
		return;
	stp_dec_free(&c->dec);
	free(c->buf);
	free(c);
}

/* Decodes the cursor's next event.  1 = has one, 0 = exhausted, -1 = bad. */
static int cursor_advance(stp_reader *r, cursor *c)
{
	stp_def def;
	for (;;) {
		const uint8_t *at = c->dec.p;
		int k = stp_dec_next(&c->dec, &c->next, &def);
		if (k == STP_DEC_EVENT) {
			stp_event *ev = &c->next;
			uint32_t *stack = ev->type == STP_EV_API ? &ev->u.api.stack
			                  : (ev->type == STP_EV_ALLOC || ev->type == STP_EV_SEGMENT_RESERVE ||
			                     ev->type == STP_EV_SEGMENT_RELEASE || ev->type == STP_EV_REFUSED)
			                      ? &ev->u.alloc.stack
			                      : NULL;
			if (stack && map_stack(r, stack)) {
				set_err(r, c->offset + STP_CHUNK_HEADER_SIZE + (uint64_t)(at - c->dec.start),
				        "call path %u used before it is defined", *stack);
				r->fatal = 1;
				return -1;
			}
			for (uint32_t i = 0; ev->type == STP_EV_FOLD && i < ev->u.fold.nsites; i++)
				if (map_stack(r, &c->dec.fold_sites[i].stack)) {
					set_err(r, c->offset + STP_CHUNK_HEADER_SIZE + (uint64_t)(at - c->dec.start),
					        "call path %u used before it is defined", c->dec.fold_sites[i].stack);
					r->fatal = 1;
					return -1;
				}
			return 1;
		}
		if (k == STP_DEC_END)
			return 0;
		if (k > 0 && c->defs)
			continue; /* applied when the chunk was read */
		set_err(r, c->offset + STP_CHUNK_HEADER_SIZE + (uint64_t)(at - c->dec.start),
		        k < 0 ? "malformed record" : "definition inside an events chunk");
		r->fatal = 1;
		return -1;
	}
}

/* ------------------------------------------------------------ chunks */

/* Reads exactly n bytes; returns the count read (short at end of file). */
static size_t read_full(stp_reader *r, void *buf, size_t n)
{
	size_t got = fread(buf, 1, n, r->f);
	r->pos += got;
	return got;
}

static int apply_defs(stp_reader *r, const uint8_t *pay, uint32_t len, uint64_t off, int *has_events)
{
	stp_dec d;
	stp_event ev;
	stp_def def;
	stp_dec_init(&d, pay, len, 0);
	*has_events = 0;
	for (;;) {
		const uint8_t *at = d.p;
		int k = stp_dec_next(&d, &ev, &def);
		if (k == STP_DEC_END)
			break;
		if (k == STP_DEC_EVENT) {
			*has_events = 1;
			continue;
		}
		if (k == STP_DEC_STRING && !add_string(r, &def))
			continue;
		if (k == STP_DEC_NODE && !add_stack(r, &def))
			continue;
		if (k == STP_DEC_STACK && !add_stack_map(r, &def))
			continue;
		set_err(r, off + STP_CHUNK_HEADER_SIZE + (uint64_t)(at - pay),
		        k < 0 ? "malformed definition" : "definition id out of order");
		stp_dec_free(&d);
		return -1;
	}
	stp_dec_free(&d);
	return 0;
}

/* The file ends inside the chunk at off, after `bytes` of it: the writer was
 * stopped mid-write (disk full, a file-size limit, a copy taken while it
 * ran).  Not an error: everything before is whole, and read. */
static int cut_short(stp_reader *r, uint64_t off, uint64_t bytes)
{
	r->stats.cut_offset = off;
	r->stats.cut_bytes = bytes;
	r->done_reading = 1;
	return -1;
}

/* Reads one chunk. Returns 0 when reading should go on, -1 when it stopped
 * (end, error: see r->done_reading / r->failed). */
static int read_chunk(stp_reader *r)
{
	uint8_t h[STP_CHUNK_HEADER_SIZE];
	uint64_t off = r->pos;
	size_t got = read_full(r, h, sizeof h);
	if (got == 0) {
		r->done_reading = 1;
		return -1;
	}
	if (got < sizeof h && (got < 4 || ld_le32(h) == STP_CHUNK_MAGIC))
		return cut_short(r, off, got); /* the file ends inside this chunk's header */
	if (got < sizeof h) {
		set_err(r, off, "not a chunk (bad magic 0x%08x)", ld_le32(h));
		return -1;
	}
	if (ld_le32(h) != STP_CHUNK_MAGIC) {
		set_err(r, off, "not a chunk (bad magic 0x%08x)", ld_le32(h));
		return -1;
	}
	unsigned type = h[4];
	uint32_t tid = ld_le32(h + 8), len = ld_le32(h + 12), crc = ld_le32(h + 16);
	if (len > STP_CHUNK_MAX_PAYLOAD) {
		set_err(r, off, "chunk too large (%u bytes)", len);
		return -1;
	}
	if (r->file_size && off + STP_CHUNK_HEADER_SIZE + len > r->file_size) {
		struct stat sb; /* the file may still be growing: look again */
		if (!fstat(fileno(r->f), &sb) && (uint64_t)sb.st_size > r->file_size)
			r->file_size = (uint64_t)sb.st_size;
	}
	if (r->file_size && off + STP_CHUNK_HEADER_SIZE + len > r->file_size)
		return cut_short(r, off, r->file_size - off);
	uint8_t *pay = malloc(len ? len : 1);
	if (!pay) {
		set_err(r, off, "out of memory");
		return -1;
	}
	size_t part = read_full(r, pay, len);
	if (part != len) {
		free(pay);
		return cut_short(r, off, STP_CHUNK_HEADER_SIZE + part);
	}
	uint32_t want = stp_crc32c(stp_crc32c(0, h, 16), pay, len);
	if (want != crc) {
		set_err(r, off, "chunk checksum mismatch (corrupt file)");
		free(pay);
		return -1;
	}
	r->stats.chunks++;
	r->stats.bytes = r->pos;
	if (type >= 1 && type <= 4)
		r->stats.chunk_bytes[type] += STP_CHUNK_HEADER_SIZE + len;

	if (type == STP_CHUNK_WATERMARK || type == STP_CHUNK_END) {
		const uint8_t *p = pay, *e = pay + len;
		uint64_t a = 0, b = 0, c = 0;
		if (type == STP_CHUNK_WATERMARK) {
			p = get_var(p, e, &a);
			if (p && a > r->watermark)
				r->watermark = a;
		} else {
			p = get_var(p, e, &a);
			p = p ? get_var(p, e, &b) : NULL;
			p = p ? get_var(p, e, &c) : NULL;
			if (p) {
				int64_t v = zz_dec(b);
				r->stats.whole = 1;
				r->stats.end_reason = (uint32_t)a;
				r->stats.end_value = (int32_t)v;
				if (c > r->watermark)
					r->watermark = c;
				r->done_reading = 1;
			}
		}
		free(pay);
		if (!p) {
			set_err(r, off, "malformed %s chunk", type == STP_CHUNK_END ? "end" : "watermark");
			return -1;
		}
		return r->done_reading ? -1 : 0;
	}
	if (type != STP_CHUNK_DEFS && type != STP_CHUNK_EVENTS) {
		/* an unknown chunk type from a newer minor version: skip it */
		free(pay);
		return 0;
	}
	int has_events = 1;
	if (type == STP_CHUNK_DEFS && apply_defs(r, pay, len, off, &has_events)) {
		free(pay);
		return -1;
	}
	if (!has_events || len == 0) {
		free(pay);
		return 0;
	}
	cursor *c = calloc(1, sizeof *c);
	if (!c) {
		free(pay);
		set_err(r, off, "out of memory");
		return -1;
	}
	c->buf = pay;
	c->offset = off;
	c->defs = type == STP_CHUNK_DEFS;
	stp_dec_init(&c->dec, pay, len, type == STP_CHUNK_DEFS ? 0 : tid);
	int k = cursor_advance(r, c);
	if (k <= 0) {
		cursor_free(c);
		return k < 0 ? -1 : 0;
	}
	if (heap_push(r, c)) {
		cursor_free(c);
		set_err(r, off, "out of memory");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ API */

stp_reader *stp_reader_open(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	uint8_t h[STP_FILE_HEADER_SIZE];
	size_t got = fread(h, 1, sizeof h, f);
	if (got < 8 || memcmp(h, STP_FILE_MAGIC, 8)) {
		snprintf(err, errlen, "%s: offset 0: not an stprof trace (bad magic)", path);
		fclose(f);
		return NULL;
	}
	if (got < sizeof h) {
		snprintf(err, errlen, "%s: offset %zu: truncated file header", path, got);
		fclose(f);
		return NULL;
	}
	uint16_t major = ld_le16(h + 8), minor = ld_le16(h + 10);
	uint32_t hsize = ld_le32(h + 12);
	if (major != STP_FORMAT_MAJOR) {
		snprintf(err, errlen, "%s: offset 8: trace format %u.%u, this stprof reads %d.x", path,
		         major, minor, STP_FORMAT_MAJOR);
		fclose(f);
		return NULL;
	}
	if (hsize < STP_FILE_HEADER_SIZE || hsize > 4096) {
		snprintf(err, errlen, "%s: offset 12: bad header size %u", path, hsize);
		fclose(f);
		return NULL;
	}
	stp_reader *r = calloc(1, sizeof *r);
	if (!r || !(r->path = strdup(path))) {
		free(r);
		fclose(f);
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	r->f = f;
	r->hdr.major = major;
	r->hdr.minor = minor;
	r->hdr.flags = ld_le64(h + 16);
	struct stat sb;
	if (!fstat(fileno(f), &sb) && S_ISREG(sb.st_mode))
		r->file_size = (uint64_t)sb.st_size;
	if (hsize > STP_FILE_HEADER_SIZE && fseek(f, hsize, SEEK_SET)) {
		snprintf(err, errlen, "%s: offset %zu: truncated file header", path, got);
		stp_reader_close(r);
		return NULL;
	}
	r->pos = hsize;
	r->stats.bytes = hsize;
	return r;
}

static void count_event(stp_reader *r, const stp_event *ev)
{
	r->stats.events++;
	if (ev->type <= STP_EV_TYPE_MAX)
		r->stats.by_type[ev->type]++;
	if (ev->type == STP_EV_FOLD) { /* the seqs it stands for are not lost */
		r->stats.folded_events += ev->u.fold.elided;
		r->stats.folded_iterations++;
		r->fold_end = ev->u.fold.last_seq;
		r->fold_left = ev->u.fold.elided - 1;
	}
	if (r->stats.events == 1 || ev->time_ns < r->stats.first_time_ns)
		r->stats.first_time_ns = ev->time_ns;
	if (ev->time_ns > r->stats.last_time_ns)
		r->stats.last_time_ns = ev->time_ns;
}

int stp_reader_next(stp_reader *r, stp_event *ev)
{
	if (r->popped) {
		cursor *c = r->popped;
		r->popped = NULL;
		int k = cursor_advance(r, c);
		/* the common case: the same chunk holds the next seq, which no
		 * other cursor can beat (seqs are unique): no heap work */
		if (k > 0 && c->next.seq == r->next_seq && !r->fatal) {
			r->next_seq++;
			*ev = c->next;
			r->popped = c;
			count_event(r, ev);
			return 1;
		}
		if (k > 0 && !heap_push(r, c))
			c = NULL;
		cursor_free(c);
	}
	for (;;) {
		if (r->fatal)
			return -1;
		if (r->nheap) {
			cursor *top = r->heap[0];
			uint64_t s = top->next.seq;
			if (s == r->next_seq || s < r->watermark || r->done_reading) {
				if (s < r->next_seq) {
					r->failed = 0;
					set_err(r, top->offset, "sequence number %llu goes back (expected %llu)",
					        (unsigned long long)s, (unsigned long long)r->next_seq);
					r->fatal = 1;
					return -1;
				}
				uint64_t gap = s - r->next_seq;
				if (gap && r->fold_left && r->next_seq <= r->fold_end) {
					uint64_t in = (s <= r->fold_end + 1 ? s : r->fold_end + 1) - r->next_seq;
					uint64_t f = in < r->fold_left ? in : r->fold_left;
					r->fold_left -= f;
					gap -= f;
				}
				r->stats.lost_events += gap;
				r->next_seq = s + 1;
				heap_pop(r);
				*ev = top->next;
				r->popped = top;
				count_event(r, ev);
				return 1;
			}
		}
		if (r->done_reading)
			return r->failed ? -1 : 0;
		read_chunk(r);
	}
}

const char *stp_reader_error(const stp_reader *r) { return r->failed ? r->err : NULL; }
const stp_trace_stats *stp_reader_stats(const stp_reader *r) { return &r->stats; }
const stp_trace_header *stp_reader_header(const stp_reader *r) { return &r->hdr; }
const char *stp_reader_path(const stp_reader *r) { return r->path; }

const char *stp_reader_string(const stp_reader *r, uint32_t id)
{
	if (id == 0 || id > r->nstr)
		return "";
	return r->str_arena + r->str_off[id];
}

uint32_t stp_reader_stack(const stp_reader *r, uint32_t stack, uint64_t *ips, uint32_t max)
{
	uint32_t n = 0;
	while (stack && stack <= r->nstk && n < max) {
		ips[n++] = r->stk_ip[stack];
		stack = r->stk_parent[stack];
	}
	return n;
}

uint32_t stp_reader_stack_count(const stp_reader *r) { return r->nstk; }

int stp_reader_stack_node(const stp_reader *r, uint32_t stack, uint32_t *parent, uint64_t *ip)
{
	if (stack == 0 || stack > r->nstk)
		return -1;
	*parent = r->stk_parent[stack];
	*ip = r->stk_ip[stack];
	return 0;
}

void stp_reader_close(stp_reader *r)
{
	if (!r)
		return;
	cursor_free(r->popped);
	for (size_t i = 0; i < r->nheap; i++)
		cursor_free(r->heap[i]);
	free(r->heap);
	free(r->str_arena);
	free(r->str_off);
	free(r->stk_parent);
	free(r->stk_ip);
	free(r->stack_node);
	if (r->f)
		fclose(r->f);
	free(r->path);
	free(r);
}
