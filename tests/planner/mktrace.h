/*
 * mktrace.h - writes a small training-like trace with stp_writer, for the
 * planner's tests (until the collector's real traces are in every test).
 *
 * Layout: process + module events; persistent "weights" allocated before
 * the first iteration; `iters` iterations, each with ITER_BEGIN/END, and per
 * micro-batch a forward phase (modules layers.K entered/exited; per layer a
 * saved activation and a transient) and a backward phase (frees the
 * activations in reverse, transient gradients); an optimizer phase; a
 * "loss" buffer allocated at the end of each iteration and freed early in the
 * next (it wraps); with `varying`, one allocation per iteration whose size
 * changes between iterations (it must come out dynamic).  Device
 * allocations when `device`, else host.  Without `markers` no iteration
 * markers are written.  With `odd` = k > 0, iteration k alone makes one more
 * temporary (3 MiB, its own call path) in its optimizer phase: a step unlike
 * the others.
 */
#ifndef STPROF_TEST_MKTRACE_H
#define STPROF_TEST_MKTRACE_H
#include <stdio.h>
#include <string.h>

#include "stprof/trace.h"

typedef struct mk_opts {
	int iters, layers, micro_batches;
	int varying, device, markers;
	int odd;
} mk_opts;

typedef struct mk {
	stp_writer *w;
	uint64_t t;
	int device;
	uint32_t stacks[64];
} mk;

static void mk_event(mk *m, stp_event *ev)
{
	ev->seq = STP_SEQ_AUTO;
	ev->tid = 1;
	ev->time_ns = m->t += 100;
	stp_writer_event(m->w, ev);
}

static void mk_alloc(mk *m, uint64_t addr, uint64_t size, int site)
{
	stp_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = STP_EV_ALLOC;
	ev.u.alloc.addr = addr;
	ev.u.alloc.size = ev.u.alloc.requested = size;
	ev.u.alloc.stack = m->stacks[site & 63];
	ev.u.alloc.kind = m->device ? STP_MEM_DEVICE : STP_MEM_HOST;
	ev.u.alloc.device = m->device ? 0 : -1;
	mk_event(m, &ev);
}

static void mk_free(mk *m, uint64_t addr)
{
	stp_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = STP_EV_FREE;
	ev.u.free.addr = addr;
	ev.u.free.kind = m->device ? STP_MEM_DEVICE : STP_MEM_HOST;
	ev.u.free.device = m->device ? 0 : -1;
	mk_event(m, &ev);
}

static void mk_mark(mk *m, int kind, const char *name, int64_t value)
{
	stp_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = STP_EV_MARKER;
	ev.u.marker.kind = (uint8_t)kind;
	ev.u.marker.name = name ? stp_writer_string(m->w, name) : 0;
	ev.u.marker.value = value;
	mk_event(m, &ev);
}

/* returns 0 on success */
static int mk_trace(const char *path, const mk_opts *o)
{
	char err[256];
	mk m = {0};
	m.device = o->device;
	m.w = stp_writer_open(path, err, sizeof err);
	if (!m.w) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	stp_event ev;
	memset(&ev, 0, sizeof ev);
	ev.type = STP_EV_PROCESS;
	ev.u.process.pid = 4242;
	ev.u.process.rank = ev.u.process.local_rank = ev.u.process.world_size = -1;
	ev.u.process.cmdline = stp_writer_string(m.w, "train --fake");
	mk_event(&m, &ev);
	memset(&ev, 0, sizeof ev);
	ev.type = STP_EV_MODULE;
	ev.u.module.path = stp_writer_string(m.w, "/usr/bin/train");
	ev.u.module.base = 0x555500000000ull;
	ev.u.module.size = 0x100000;
	mk_event(&m, &ev);
	for (int s = 0; s < 64; s++) {
		uint64_t ips[3] = {0x555500001000ull + 16 * (uint64_t)s, 0x555500002000ull, 0x555500003000ull};
		m.stacks[s] = stp_writer_stack(m.w, ips, 3);
	}
	char name[64];
	const uint64_t A = 0x100000000ull; /* addresses: A * kind + index */
	for (int l = 0; l < o->layers; l++)
		mk_alloc(&m, 1 * A + (uint64_t)l * 4096, 1 << 20, 1);
	int loss_live = 0;
	for (int it = 0; it < o->iters; it++) {
		if (o->markers)
			mk_mark(&m, STP_MARK_ITER_BEGIN, NULL, it);
		mk_alloc(&m, 9 * A + 16, 4096, 9); /* input batch */
		if (loss_live)
			mk_free(&m, 8 * A + (uint64_t)(it - 1) * 64);
		for (int mb = 0; mb < o->micro_batches; mb++) {
			if (o->markers)
				mk_mark(&m, STP_MARK_PHASE_BEGIN, "forward", mb);
			for (int l = 0; l < o->layers; l++) {
				snprintf(name, sizeof name, "layers.%d", l);
				if (o->markers)
					mk_mark(&m, STP_MARK_MODULE_ENTER, name, 0);
				mk_alloc(&m, 2 * A + (uint64_t)(mb * 64 + l) * 8192, 65536 * (1 + (uint64_t)(l % 2)), 2 + l % 2);
				mk_alloc(&m, 3 * A, 32768, 4); /* transient */
				mk_free(&m, 3 * A);
				if (o->varying && l == 0) {
					uint64_t sz = 4096 * (uint64_t)(1 + (it * 7 + mb * 3) % 5);
					mk_alloc(&m, 4 * A + (uint64_t)mb * 64, sz, 5);
				}
				if (o->markers)
					mk_mark(&m, STP_MARK_MODULE_EXIT, name, 0);
			}
			if (o->markers)
				mk_mark(&m, STP_MARK_PHASE_END, "forward", mb);
		}
		for (int mb = 0; mb < o->micro_batches; mb++) {
			if (o->markers)
				mk_mark(&m, STP_MARK_PHASE_BEGIN, "backward", mb);
			for (int l = o->layers; l-- > 0;) {
				snprintf(name, sizeof name, "layers.%d", l);
				if (o->markers)
					mk_mark(&m, STP_MARK_MODULE_ENTER, name, 0);
				mk_alloc(&m, 5 * A, 131072, 6); /* gradient temporary */
				mk_free(&m, 2 * A + (uint64_t)(mb * 64 + l) * 8192);
				if (o->varying && l == 0)
					mk_free(&m, 4 * A + (uint64_t)mb * 64);
				mk_free(&m, 5 * A);
				if (o->markers)
					mk_mark(&m, STP_MARK_MODULE_EXIT, name, 0);
			}
			if (o->markers)
				mk_mark(&m, STP_MARK_PHASE_END, "backward", mb);
		}
		if (o->markers)
			mk_mark(&m, STP_MARK_PHASE_BEGIN, "optimizer", 0);
		mk_alloc(&m, 6 * A, 1 << 20, 7);
		mk_free(&m, 6 * A);
		if (o->odd && it == o->odd) {
			mk_alloc(&m, 7 * A, 3 << 20, 10);
			mk_free(&m, 7 * A);
		}
		mk_free(&m, 9 * A + 16);
		mk_alloc(&m, 8 * A + (uint64_t)it * 64, 512, 8); /* loss: freed next iteration */
		loss_live = 1;
		if (o->markers) {
			mk_mark(&m, STP_MARK_PHASE_END, "optimizer", 0);
			mk_mark(&m, STP_MARK_ITER_END, NULL, it);
		}
	}
	return stp_writer_close(m.w, STP_END_EXIT, 0);
}
#endif
