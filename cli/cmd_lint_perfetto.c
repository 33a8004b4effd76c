/*
 * cmd_lint_perfetto.c - `stprof lint-perfetto FILE`: checks a Perfetto
 * protobuf trace against the rules the trace processor enforces silently
 * (docs/perfetto.md, "Lint rules").  Exit 0 clean, 1 violations, 2 usage or
 * read errors.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "commands.h"
#include "stprof/perfetto.h"
#include "guard.h"
#include "input.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: stprof lint-perfetto [-q] [--max-errors N] FILE\n\n"
	        "Checks a Perfetto protobuf trace (any producer's, not only stprof's) for what\n"
	        "makes the trace processor drop data without an error in the UI:\n"
	        "  sequence-id    a TrackEvent or interned data without trusted_packet_sequence_id\n"
	        "  first-packet   a packet that needs incremental state before its sequence\n"
	        "                 cleared it\n"
	        "  interned-id    an interned id of 0, or one used before it was defined\n"
	        "  nesting        an END without a BEGIN, an END before its BEGIN, a slice that\n"
	        "                 never ends, or slices on one track that overlap without\n"
	        "                 nesting once sorted by time\n"
	        "  track          an event on a track not declared before it, a counter\n"
	        "                 without a track; bad descriptors\n"
	        "  parent         a parent_uuid never declared, or a cycle of parents\n"
	        "  counter        a slice or instant on a counter track, a counter value on\n"
	        "                 another track, extra counter values without their tracks\n"
	        "  flow           a flow with only one end\n"
	        "  instant-name   an instant without a name\n"
	        "  timestamp      a track event without a timestamp, or a negative one\n"
	        "  malformed      bytes that are not a stream of TracePackets\n"
	        "Each violation is printed as FILE: packet N at offset B: RULE: what.\n\n"
	        "Options:\n"
	        "      --max-errors N  print at most N violations (default 100; 0: all)\n"
	        "  -q, --quiet         print nothing; exit status only\n"
	        "  -h, --help          this help\n\n"
	        "Exit status: 0 no violation, 1 violations, 2 usage or read error.\n");
}

int cmd_lint_perfetto(int argc, char **argv)
{
	enum { OPT_MAX = 256 };
	static const struct option opts[] = {
		{"max-errors", required_argument, 0, OPT_MAX}, {"quiet", no_argument, 0, 'q'},
		{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	int quiet = 0, c;
	uint64_t max = 100;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		case OPT_MAX:
			if (stprof_parse_uint(optarg, UINT64_MAX, &max) < 0) {
				stprof_err("lint-perfetto: --max-errors wants a number, not '%s'", optarg);
				return 2;
			}
			break;
		default: return stprof_usage_hint("lint-perfetto", argv, "qh", opts);
		}
	}
	if (optind != argc - 1)
		return stprof_usage_error("lint-perfetto", "wants one FILE (got %d arguments)", argc - optind);
	const char *path = argv[optind];
	if (stprof_input("lint-perfetto", &path, 0))
		return 2;
	FILE *f = fopen(path, "rb");
	if (!f) {
		stprof_err("lint-perfetto: %s: %s", path, strerror(errno));
		return 2;
	}
	stp_lint_opts lo = {.name = argv[optind], .report = quiet ? NULL : stdout, .max_report = max};
	stp_lint_result res;
	int rc = stp_lint_perfetto(f, &lo, &res);
	int read_err = ferror(f);
	fclose(f);
	if (rc < 0 && read_err) {
		stprof_err("lint-perfetto: %s: read error", path);
		return 2;
	}
	if (!quiet) {
		printf("%s: %" PRIu64 " packets (%" PRIu64 " track events, %" PRIu64 " track descriptors), %" PRIu64
		       " bytes: ",
		       path, res.packets, res.track_events, res.descriptors, res.bytes);
		if (!res.violations) {
			printf("no violations\n");
		} else {
			printf("%" PRIu64 " violation%s (", res.violations, res.violations == 1 ? "" : "s");
			const char *sep = "";
			for (unsigned r = 0; r < STP_LINT_NRULES; r++) {
				if (!res.by_rule[r])
					continue;
				printf("%s%s %" PRIu64, sep, stp_lint_rule_name(r), res.by_rule[r]);
				sep = ", ";
			}
			printf(")\n");
		}
	}
	if (rc < 0)
		return 2;
	return res.violations ? 1 : 0;
}
