/*
 * cmd_info.c - `stprof info FILE`: the header, the process, event counts,
 * and whether the file is whole.  Exit 0 when the trace reads to its end (a
 * trace cut short, by a killed program or inside a chunk, reads to its last
 * whole chunk), 1 when it is corrupt, 2 on usage errors.
 */
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "commands.h"
#include "stprof/trace_codec.h"
#include "guard.h"
#include "input.h"
#include "snapshot_cli.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: stprof info [-q] TRACE\n\n"
	           "Prints the trace's format version, the recorded process, how many events of\n"
	           "each type it holds, and whether it is whole.\n\n"
	           "  -q, --quiet   print nothing; exit status only (0 readable, cut short\n"
	           "                included; 1 damaged)\n"
	           "  -h, --help    this help\n");
}

static const char *end_text(const stp_trace_stats *s, char *buf, size_t len)
{
	switch (s->end_reason) {
	case STP_END_EXIT: snprintf(buf, len, "exited with status %d", s->end_value); break;
	case STP_END_SIGNAL: snprintf(buf, len, "killed by signal %d (%s)", s->end_value, strsignal(s->end_value)); break;
	case STP_END_EXEC: snprintf(buf, len, "replaced by execve"); break;
	case STP_END_DETACH: snprintf(buf, len, "recording stopped"); break;
	case STP_END_SNAPSHOT: snprintf(buf, len, "a memory snapshot, taken while the program went on"); break;
	default: snprintf(buf, len, "end reason %u", s->end_reason); break;
	}
	return buf;
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	int quiet = 0, c;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: return stprof_usage_hint("info", argv, "qh", opts);
		}
	}
	if (optind != argc - 1)
		return stprof_usage_error("info", "wants one TRACE (got %d arguments)", argc - optind);
	const char *trace = argv[optind];
	if (stprof_input("info", &trace, STPROF_IN_TRACE))
		return 1;
	if (stprof_pickle_input(&trace, 1)) /* a PyTorch snapshot: imported first */
		return 1;
	stp_reader *r = stprof_open_trace(trace);
	if (!r)
		return 1;
	stp_event ev;
	int rc;
	stp_process_info proc = {0};
	int have_proc = 0;
	uint32_t modules = 0, threads = 0;
	while ((rc = stp_reader_next(r, &ev)) > 0) {
		if (ev.type == STP_EV_PROCESS && !have_proc) {
			proc = ev.u.process;
			have_proc = 1;
		}
		modules += ev.type == STP_EV_MODULE;
		threads += ev.type == STP_EV_THREAD;
	}
	const stp_trace_stats *s = stp_reader_stats(r);
	const stp_trace_header *h = stp_reader_header(r);
	if (!quiet) {
		char b1[64], b2[128];
		printf("trace:        %s\n", argv[optind]);
		printf("format:       %u.%u\n", h->major, h->minor);
		printf("size:         %s in %" PRIu64 " chunks\n", stprof_fmt_bytes(s->bytes, b1, sizeof b1), s->chunks);
		uint64_t nev = s->events - s->by_type[STP_EV_PROCESS] - s->by_type[STP_EV_THREAD] - s->by_type[STP_EV_MODULE];
		printf("  events      %s", stprof_fmt_bytes(s->chunk_bytes[STP_CHUNK_EVENTS], b1, sizeof b1));
		if (nev)
			printf(" (%.2f bytes per event)", (double)s->chunk_bytes[STP_CHUNK_EVENTS] / (double)nev);
		printf("\n  definitions %s (strings, call-path nodes, process, threads, modules)\n",
		       stprof_fmt_bytes(s->chunk_bytes[STP_CHUNK_DEFS], b2, sizeof b2));
		if (have_proc) {
			if (proc.pid) /* an imported snapshot names no process */
				printf("process:      pid %u (parent %u)", proc.pid, proc.ppid);
			else
				printf("process:      unknown (not recorded)");
			if (proc.rank >= 0)
				printf(", rank %d/%d, local rank %d", proc.rank, proc.world_size, proc.local_rank);
			printf("\ncommand:      %s\n", stp_reader_string(r, proc.cmdline));
			if (proc.exe)
				printf("executable:   %s\n", stp_reader_string(r, proc.exe));
			if (proc.hostname)
				printf("host:         %s\n", stp_reader_string(r, proc.hostname));
		}
		printf("duration:     %s\n", stprof_fmt_ns(s->last_time_ns - s->first_time_ns, b1, sizeof b1));
		printf("events:       %" PRIu64 "\n", s->events);
		for (unsigned t = 1; t <= STP_EV_TYPE_MAX; t++)
			if (s->by_type[t])
				printf("  %-16s %" PRIu64 "\n", stp_event_type_name(t), s->by_type[t]);
		printf("threads:      %u\n", threads);
		printf("modules:      %u\n", modules);
		printf("strings:      %" PRIu64 "\n", s->strings);
		printf("stack nodes:  %" PRIu64 "\n", s->stack_nodes);
		if (s->folded_iterations)
			printf("folded:       %" PRIu64 " steady iterations, standing for %" PRIu64 " events (docs/trace-format.md)\n",
			       s->folded_iterations, s->folded_events);
		if (s->lost_events)
			printf("lost events:  %" PRIu64 " (gaps in sequence numbers)\n", s->lost_events);
		if (rc < 0)
			printf("whole:        no: %s\n", stp_reader_error(r));
		else if (s->cut_bytes)
			printf("whole:        no: it ends inside the chunk at offset %" PRIu64 " (%" PRIu64 " bytes not read: "
			       "the recording was cut short); read to the last whole chunk\n", s->cut_offset, s->cut_bytes);
		else if (s->whole)
			printf("whole:        yes (%s)\n", end_text(s, b2, sizeof b2));
		else
			printf("whole:        no end record; read to the last complete chunk (the program was killed or is still running)\n");
	}
	if (rc < 0)
		stprof_err("%s", stp_reader_error(r));
	stp_reader_close(r);
	return rc < 0 ? 1 : 0;
}
