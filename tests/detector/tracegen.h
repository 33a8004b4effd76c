/*
 * tracegen.h - writing crafted traces for the detector's tests and bench:
 * a thin layer over stp_writer with a clock that advances by a fixed step
 * per event (tg.step_ns), one fake module ("/bin/prog" at 0x400000, bias 0)
 * and call paths given as lists of offsets in it.
 */
#ifndef STP_TEST_TRACEGEN_H
#define STP_TEST_TRACEGEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/trace.h"

typedef struct tg {
	stp_writer *w;
	uint64_t now, step_ns;
	uint32_t tid;
} tg;

#define TG_BASE 0x400000ull

static inline int tg_open(tg *g, const char *path)
{
	char err[256];
	memset(g, 0, sizeof *g);
	g->w = stp_writer_open(path, err, sizeof err);
	if (!g->w) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	g->now = 1000000000ull;
	g->step_ns = 1000;
	g->tid = 1;
	stp_event ev = {.type = STP_EV_PROCESS, .tid = 1, .seq = STP_SEQ_AUTO, .time_ns = g->now};
	ev.u.process = (stp_process_info){.pid = 42, .ppid = 1, .rank = -1, .local_rank = -1, .world_size = -1,
	                                  .cmdline = stp_writer_string(g->w, "prog --test"),
	                                  .exe = stp_writer_string(g->w, "/bin/prog")};
	stp_writer_event(g->w, &ev);
	ev.type = STP_EV_MODULE;
	ev.u.module = (stp_module_info){.path = stp_writer_string(g->w, "/bin/prog"), .base = TG_BASE, .size = 0x100000};
	ev.seq = STP_SEQ_AUTO;
	stp_writer_event(g->w, &ev);
	return 0;
}

static inline void tg_emit(tg *g, stp_event *ev)
{
	ev->seq = STP_SEQ_AUTO;
	ev->tid = g->tid;
	g->now += g->step_ns;
	ev->time_ns = g->now;
	stp_writer_event(g->w, ev);
}

/* A call path of offsets in /bin/prog, innermost first (up to 8). */
static inline uint32_t tg_stack(tg *g, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t ips[3] = {TG_BASE + a, TG_BASE + b, TG_BASE + c};
	return stp_writer_stack(g->w, ips, c ? 3 : b ? 2 : a ? 1 : 0);
}

static inline void tg_alloc_k(tg *g, uint64_t addr, uint64_t size, uint32_t stack, uint8_t kind, int32_t dev,
                              uint64_t stream)
{
	stp_event ev = {.type = STP_EV_ALLOC};
	ev.u.alloc = (stp_alloc_info){.addr = addr, .size = size, .requested = size, .stack = stack, .kind = kind,
	                              .device = dev, .stream = stream};
	tg_emit(g, &ev);
}
static inline void tg_alloc(tg *g, uint64_t addr, uint64_t size, uint32_t stack)
{
	tg_alloc_k(g, addr, size, stack, STP_MEM_HOST, -1, 0);
}
static inline void tg_free(tg *g, uint64_t addr)
{
	stp_event ev = {.type = STP_EV_FREE};
	ev.u.free = (stp_free_info){.addr = addr, .device = -1};
	tg_emit(g, &ev);
}
static inline void tg_free_k(tg *g, uint64_t addr, int32_t dev, uint64_t stream)
{
	stp_event ev = {.type = STP_EV_FREE};
	ev.u.free = (stp_free_info){.addr = addr, .kind = STP_MEM_DEVICE, .device = dev, .stream = stream};
	tg_emit(g, &ev);
}
static inline void tg_mark(tg *g, int kind, const char *name, int64_t value)
{
	stp_event ev = {.type = STP_EV_MARKER};
	ev.u.marker = (stp_marker_info){.kind = (uint8_t)kind, .name = name ? stp_writer_string(g->w, name) : 0,
	                                .value = value};
	tg_emit(g, &ev);
}
/* An API event on a stream touching ranges. */
static inline void tg_api(tg *g, int kind, const char *name, uint64_t stream, const stp_range *r, uint32_t n)
{
	stp_event ev = {.type = STP_EV_API};
	ev.u.api = (stp_api_info){.kind = (uint8_t)kind, .name = stp_writer_string(g->w, name ? name : "k"),
	                          .device = 0, .stream = stream, .nranges = n, .ranges = r};
	tg_emit(g, &ev);
	/* the API's end is its begin: tests reason in API order */
}
static inline int tg_close(tg *g) { return stp_writer_close(g->w, STP_END_EXIT, 0); }
static inline void tg_abandon(tg *g) { stp_writer_abandon(g->w); }
#endif
