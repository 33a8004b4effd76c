/*
 * snapshot_cli.c - see snapshot_cli.h.  Temporary imports are scratch
 * files (scratch.h); the exporter names addresses with the symbolizer.
 */
#include "snapshot_cli.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stprof/detector.h"
#include "scratch.h"
#include "stprof/snapshot.h"
#include "stprof/symbolize.h"
#include "util.h"

/* the pickle each scratch import came from, for messages and names */
#define MAX_IMPORTS 64
static const char *imported[MAX_IMPORTS], *origin[MAX_IMPORTS];
static int nimported;

const char *stprof_input_name(const char *path)
{
	for (int i = 0; i < nimported; i++)
		if (path == imported[i] || !strcmp(path, imported[i]))
			return origin[i];
	return path;
}

void stprof_snapshot_warn(const char *pickle, const stp_snapshot_import_stats *st)
{
	if (st->dropped_segments)
		stprof_err("warning: %s: %" PRIu64 " items of its segments list are not segments (not dicts): dropped",
		           pickle, st->dropped_segments);
	if (!st->outside_allocs)
		return;
	stprof_err("warning: %s: %" PRIu64 " allocations lie outside every segment of their device (the first at 0x%" PRIx64
	           "): the snapshot's segments are not the allocator's whole state, so they were dropped (%" PRIu64
	           " segments; no reserved bytes, efficiency or actual figures)",
	           pickle, st->outside_allocs, st->first_outside_addr, st->segments);
}

int stprof_pickle_input(const char **path, int quiet)
{
	int pprof = 0;
	if (!stp_snapshot_is_pickle(*path) && !(pprof = stp_snapshot_is_pprof(*path)))
		return 0;
	const char *base = strrchr(*path, '/');
	char name[NAME_MAX + 1];
	snprintf(name, sizeof name, "%s", base ? base + 1 : *path);
	char *dot = strrchr(name, '.');
	if (dot)
		*dot = 0;
	strncat(name, ".stp", sizeof name - strlen(name) - 1);
	const char *out = stprof_scratch_path(name);
	if (!out)
		return 1;
	char err[1024];
	stp_snapshot_import_stats st;
	stp_pprof_import_stats ps;
	int rc = pprof ? stp_pprof_import(*path, out, &ps, err, sizeof err)
	               : stp_snapshot_import(*path, out, &st, err, sizeof err);
	if (rc < 0) {
		stprof_err("%s", err);
		return 1;
	}
	if (nimported < MAX_IMPORTS) {
		imported[nimported] = out;
		origin[nimported++] = *path;
	}
	if (!pprof)
		stprof_snapshot_warn(*path, &st);
	if (!quiet && pprof)
		fprintf(stderr, "stprof: %s: JAX device memory profile: %" PRIu64 " buffers, %" PRIu64
		                " executables imported\n",
		        *path, ps.buffers + ps.other, ps.executables);
	else if (!quiet)
		fprintf(stderr, "stprof: %s: PyTorch memory snapshot (%s layout): %" PRIu64 " segments, %" PRIu64
		                " trace entries imported\n",
		        *path, st.layout == 113 ? "1.13" : "2.x", st.segments, st.entries);
	*path = out;
	return 0;
}

int stprof_pickle_inputs(int argc, char **argv, int from, int quiet)
{
	for (int i = from; i < argc; i++) {
		const char *p = argv[i];
		if (stprof_pickle_input(&p, quiet))
			return 1;
		argv[i] = (char *)p;
	}
	return 0;
}

typedef struct resolver {
	stp_symbolizer *sym;
	char name[512], file[PATH_MAX];
} resolver;

static void on_module(void *ctx, const char *path, uint64_t base, uint64_t size, uint64_t bias,
                      const uint8_t *build_id, uint32_t build_id_len)
{
	resolver *rs = ctx;
	if (rs->sym && size && path && *path)
		stp_sym_add_module(rs->sym, path, base, size, bias, build_id, build_id_len);
}

static void on_resolve(void *ctx, uint64_t ip, int caller, stp_snap_frame *out)
{
	resolver *rs = ctx;
	stp_frame f[STP_SYM_MAX_FRAMES];
	int n = rs->sym ? stp_sym_lookup(rs->sym, ip, caller, f, STP_SYM_MAX_FRAMES) : 0;
	if (n <= 0) {
		snprintf(rs->name, sizeof rs->name, "0x%" PRIx64, ip);
		out->name = rs->name;
		out->filename = "??";
		out->line = 0;
		return;
	}
	if (f[0].function) {
		out->name = f[0].function;
	} else {
		const char *m = f[0].module ? strrchr(f[0].module, '/') : NULL;
		if (f[0].module)
			snprintf(rs->name, sizeof rs->name, "%s+0x%" PRIx64, m ? m + 1 : f[0].module, f[0].module_offset);
		else
			snprintf(rs->name, sizeof rs->name, "0x%" PRIx64, ip);
		out->name = rs->name;
	}
	out->filename = f[0].file ? f[0].file : f[0].module ? f[0].module : "??";
	out->line = f[0].line;
}

int snapshot_export_run(const char *trace, const char *out, int layout, int space, int quiet)
{
	resolver rs = {.sym = stp_sym_new()};
	static const unsigned bits[] = {[STP_DET_SPACE_AUTO] = STP_SNAP_AUTO, [STP_DET_SPACE_HOST] = STP_SNAP_HEAP,
	                                [STP_DET_SPACE_TENSORS] = STP_SNAP_TENSORS, [STP_DET_SPACE_DEVICE] = STP_SNAP_DEVICE};
	stp_snapshot_export_opts o = {.layout = layout, .module = on_module, .resolve = on_resolve, .ctx = &rs,
	                              .spaces = space >= 0 && space <= STP_DET_SPACE_DEVICE ? bits[space] : STP_SNAP_AUTO};
	stp_snapshot_export_stats st;
	char err[1024];
	int rc = stp_snapshot_export(trace, out, &o, &st, err, sizeof err);
	stp_sym_free(rs.sym);
	if (rc < 0) {
		stprof_err("export: %s", err);
		return 1;
	}
	if (!quiet) {
		printf("wrote %s: PyTorch memory snapshot (%s layout)\n", out, layout == 113 ? "1.13" : "2.x");
		printf("  %" PRIu64 " segments%s, %" PRIu64 " blocks, %" PRIu64 " trace entries, %" PRIu64 " frames\n",
		       st.segments, st.synthetic_segments ? " (one per live allocation: the trace has none)" : "",
		       st.blocks, st.entries, st.frames);
		if (st.skipped_allocs) {
			const char *what = st.spaces == STP_SNAP_TENSORS ? "the tensors"
			                   : st.spaces == STP_SNAP_DEVICE ? "the device memory"
			                                                  : "the host heap";
			printf("  %s: %" PRIu64 " allocations; %" PRIu64 " of other memory spaces left out (--space)\n", what,
			       st.allocs, st.skipped_allocs);
		}
		printf("open it at https://pytorch.org/memory_viz; see docs/snapshot.md\n");
	}
	return 0;
}
