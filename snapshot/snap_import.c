/*
 * snap_import.c - a PyTorch memory snapshot (pickle) into a .stp trace.
 *
 * Reads both layouts (stprof/snapshot.h) into imp_ev records:
 *   - the state before the ring buffer's first entry (snap_replay.c), or
 *     the whole `segments` state when there is no trace (1.13);
 *   - every trace entry: alloc -> ALLOC, free_completed -> FREE,
 *     segment_alloc / segment_map -> SEGMENT_RESERVE, segment_free /
 *     segment_unmap -> SEGMENT_RELEASE, oom and snapshot -> ANNOTATION
 *     markers (oom's value: the device's free bytes; an oom of a size is
 *     then also a REFUSED event of it, with its frames), free_requested is
 *     dropped (the block stays allocated until free_completed);
 *   - external annotations START/END -> MODULE_ENTER/EXIT markers.
 * Each distinct frame {filename, line, name} becomes a source frame
 * (stprof/srcframe.h); a frames list becomes a call path, innermost first
 * as PyTorch lists them.
 *
 * The pickle is read shaped (pickle.h, `shape` below): only the keys read
 * here are kept, and each segment, trace entry and annotation is converted
 * when the reader hands it on, then released; frames (which PyTorch shares
 * between entries) stay, converted once each, by node offset.  Memory is
 * the records kept and the frames, not the pickle.  Frames are numbered in
 * the order the written trace uses them, so an export imported back numbers
 * them alike.  Times: time_us when the entries have it, else 1 us per entry
 * in order.  A malformed snapshot (a segment or block that is not a dict, a
 * size that is not a non-negative integer, a block outside its segment) is
 * refused in one line; allocations outside every segment make the segments
 * dropped (snap_check.c).  The trace ends as STP_END_SNAPSHOT: the program
 * went on.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snap_int.h"
#include "stprof/snapshot.h"
#include "stprof/srcframe.h"
#include "u64map.h"

#define MAX_DEPTH 256

/* ------------------------------------------------------------ the shape */

enum { P_NONE, P_TOP, P_SEGS, P_SEG, P_BLOCKS, P_BLOCK, P_HIST, P_HENT, P_DTRACES, P_TRACE, P_ENTRY, P_ANNS,
       P_ANN, P_STPROF, P_FRAMES, P_FRAME, P_ATOM, P_FATOM, NPLACES };

static const pk_key top_keys[] = {{"segments", P_SEGS}, {"device_traces", P_DTRACES},
                                  {"external_annotations", P_ANNS}, {"stprof", P_STPROF}, {NULL, 0}};
static const pk_key seg_keys[] = {{"device", P_ATOM}, {"address", P_ATOM}, {"total_size", P_ATOM},
                                  {"stream", P_ATOM}, {"frames", P_FRAMES}, {"blocks", P_BLOCKS}, {NULL, 0}};
static const pk_key block_keys[] = {{"size", P_ATOM}, {"address", P_ATOM}, {"state", P_ATOM},
                                    {"requested_size", P_ATOM}, {"frames", P_FRAMES}, {"history", P_HIST},
                                    {NULL, 0}};
static const pk_key hent_keys[] = {{"frames", P_FRAMES}, {"real_size", P_ATOM}, {NULL, 0}};
static const pk_key entry_keys[] = {{"action", P_ATOM}, {"size", P_ATOM}, {"addr", P_ATOM}, {"stream", P_ATOM},
                                    {"time_us", P_ATOM}, {"device_free", P_ATOM}, {"frames", P_FRAMES}, {NULL, 0}};
static const pk_key ann_keys[] = {{"stage", P_ATOM}, {"name", P_ATOM}, {"time_us", P_ATOM}, {"device", P_ATOM},
                                  {NULL, 0}};
static const pk_key stprof_keys[] = {{"synthetic_segments", P_ATOM}, {NULL, 0}};
static const pk_key frame_keys[] = {{"name", P_FATOM}, {"filename", P_FATOM}, {"line", P_FATOM}, {NULL, 0}};

/* {keys, items, atoms, stream, shared} */
static const pk_place places[NPLACES] = {
	[P_TOP] = {top_keys, P_SEG, 0, 1, 0},   /* 2.x: a dict; 1.13: a list of segments */
	[P_SEGS] = {NULL, P_SEG, 0, 1, 0},
	[P_SEG] = {seg_keys, 0, 0, 0, 0},
	[P_BLOCKS] = {NULL, P_BLOCK, 0, 0, 0},
	[P_BLOCK] = {block_keys, 0, 0, 0, 0},
	[P_HIST] = {NULL, P_HENT, 0, 0, 0},
	[P_HENT] = {hent_keys, 0, 0, 0, 0},
	[P_DTRACES] = {NULL, P_TRACE, 1, 0, 0}, /* a scalar: kept, to be refused */
	[P_TRACE] = {NULL, P_ENTRY, 0, 1, 0},
	[P_ENTRY] = {entry_keys, 0, 0, 0, 0},
	[P_ANNS] = {NULL, P_ANN, 0, 1, 0},
	[P_ANN] = {ann_keys, 0, 0, 0, 0},
	[P_STPROF] = {stprof_keys, 0, 0, 0, 0},
	[P_FRAMES] = {NULL, P_FRAME, 0, 0, 1},
	[P_FRAME] = {frame_keys, 0, 0, 0, 1},
	[P_ATOM] = {NULL, 0, 1, 0, 0},
	[P_FATOM] = {NULL, 0, 1, 0, 1},
};

/* every key above, and the values compared below */
static const char *const strings[] = {
	"segments", "device_traces", "external_annotations", "stprof", "device", "address", "total_size", "stream",
	"frames", "blocks", "size", "state", "requested_size", "history", "real_size", "action", "addr", "time_us",
	"device_free", "stage", "name", "synthetic_segments", "filename", "line", "alloc", "free_requested",
	"free_completed", "segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom", "snapshot",
	"active_allocated", "active_pending_free", "START", "END", NULL};

/* ------------------------------------------------------------ the importer */

typedef struct importer {
	const char *path;
	char *err;
	size_t errlen;
	stp_snapshot_import_stats *st;
	imp_vec end_segs, end_allocs, trace, out;
	/* frames */
	char **ftext;       /* "srcframe:" name \x1f file \x1f line */
	size_t nf, fcap;
	u64map frame_node;  /* offset of a frame dict -> frame index + 1 (0: none) */
	u64map frame_hash;  /* hash of text -> frame index (collisions probe hash+1) */
	u64map list_node;   /* offset of a frames list -> stack index + 1 */
	uint64_t *ips;      /* the ips of every converted list, back to back */
	size_t nips, ipcap;
	uint64_t *stk_off;  /* per stack index: offset in ips << 16 | depth */
	uint32_t *stk_id;   /* per stack index: writer's stack id, 0 = not yet */
	size_t nstk, scap;
	/* the trace entries and annotations as they come */
	uint32_t list_at;   /* offset of the trace list read last */
	uint64_t t_prev, order, nann;
	uint64_t entry_i;   /* the entry's index in its device's trace */
	/* the first malformed item, said once the pickle has been read whole (a
	 * pickle cut short is said as such first); malformed() sets it */
	char *refusal;
	int malformed_now;
	char **names;       /* annotation names, owned */
	size_t nnames, namecap;
} importer;

static int oom(importer *im)
{
	snprintf(im->err, im->errlen, "%s: out of memory", im->path);
	return -1;
}

static const char *type_name(const pk_val *v)
{
	static const char *const n[] = {"None", "a bool", "an int", "an int", "a float", "a str", "bytes",
	                                "a list", "a tuple", "a dict"};
	return v->type < sizeof n / sizeof n[0] ? n[v->type] : "a value";
}

/* A malformed snapshot is refused in one line naming the offset and what
 * is wrong, never imported with made-up figures: -1 with err set. */
static int malformed(importer *im, const pk_val *at, const char *what, const char *key, const char *why)
{
	snprintf(im->err, im->errlen, "%s: offset %" PRIu32 ": not a valid PyTorch memory snapshot: %s%s%s%s %s",
	         im->path, at->offset, what, key ? " '" : "", key ? key : "", key ? "'" : "", why);
	im->malformed_now = 1;
	return -1;
}

/* obj[key] as a byte count or address: a non-negative integer.  Absent:
 * dflt when not required.  0, or -1 with err set. */
static int get_uint(importer *im, const pk_val *obj, const char *what, const char *key, int required, uint64_t dflt,
                    uint64_t *out)
{
	const pk_val *v = pk_get(obj, key);
	if (!v) {
		*out = dflt;
		return required ? malformed(im, obj, what, key, "is missing") : 0;
	}
	if ((v->type == PK_INT && v->u.i >= 0) || (v->type == PK_BIGINT && v->n)) {
		*out = pk_uint(v, 0);
		return 0;
	}
	char why[64];
	if (v->type == PK_INT)
		snprintf(why, sizeof why, "is negative (%" PRId64 ")", v->u.i);
	else if (v->type == PK_BIGINT)
		snprintf(why, sizeof why, "does not fit 64 bits");
	else
		snprintf(why, sizeof why, "is %s, not a byte count", type_name(v));
	return malformed(im, v, what, key, why);
}

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

/* Frame index (>= 0) of a frame dict, -1 when it is not a frame, -2 on OOM. */
static int64_t frame_of(importer *im, const pk_val *f)
{
	uint64_t v;
	if (u64map_get(&im->frame_node, f->offset, &v))
		return (int64_t)v - 1;
	int64_t idx = -1;
	if (f->type == PK_DICT) {
		const char *name = pk_str(pk_get(f, "name"), "??");
		const char *file = pk_str(pk_get(f, "filename"), "??");
		int64_t line = pk_int(pk_get(f, "line"), 0);
		size_t len = strlen(name) + strlen(file) + 48, pre = sizeof STP_SRCFRAME_PREFIX - 1;
		char *t = malloc(len);
		if (!t)
			return -2;
		snprintf(t, len, STP_SRCFRAME_PREFIX "%s\x1f%s\x1f%" PRId64, name, file, line < 0 ? 0 : line);
		/* a \x1f inside the name or file would break the split */
		for (size_t c = pre; t[c]; c++)
			if (t[c] == '\x1f' && c != pre + strlen(name) && c != pre + strlen(name) + 1 + strlen(file))
				t[c] = ' ';
		uint64_t h = fnv(t), k;
		while (u64map_get(&im->frame_hash, h, &k)) {
			if (!strcmp(im->ftext[k], t))
				break;
			h++;
		}
		if (u64map_get(&im->frame_hash, h, &k)) {
			free(t);
			idx = (int64_t)k;
		} else {
			if (im->nf == im->fcap) {
				size_t nc = im->fcap ? im->fcap * 2 : 256;
				char **nt = realloc(im->ftext, nc * sizeof *nt);
				if (!nt) {
					free(t);
					return -2;
				}
				im->ftext = nt;
				im->fcap = nc;
			}
			im->ftext[im->nf] = t;
			idx = (int64_t)im->nf++;
			if (u64map_put(&im->frame_hash, h, (uint64_t)idx) < 0)
				return -2;
		}
	}
	if (u64map_put(&im->frame_node, f->offset, (uint64_t)(idx + 1)) < 0)
		return -2;
	return idx;
}

/* Converts a frames list once; the stack index + 1 (0: no frames). -1 on OOM. */
static int64_t stack_of(importer *im, const pk_val *frames)
{
	if (!pk_is_seq(frames) || !frames->n)
		return 0;
	uint64_t v;
	if (u64map_get(&im->list_node, frames->offset, &v))
		return (int64_t)v;
	uint32_t n = frames->n < MAX_DEPTH ? frames->n : MAX_DEPTH, depth = 0;
	if (im->nips + n > im->ipcap) {
		size_t nc = im->ipcap ? im->ipcap * 2 : 4096;
		while (nc < im->nips + n)
			nc *= 2;
		uint64_t *ni = realloc(im->ips, nc * sizeof *ni);
		if (!ni)
			return -1;
		im->ips = ni;
		im->ipcap = nc;
	}
	for (uint32_t i = 0; i < n; i++) {
		int64_t fi = frame_of(im, frames->u.items[i]);
		if (fi == -2)
			return -1;
		if (fi >= 0)
			im->ips[im->nips + depth++] = (uint64_t)fi;
	}
	int64_t r = 0;
	if (depth) {
		if (im->nstk == im->scap) {
			size_t nc = im->scap ? im->scap * 2 : 256;
			uint64_t *no = realloc(im->stk_off, nc * sizeof *no);
			if (no)
				im->stk_off = no;
			uint32_t *ns = no ? realloc(im->stk_id, nc * sizeof *ns) : NULL;
			if (!ns)
				return -1;
			im->stk_id = ns;
			im->scap = nc;
		}
		im->stk_off[im->nstk] = (uint64_t)im->nips << 16 | depth;
		im->stk_id[im->nstk] = 0;
		im->nips += depth;
		r = (int64_t)++im->nstk;
	}
	if (u64map_put(&im->list_node, frames->offset, (uint64_t)r) < 0)
		return -1;
	return r;
}

/* e->stack from a frames list; 0, or -1 after the error. */
static int set_stack(importer *im, imp_ev *e, const pk_val *frames)
{
	int64_t s = frames ? stack_of(im, frames) : 0;
	if (s < 0)
		return oom(im);
	e->stack = (uint32_t)s;
	return 0;
}

/* The blocks of one segment into end_allocs (allocated ones).  Each block
 * must lie inside its segment (PyTorch's blocks tile it). */
static int read_blocks(importer *im, const pk_val *seg, const imp_ev *sev, uint32_t si)
{
	const pk_val *blocks = pk_get(seg, "blocks");
	if (!blocks)
		return 0;
	char what[96];
	snprintf(what, sizeof what, "segment %u's", si);
	if (!pk_is_seq(blocks))
		return malformed(im, blocks, what, "blocks", "is not a list");
	uint64_t addr = sev->addr, seg_end = sev->addr + sev->size;
	for (uint32_t i = 0; i < blocks->n; i++) {
		const pk_val *b = blocks->u.items[i];
		snprintf(what, sizeof what, "block %u of segment %u", i, si);
		if (b->type != PK_DICT)
			return malformed(im, b, what, NULL, "is not a dict");
		im->st->blocks++;
		uint64_t size, at, req;
		if (get_uint(im, b, what, "size", 1, 0, &size) < 0 || get_uint(im, b, what, "address", 0, addr, &at) < 0 ||
		    get_uint(im, b, what, "requested_size", 0, 0, &req) < 0)
			return -1;
		if (at < sev->addr || at > seg_end || size > seg_end - at) {
			char why[160];
			snprintf(why, sizeof why, "(%" PRIu64 " bytes at 0x%" PRIx64 ") does not fit its segment (%" PRIu64
			         " bytes at 0x%" PRIx64 ")",
			         size, at, sev->size, sev->addr);
			return malformed(im, b, what, NULL, why);
		}
		addr = at + size;
		const char *state = pk_str(pk_get(b, "state"), "");
		if (strcmp(state, "active_allocated") && strcmp(state, "active_pending_free"))
			continue;
		const pk_val *frames = pk_get(b, "frames");
		const pk_val *hist = pk_get(b, "history");
		if (pk_is_seq(hist) && hist->n) { /* 1.13 / 2.0: the last history entry is the live one */
			const pk_val *h = hist->u.items[hist->n - 1];
			if (!frames)
				frames = pk_get(h, "frames");
			if (!req && h->type == PK_DICT && get_uint(im, h, what, "real_size", 0, 0, &req) < 0)
				return -1;
		}
		imp_ev e = {.type = STP_EV_ALLOC, .device = sev->device, .addr = at, .size = size,
		            .requested = req ? req : size, .stream = sev->stream};
		if (set_stack(im, &e, frames) < 0 || imp_push(&im->end_allocs, &e) < 0)
			return oom(im);
	}
	return 0;
}

/* One segment (of `segments`, or of a 1.13 snapshot's list). */
static int segment_in(importer *im, const pk_val *s)
{
	uint32_t i = (uint32_t)im->st->segments;
	char what[64];
	snprintf(what, sizeof what, "segment %u", i);
	if (s->type != PK_DICT)
		return malformed(im, s, what, NULL, "is not a dict");
	im->st->segments++;
	uint64_t device, stream;
	imp_ev e = {.type = STP_EV_SEGMENT_RESERVE};
	if (get_uint(im, s, what, "device", 0, 0, &device) < 0 || get_uint(im, s, what, "address", 1, 0, &e.addr) < 0 ||
	    get_uint(im, s, what, "total_size", 1, 0, &e.size) < 0 || get_uint(im, s, what, "stream", 0, 0, &stream) < 0)
		return -1;
	if (device > INT32_MAX)
		return malformed(im, s, what, "device", "is not a device index");
	if (e.addr + e.size < e.addr)
		return malformed(im, s, what, NULL, "ends past the 64-bit address space");
	e.device = (int32_t)device;
	e.stream = stream;
	e.requested = e.size;
	/* a segment of stprof's own export is left out at the end (synthetic) */
	if (set_stack(im, &e, pk_get(s, "frames")) < 0 || imp_push(&im->end_segs, &e) < 0)
		return oom(im);
	return read_blocks(im, s, &e, i);
}

/* One trace entry of the device whose trace is `list`. */
static int entry_in(importer *im, const pk_val *list, const pk_val *en)
{
	if (list->offset != im->list_at) { /* the next device's trace */
		im->list_at = list->offset;
		im->t_prev = 0;
		im->entry_i = 0;
	}
	char what[96];
	snprintf(what, sizeof what, "trace entry %" PRIu64 " of device %u", im->entry_i++, (unsigned)list->pos);
	if (en->type != PK_DICT)
		return malformed(im, en, what, NULL, "is not a dict");
	im->st->entries++;
	const char *act = pk_str(pk_get(en, "action"), "");
	/* the entries that are about memory carry an address and a size */
	int mem = !strcmp(act, "alloc") || !strncmp(act, "free_", 5) || !strncmp(act, "segment_", 8);
	uint64_t size, addr, stream;
	if (get_uint(im, en, what, "size", mem, 0, &size) < 0 || get_uint(im, en, what, "addr", mem, 0, &addr) < 0 ||
	    get_uint(im, en, what, "stream", 0, 0, &stream) < 0)
		return -1;
	imp_ev e = {.device = (int32_t)list->pos, .addr = addr, .size = size, .requested = size, .stream = stream};
	const pk_val *tu = pk_get(en, "time_us");
	e.time_ns = tu ? pk_uint(tu, 0) * 1000 : im->t_prev + 1000;
	if (e.time_ns < im->t_prev)
		e.time_ns = im->t_prev; /* keep each device's order */
	im->t_prev = e.time_ns;
	if (!strcmp(act, "alloc")) {
		e.type = STP_EV_ALLOC;
		e.size = imp_round(size);
	} else if (!strcmp(act, "free_completed")) {
		e.type = STP_EV_FREE;
		e.size = imp_round(size);
	} else if (!strcmp(act, "segment_alloc") || !strcmp(act, "segment_map")) {
		e.type = STP_EV_SEGMENT_RESERVE;
	} else if (!strcmp(act, "segment_free") || !strcmp(act, "segment_unmap")) {
		e.type = STP_EV_SEGMENT_RELEASE;
	} else if (!strcmp(act, "oom") || !strcmp(act, "snapshot")) {
		e.type = STP_EV_MARKER;
		e.mark_kind = STP_MARK_ANNOTATION;
		e.name = !strcmp(act, "oom") ? "oom" : "snapshot";
		e.value = !strcmp(act, "oom") ? (int64_t)pk_uint(pk_get(en, "device_free"), e.addr) : 0;
	} else if (!strcmp(act, "free_requested")) {
		return 0;
	} else {
		im->st->skipped++;
		return 0;
	}
	e.order = im->order++;
	/* only events that carry a call path convert their frames */
	if ((e.type == STP_EV_ALLOC || e.type == STP_EV_SEGMENT_RESERVE) && set_stack(im, &e, pk_get(en, "frames")) < 0)
		return -1;
	if (imp_push(&im->trace, &e) < 0)
		return oom(im);
	if (strcmp(act, "oom") || !size)
		return 0;
	/* the refused request itself, after its annotation: the bytes asked
	 * for, at the line that asked */
	imp_ev q = {.type = STP_EV_REFUSED, .device = e.device, .size = size, .requested = size, .stream = stream,
	            .time_ns = e.time_ns, .order = im->order++};
	if (set_stack(im, &q, pk_get(en, "frames")) < 0)
		return -1;
	return imp_push(&im->trace, &q) < 0 ? oom(im) : 0;
}

/* One external annotation. */
static int annotation_in(importer *im, const pk_val *a)
{
	uint64_t i = im->nann++;
	const char *stage = pk_str(pk_get(a, "stage"), "");
	const char *name = pk_str(pk_get(a, "name"), NULL);
	const pk_val *tu = pk_get(a, "time_us");
	if (!name || !tu || (strcmp(stage, "START") && strcmp(stage, "END")))
		return 0;
	if (im->nnames == im->namecap) {
		size_t nc = im->namecap ? im->namecap * 2 : 64;
		char **nn = realloc(im->names, nc * sizeof *nn);
		if (!nn)
			return oom(im);
		im->names = nn;
		im->namecap = nc;
	}
	char *copy = strdup(name);
	if (!copy)
		return oom(im);
	im->names[im->nnames++] = copy;
	imp_ev e = {.type = STP_EV_MARKER, .time_ns = pk_uint(tu, 0) * 1000, .name = copy,
	            .device = (int32_t)pk_int(pk_get(a, "device"), 0),
	            .mark_kind = !strcmp(stage, "START") ? STP_MARK_MODULE_ENTER : STP_MARK_MODULE_EXIT,
	            .order = UINT64_MAX / 2 + i};
	return imp_push(&im->trace, &e) < 0 ? oom(im) : 0;
}

/* The reader hands on each item of a `stream` list. */
static int sink(void *ctx, const pk_val *list, const pk_val *item, char *err, size_t errlen)
{
	(void)err;
	(void)errlen; /* im->err is the same buffer */
	importer *im = ctx;
	if (im->refusal)
		return 0; /* refused already: read on to the end, for a pickle cut short */
	int rc = 0;
	switch (places[list->place].items) {
	case P_SEG: rc = segment_in(im, item); break;
	case P_ENTRY: rc = entry_in(im, list, item); break;
	case P_ANN: rc = annotation_in(im, item); break;
	}
	if (rc < 0 && im->malformed_now) {
		if (!(im->refusal = strdup(im->err)))
			return oom(im);
		return 0;
	}
	return rc;
}

static int by_time(const void *a, const void *b)
{
	const imp_ev *x = a, *y = b;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* ------------------------------------------------------------ writing */

/* Frames numbered by first use in out's order (so an export imported back
 * numbers them alike): perm[old] = new + 1 (0: unused); returns how many. */
static size_t number_frames(importer *im, uint32_t *perm)
{
	size_t next = 0;
	for (size_t i = 0; i < im->out.n; i++) {
		uint32_t s = im->out.v[i].stack;
		if (!s)
			continue;
		const uint64_t *ip = im->ips + (im->stk_off[s - 1] >> 16);
		for (uint32_t k = 0; k < (im->stk_off[s - 1] & 0xffff); k++)
			if (!perm[ip[k]])
				perm[ip[k]] = (uint32_t)++next;
	}
	return next;
}

static uint32_t stack_id(importer *im, stp_writer *w, uint32_t s, const uint32_t *perm)
{
	if (!s)
		return 0;
	size_t k = s - 1;
	if (!im->stk_id[k]) {
		uint64_t ips[MAX_DEPTH];
		uint32_t depth = (uint32_t)(im->stk_off[k] & 0xffff);
		const uint64_t *fi = im->ips + (im->stk_off[k] >> 16);
		for (uint32_t i = 0; i < depth; i++)
			ips[i] = STP_SRCFRAME_BASE + (uint64_t)(perm[fi[i]] - 1) * STP_SRCFRAME_STRIDE;
		im->stk_id[k] = stp_writer_stack(w, ips, depth);
	}
	return im->stk_id[k];
}

static int write_trace(importer *im, const char *out, const uint32_t *perm, const uint32_t *order, size_t nused)
{
	stp_writer *w = stp_writer_open(out, im->err, im->errlen);
	if (!w)
		return -1;
	/* the first events at the first entry's time: a trace's times count from it */
	uint64_t t0 = im->out.n ? im->out.v[0].time_ns : 0;
	stp_event ev = {.type = STP_EV_PROCESS, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = t0};
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "PyTorch memory snapshot %s", im->path);
	ev.u.process = (stp_process_info){.rank = -1, .local_rank = -1, .world_size = -1,
	                                  .cmdline = stp_writer_string(w, cmd), .exe = stp_writer_string(w, im->path)};
	int bad = stp_writer_event(w, &ev) < 0;
	ev = (stp_event){.type = STP_EV_THREAD, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = t0};
	ev.u.thread.tid = 1;
	ev.u.thread.name = stp_writer_string(w, "pytorch");
	bad |= stp_writer_event(w, &ev) < 0;
	for (size_t i = 0; i < nused && !bad; i++) {
		ev = (stp_event){.type = STP_EV_MODULE, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = t0};
		uint64_t base = STP_SRCFRAME_BASE + i * STP_SRCFRAME_STRIDE;
		ev.u.module = (stp_module_info){.path = stp_writer_string(w, im->ftext[order[i]]), .base = base,
		                                .size = STP_SRCFRAME_STRIDE, .bias = base};
		bad |= stp_writer_event(w, &ev) < 0;
	}
	if (im->st->outside_allocs && !bad) { /* detector.h: stp_det_result.segments_dropped */
		ev = (stp_event){.type = STP_EV_MARKER, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = t0};
		ev.u.marker = (stp_marker_info){.kind = STP_MARK_ANNOTATION,
		                                .name = stp_writer_string(w, "stprof.segments_dropped"),
		                                .value = (int64_t)im->st->outside_allocs};
		bad |= stp_writer_event(w, &ev) < 0;
	}
	for (size_t i = 0; i < im->out.n && !bad; i++) {
		const imp_ev *e = &im->out.v[i];
		ev = (stp_event){.type = e->type, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = e->time_ns};
		switch (e->type) {
		case STP_EV_ALLOC:
		case STP_EV_SEGMENT_RESERVE:
		case STP_EV_REFUSED:
			ev.u.alloc = (stp_alloc_info){.addr = e->addr, .size = e->size, .requested = e->requested,
			                              .stack = stack_id(im, w, e->stack, perm), .kind = STP_MEM_DEVICE,
			                              .device = e->device, .stream = e->stream};
			break;
		case STP_EV_SEGMENT_RELEASE: /* the segment layout, stack 0 */
			ev.u.segment = (stp_segment_info){.addr = e->addr, .size = e->size, .requested = e->size,
			                                  .kind = STP_MEM_DEVICE, .device = e->device, .stream = e->stream};
			break;
		case STP_EV_FREE:
			ev.u.free = (stp_free_info){.addr = e->addr, .size = e->size, .kind = STP_MEM_DEVICE,
			                            .device = e->device, .stream = e->stream};
			break;
		default:
			ev.u.marker = (stp_marker_info){.kind = e->mark_kind, .name = stp_writer_string(w, e->name),
			                                .value = e->value};
			break;
		}
		bad |= stp_writer_event(w, &ev) < 0;
		im->st->events++;
	}
	if (bad) {
		snprintf(im->err, im->errlen, "%s: cannot write the trace", out);
		stp_writer_discard(w);
		return -1;
	}
	/* a snapshot is the state of a program that went on running */
	if (stp_writer_close(w, STP_END_SNAPSHOT, 0) < 0) {
		snprintf(im->err, im->errlen, "%s: cannot write the trace", out);
		return -1;
	}
	return 0;
}

/* After the pickle is read: the layout, the state before the first entry,
 * the trace. */
static int import_doc(importer *im, const pk_val *root, const char *out)
{
	if (root->type == PK_DICT) {
		if (!pk_is_seq(pk_get(root, "segments"))) {
			snprintf(im->err, im->errlen, "%s: offset %" PRIu32 ": not a PyTorch memory snapshot (a dict without 'segments')",
			         im->path, root->offset);
			return -1;
		}
		im->st->layout = 2;
		if (pk_int(pk_get(pk_get(root, "stprof"), "synthetic_segments"), 0) != 0) {
			im->st->synthetic_segments = 1;
			im->end_segs.n = 0; /* stprof's export made them up */
		}
		const pk_val *dt = pk_get(root, "device_traces");
		if (dt && !pk_is_seq(dt))
			return malformed(im, dt, "its", "device_traces", "is not a list");
	} else if (root->type == PK_LIST) {
		im->st->layout = 113;
	} else {
		snprintf(im->err, im->errlen, "%s: offset %" PRIu32 ": not a PyTorch memory snapshot (top level is neither a dict nor a list)",
		         im->path, root->offset);
		return -1;
	}
	/* items of the segments list that were no segment (not a dict: a
	 * number, a list) were dropped by the reader: counted, for a warning */
	const pk_val *sl = root->type == PK_DICT ? pk_get(root, "segments") : root;
	uint64_t items = sl ? (uint64_t)sl->cap : 0;
	im->st->dropped_segments = items > im->st->segments ? items - im->st->segments : 0;
	if (im->trace.n)
		qsort(im->trace.v, im->trace.n, sizeof *im->trace.v, by_time);
	if (imp_replay_initial(&im->end_segs, &im->end_allocs, &im->trace, &im->out) < 0)
		return oom(im);
	uint64_t t0 = im->trace.n ? im->trace.v[0].time_ns : 0;
	for (size_t i = 0; i < im->out.n; i++) {
		im->out.v[i].time_ns = t0;
		if (im->out.v[i].type == STP_EV_ALLOC)
			im->st->initial_allocs++;
		else
			im->st->initial_segments++;
	}
	for (size_t i = 0; i < im->trace.n; i++)
		if (imp_push(&im->out, &im->trace.v[i]) < 0)
			return oom(im);
	/* every allocation lies in a segment of its device, or the segments are
	 * not the allocator's whole state: they are dropped (an efficiency from
	 * them would be impossible) and the trace says so */
	uint64_t outside = imp_outside_segments(&im->out, &im->st->first_outside_addr);
	if (outside == UINT64_MAX)
		return oom(im);
	if (outside) {
		size_t k = 0;
		for (size_t i = 0; i < im->out.n; i++)
			if (im->out.v[i].type != STP_EV_SEGMENT_RESERVE && im->out.v[i].type != STP_EV_SEGMENT_RELEASE)
				im->out.v[k++] = im->out.v[i];
		im->out.n = k;
		im->st->outside_allocs = outside;
	}
	/* only events that carry a call path: frames are interned in the order
	 * the trace uses them, so an export imported back numbers them alike */
	for (size_t i = 0; i < im->out.n; i++)
		if (im->out.v[i].type != STP_EV_ALLOC && im->out.v[i].type != STP_EV_SEGMENT_RESERVE &&
		    im->out.v[i].type != STP_EV_REFUSED)
			im->out.v[i].stack = 0;
	uint32_t *perm = calloc(im->nf + 1, sizeof *perm), *order = calloc(im->nf + 1, sizeof *order);
	int rc = -1;
	if (!perm || !order) {
		oom(im);
	} else {
		size_t used = number_frames(im, perm);
		for (size_t i = 0; i < im->nf; i++)
			if (perm[i])
				order[perm[i] - 1] = (uint32_t)i;
		im->st->frames = used;
		rc = write_trace(im, out, perm, order, used);
	}
	free(perm);
	free(order);
	return rc;
}

static void importer_free(importer *im)
{
	for (size_t i = 0; i < im->nf; i++)
		free(im->ftext[i]);
	free(im->ftext);
	for (size_t i = 0; i < im->nnames; i++)
		free(im->names[i]);
	free(im->names);
	u64map_free(&im->frame_node);
	u64map_free(&im->frame_hash);
	u64map_free(&im->list_node);
	free(im->ips);
	free(im->stk_off);
	free(im->stk_id);
	free(im->end_segs.v);
	free(im->end_allocs.v);
	free(im->trace.v);
	free(im->out.v);
}

/* The file at path (data NULL) or data[0..len), named name. */
static int import(const char *path, const uint8_t *data, size_t len, const char *name, const char *out_stp,
                  stp_snapshot_import_stats *st, char *err, size_t errlen)
{
	stp_snapshot_import_stats dummy;
	if (!st)
		st = &dummy;
	memset(st, 0, sizeof *st);
	importer im = {.path = name, .err = err, .errlen = errlen, .st = st, .list_at = UINT32_MAX};
	pk_shape shape = {.places = places, .nplaces = NPLACES, .strings = strings, .sink = sink, .ctx = &im};
	pk_doc *doc = pk_read(path, data, len, name, &shape, err, errlen);
	int rc = -1;
	if (doc && im.refusal) {
		snprintf(err, errlen, "%s", im.refusal);
	} else if (doc) {
		st->protocol = pk_protocol(doc);
		rc = import_doc(&im, pk_root(doc), out_stp);
	}
	free(im.refusal);
	pk_free(doc);
	importer_free(&im);
	return rc;
}

int snap_import_mem(const uint8_t *data, size_t len, const char *name, const char *out_stp,
                    stp_snapshot_import_stats *st, char *err, size_t errlen)
{
	return import(NULL, data, len, name, out_stp, st, err, errlen);
}

int stp_snapshot_import(const char *pickle, const char *out_stp, stp_snapshot_import_stats *st, char *err,
                        size_t errlen)
{
	return import(pickle, NULL, 0, pickle, out_stp, st, err, errlen);
}

int stp_snapshot_is_pickle(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	int c = fgetc(f);
	fclose(f);
	return c == 0x80;
}
