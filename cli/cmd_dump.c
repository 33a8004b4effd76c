/*
 * cmd_dump.c - `stprof dump TRACE`: every event on one line, in seq order
 * (like perf script).  Columns: seq, time (ns since the first event), tid,
 * type, then key=value fields.  -s adds call paths as raw addresses.
 */
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "commands.h"
#include "guard.h"
#include "input.h"
#include "snapshot_cli.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: stprof dump [-s] [-t TYPE] TRACE\n\n"
	           "Prints every event of TRACE on one line, in sequence order:\n"
	           "  SEQ TIME_NS TID TYPE key=value...\n"
	           "TIME_NS counts from the trace's first event.\n\n"
	           "  -s, --stacks      add each call path as stack=0xADDR;0xADDR... (innermost first)\n"
	           "  -t, --type TYPE   only events of TYPE (process thread module alloc free\n"
	           "                    segment_reserve segment_release api marker fold\n"
	           "                    refused); repeatable\n"
	           "  -h, --help        this help\n");
}

static void print_stack(stp_reader *r, uint32_t stack)
{
	uint64_t ips[256];
	uint32_t n = stp_reader_stack(r, stack, ips, 256);
	fputs(" stack=", stdout);
	for (uint32_t i = 0; i < n; i++)
		printf("%s0x%" PRIx64, i ? ";" : "", ips[i]);
}

static void print_dev(unsigned kind, int32_t device, uint64_t stream, uint32_t pool)
{
	if (kind != STP_MEM_HOST || device != -1 || stream || pool)
		printf(" kind=%s device=%d stream=0x%" PRIx64 " pool=%u", stp_mem_kind_name(kind), device, stream, pool);
}

int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {{"stacks", no_argument, 0, 's'},
	                                     {"type", required_argument, 0, 't'},
	                                     {"help", no_argument, 0, 'h'},
	                                     {0, 0, 0, 0}};
	int stacks = 0, c;
	unsigned want = 0;
	while ((c = getopt_long(argc, argv, "st:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': stacks = 1; break;
		case 't': {
			unsigned t;
			for (t = 1; t <= STP_EV_TYPE_MAX && strcmp(optarg, stp_event_type_name(t)); t++)
				;
			if (t > STP_EV_TYPE_MAX) {
				stprof_err("dump: unknown event type '%s'", optarg);
				return 2;
			}
			want |= 1u << t;
			break;
		}
		case 'h': usage(stdout); return 0;
		default: return stprof_usage_hint("dump", argv, "st:h", opts);
		}
	}
	if (optind != argc - 1)
		return stprof_usage_error("dump", "wants one TRACE (got %d arguments)", argc - optind);
	const char *trace = argv[optind];
	if (stprof_input("dump", &trace, STPROF_IN_TRACE))
		return 1;
	if (stprof_pickle_input(&trace, 1)) /* a PyTorch snapshot: imported first */
		return 1;
	stp_reader *r = stprof_open_trace(trace);
	if (!r)
		return 1;
	stp_event ev;
	int rc, first = 1;
	uint64_t t0 = 0;
	while ((rc = stp_reader_next(r, &ev)) > 0) {
		if (first) {
			t0 = ev.time_ns;
			first = 0;
		}
		if (want && !(want & (1u << ev.type)))
			continue;
		printf("%" PRIu64 " %" PRId64 " %u %s", ev.seq, (int64_t)(ev.time_ns - t0), ev.tid,
		       stp_event_type_name(ev.type));
		switch (ev.type) {
		case STP_EV_PROCESS: {
			const stp_process_info *p = &ev.u.process;
			printf(" pid=%u ppid=%u rank=%d local_rank=%d world_size=%d cmdline=\"%s\"", p->pid, p->ppid,
			       p->rank, p->local_rank, p->world_size, stp_reader_string(r, p->cmdline));
			break;
		}
		case STP_EV_THREAD:
			printf(" thread=%u name=\"%s\"", ev.u.thread.tid, stp_reader_string(r, ev.u.thread.name));
			break;
		case STP_EV_MODULE: {
			const stp_module_info *m = &ev.u.module;
			printf(" base=0x%" PRIx64 " size=%" PRIu64 " bias=0x%" PRIx64 " build_id=", m->base, m->size, m->bias);
			for (uint32_t i = 0; i < m->build_id_len; i++)
				printf("%02x", m->build_id[i]);
			printf(" path=\"%s\"", stp_reader_string(r, m->path));
			break;
		}
		case STP_EV_ALLOC:
		case STP_EV_SEGMENT_RESERVE:
		case STP_EV_SEGMENT_RELEASE:
		case STP_EV_REFUSED: {
			const stp_alloc_info *a = &ev.u.alloc;
			printf(" addr=0x%" PRIx64 " size=%" PRIu64, a->addr, a->size);
			if (a->requested != a->size)
				printf(" requested=%" PRIu64, a->requested);
			print_dev(a->kind, a->device, a->stream, a->pool);
			if (stacks && a->stack)
				print_stack(r, a->stack);
			break;
		}
		case STP_EV_FREE: {
			const stp_free_info *f = &ev.u.free;
			printf(" addr=0x%" PRIx64, f->addr);
			if (f->size)
				printf(" size=%" PRIu64, f->size);
			print_dev(f->kind, f->device, f->stream, f->pool);
			break;
		}
		case STP_EV_API: {
			const stp_api_info *a = &ev.u.api;
			printf(" kind=%s name=\"%s\" device=%d stream=0x%" PRIx64 " duration=%" PRIu64, stp_api_kind_name(a->kind),
			       stp_reader_string(r, a->name), a->device, a->stream, a->end_ns - ev.time_ns);
			for (uint32_t i = 0; i < a->nranges; i++)
				printf(" %s=0x%" PRIx64 "+%" PRIu64,
				       a->ranges[i].mode == STP_ACCESS_READ    ? "read"
				       : a->ranges[i].mode == STP_ACCESS_WRITE ? "write"
				                                               : "readwrite",
				       a->ranges[i].addr, a->ranges[i].size);
			if (stacks && a->stack)
				print_stack(r, a->stack);
			break;
		}
		case STP_EV_MARKER:
			printf(" kind=%s name=\"%s\" value=%" PRId64, stp_marker_kind_name(ev.u.marker.kind),
			       stp_reader_string(r, ev.u.marker.name), ev.u.marker.value);
			break;
		case STP_EV_FOLD: {
			const stp_fold_info *f = &ev.u.fold;
			printf(" iteration=%" PRId64 " like=%" PRId64 " last_seq=%" PRIu64 " elided=%" PRIu64 " apis=%" PRIu64
			       " markers=%" PRIu64 " digest=%016" PRIx64,
			       f->iteration, f->like, f->last_seq, f->elided, f->apis, f->markers, f->digest);
			for (uint32_t i = 0; i < f->nspaces; i++) {
				const stp_fold_space *x = &f->spaces[i];
				printf(" space=%s/%d/%u:allocs=%" PRIu64 ",bytes=%" PRIu64 ",peak=%" PRIu64 ",in=%" PRIu64
				       ",out=%" PRIu64 ",sampled=%" PRIu64 ",est=%" PRIu64,
				       stp_mem_kind_name(x->kind), x->device, x->pool, x->allocs, x->bytes, x->peak, x->carried_in,
				       x->carried_out, x->sampled, x->sampled_est);
				if (f->counted)
					printf(",peak_objects=%" PRIu64, x->peak_objects);
			}
			for (uint32_t i = 0; i < f->nsites; i++)
				printf(" site=%u:allocs=%" PRIu64 ",bytes=%" PRIu64, f->sites[i].stack, f->sites[i].allocs,
				       f->sites[i].bytes);
			break;
		}
		}
		putchar('\n');
	}
	if (rc < 0)
		stprof_err("%s", stp_reader_error(r));
	stp_reader_close(r);
	return rc < 0 ? 1 : 0;
}
