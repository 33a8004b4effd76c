/*
 * gen.c - writes a large training-like trace for the report benchmark:
 * gen FILE EVENTS [api] [nomarkers].  Per iteration: forward allocates
 * activations through 64 call sites (some freed at once: transients),
 * backward frees them in reverse, an optimizer phase churns temporaries;
 * 4,000 persistent weights are allocated before the loop.  With "api", every
 * allocation is followed by a kernel that writes it and every free is
 * preceded by one that reads it, on 2 streams.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/trace.h"

static stp_writer *w;
static uint64_t now = 1000000000ull;
static uint64_t nev;

static void emit(stp_event *ev)
{
	ev->seq = STP_SEQ_AUTO;
	ev->tid = 1;
	now += 200;
	ev->time_ns = now;
	stp_writer_event(w, ev);
	nev++;
}

static uint32_t stacks[256];
static int api;

static void alloc(uint64_t addr, uint64_t size, uint32_t stack)
{
	stp_event ev = {.type = STP_EV_ALLOC};
	ev.u.alloc = (stp_alloc_info){.addr = addr, .size = size, .requested = size, .stack = stack, .device = -1};
	emit(&ev);
	if (api) {
		stp_range r = {addr, size, STP_ACCESS_WRITE};
		stp_event a = {.type = STP_EV_API};
		a.u.api = (stp_api_info){.kind = STP_API_KERNEL, .name = 1, .stream = nev & 1, .nranges = 1, .ranges = &r};
		emit(&a);
	}
}

static void release(uint64_t addr, uint64_t size)
{
	if (api) {
		stp_range r = {addr, size, STP_ACCESS_READ};
		stp_event a = {.type = STP_EV_API};
		a.u.api = (stp_api_info){.kind = STP_API_KERNEL, .name = 1, .stream = nev & 1, .nranges = 1, .ranges = &r};
		emit(&a);
	}
	stp_event ev = {.type = STP_EV_FREE};
	ev.u.free = (stp_free_info){.addr = addr, .device = -1};
	emit(&ev);
}

static void mark(int kind, uint32_t name, int64_t v)
{
	stp_event ev = {.type = STP_EV_MARKER};
	ev.u.marker = (stp_marker_info){.kind = (uint8_t)kind, .name = name, .value = v};
	emit(&ev);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: gen FILE EVENTS [api] [nomarkers]\n");
		return 2;
	}
	uint64_t target = strtoull(argv[2], NULL, 10);
	int markers = 1;
	for (int i = 3; i < argc; i++) {
		api |= !strcmp(argv[i], "api");
		if (!strcmp(argv[i], "nomarkers"))
			markers = 0;
	}
	char err[256];
	w = stp_writer_open(argv[1], err, sizeof err);
	if (!w) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	stp_writer_string(w, "kernel");
	uint32_t fwd = stp_writer_string(w, "forward"), bwd = stp_writer_string(w, "backward"),
	         opt = stp_writer_string(w, "optimizer");
	for (int s = 0; s < 256; s++) {
		uint64_t ips[12];
		for (int k = 0; k < 12; k++)
			ips[k] = 0x400000 + (uint64_t)s * 0x40 + (uint64_t)k * 0x1000;
		stacks[s] = stp_writer_stack(w, ips, 12);
	}
	for (uint64_t i = 0; i < 4000; i++)
		alloc(0x10000000000ull + i * 0x100000, 4096 + (i % 64) * 1024, stacks[200 + i % 8]);
	enum { NACT = 20000 };
	for (int64_t it = 0; nev < target; it++) {
		if (markers) {
			mark(STP_MARK_ITER_BEGIN, 0, it);
			mark(STP_MARK_PHASE_BEGIN, fwd, 0);
		}
		for (uint64_t a = 0; a < NACT; a++) {
			uint64_t addr = 0x20000000000ull + a * 0x10000;
			alloc(addr, 1024 + (a % 16) * 512, stacks[a % 64]);
			alloc(0x30000000000ull + (a & 7) * 0x1000, 256, stacks[64 + a % 32]);
			release(0x30000000000ull + (a & 7) * 0x1000, 256);
		}
		if (markers) {
			mark(STP_MARK_PHASE_END, fwd, 0);
			mark(STP_MARK_PHASE_BEGIN, bwd, 0);
		}
		for (uint64_t a = NACT; a-- > 0;)
			release(0x20000000000ull + a * 0x10000, 1024 + (a % 16) * 512);
		if (markers) {
			mark(STP_MARK_PHASE_END, bwd, 0);
			mark(STP_MARK_PHASE_BEGIN, opt, 0);
		}
		for (uint64_t a = 0; a < 1000; a++) {
			alloc(0x40000000000ull, 4096, stacks[100 + a % 16]);
			release(0x40000000000ull, 4096);
		}
		if (markers) {
			mark(STP_MARK_PHASE_END, opt, 0);
			mark(STP_MARK_ITER_END, 0, it);
		}
	}
	if (stp_writer_close(w, STP_END_EXIT, 0) != 0)
		return 1;
	printf("%llu\n", (unsigned long long)nev);
	return 0;
}
