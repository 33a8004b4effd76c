/*
 * synth.c - pftrace_synth OUT.stp [OBJECTS]: writes a synthetic training
 * trace with OBJECTS allocations (default 10^6) for the export benchmark.
 *
 * Shape: 0.1% persistent objects (weights, never freed) allocated first; then
 * iterations of 10^4 objects: a forward phase allocates activations (sizes
 * log-uniform 256 B .. 16 MiB) under module markers, a kernel per 10
 * allocations touches the last few live objects (address ranges), a
 * backward phase allocates and frees gradients, then the activations are
 * freed.  Two streams and two threads; 2000 distinct call stacks of depth
 * 8..24; a segment reserved per 64 MiB of growth.  Deterministic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/trace.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

typedef struct obj { uint64_t addr, size; } obj;

static stp_writer *w;
static uint64_t t = 1000000000ull;
static uint32_t tids[2] = {1000, 1001};
static uint32_t stacks[2000];
static uint64_t next_addr = 0x7f0000000000ull, reserved_top = 0x7f0000000000ull;
static uint64_t written;

static void put(stp_event *ev, int who)
{
	ev->seq = STP_SEQ_AUTO;
	ev->tid = tids[who];
	ev->time_ns = t;
	t += 200 + rnd() % 800;
	if (stp_writer_event(w, ev) < 0) {
		fprintf(stderr, "pftrace_synth: write failed\n");
		exit(1);
	}
	written++;
}

static uint64_t pick_size(void)
{
	int lg = 8 + (int)(rnd() % 17); /* 256 B .. 16 MiB */
	return ((1ull << lg) + rnd() % (1ull << lg)) & ~511ull;
}

static obj do_alloc(int who, uint64_t stream)
{
	obj o = {next_addr, pick_size() + 512};
	next_addr += o.size;
	while (next_addr > reserved_top) {
		stp_event ev = {.type = STP_EV_SEGMENT_RESERVE};
		ev.u.segment = (stp_segment_info){.addr = reserved_top, .size = 64ull << 20, .kind = STP_MEM_DEVICE,
		                                  .device = 0};
		put(&ev, who);
		reserved_top += 64ull << 20;
	}
	stp_event ev = {.type = STP_EV_ALLOC};
	ev.u.alloc = (stp_alloc_info){.addr = o.addr, .size = o.size, .requested = o.size - rnd() % 512,
	                              .stack = stacks[rnd() % 2000], .kind = STP_MEM_DEVICE, .device = 0,
	                              .stream = stream};
	put(&ev, who);
	return o;
}

static void do_free(int who, const obj *o, uint64_t stream)
{
	stp_event ev = {.type = STP_EV_FREE};
	ev.u.free = (stp_free_info){.addr = o->addr, .kind = STP_MEM_DEVICE, .device = 0, .stream = stream};
	put(&ev, who);
}

static void marker(int who, int kind, const char *name, int64_t v)
{
	stp_event ev = {.type = STP_EV_MARKER};
	ev.u.marker = (stp_marker_info){.kind = (uint8_t)kind, .name = name ? stp_writer_string(w, name) : 0,
	                                .value = v};
	put(&ev, who);
}

static void kernel(int who, uint64_t stream, const obj *objs, size_t n, uint32_t name)
{
	stp_range r[3];
	uint32_t k = 0;
	for (size_t i = 0; i < n && k < 3; i++, k++)
		r[k] = (stp_range){objs[i].addr, objs[i].size, k ? STP_ACCESS_READ : STP_ACCESS_WRITE};
	stp_event ev = {.type = STP_EV_API};
	ev.u.api = (stp_api_info){.kind = STP_API_KERNEL, .name = name, .device = 0, .stream = stream,
	                          .end_ns = t + 2000 + rnd() % 20000, .nranges = k, .ranges = r};
	put(&ev, who);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: pftrace_synth OUT.stp [OBJECTS]\n");
		return 2;
	}
	uint64_t total = argc == 3 ? strtoull(argv[2], NULL, 10) : 1000000;
	char err[256];
	w = stp_writer_open(argv[1], err, sizeof err);
	if (!w) {
		fprintf(stderr, "pftrace_synth: %s\n", err);
		return 1;
	}
	stp_event ev = {.type = STP_EV_PROCESS};
	ev.u.process = (stp_process_info){.pid = 1000, .ppid = 1, .rank = 0, .local_rank = 0, .world_size = 1,
	                                  .cmdline = stp_writer_string(w, "python3 synth_train.py"),
	                                  .hostname = stp_writer_string(w, "bench"), .start_monotonic_ns = t};
	put(&ev, 0);
	ev = (stp_event){.type = STP_EV_MODULE};
	ev.u.module = (stp_module_info){.path = stp_writer_string(w, "/usr/lib/libtorch_cuda.so"),
	                                .base = 0x7e0000000000ull, .size = 1ull << 28, .bias = 0x7e0000000000ull};
	put(&ev, 0);
	uint64_t ips[24];
	for (int s = 0; s < 2000; s++) {
		uint32_t depth = 8 + (uint32_t)(rnd() % 17);
		for (uint32_t d = 0; d < depth; d++)
			ips[d] = 0x7e0000000000ull + ((rnd() % 3000) << 8) + d;
		stacks[s] = stp_writer_stack(w, ips, depth);
	}
	uint32_t names[8];
	const char *kn[8] = {"gemm", "softmax", "layernorm", "gelu", "attention_fwd", "attention_bwd", "adam",
	                     "elementwise"};
	for (int i = 0; i < 8; i++)
		names[i] = stp_writer_string(w, kn[i]);
	uint64_t allocated = 0;
	uint64_t npersist = total / 1000;
	for (uint64_t i = 0; i < npersist; i++, allocated++)
		do_alloc(0, 7);
	obj *live = malloc(sizeof *live * 12000);
	uint64_t iter_base = next_addr; /* every iteration reuses the same addresses */
	for (int it = 0; allocated < total; it++) {
		next_addr = iter_base;
		marker(0, STP_MARK_ITER_BEGIN, NULL, it);
		marker(0, STP_MARK_PHASE_BEGIN, "forward", 0);
		size_t n = 0;
		uint64_t batch = total - allocated < 10000 ? total - allocated : 10000;
		uint64_t acts = batch * 3 / 4;
		for (uint64_t i = 0; i < acts; i++) {
			if (i % 100 == 0)
				marker(0, STP_MARK_MODULE_ENTER, "model.layer", (int64_t)(i / 100));
			live[n++] = do_alloc(0, 7);
			if (i % 10 == 9)
				kernel(0, 7, &live[n - 3], 3, names[rnd() % 5]);
			if (i % 100 == 99)
				marker(0, STP_MARK_MODULE_EXIT, "model.layer", (int64_t)(i / 100));
		}
		if (acts % 100)
			marker(0, STP_MARK_MODULE_EXIT, "model.layer", 0);
		marker(0, STP_MARK_PHASE_END, "forward", 0);
		marker(1, STP_MARK_PHASE_BEGIN, "backward", 0);
		for (uint64_t i = acts; i < batch; i++) {
			obj g = do_alloc(1, 13);
			kernel(1, 13, &g, 1, names[5]);
			do_free(1, &g, 13);
			if (n)
				do_free(1, &live[--n], 13);
		}
		while (n)
			do_free(1, &live[--n], 13);
		marker(1, STP_MARK_PHASE_END, "backward", 0);
		marker(0, STP_MARK_ITER_END, NULL, it);
		allocated += batch;
	}
	free(live);
	if (stp_writer_close(w, STP_END_EXIT, 0) < 0) {
		fprintf(stderr, "pftrace_synth: close failed\n");
		return 1;
	}
	fprintf(stderr, "pftrace_synth: %llu objects, %llu events\n", (unsigned long long)total,
	        (unsigned long long)written);
	return 0;
}
