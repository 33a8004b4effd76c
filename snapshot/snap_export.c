/*
 * snap_export.c - any .stp trace as a PyTorch memory snapshot pickle.
 *
 * One pass over the trace keeps the live allocations and segments (hash
 * maps by address) and buffers one trace entry per event:
 *   ALLOC -> alloc; FREE -> free_requested + free_completed (the size and
 *   frames of the allocation, as PyTorch records them); SEGMENT_RESERVE ->
 *   segment_alloc; SEGMENT_RELEASE -> segment_free; ANNOTATION markers
 *   "oom" / "snapshot" -> oom / snapshot (a REFUSED right after an oom
 *   gives it its size and frames; one alone is an oom of its own);
 *   MODULE_ENTER/EXIT, iterations and
 *   phases -> external_annotations START/END.
 * At the end the live segments become `segments`, their blocks the live
 * allocations inside them with `inactive` blocks for the gaps (block sizes
 * add up to total_size, which PyTorch's readers check).  A trace without
 * segments (host heap) gets one segment per live allocation and a key
 * stprof.synthetic_segments = True so that importing it back adds none.
 * Only the allocations of the spaces asked for are written (a PyTorch CPU
 * run's tensors by default, not the interpreter's heap: STP_SNAP_AUTO picks
 * them in a first pass).  Host events go to device 0.  Frames: source
 * frames by their names, other
 * addresses through the caller's resolver; each frame and each call path is
 * written once and shared through the pickle memo.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "stprof/snapshot.h"
#include "stprof/srcframe.h"
#include "stprof/trace.h"
#include "u64map.h"

enum { A_ALLOC, A_FREE_REQ, A_FREE_DONE, A_SEG_ALLOC, A_SEG_FREE, A_OOM, A_SNAPSHOT, A_START, A_END };
static const char *const action_name[] = {"alloc", "free_requested", "free_completed", "segment_alloc",
                                          "segment_free", "oom", "snapshot", "START", "END"};

typedef struct ent {
	uint8_t action;
	uint32_t device;
	uint64_t addr, size, stream, time_us;
	uint32_t stack;
	int64_t value;
	const char *name; /* annotations: owned by the exporter's name table */
} ent;

typedef struct obj {
	uint64_t addr, size, requested, stream;
	uint32_t stack, device;
	int live;
} obj;

typedef struct exporter {
	const stp_snapshot_export_opts *o;
	stp_snapshot_export_stats *st;
	stp_reader *r;
	pk_writer *w;
	ent *ents;
	size_t nents, ecap;
	obj *objs, *segs;
	size_t nobjs, ocap, nsegs, scap;
	u64map live_obj, live_seg; /* addr -> index */
	char **src;                /* source frame copies by index (function\0file\0) */
	const char **src_file;
	uint32_t *src_line;
	size_t nsrc;
	u64map frame_memo, stack_memo; /* ip / stack id -> memo index */
	char **names;
	size_t nnames;
	uint32_t ndev;
	int any_segment;
	unsigned spaces; /* STP_SNAP_* bits written */
} exporter;

static unsigned space_of(const stp_alloc_info *a)
{
	if (a->kind != STP_MEM_HOST)
		return STP_SNAP_DEVICE;
	return a->pool == STP_POOL_TENSORS ? STP_SNAP_TENSORS : STP_SNAP_HEAP;
}

/* STP_SNAP_AUTO: device memory if the trace has any, else tensors, else
 * everything (a first pass over the allocations).  0 with err on a bad trace. */
static unsigned auto_spaces(const char *stp, char *err, size_t errlen)
{
	stp_reader *r = stp_reader_open(stp, err, errlen);
	if (!r)
		return 0;
	unsigned seen = 0;
	stp_event ev;
	int got;
	while ((got = stp_reader_next(r, &ev)) == 1)
		if (ev.type == STP_EV_ALLOC)
			seen |= space_of(&ev.u.alloc);
	if (got < 0)
		snprintf(err, errlen, "%s", stp_reader_error(r));
	stp_reader_close(r);
	if (got < 0)
		return 0;
	return seen & STP_SNAP_DEVICE ? STP_SNAP_DEVICE : seen & STP_SNAP_TENSORS ? STP_SNAP_TENSORS
	                                                                          : STP_SNAP_HEAP | STP_SNAP_TENSORS | STP_SNAP_DEVICE;
}

static int grow(void **p, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 256;
	void *np = realloc(*p, nc * sz);
	if (!np)
		return -1;
	*p = np;
	*cap = nc;
	return 0;
}

static int add_ent(exporter *x, ent e)
{
	if (grow((void **)&x->ents, &x->ecap, x->nents, sizeof *x->ents) < 0)
		return -1;
	if (e.device + 1 > x->ndev)
		x->ndev = e.device + 1;
	x->ents[x->nents++] = e;
	return 0;
}

static int add_obj(obj **v, size_t *n, size_t *cap, u64map *m, obj o)
{
	if (grow((void **)v, cap, *n, sizeof **v) < 0)
		return -1;
	uint64_t old;
	if (u64map_get(m, o.addr, &old))
		(*v)[old].live = 0; /* the same address again: the older one is gone */
	(*v)[*n] = o;
	return u64map_put(m, o.addr, (*n)++);
}

static int add_srcframe(exporter *x, const char *path, uint64_t base)
{
	uint64_t k = (base - STP_SRCFRAME_BASE) / STP_SRCFRAME_STRIDE;
	char *copy;
	const char *fn, *file;
	uint32_t line;
	if (k >= (1u << 26) || stp_srcframe_parse(path, &copy, &fn, &file, &line) < 0)
		return 0;
	if (k >= x->nsrc) {
		size_t nn = k + 1 > x->nsrc * 2 ? k + 1 : x->nsrc * 2;
		char **ns = realloc(x->src, nn * sizeof *ns);
		if (ns)
			x->src = ns;
		const char **nf = ns ? realloc(x->src_file, nn * sizeof *nf) : NULL;
		if (nf)
			x->src_file = nf;
		uint32_t *nl = nf ? realloc(x->src_line, nn * sizeof *nl) : NULL;
		if (!nl) {
			free(copy);
			return -1;
		}
		x->src_line = nl;
		memset(x->src + x->nsrc, 0, (nn - x->nsrc) * sizeof *ns);
		x->nsrc = nn;
	}
	free(x->src[k]);
	x->src[k] = copy;
	x->src_file[k] = file;
	x->src_line[k] = line;
	return 0;
}

static const char *keep_name(exporter *x, const char *s)
{
	char **nn = realloc(x->names, (x->nnames + 1) * sizeof *nn);
	if (!nn)
		return NULL;
	x->names = nn;
	return (x->names[x->nnames] = strdup(s)) ? x->names[x->nnames++] : NULL;
}

static uint32_t dev_of(int32_t d) { return d < 0 ? 0 : (uint32_t)d; }

static int on_event(exporter *x, const stp_event *ev)
{
	uint64_t t = ev->time_ns / 1000, i;
	switch (ev->type) {
	case STP_EV_MODULE: {
		const stp_module_info *m = &ev->u.module;
		const char *path = stp_reader_string(x->r, m->path);
		if (m->base >= STP_SRCFRAME_BASE && stp_srcframe_is(path))
			return add_srcframe(x, path, m->base);
		if (x->o->module)
			x->o->module(x->o->ctx, path, m->base, m->size, m->bias, m->build_id, m->build_id_len);
		return 0;
	}
	case STP_EV_ALLOC: {
		const stp_alloc_info *a = &ev->u.alloc;
		if (!(space_of(a) & x->spaces)) { /* another space: left out (its frees find nothing) */
			if (u64map_get(&x->live_obj, a->addr, &i)) /* ends what it replaces */
				x->objs[i].live = 0, u64map_del(&x->live_obj, a->addr);
			x->st->skipped_allocs++;
			return 0;
		}
		x->st->allocs++;
		obj o = {a->addr, a->size, a->requested ? a->requested : a->size, a->stream, a->stack,
		         dev_of(a->device), 1};
		if (add_obj(&x->objs, &x->nobjs, &x->ocap, &x->live_obj, o) < 0)
			return -1;
		return add_ent(x, (ent){A_ALLOC, o.device, o.addr, o.requested, o.stream, t, o.stack, 0, NULL});
	}
	case STP_EV_REFUSED: {
		/* the oom entry's size and frames: an imported snapshot has its
		 * oom annotation (the device's free bytes) just before; else an
		 * oom of its own */
		const stp_alloc_info *a = &ev->u.alloc;
		if (!(space_of(a) & x->spaces) || stp_refused_attempt(a)) /* a snapshot has only the allocator's oom */
			return 0;
		ent *last = x->nents ? &x->ents[x->nents - 1] : NULL;
		if (last && last->action == A_OOM && !last->size && last->time_us == t) {
			last->size = a->requested, last->stream = a->stream, last->stack = a->stack;
			last->device = dev_of(a->device);
			return 0;
		}
		return add_ent(x, (ent){A_OOM, dev_of(a->device), 0, a->requested, a->stream, t, a->stack, 0, NULL});
	}
	case STP_EV_FREE:
		if (!u64map_get(&x->live_obj, ev->u.free.addr, &i))
			return 0; /* freed memory the trace never saw allocated */
		u64map_del(&x->live_obj, ev->u.free.addr);
		x->objs[i].live = 0;
		{
			const obj *o = &x->objs[i];
			ent e = {A_FREE_REQ, o->device, o->addr, o->requested, o->stream, t, o->stack, 0, NULL};
			if (add_ent(x, e) < 0)
				return -1;
			e.action = A_FREE_DONE;
			return add_ent(x, e);
		}
	case STP_EV_SEGMENT_RESERVE: {
		const stp_segment_info *s = &ev->u.segment;
		if (!(x->spaces & STP_SNAP_DEVICE))
			return 0;
		obj o = {s->addr, s->size, s->size, s->stream, s->stack, dev_of(s->device), 1};
		x->any_segment = 1;
		if (add_obj(&x->segs, &x->nsegs, &x->scap, &x->live_seg, o) < 0)
			return -1;
		return add_ent(x, (ent){A_SEG_ALLOC, o.device, o.addr, o.size, o.stream, t, o.stack, 0, NULL});
	}
	case STP_EV_SEGMENT_RELEASE:
		if (!u64map_get(&x->live_seg, ev->u.segment.addr, &i))
			return 0;
		u64map_del(&x->live_seg, ev->u.segment.addr);
		x->segs[i].live = 0;
		return add_ent(x, (ent){A_SEG_FREE, x->segs[i].device, x->segs[i].addr, x->segs[i].size,
		                        x->segs[i].stream, t, x->segs[i].stack, 0, NULL});
	case STP_EV_MARKER: {
		const stp_marker_info *m = &ev->u.marker;
		const char *name = stp_reader_string(x->r, m->name);
		char buf[64];
		uint8_t act;
		switch (m->kind) {
		case STP_MARK_ANNOTATION:
			if (!strcmp(name, "oom") || !strcmp(name, "snapshot"))
				return add_ent(x, (ent){!strcmp(name, "oom") ? A_OOM : A_SNAPSHOT, 0, 0, 0, 0, t, 0, m->value,
				                        NULL});
			return 0;
		case STP_MARK_ITER_BEGIN:
		case STP_MARK_ITER_END:
			snprintf(buf, sizeof buf, "iteration %" PRId64, m->value);
			name = buf;
			act = m->kind == STP_MARK_ITER_BEGIN ? A_START : A_END;
			break;
		case STP_MARK_PHASE_BEGIN:
		case STP_MARK_MODULE_ENTER: act = A_START; break;
		case STP_MARK_PHASE_END:
		case STP_MARK_MODULE_EXIT: act = A_END; break;
		default: return 0;
		}
		const char *kept = keep_name(x, name);
		return kept ? add_ent(x, (ent){act, 0, 0, 0, 0, t, 0, 0, kept}) : -1;
	}
	default: return 0;
	}
}

/* ------------------------------------------------------------ writing */

static void write_frame(exporter *x, uint64_t ip, int caller)
{
	uint64_t memo;
	uint64_t key = ip ^ ((uint64_t)(caller != 0) << 63);
	if (u64map_get(&x->frame_memo, key, &memo)) {
		pkw_memo_get(x->w, (uint32_t)memo);
		return;
	}
	stp_snap_frame f = {0};
	char buf[64];
	uint64_t k = ip >= STP_SRCFRAME_BASE ? (ip - STP_SRCFRAME_BASE) / STP_SRCFRAME_STRIDE : UINT64_MAX;
	if (k < x->nsrc && x->src[k]) {
		f.name = x->src[k];
		f.filename = x->src_file[k];
		f.line = x->src_line[k];
	} else if (x->o->resolve) {
		x->o->resolve(x->o->ctx, ip, caller, &f);
	}
	if (!f.name) {
		snprintf(buf, sizeof buf, "0x%" PRIx64, ip);
		f.name = buf;
	}
	pkw_dict_begin(x->w);
	pkw_const(x->w, "filename");
	pkw_str(x->w, f.filename && *f.filename ? f.filename : "??");
	pkw_const(x->w, "line");
	pkw_int(x->w, f.line);
	pkw_const(x->w, "name");
	pkw_str(x->w, f.name);
	pkw_dict_end(x->w);
	x->st->frames++;
	u64map_put(&x->frame_memo, key, pkw_memo_put(x->w));
}

static void write_frames(exporter *x, uint32_t stack)
{
	uint64_t memo;
	if (stack && u64map_get(&x->stack_memo, stack, &memo)) {
		pkw_memo_get(x->w, (uint32_t)memo);
		return;
	}
	uint64_t ips[256];
	uint32_t n = stack ? stp_reader_stack(x->r, stack, ips, 256) : 0;
	pkw_list_begin(x->w);
	for (uint32_t i = 0; i < n; i++)
		write_frame(x, ips[i], i > 0);
	pkw_list_end(x->w);
	if (stack)
		u64map_put(&x->stack_memo, stack, pkw_memo_put(x->w));
}

static void kv_uint(pk_writer *w, const char *k, uint64_t v)
{
	pkw_const(w, k);
	pkw_uint(w, v);
}

static void write_entry(exporter *x, const ent *e)
{
	pk_writer *w = x->w;
	pkw_dict_begin(w);
	pkw_const(w, "action");
	pkw_const(w, action_name[e->action]);
	if (e->action == A_OOM) {
		kv_uint(w, "addr", (uint64_t)e->value);
		kv_uint(w, "device_free", (uint64_t)e->value);
	} else {
		kv_uint(w, "addr", e->addr);
	}
	kv_uint(w, "size", e->size);
	kv_uint(w, "stream", e->stream);
	kv_uint(w, "time_us", e->time_us);
	pkw_const(w, "frames");
	write_frames(x, e->stack);
	pkw_dict_end(w);
	x->st->entries++;
}

static void write_block(exporter *x, uint64_t addr, uint64_t size, const obj *o, int layout)
{
	pk_writer *w = x->w;
	pkw_dict_begin(w);
	kv_uint(w, "address", addr);
	kv_uint(w, "size", size);
	kv_uint(w, "requested_size", o ? o->requested : 0);
	pkw_const(w, "state");
	pkw_const(w, o ? "active_allocated" : "inactive");
	pkw_const(w, "frames");
	write_frames(x, o ? o->stack : 0);
	if (layout == 113 && o) {
		pkw_const(w, "history");
		pkw_list_begin(w);
		pkw_dict_begin(w);
		kv_uint(w, "addr", addr);
		kv_uint(w, "real_size", o->requested);
		pkw_const(w, "frames");
		write_frames(x, o->stack);
		pkw_dict_end(w);
		pkw_list_end(w);
	}
	pkw_dict_end(w);
	x->st->blocks++;
}

static int by_addr(const void *a, const void *b)
{
	const obj *x = *(const obj *const *)a, *y = *(const obj *const *)b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* One segment with its blocks; allocs[*ai..] sorted by address, those
 * inside the segment are consumed. */
static void write_segment(exporter *x, const obj *s, obj **allocs, size_t n, size_t *ai, int layout)
{
	pk_writer *w = x->w;
	uint64_t allocated = 0, requested = 0, end = s->addr + s->size;
	size_t from = *ai, to = from;
	uint64_t cur = s->addr;
	while (to < n && allocs[to]->addr >= cur && allocs[to]->addr + allocs[to]->size <= end &&
	       allocs[to]->addr + allocs[to]->size >= allocs[to]->addr) {
		allocated += allocs[to]->size;
		requested += allocs[to]->requested;
		cur = allocs[to]->addr + allocs[to]->size;
		to++;
	}
	pkw_dict_begin(w);
	kv_uint(w, "device", s->device);
	kv_uint(w, "address", s->addr);
	kv_uint(w, "total_size", s->size);
	kv_uint(w, "allocated_size", allocated);
	kv_uint(w, "active_size", allocated);
	kv_uint(w, "requested_size", requested);
	kv_uint(w, "stream", s->stream);
	pkw_const(w, "segment_type");
	pkw_const(w, s->size <= (2u << 20) ? "small" : "large");
	pkw_const(w, "segment_pool_id");
	pkw_tuple_begin(w);
	pkw_int(w, 0);
	pkw_int(w, 0);
	pkw_tuple_end(w);
	pkw_const(w, "is_expandable");
	pkw_bool(w, 0);
	pkw_const(w, "frames");
	write_frames(x, s->stack);
	pkw_const(w, "blocks");
	pkw_list_begin(w);
	cur = s->addr;
	for (size_t i = from; i < to; i++) {
		if (allocs[i]->addr > cur)
			write_block(x, cur, allocs[i]->addr - cur, NULL, layout);
		write_block(x, allocs[i]->addr, allocs[i]->size, allocs[i], layout);
		cur = allocs[i]->addr + allocs[i]->size;
	}
	if (cur < end)
		write_block(x, cur, end - cur, NULL, layout);
	pkw_list_end(w);
	pkw_dict_end(w);
	x->st->segments++;
	*ai = to;
}

static int write_segments(exporter *x, int layout)
{
	size_t nl = 0, ns = 0;
	obj **allocs = malloc((x->nobjs + 1) * sizeof *allocs), **segs = malloc((x->nsegs + 1) * sizeof *segs);
	if (!allocs || !segs) {
		free(allocs);
		free(segs);
		return -1;
	}
	for (size_t i = 0; i < x->nobjs; i++)
		if (x->objs[i].live && x->objs[i].size)
			allocs[nl++] = &x->objs[i];
	for (size_t i = 0; i < x->nsegs; i++)
		if (x->segs[i].live && x->segs[i].size)
			segs[ns++] = &x->segs[i];
	qsort(allocs, nl, sizeof *allocs, by_addr);
	qsort(segs, ns, sizeof *segs, by_addr);
	pkw_list_begin(x->w);
	size_t ai = 0;
	for (size_t s = 0; s < ns; s++) {
		/* allocations below this segment belong to none: a segment each */
		while (ai < nl && allocs[ai]->addr < segs[s]->addr) {
			size_t one = ai;
			write_segment(x, allocs[ai], allocs, ai + 1, &one, layout);
			ai++;
		}
		write_segment(x, segs[s], allocs, nl, &ai, layout);
	}
	while (ai < nl) {
		size_t one = ai;
		write_segment(x, allocs[ai], allocs, ai + 1, &one, layout);
		ai++;
	}
	pkw_list_end(x->w);
	free(allocs);
	free(segs);
	return 0;
}

static int write_doc(exporter *x, int layout)
{
	pk_writer *w = x->w;
	if (layout == 113)
		return write_segments(x, layout);
	pkw_dict_begin(w);
	pkw_const(w, "segments");
	if (write_segments(x, layout) < 0)
		return -1;
	pkw_const(w, "device_traces");
	pkw_list_begin(w);
	uint32_t ndev = x->ndev ? x->ndev : 1;
	for (uint32_t d = 0; d < ndev; d++) {
		pkw_list_begin(w);
		for (size_t i = 0; i < x->nents; i++)
			if (x->ents[i].device == d && x->ents[i].action < A_START)
				write_entry(x, &x->ents[i]);
		pkw_list_end(w);
	}
	pkw_list_end(w);
	pkw_const(w, "external_annotations");
	pkw_list_begin(w);
	for (size_t i = 0; i < x->nents; i++) {
		const ent *e = &x->ents[i];
		if (e->action < A_START)
			continue;
		pkw_dict_begin(w);
		kv_uint(w, "device", e->device);
		pkw_const(w, "stage");
		pkw_const(w, action_name[e->action]);
		pkw_const(w, "name");
		pkw_str(w, e->name);
		kv_uint(w, "time_us", e->time_us);
		pkw_dict_end(w);
	}
	pkw_list_end(w);
	pkw_const(w, "stprof");
	pkw_dict_begin(w);
	pkw_const(w, "synthetic_segments");
	pkw_bool(w, !x->any_segment);
	pkw_const(w, "source");
	pkw_str(w, stp_reader_path(x->r));
	pkw_dict_end(w);
	pkw_dict_end(w);
	return 0;
}

/* protocol 2: what this writer and PyTorch's C++ pickler write */
const stp_outkind stp_outkind_snapshot = {"PyTorch memory snapshot (pickle protocol 2)", "\x80\x02", 2, NULL};

int stp_snapshot_export(const char *stp, const char *out_pickle, const stp_snapshot_export_opts *o,
                        stp_snapshot_export_stats *st, char *err, size_t errlen)
{
	stp_snapshot_export_opts dflt = {0};
	stp_snapshot_export_stats dst;
	if (!o)
		o = &dflt;
	if (!st)
		st = &dst;
	memset(st, 0, sizeof *st);
	int layout = o->layout == 113 ? 113 : 2;
	exporter x = {.o = o, .st = st, .spaces = o->spaces};
	if (!x.spaces && !(x.spaces = auto_spaces(stp, err, errlen)))
		return -1;
	st->spaces = x.spaces;
	x.r = stp_reader_open(stp, err, errlen);
	if (!x.r)
		return -1;
	int rc = -1, got;
	stp_event ev;
	while ((got = stp_reader_next(x.r, &ev)) == 1) {
		st->events++;
		if (on_event(&x, &ev) < 0) {
			snprintf(err, errlen, "%s: out of memory", stp);
			goto done;
		}
	}
	if (got < 0) {
		snprintf(err, errlen, "%s", stp_reader_error(x.r));
		goto done;
	}
	st->synthetic_segments = !x.any_segment;
	stp_outfile out;
	FILE *f = stp_outfile_open(&out, out_pickle, &stp_outkind_snapshot, err, errlen);
	if (!f)
		goto done;
	x.w = pkw_open(f);
	if (!x.w || write_doc(&x, layout) < 0) {
		snprintf(err, errlen, "%s: out of memory", out_pickle);
		if (x.w)
			pkw_close(x.w);
		stp_outfile_abort(&out);
		goto done;
	}
	if (pkw_close(x.w) < 0) {
		snprintf(err, errlen, "%s: write error", out_pickle);
		stp_outfile_abort(&out);
		goto done;
	}
	rc = stp_outfile_commit(&out, err, errlen);
done:
	stp_reader_close(x.r);
	free(x.ents);
	free(x.objs);
	free(x.segs);
	u64map_free(&x.live_obj);
	u64map_free(&x.live_seg);
	u64map_free(&x.frame_memo);
	u64map_free(&x.stack_memo);
	for (size_t i = 0; i < x.nsrc; i++)
		free(x.src[i]);
	free(x.src);
	free(x.src_file);
	free(x.src_line);
	for (size_t i = 0; i < x.nnames; i++)
		free(x.names[i]);
	free(x.names);
	return rc;
}
