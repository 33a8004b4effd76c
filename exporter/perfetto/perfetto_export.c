/*
 * perfetto_export.c - stp_export_perfetto(): the driver.  Each trace is read
 * once in seq order (twice with --top: perfetto_select.c first) and written
 * as one process on its own packet sequence; what an event changes is
 * written at once, so the output streams.
 *
 * Window: before it opens, events only update state (live objects, counters,
 * open markers).  At the first event at or after its start, the state is
 * written as of the start (counter values, slices of live objects and open
 * markers, clipped); at the first event after its end, everything open is
 * closed at the end and reading stops.  Events are "almost" in time order
 * across threads (stprof/trace.h), so a late event inside the window is
 * moved to its start.
 *
 * Several traces (ranks): each is one process with its own sequence, and
 * gets a pid of its own (a synthetic one if two traces share a pid).  Traces
 * from one host share CLOCK_MONOTONIC; from several hosts, each is moved to
 * the realtime clock it recorded at its start.
 *
 * The top of the exporter: it calls perfetto_memory.c, perfetto_markers.c,
 * perfetto_extras.c and the rest, and none of them calls back here (what
 * they share is in perfetto_emit.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "perfetto_export.h"

#define PROGRESS_EVERY (4u << 20)

/* ------------------------------------------------------------ window */

static int draw_live(pf_proc *p, uint32_t t_node, uint64_t t)
{
	/* In-order walk without recursion depth surprises: explicit stack. */
	uint32_t *stack = NULL;
	size_t n = 0, cap = 0;
	uint32_t cur = t_node;
	int rc = 0;
	while ((cur != PF_NONE || n) && rc == 0) {
		while (cur != PF_NONE) {
			if (pf_grow((void **)&stack, &cap, n + 1, sizeof *stack) < 0) {
				free(stack);
				return -1;
			}
			stack[n++] = cur;
			cur = p->objs.v[cur].left;
		}
		cur = stack[--n];
		if (p->objs.v[cur].flags & PF_OBJ_SELECTED)
			rc = pf_draw_begin(p, cur, t, NULL, 1);
		cur = p->objs.v[cur].right;
	}
	free(stack);
	return rc;
}

static int window_open(pf_proc *p)
{
	uint64_t t = p->x->lo;
	p->wstate = 1;
	for (size_t i = 0; i < p->nspaces; i++) {
		if (pf_counters_packet(p, &p->spaces[i], t) < 0)
			return -1;
		if (p->spaces[i].t_resv && pf_reserved_packet(p, &p->spaces[i], t) < 0)
			return -1;
	}
	if (p->training.uuid && pf_open_marks(p, &p->training, t) < 0)
		return -1;
	for (size_t i = 0; i < p->nthreads; i++)
		if (pf_open_marks(p, &p->threads[i], t) < 0)
			return -1;
	return p->objs.live ? draw_live(p, p->objs.root, t) : 0;
}

/* Ends everything still open at t (the trace's or the window's end). */
static int close_all(pf_proc *p, uint64_t t)
{
	int rc = 0;
	if (p->wstate != 1)
		return 0;
	for (size_t i = 0; i < p->nspaces; i++)
		rc |= pf_counters_flush(p, &p->spaces[i]);
	if (p->training.uuid)
		rc |= pf_mark_pop_to(p, &p->training, 0, t);
	for (size_t i = 0; i < p->nthreads; i++)
		rc |= pf_mark_pop_to(p, &p->threads[i], 0, t);
	for (size_t i = 0; i < p->objs.n && rc == 0; i++) {
		pf_obj *o = &p->objs.v[i];
		if (!(o->flags & PF_OBJ_FLOW) && o->lane == PF_NONE)
			continue;
		if (pf_obj_find(&p->objs, o->addr) != i)
			continue; /* a free slot */
		if (o->flags & PF_OBJ_FLOW) {
			pf_pkt *k = pf_event(&p->seq, t, T_INSTANT, p->streams[o->stream].lanes[0].uuid);
			pf_name_lit(p, k, p->x->has_window && t == p->x->hi ? "still allocated at the window's end"
			                                                 : "still allocated at the end");
			pf_arg_uint(k, "size", o->size);
			pf_flow_end(k, o->flow);
			rc |= pf_emit(k);
			o->flags &= (uint8_t)~PF_OBJ_FLOW;
		}
		rc |= pf_draw_end(p, o, t, 0);
	}
	p->wstate = 2;
	return rc;
}

/* ------------------------------------------------------------ a trace */

typedef struct head {
	int has_proc;
	stp_process_info proc;
	char host[256];
	uint64_t t0;
	int empty;
} head;

static int read_head(pf_export *x, const char *path, head *h)
{
	char err[512];
	memset(h, 0, sizeof *h);
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	if (!r) {
		pf_fail(x, "%s", err);
		return -1;
	}
	stp_event ev;
	int got = stp_reader_next(r, &ev);
	if (got < 0) {
		pf_fail(x, "%s", stp_reader_error(r));
		stp_reader_close(r);
		return -1;
	}
	if (got == 0) {
		h->empty = 1;
	} else {
		h->t0 = ev.time_ns;
		if (ev.type == STP_EV_PROCESS) {
			h->has_proc = 1;
			h->proc = ev.u.process;
			snprintf(h->host, sizeof h->host, "%s", stp_reader_string(r, ev.u.process.hostname));
		}
	}
	stp_reader_close(r);
	return 0;
}

static int32_t pick_pid(pf_export *x, const head *h, uint32_t index)
{
	int32_t pid = h->has_proc && h->proc.pid ? (int32_t)h->proc.pid : (int32_t)(100000 + index);
	for (int attempt = 0;; attempt++) {
		int used = 0;
		for (size_t i = 0; i < x->npids; i++)
			used |= x->pids[i] == pid;
		if (!used)
			break;
		pid = (int32_t)(10000000 * (index + 1 + attempt) + (pid % 10000000));
	}
	x->pids[x->npids++] = pid;
	return pid;
}

static int export_trace(pf_export *x, uint32_t index, const char *path, int64_t offset, const head *h)
{
	pf_proc p;
	memset(&p, 0, sizeof p);
	p.x = x;
	p.index = index;
	p.path = path;
	p.offset = offset;
	p.objs.free_head = p.objs.root = PF_NONE;
	p.wstate = x->has_window ? 0 : 1;
	uint64_t *bits = NULL;
	int rc = -1;
	char err[512];
	if (x->opts.top_n) {
		if (pf_select_top(x, (uint32_t)index, path, offset, &bits, &p.nselected_bits) < 0)
			return -1;
		p.selected = bits;
	}
	p.r = stp_reader_open(path, err, sizeof err);
	if (!p.r) {
		pf_fail(x, "%s", err);
		free(bits);
		return -1;
	}
	pf_seq_init(&p.seq, &x->out, index + 1);
	p.pid = pick_pid(x, h, index);
	struct stat sb;
	uint64_t total = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0, next_progress = PROGRESS_EVERY;
	stp_event ev;
	int got, first = 1, bad = 0;
	while ((got = stp_reader_next(p.r, &ev)) > 0) {
		x->st.events++;
		uint64_t t = pf_conv(&p, ev.time_ns);
		if (first) {
			first = 0;
			p.t_first = t;
			if (pf_process_track(&p, ev.type == STP_EV_PROCESS ? &ev.u.process : NULL,
			                     x->has_window && t < x->lo ? x->lo : t) < 0)
				goto out;
		}
		if (t > p.t_last)
			p.t_last = t;
		if (x->has_window) {
			if (p.wstate == 0 && t >= x->lo && window_open(&p) < 0)
				goto out;
			if (p.wstate == 1 && t > x->hi)
				break;
		}
		switch (ev.type) {
		case STP_EV_ALLOC: bad = pf_on_alloc(&p, &ev, t) < 0; break;
		case STP_EV_FREE: bad = pf_on_free(&p, &ev, t) < 0; break;
		case STP_EV_SEGMENT_RESERVE:
		case STP_EV_SEGMENT_RELEASE: bad = pf_on_segment(&p, &ev, t) < 0; break;
		case STP_EV_API: bad = pf_on_api(&p, &ev, t) < 0; break;
		case STP_EV_MARKER: bad = pf_on_marker(&p, &ev, t) < 0; break;
		case STP_EV_FOLD: bad = pf_on_fold(&p, &ev, t) < 0; break;
		case STP_EV_REFUSED: bad = pf_on_refused(&p, &ev, t) < 0; break;
		case STP_EV_MODULE: bad = pf_module_add(&p, &ev.u.module) < 0; break;
		case STP_EV_THREAD: bad = pf_thread_renamed(&p, ev.u.thread.tid, ev.u.thread.name, pf_at(&p, t)) < 0; break;
		default: break;
		}
		if (bad)
			goto out;
		if (x->opts.progress && stp_reader_stats(p.r)->bytes >= next_progress) {
			next_progress = stp_reader_stats(p.r)->bytes + PROGRESS_EVERY;
			x->opts.progress(x->opts.ctx, index, stp_reader_stats(p.r)->bytes, total);
		}
	}
	if (first && pf_process_track(&p, h->has_proc ? &h->proc : NULL, x->has_window ? x->lo : h->t0) < 0)
		goto out;
	uint64_t t_end = p.t_last;
	if (x->has_window && p.wstate == 1 && (got > 0 || t_end > x->hi))
		t_end = x->hi;
	if (close_all(&p, t_end) < 0 || pf_emit_findings(&p) < 0 || pf_emit_series(&p) < 0)
		goto out;
	if (got < 0) {
		pf_fail(x, "%s", stp_reader_error(p.r));
		goto out;
	}
	rc = 0;
out:
	if (rc < 0 && !x->err[0])
		pf_fail(x, "%s", x->out.failed ? x->out.err : "out of memory");
	stp_reader_close(p.r);
	pf_seq_free(&p.seq);
	pf_tracks_free(&p);
	pf_symbols_free(&p);
	pf_objs_free(&p.objs);
	pf_map_free(&p.names);
	free(bits);
	return rc;
}

int stp_export_perfetto(const char *const *traces, size_t ntraces, const char *out_path,
                        const stp_export_opts *opts, stp_export_stats *stats, char *err, size_t errlen)
{
	pf_export x;
	memset(&x, 0, sizeof x);
	char errbuf[512];
	if (!err || !errlen) {
		err = errbuf;
		errlen = sizeof errbuf;
	}
	err[0] = 0;
	x.err = err;
	x.errlen = errlen;
	if (opts)
		x.opts = *opts;
	x.next_uuid = 1;
	x.next_flow = 1;
	if (!ntraces) {
		pf_fail(&x, "no trace to export");
		return -1;
	}
	head *heads = calloc(ntraces, sizeof *heads);
	int64_t *offsets = calloc(ntraces, sizeof *offsets);
	x.pids = calloc(ntraces, sizeof *x.pids);
	int rc = -1;
	if (!heads || !offsets || !x.pids) {
		pf_fail(&x, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < ntraces; i++)
		if (read_head(&x, traces[i], &heads[i]) < 0)
			goto done;
	/* Traces of one host share CLOCK_MONOTONIC; across hosts, align them on
	 * the realtime clock each one recorded at its start. */
	int many_hosts = 0;
	for (size_t i = 1; i < ntraces; i++)
		if (strcmp(heads[i].host, heads[0].host) != 0)
			many_hosts = 1;
	uint64_t base = UINT64_MAX;
	for (size_t i = 0; i < ntraces; i++) {
		const head *h = &heads[i];
		if (many_hosts && h->has_proc && h->proc.start_realtime_ns)
			offsets[i] = (int64_t)(h->proc.start_realtime_ns - h->proc.start_monotonic_ns);
		if (!h->empty) {
			int64_t t = (int64_t)h->t0 + offsets[i];
			uint64_t tu = t < 0 ? 0 : (uint64_t)t;
			if (tu < base)
				base = tu;
		}
	}
	if (base == UINT64_MAX)
		base = 0;
	if (x.opts.has_window) {
		if (x.opts.window_end_ns < x.opts.window_begin_ns) {
			pf_fail(&x, "the window ends before it begins");
			goto done;
		}
		x.has_window = 1;
		x.lo = base + x.opts.window_begin_ns;
		x.hi = x.opts.window_end_ns > UINT64_MAX - base ? UINT64_MAX : base + x.opts.window_end_ns;
	}
	if (pf_out_open(&x.out, out_path) < 0) {
		pf_fail(&x, "%s", x.out.err);
		goto done;
	}
	rc = 0;
	for (size_t i = 0; i < ntraces && rc == 0; i++)
		rc = export_trace(&x, (uint32_t)i, traces[i], offsets[i], &heads[i]);
	if (pf_out_close(&x.out, rc == 0) < 0 && rc == 0) {
		pf_fail(&x, "%s", x.out.err);
		rc = -1;
	}
done:
	x.st.packets = x.out.packets;
	x.st.bytes = x.out.bytes;
	if (stats)
		*stats = x.st;
	free(heads);
	free(offsets);
	free(x.pids);
	return rc;
}
