/*
 * cmd_import.c - `stprof import SNAPSHOT [-o TRACE.stp]`: turns a PyTorch
 * memory snapshot (pickle; docs/snapshot.md) or a JAX device memory profile
 * (gzip'd pprof; docs/jax.md) into a trace.  Exit 0 on success, 1 when the
 * snapshot cannot be read or the trace written, 2 on usage errors.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "guard.h"
#include "snapshot_cli.h"
#include "input.h"
#include "stprof/snapshot.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: stprof import [OPTIONS] SNAPSHOT [-o TRACE.stp]\n\n"
	        "Reads a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot, the file\n"
	        "https://pytorch.org/memory_viz opens; PyTorch 1.13's memory_snapshot() list\n"
	        "too) and writes an stprof trace: the allocator's segments and blocks, every\n"
	        "trace entry (alloc, free_completed, segment_alloc/free/map/unmap, oom,\n"
	        "snapshot) as an event with its Python/C++ frames as the call path, and the\n"
	        "state before the ring buffer's first entry, rebuilt by replaying the trace\n"
	        "backwards from the segments.  The pickle is only read as data: an opcode\n"
	        "that could import or run code is refused.  See docs/snapshot.md.\n\n"
	        "Or reads a JAX device memory profile (jax.profiler.save_device_memory_profile:\n"
	        "gzip'd pprof) and writes the trace of that moment: one allocation per live\n"
	        "buffer and executable, in the JAX buffer space of its device, with the\n"
	        "Python traceback that made it as the call path.  See docs/jax.md.\n\n"
	        "report, export and plan also take a snapshot where they take a trace.\n\n"
	        "Options:\n"
	        "  -o, --output FILE    the trace to write (default: SNAPSHOT with its suffix\n"
	        "                       replaced by .stp); an earlier trace there is kept as\n"
	        "                       FILE.old, any other file is left alone (an error)\n"
	        "  -q, --quiet          print nothing but errors\n"
	        "  -h, --help           this help\n\n"
	        "Exit status: 0 written, 1 the snapshot could not be read or the trace\n"
	        "written, 2 usage error.\n");
}

int cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {{"output", required_argument, 0, 'o'},
	                                     {"quiet", no_argument, 0, 'q'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	const char *out = NULL;
	int quiet = 0, c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: return stprof_usage_hint("import", argv, "o:qh", opts);
		}
	}
	if (optind != argc - 1)
		return stprof_usage_error("import", "wants one SNAPSHOT.pickle (got %d arguments)", argc - optind);
	const char *in = argv[optind];
	char *def = NULL;
	if (!out) {
		size_t n = strlen(in);
		def = malloc(n + 8);
		if (!def)
			return 1;
		memcpy(def, in, n + 1);
		char *dot = strrchr(def, '.'), *slash = strrchr(def, '/');
		if (dot && (!slash || dot > slash))
			*dot = 0;
		strcat(def, ".stp");
		out = def;
	}
	char err[1024];
	if (stprof_refuse_same("import", out, &in, 1)) {
		free(def);
		return 2;
	}
	if (stp_outfile_check(out, &stp_outkind_trace, err, sizeof err) < 0) {
		stprof_err("import: %s", err);
		free(def);
		return 1;
	}
	if (stprof_input("import", &in, STPROF_IN_PICKLE)) { /* a stream read once */
		free(def);
		return 1;
	}
	stp_snapshot_import_stats st;
	stp_pprof_import_stats ps;
	int pprof = !stp_snapshot_is_pickle(in) && stp_snapshot_is_pprof(in);
	int rc = pprof ? stp_pprof_import(in, out, &ps, err, sizeof err) : stp_snapshot_import(in, out, &st, err, sizeof err);
	if (rc < 0) {
		stprof_err("import: %s", err);
		free(def);
		return 1;
	}
	if (!pprof)
		stprof_snapshot_warn(in, &st);
	if (!quiet && pprof) {
		printf("wrote %s from %s (JAX device memory profile, pprof)\n", out, in);
		printf("  %" PRIu64 " samples: %" PRIu64 " buffers, %" PRIu64 " executables", ps.samples, ps.buffers,
		       ps.executables);
		if (ps.other)
			printf(", %" PRIu64 " of another kind", ps.other);
		if (ps.skipped)
			printf(" (%" PRIu64 " sample%s of 0 bytes: no allocation)", ps.skipped, ps.skipped == 1 ? "" : "s");
		printf("\n  %" PRIu64 " allocations, %" PRIu64 " bytes on %" PRIu64 " device%s; %" PRIu64
		       " distinct frames\n",
		       ps.allocations, ps.bytes, ps.devices, ps.devices == 1 ? "" : "s", ps.frames);
	} else if (!quiet) {
		printf("wrote %s from %s (PyTorch %s layout, pickle protocol %d)\n", out, in,
		       st.layout == 113 ? "1.13" : "2.x", st.protocol);
		printf("  %" PRIu64 " segments, %" PRIu64 " blocks%s; %" PRIu64 " trace entries", st.segments, st.blocks,
		       st.synthetic_segments ? " (segments made by stprof's exporter: not imported)" : "", st.entries);
		if (st.skipped)
			printf(" (%" PRIu64 " with an unknown action skipped)", st.skipped);
		printf("\n  before the first entry: %" PRIu64 " segments, %" PRIu64 " allocations (rebuilt)\n",
		       st.initial_segments, st.initial_allocs);
		printf("  %" PRIu64 " events, %" PRIu64 " distinct frames\n", st.events, st.frames);
	}
	free(def);
	return 0;
}
