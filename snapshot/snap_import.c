/*
 * snap_import.c - a PyTorch memory snapshot (pickle) into a .stp trace.
 *
 * Reads both layouts (stprof/snapshot.h) into imp_ev records:
 *   - the state before the ring buffer's first entry (snap_replay.c), or
 *     the whole `segments` state when there is no trace (1.13);
 *   - every trace entry: alloc -> ALLOC, free_completed -> FREE,
 *     segment_alloc / segment_map -> SEGMENT_RESERVE, segment_free /
 *     segment_unmap -> SEGMENT_RELEASE, oom and snapshot -> ANNOTATION
 *     markers (oom's value: the device's free bytes), free_requested is
 *     dropped (the block stays allocated until free_completed);
 *   - external annotations START/END -> MODULE_ENTER/EXIT markers.
 * Each distinct frame {filename, line, name} becomes a source frame
 * (stprof/srcframe.h); a frames list becomes a call path, innermost first
 * as PyTorch lists them.  Shared pickle nodes (frames, frame lists) are
 * converted once, by node address, so work is O(pickle size).
 * Times: time_us when the entries have it, else 1 us per entry in order.
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

typedef struct importer {
	const char *path;
	char *err;
	size_t errlen;
	stp_snapshot_import_stats *st;
	imp_vec end_segs, end_allocs, trace, out;
	/* frames */
	snap_frames frames; /* "srcframe:" name \x1f file \x1f line */
	u64map frame_node;  /* pk_val* of a frame dict -> frame index + 1 (0: none) */
	u64map frame_hash;  /* hash of text -> frame index (collisions probe hash+1) */
	u64map list_node;   /* pk_val* of a frames list -> stack index */
	uint64_t *ips;      /* the ips of every converted list, back to back */
	size_t nips, ipcap;
	uint64_t *stk_off;  /* per stack index: offset in ips << 16 | depth */
	uint32_t *stk_id;   /* per stack index: writer's stack id, 0 = not yet */
	size_t nstk, scap;
	int synthetic;
} importer;

static int oom(importer *im)
{
	snprintf(im->err, im->errlen, "%s: out of memory", im->path);
	return -1;
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
	if (u64map_get(&im->frame_node, (uint64_t)(uintptr_t)f, &v))
		return (int64_t)v - 1;
	int64_t idx = -1;
	if (f->type == PK_DICT) {
		const char *name = pk_str(pk_get(f, "name"), "??");
		const char *file = pk_str(pk_get(f, "filename"), "??");
		int64_t line = pk_int(pk_get(f, "line"), 0);
		char *t = snap_frame_text(name, strlen(name), file, strlen(file), line);
		if (!t)
			return -2;
		uint64_t h = fnv(t), k;
		while (u64map_get(&im->frame_hash, h, &k)) {
			if (!strcmp(im->frames.text[k], t))
				break;
			h++;
		}
		if (u64map_get(&im->frame_hash, h, &k)) {
			free(t);
			idx = (int64_t)k;
		} else {
			if ((idx = snap_frames_add(&im->frames, t)) < 0)
				return -2;
			if (u64map_put(&im->frame_hash, h, (uint64_t)idx) < 0)
				return -2;
		}
	}
	if (u64map_put(&im->frame_node, (uint64_t)(uintptr_t)f, (uint64_t)(idx + 1)) < 0)
		return -2;
	return idx;
}

/* Converts a frames list once; the stack index + 1 (0: no frames). -1 on OOM. */
static int64_t stack_of(importer *im, const pk_val *frames)
{
	if (!pk_is_seq(frames) || !frames->n)
		return 0;
	uint64_t v;
	if (u64map_get(&im->list_node, (uint64_t)(uintptr_t)frames, &v))
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
			im->ips[im->nips + depth++] = STP_SRCFRAME_BASE + (uint64_t)fi * STP_SRCFRAME_STRIDE;
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
	if (u64map_put(&im->list_node, (uint64_t)(uintptr_t)frames, (uint64_t)r) < 0)
		return -1;
	return r;
}

/* The blocks of one segment into end_allocs (allocated ones). */
static int read_blocks(importer *im, const pk_val *seg, const imp_ev *sev)
{
	const pk_val *blocks = pk_get(seg, "blocks");
	if (!pk_is_seq(blocks))
		return 0;
	uint64_t addr = sev->addr;
	for (uint32_t i = 0; i < blocks->n; i++) {
		const pk_val *b = blocks->u.items[i];
		if (b->type != PK_DICT)
			continue;
		im->st->blocks++;
		uint64_t size = pk_uint(pk_get(b, "size"), 0);
		uint64_t at = pk_uint(pk_get(b, "address"), addr);
		addr = at + size;
		const char *state = pk_str(pk_get(b, "state"), "");
		if (strcmp(state, "active_allocated") && strcmp(state, "active_pending_free"))
			continue;
		const pk_val *frames = pk_get(b, "frames");
		uint64_t req = pk_uint(pk_get(b, "requested_size"), 0);
		const pk_val *hist = pk_get(b, "history");
		if (pk_is_seq(hist) && hist->n) { /* 1.13 / 2.0: the last history entry is the live one */
			const pk_val *h = hist->u.items[hist->n - 1];
			if (!frames)
				frames = pk_get(h, "frames");
			if (!req)
				req = pk_uint(pk_get(h, "real_size"), 0);
		}
		imp_ev e = {.type = STP_EV_ALLOC, .device = sev->device, .addr = at, .size = size,
		            .requested = req ? req : size, .stream = sev->stream, .frames = frames};
		if (imp_push(&im->end_allocs, &e) < 0)
			return oom(im);
	}
	return 0;
}

static int read_segments(importer *im, const pk_val *segs)
{
	if (!pk_is_seq(segs))
		return 0;
	for (uint32_t i = 0; i < segs->n; i++) {
		const pk_val *s = segs->u.items[i];
		if (s->type != PK_DICT)
			continue;
		im->st->segments++;
		imp_ev e = {.type = STP_EV_SEGMENT_RESERVE, .device = (int32_t)pk_int(pk_get(s, "device"), 0),
		            .addr = pk_uint(pk_get(s, "address"), 0), .size = pk_uint(pk_get(s, "total_size"), 0),
		            .stream = pk_uint(pk_get(s, "stream"), 0), .frames = pk_get(s, "frames")};
		e.requested = e.size;
		if (!im->synthetic && imp_push(&im->end_segs, &e) < 0)
			return oom(im);
		if (read_blocks(im, s, &e) < 0)
			return -1;
	}
	return 0;
}

static int read_trace(importer *im, const pk_val *dt)
{
	if (!pk_is_seq(dt))
		return 0;
	uint64_t order = 0;
	for (uint32_t d = 0; d < dt->n; d++) {
		const pk_val *tr = dt->u.items[d];
		if (!pk_is_seq(tr))
			continue;
		uint64_t t_prev = 0;
		for (uint32_t i = 0; i < tr->n; i++) {
			const pk_val *en = tr->u.items[i];
			im->st->entries++;
			const char *act = pk_str(pk_get(en, "action"), "");
			uint64_t size = pk_uint(pk_get(en, "size"), 0);
			imp_ev e = {.device = (int32_t)d, .addr = pk_uint(pk_get(en, "addr"), 0), .size = size,
			            .requested = size, .stream = pk_uint(pk_get(en, "stream"), 0),
			            .frames = pk_get(en, "frames")};
			const pk_val *tu = pk_get(en, "time_us");
			e.time_ns = tu ? pk_uint(tu, 0) * 1000 : t_prev + 1000;
			if (e.time_ns < t_prev)
				e.time_ns = t_prev; /* keep each device's order */
			t_prev = e.time_ns;
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
				e.name = act;
				e.value = !strcmp(act, "oom") ? (int64_t)pk_uint(pk_get(en, "device_free"), e.addr) : 0;
			} else if (!strcmp(act, "free_requested")) {
				continue;
			} else {
				im->st->skipped++;
				continue;
			}
			e.order = order++;
			if (imp_push(&im->trace, &e) < 0)
				return oom(im);
		}
	}
	return 0;
}

static int read_annotations(importer *im, const pk_val *ann)
{
	if (!pk_is_seq(ann))
		return 0;
	for (uint32_t i = 0; i < ann->n; i++) {
		const pk_val *a = ann->u.items[i];
		const char *stage = pk_str(pk_get(a, "stage"), "");
		const char *name = pk_str(pk_get(a, "name"), NULL);
		const pk_val *tu = pk_get(a, "time_us");
		if (!name || !tu || (strcmp(stage, "START") && strcmp(stage, "END")))
			continue;
		imp_ev e = {.type = STP_EV_MARKER, .time_ns = pk_uint(tu, 0) * 1000, .name = name,
		            .device = (int32_t)pk_int(pk_get(a, "device"), 0),
		            .mark_kind = !strcmp(stage, "START") ? STP_MARK_MODULE_ENTER : STP_MARK_MODULE_EXIT,
		            .order = UINT64_MAX / 2 + i};
		if (imp_push(&im->trace, &e) < 0)
			return oom(im);
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const imp_ev *x = a, *y = b;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static uint32_t stack_id(importer *im, stp_writer *w, const pk_val *frames)
{
	uint64_t v;
	if (!frames || !u64map_get(&im->list_node, (uint64_t)(uintptr_t)frames, &v) || !v)
		return 0;
	size_t k = (size_t)v - 1;
	if (!im->stk_id[k])
		im->stk_id[k] = stp_writer_stack(w, im->ips + (im->stk_off[k] >> 16), (uint32_t)(im->stk_off[k] & 0xffff));
	return im->stk_id[k];
}

static int write_trace(importer *im, const char *out)
{
	/* the first events at the first entry's time: a trace's times count from it */
	uint64_t t0 = im->out.n ? im->out.v[0].time_ns : 0;
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "PyTorch memory snapshot %s", im->path);
	stp_writer *w = snap_trace_begin(out, cmd, im->path, "pytorch", t0, im->frames.text, im->frames.n, im->err,
	                                 im->errlen);
	if (!w)
		return -1;
	stp_event ev;
	int bad = 0;
	for (size_t i = 0; i < im->out.n && !bad; i++) {
		const imp_ev *e = &im->out.v[i];
		ev = (stp_event){.type = e->type, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = e->time_ns};
		switch (e->type) {
		case STP_EV_ALLOC:
		case STP_EV_SEGMENT_RESERVE:
			ev.u.alloc = (stp_alloc_info){.addr = e->addr, .size = e->size, .requested = e->requested,
			                              .stack = stack_id(im, w, e->frames), .kind = STP_MEM_DEVICE,
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
		stp_writer_abandon(w);
		return -1;
	}
	if (stp_writer_close(w, STP_END_EXIT, 0) < 0) {
		snprintf(im->err, im->errlen, "%s: cannot write the trace", out);
		return -1;
	}
	return 0;
}

static int import_doc(importer *im, const pk_val *root, const char *out)
{
	const pk_val *segs = root, *dt = NULL;
	if (root->type == PK_DICT) {
		segs = pk_get(root, "segments");
		if (!pk_is_seq(segs)) {
			snprintf(im->err, im->errlen, "%s: offset %" PRIu64 ": not a PyTorch memory snapshot (a dict without 'segments')",
			         im->path, root->offset);
			return -1;
		}
		dt = pk_get(root, "device_traces");
		im->st->layout = 2;
		im->synthetic = pk_int(pk_get(pk_get(root, "stprof"), "synthetic_segments"), 0) != 0;
	} else if (root->type == PK_LIST) {
		im->st->layout = 113;
	} else {
		snprintf(im->err, im->errlen, "%s: offset %" PRIu64 ": not a PyTorch memory snapshot (top level is neither a dict nor a list)",
		         im->path, root->offset);
		return -1;
	}
	im->st->synthetic_segments = im->synthetic;
	if (read_segments(im, segs) < 0 || read_trace(im, dt) < 0 ||
	    (root->type == PK_DICT && read_annotations(im, pk_get(root, "external_annotations")) < 0))
		return -1;
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
	/* only events that carry a call path: frames are interned in the order
	 * the trace uses them, so an export imported back numbers them alike */
	for (size_t i = 0; i < im->out.n; i++)
		if ((im->out.v[i].type == STP_EV_ALLOC || im->out.v[i].type == STP_EV_SEGMENT_RESERVE) &&
		    stack_of(im, im->out.v[i].frames) < 0)
			return oom(im);
	im->st->frames = im->frames.n;
	return write_trace(im, out);
}

int snap_import_doc(pk_doc *doc, const char *name, const char *out_stp, stp_snapshot_import_stats *st, char *err,
                    size_t errlen)
{
	stp_snapshot_import_stats dummy;
	if (!st)
		st = &dummy;
	memset(st, 0, sizeof *st);
	st->protocol = pk_protocol(doc);
	importer im = {.path = name, .err = err, .errlen = errlen, .st = st};
	int rc = import_doc(&im, pk_root(doc), out_stp);
	snap_frames_free(&im.frames);
	u64map_free(&im.frame_node);
	u64map_free(&im.frame_hash);
	u64map_free(&im.list_node);
	free(im.ips);
	free(im.stk_off);
	free(im.stk_id);
	free(im.end_segs.v);
	free(im.end_allocs.v);
	free(im.trace.v);
	free(im.out.v);
	return rc;
}

int stp_snapshot_import(const char *pickle, const char *out_stp, stp_snapshot_import_stats *st, char *err,
                        size_t errlen)
{
	if (st)
		memset(st, 0, sizeof *st);
	pk_doc *doc = pk_parse_file(pickle, err, errlen);
	if (!doc)
		return -1;
	int rc = snap_import_doc(doc, pickle, out_stp, st, err, errlen);
	pk_free(doc);
	return rc;
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
