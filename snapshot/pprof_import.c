/*
 * pprof_import.c - a JAX device memory profile (pprof) into a .stp trace.
 *
 * jax.profiler.save_device_memory_profile() (and device_memory_profile())
 * writes the buffers and executables live at that moment as a pprof
 * profile: sample types (allocations, count) and (space, bytes); each
 * sample is the buffers of one Python traceback on one device, labelled
 * kind = buffer | executable and device = "cpu:0", "cuda:0", "TPU_0(...)".
 * Import turns it into the trace of that one moment:
 *   - each sample's count buffers become `count` ALLOC events of
 *     bytes / count each (the remainder on the last), pool STP_POOL_JAX,
 *     host memory for a "cpu" device, else device memory of the label's
 *     ordinal; executables too, with a first frame "(compiled executable)"
 *     so their call sites read apart;
 *   - each location's lines (innermost first, inlined frames before the
 *     frame they were inlined into) become source frames
 *     (stprof/srcframe.h), the sample's locations (leaf first) its call
 *     path; a location without lines keeps its address as a frame, and
 *     its mapping, when it names a file, is a MODULE event;
 *   - all events at the profile's time_nanos (0 when absent).
 * The profile has no addresses: each allocation gets a stand-in, distinct
 * per device, 256-byte aligned as XLA's allocators align.  Every reference
 * (location, function, string index) is checked where it is used; a bad
 * one is an error naming the offset of the message that holds it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "snap_int.h"
#include "stprof/snapshot.h"
#include "stprof/srcframe.h"
#include "u64map.h"

#define PP_MAX_BYTES (1ull << 30) /* 1 GiB uncompressed: profiles are KiB to MiB */
#define PP_MAX_DEPTH 256
#define PP_MAX_ALLOCS (1u << 24) /* allocations an import writes at most (a sample's count is the file's word) */
#define PP_ADDR_BASE 0x100000000000ull /* stand-in addresses: device d at base + d * 2^40 */
#define PP_ADDR_SPAN (1ull << 40)

typedef struct pimp {
	const pp_profile *p;
	const char *name;
	char *err;
	size_t errlen;
	stp_pprof_import_stats *st;
	u64map loc_idx, fn_idx, map_idx; /* id -> index + 1 */
	u64map frame_idx;                /* function index << 32 | line -> frame + 1 */
	snap_frames frames;
	int64_t exec_frame;              /* frame of "(compiled executable)", -1 until made */
	uint64_t total;                  /* allocations the samples make (at most PP_MAX_ALLOCS) */
	uint64_t *cursor;                /* next stand-in address by device slot (0: host, d + 1) */
	int32_t *cursor_dev;
	size_t ncursor;
} pimp;

static int bad(pimp *im, uint64_t off, const char *what)
{
	snprintf(im->err, im->errlen, "%s: offset %" PRIu64 "%s: %s", im->name, off, im->p->gzipped ? " (uncompressed)" : "",
	         what);
	return -1;
}

static int oom(pimp *im)
{
	snprintf(im->err, im->errlen, "%s: out of memory", im->name);
	return -1;
}

/* id -> index maps; a repeated id is an error (which one is meant?). */
static int index_ids(pimp *im)
{
	const pp_profile *p = im->p;
	for (size_t i = 0; i < p->nlocations; i++) {
		uint64_t v;
		if (!p->locations[i].id)
			return bad(im, p->locations[i].offset, "location with id 0");
		if (u64map_get(&im->loc_idx, p->locations[i].id, &v))
			return bad(im, p->locations[i].offset, "location id defined twice");
		if (u64map_put(&im->loc_idx, p->locations[i].id, i + 1) < 0)
			return oom(im);
	}
	for (size_t i = 0; i < p->nfunctions; i++) {
		uint64_t v;
		if (!p->functions[i].id)
			return bad(im, p->functions[i].offset, "function with id 0");
		if (u64map_get(&im->fn_idx, p->functions[i].id, &v))
			return bad(im, p->functions[i].offset, "function id defined twice");
		if (u64map_put(&im->fn_idx, p->functions[i].id, i + 1) < 0)
			return oom(im);
	}
	for (size_t i = 0; i < p->nmappings; i++) {
		uint64_t v;
		if (!p->mappings[i].id)
			return bad(im, p->mappings[i].offset, "mapping with id 0");
		if (u64map_get(&im->map_idx, p->mappings[i].id, &v))
			return bad(im, p->mappings[i].offset, "mapping id defined twice");
		if (u64map_put(&im->map_idx, p->mappings[i].id, i + 1) < 0)
			return oom(im);
	}
	return 0;
}

/* The source frame of one line of a location; -1 after an error. */
static int64_t line_frame(pimp *im, const pp_location *loc, const pp_line *ln)
{
	uint64_t fi;
	if (!u64map_get(&im->fn_idx, ln->function_id, &fi))
		return bad(im, loc->offset, "line names a function that is not defined");
	fi--;
	uint64_t key = fi << 32 | (uint32_t)(ln->line < 0 ? 0 : ln->line > UINT32_MAX ? UINT32_MAX : ln->line), v;
	if (u64map_get(&im->frame_idx, key, &v))
		return (int64_t)v - 1;
	const pp_function *f = &im->p->functions[fi];
	const pp_span *name = pp_string(im->p, f->name), *file = pp_string(im->p, f->filename);
	if (!name || !file)
		return bad(im, f->offset, "function names a string past the string table");
	if (!name->n) /* a function known by its system name only */
		name = pp_string(im->p, f->system_name);
	if (!name)
		return bad(im, f->offset, "function names a string past the string table");
	int64_t k = snap_frames_add(&im->frames, snap_frame_text(name->n ? name->p : "??", name->n ? name->n : 2,
	                                          file->n ? file->p : "??", file->n ? file->n : 2, ln->line));
	if (k == -2 || u64map_put(&im->frame_idx, key, (uint64_t)k + 1) < 0)
		return oom(im);
	return k;
}

/* The call path of a sample into ips (innermost first); its depth, -1 on error. */
static int64_t sample_path(pimp *im, const pp_sample *s, int exec, uint64_t *ips)
{
	uint32_t n = 0;
	if (exec) {
		if (im->exec_frame < 0) {
			im->exec_frame = snap_frames_add(&im->frames, snap_frame_text("(compiled executable)", 21, "jax", 3, 0));
			if (im->exec_frame < 0)
				return oom(im);
		}
		ips[n++] = STP_SRCFRAME_BASE + (uint64_t)im->exec_frame * STP_SRCFRAME_STRIDE;
	}
	for (uint32_t i = 0; i < s->nloc && n < PP_MAX_DEPTH; i++) {
		uint64_t li;
		if (!u64map_get(&im->loc_idx, im->p->loc_ids[s->loc0 + i], &li))
			return bad(im, s->offset, "sample names a location that is not defined");
		const pp_location *loc = &im->p->locations[li - 1];
		if (!loc->nline) {
			if (loc->address)
				ips[n++] = loc->address;
			continue;
		}
		for (uint32_t k = 0; k < loc->nline && n < PP_MAX_DEPTH; k++) {
			int64_t fr = line_frame(im, loc, &im->p->lines[loc->line0 + k]);
			if (fr < 0)
				return -1;
			ips[n++] = STP_SRCFRAME_BASE + (uint64_t)fr * STP_SRCFRAME_STRIDE;
		}
	}
	return n;
}

/* "cpu:0" -> host; "cuda:1", "gpu:1", "rocm:1", "TPU_1(...)" -> device 1. */
static void parse_device(const pp_span *s, int *host, int32_t *device)
{
	*host = 0;
	*device = 0;
	if (!s || !s->n)
		return;
	*host = s->n >= 3 && !strncmp(s->p, "cpu", 3);
	for (uint32_t i = 0; i < s->n; i++)
		if (s->p[i] >= '0' && s->p[i] <= '9') {
			int64_t d = 0;
			for (; i < s->n && s->p[i] >= '0' && s->p[i] <= '9' && d < 1000000; i++)
				d = d * 10 + (s->p[i] - '0');
			*device = (int32_t)d;
			return;
		}
}

/* The next stand-in address of `size` bytes on a device (host: -1). */
static int next_addr(pimp *im, int32_t dev, uint64_t size, uint64_t *addr)
{
	size_t i = 0;
	for (; i < im->ncursor; i++)
		if (im->cursor_dev[i] == dev)
			break;
	if (i == im->ncursor) {
		uint64_t *c = realloc(im->cursor, (i + 1) * sizeof *c);
		if (!c)
			return oom(im);
		im->cursor = c;
		int32_t *d = realloc(im->cursor_dev, (i + 1) * sizeof *d);
		if (!d)
			return oom(im);
		im->cursor_dev = d;
		uint64_t slot = dev < 0 ? 0 : (uint64_t)dev % 4096 + 1;
		im->cursor[i] = PP_ADDR_BASE + slot * PP_ADDR_SPAN;
		im->cursor_dev[i] = dev;
		im->ncursor++;
	}
	*addr = im->cursor[i];
	uint64_t step = (size + 255) / 256 * 256;
	im->cursor[i] += step ? step : 256;
	return 0;
}

/* A sample's bytes, count, kind and device labels: 1, 0 when it has no
 * bytes value, -1 after an error. */
static int sample_info(pimp *im, const pp_sample *s, int bi, int ci, int64_t *bytes, int64_t *count,
                       const pp_span **kind, const pp_span **dev)
{
	const pp_profile *p = im->p;
	if ((size_t)bi >= s->nval)
		return 0;
	*bytes = (int64_t)p->values[s->val0 + bi];
	*count = ci >= 0 && (size_t)ci < s->nval ? (int64_t)p->values[s->val0 + ci] : 1;
	if (*count <= 0)
		*count = 1;
	*kind = *dev = NULL;
	for (uint32_t k = 0; k < s->nlab; k++) {
		const pp_label *l = &p->labels[s->lab0 + k];
		const pp_span *key = pp_string(p, l->key), *val = pp_string(p, l->str);
		if (!key || !val)
			return bad(im, s->offset, "label names a string past the string table");
		if (pp_span_is(key, "kind"))
			*kind = val;
		else if (pp_span_is(key, "device"))
			*dev = val;
	}
	return 1;
}

/* The samples counted and their frames made, before anything is written
 * (every source frame's MODULE comes first in the trace). */
static int collect(pimp *im, int bi, int ci, uint64_t *ips)
{
	const pp_profile *p = im->p;
	for (size_t i = 0; i < p->nsamples; i++) {
		const pp_sample *s = &p->samples[i];
		int64_t bytes, count;
		const pp_span *kind, *dev;
		int rc = sample_info(im, s, bi, ci, &bytes, &count, &kind, &dev);
		if (rc < 0)
			return -1;
		if (!rc) {
			im->st->skipped++;
			continue;
		}
		int exec = pp_span_is(kind, "executable");
		im->st->samples++;
		if (exec)
			im->st->executables += (uint64_t)count;
		else if (!kind || pp_span_is(kind, "buffer"))
			im->st->buffers += (uint64_t)count;
		else
			im->st->other += (uint64_t)count;
		if (bytes <= 0) { /* an executable on the CPU: no device memory */
			im->st->skipped++;
			continue;
		}
		uint64_t n = (uint64_t)count < (uint64_t)bytes ? (uint64_t)count : (uint64_t)bytes;
		if (n > PP_MAX_ALLOCS - im->total) {
			char what[128];
			snprintf(what, sizeof what, "more than %u allocations in the profile (this sample has %" PRId64 ")",
			         PP_MAX_ALLOCS, count);
			return bad(im, s->offset, what);
		}
		im->total += n;
		if (sample_path(im, s, exec, ips) < 0)
			return -1;
	}
	return 0;
}

static int write_trace(pimp *im, const char *out, int bi, int ci)
{
	const pp_profile *p = im->p;
	uint64_t ips[PP_MAX_DEPTH + 1];
	if (collect(im, bi, ci, ips) < 0)
		return -1;
	uint64_t t0 = p->time_nanos > 0 ? (uint64_t)p->time_nanos : 0;
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "JAX device memory profile %s", im->name);
	stp_writer *w = snap_trace_begin(out, cmd, im->name, "jax", t0, im->frames.text, im->frames.n, im->err,
	                                 im->errlen);
	if (!w)
		return -1;
	stp_event ev;
	int werr = 0;
	/* mappings that name a file, for frames that are addresses */
	for (size_t i = 0; i < p->nmappings && !werr; i++) {
		const pp_mapping *m = &p->mappings[i];
		const pp_span *fn = pp_string(p, m->filename);
		if (!fn) {
			stp_writer_abandon(w);
			return bad(im, m->offset, "mapping names a string past the string table");
		}
		if (!fn->n || m->memory_limit <= m->memory_start)
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%.*s", (int)fn->n, fn->p);
		ev = (stp_event){.type = STP_EV_MODULE, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = t0};
		ev.u.module = (stp_module_info){.path = stp_writer_string(w, path), .base = m->memory_start,
		                                .size = m->memory_limit - m->memory_start,
		                                .bias = m->memory_start - m->file_offset};
		werr |= stp_writer_event(w, &ev) < 0;
	}
	for (size_t i = 0; i < p->nsamples && !werr; i++) {
		const pp_sample *s = &p->samples[i];
		int64_t bytes, count;
		const pp_span *kind, *dev;
		if (sample_info(im, s, bi, ci, &bytes, &count, &kind, &dev) <= 0 || bytes <= 0)
			continue; /* (an error would have stopped collect) */
		if ((uint64_t)count > (uint64_t)bytes)
			count = bytes; /* at least a byte each */
		int64_t depth = sample_path(im, s, pp_span_is(kind, "executable"), ips);
		if (depth < 0) {
			stp_writer_abandon(w);
			return -1;
		}
		int host;
		int32_t device;
		parse_device(dev, &host, &device);
		uint32_t stack = stp_writer_stack(w, ips, (uint32_t)depth);
		uint64_t each = (uint64_t)bytes / (uint64_t)count, rest = (uint64_t)bytes % (uint64_t)count;
		for (int64_t k = 0; k < count && !werr; k++) {
			uint64_t size = each + (k == count - 1 ? rest : 0), addr;
			if (next_addr(im, host ? -1 : device, size, &addr) < 0) {
				stp_writer_abandon(w);
				return -1;
			}
			ev = (stp_event){.type = STP_EV_ALLOC, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = t0};
			ev.u.alloc = (stp_alloc_info){.addr = addr, .size = size, .requested = size, .stack = stack,
			                              .kind = host ? STP_MEM_HOST : STP_MEM_DEVICE,
			                              .device = host ? -1 : device, .pool = STP_POOL_JAX};
			werr |= stp_writer_event(w, &ev) < 0;
			im->st->allocations++;
			im->st->bytes += size;
		}
	}
	im->st->frames = im->frames.n;
	im->st->devices = im->ncursor;
	if (werr) {
		snprintf(im->err, im->errlen, "%s: cannot write the trace", out);
		stp_writer_abandon(w);
		return -1;
	}
	if (stp_writer_close(w, STP_END_EXIT, 0) < 0) {
		snprintf(im->err, im->errlen, "%s: cannot write the trace", out);
		return -1;
	}
	im->st->events = 2 + im->st->allocations;
	return 0;
}

static int import_profile(pimp *im, const char *out)
{
	const pp_profile *p = im->p;
	/* the bytes column: unit "bytes" (type "space" first); the count: unit "count" */
	int bi = -1, ci = -1;
	for (size_t i = 0; i < p->nsample_types; i++) {
		const pp_span *t = pp_string(p, p->sample_types[i].type), *u = pp_string(p, p->sample_types[i].unit);
		if (pp_span_is(u, "bytes") && (bi < 0 || pp_span_is(t, "space")))
			bi = (int)i;
		else if (pp_span_is(u, "count") && ci < 0)
			ci = (int)i;
	}
	if (bi < 0) {
		snprintf(im->err, im->errlen, "%s: not a memory profile (no sample type in bytes)", im->name);
		return -1;
	}
	if (index_ids(im) < 0)
		return -1;
	return write_trace(im, out, bi, ci);
}

int snap_pprof_import_profile(const pp_profile *p, const char *name, const char *out_stp, stp_pprof_import_stats *st,
                              char *err, size_t errlen)
{
	stp_pprof_import_stats dummy;
	if (!st)
		st = &dummy;
	memset(st, 0, sizeof *st);
	st->gzipped = p->gzipped;
	pimp im = {.p = p, .name = name, .err = err, .errlen = errlen, .st = st, .exec_frame = -1};
	int rc = import_profile(&im, out_stp);
	snap_frames_free(&im.frames);
	free(im.cursor);
	free(im.cursor_dev);
	u64map_free(&im.loc_idx);
	u64map_free(&im.fn_idx);
	u64map_free(&im.map_idx);
	u64map_free(&im.frame_idx);
	return rc;
}

int stp_pprof_import(const char *path, const char *out_stp, stp_pprof_import_stats *st, char *err, size_t errlen)
{
	if (st)
		memset(st, 0, sizeof *st);
	pp_profile p;
	if (pp_parse_file(path, PP_MAX_BYTES, &p, err, errlen) < 0)
		return -1;
	int rc = snap_pprof_import_profile(&p, path, out_stp, st, err, errlen);
	pp_free(&p);
	return rc;
}

int stp_snapshot_is_pprof(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	uint8_t b[2];
	size_t n = fread(b, 1, 2, f);
	fclose(f);
	return pp_is_gzip(b, n);
}
