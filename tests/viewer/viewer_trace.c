/*
 * viewer_trace.c - writes the traces the viewer's browser test knows the
 * answers for:
 *
 *   viewer_trace gpu FILE [RANK]
 *     a GPU training loop of 3 iterations on device 0 with PyTorch's
 *     allocator recorded (tensors in pool 1, one 32 MiB segment reserved at
 *     0x10000000): weights W (8 MiB at the segment's start, made in
 *     model.py:12 in __init__, never freed); per iteration, in phase forward
 *     and module "model.encoder", an activation A (4 MiB at +8 MiB,
 *     model.py:42 in forward), read by kernel "matmul_kernel" with W; in
 *     phase backward a gradient G (2 MiB at +12 MiB, model.py:57 in
 *     backward, right after A) written by "backward_kernel" with A; a leaked 1 MiB buffer
 *     L at +24 MiB + i MiB (model.py:99 in leak); then A and G are freed.
 *     The peak (17 MiB) is the third iteration's backward: W, A, G and the
 *     three L, in the one segment.  After the loop an evaluation's 64 MiB
 *     is refused (model.py:77 in evaluate: PyTorch's oom report, a
 *     REFUSED event).  RANK (optional) sets the process's rank and scales
 *     A by (1 + RANK) so the ranks differ.
 *
 * Times step by 1 ms per event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/trace.h"

#define MIB (1024ull * 1024ull)
#define SEG 0x10000000ull

static stp_writer *w;
static uint64_t now = 5000000000ull;

static void emit(stp_event *ev)
{
	ev->seq = STP_SEQ_AUTO;
	ev->tid = 7;
	now += 1000000;
	ev->time_ns = now;
	stp_writer_event(w, ev);
}

/* A call path: one Python line over two native frames of the framework. */
static uint32_t py_stack(const char *line)
{
	uint64_t ips[3] = {0x7f0000001000ull, 0x7f0000002000ull,
	                   STP_PYFRAME_TAG | stp_writer_string(w, line)};
	return stp_writer_stack(w, ips, 3);
}

static void alloc(uint64_t addr, uint64_t size, uint32_t stack)
{
	stp_event ev = {.type = STP_EV_ALLOC};
	ev.u.alloc = (stp_alloc_info){.addr = addr, .size = size, .requested = size, .stack = stack,
	                              .kind = STP_MEM_DEVICE, .device = 0, .stream = 0, .pool = STP_POOL_TENSORS};
	emit(&ev);
}

static void release(uint64_t addr)
{
	stp_event ev = {.type = STP_EV_FREE};
	ev.u.free = (stp_free_info){.addr = addr, .kind = STP_MEM_DEVICE, .device = 0, .pool = STP_POOL_TENSORS};
	emit(&ev);
}

static void mark(int kind, const char *name, int64_t value)
{
	stp_event ev = {.type = STP_EV_MARKER};
	ev.u.marker = (stp_marker_info){.kind = (uint8_t)kind, .name = name ? stp_writer_string(w, name) : 0,
	                                .value = value};
	emit(&ev);
}

static void kernel(const char *name, uint64_t a, uint64_t asize, uint32_t amode, uint64_t b, uint64_t bsize,
                   uint32_t bmode)
{
	stp_range r[2] = {{a, asize, amode}, {b, bsize, bmode}};
	stp_event ev = {.type = STP_EV_API};
	ev.u.api = (stp_api_info){.kind = STP_API_KERNEL, .name = stp_writer_string(w, name), .device = 0,
	                          .stream = 0, .nranges = 2, .ranges = r};
	emit(&ev);
}

static int gpu(const char *path, int rank)
{
	char err[256];
	w = stp_writer_open(path, err, sizeof err);
	if (!w) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	stp_event ev = {.type = STP_EV_PROCESS};
	ev.u.process = (stp_process_info){.pid = 4242 + (uint32_t)(rank < 0 ? 0 : rank), .ppid = 1, .rank = rank,
	                                  .local_rank = rank, .world_size = rank < 0 ? -1 : 2,
	                                  .cmdline = stp_writer_string(w, "python3 train.py"),
	                                  .exe = stp_writer_string(w, "/usr/bin/python3")};
	emit(&ev);
	uint32_t sw = py_stack("model.py:12 in __init__"), sa = py_stack("model.py:42 in forward");
	uint32_t sg = py_stack("model.py:57 in backward"), sl = py_stack("model.py:99 in leak");
	uint64_t asize = 4 * MIB * (uint64_t)(1 + (rank < 0 ? 0 : rank));
	stp_event seg = {.type = STP_EV_SEGMENT_RESERVE};
	seg.u.segment = (stp_segment_info){.addr = SEG, .size = 32 * MIB, .kind = STP_MEM_DEVICE, .device = 0};
	emit(&seg);
	alloc(SEG, 8 * MIB, sw);
	for (int i = 0; i < 3; i++) {
		mark(STP_MARK_ITER_BEGIN, NULL, i);
		mark(STP_MARK_PHASE_BEGIN, "forward", 0);
		mark(STP_MARK_MODULE_ENTER, "model.encoder", 0);
		alloc(SEG + 8 * MIB, asize, sa);
		kernel("matmul_kernel", SEG, 8 * MIB, STP_ACCESS_READ, SEG + 8 * MIB, asize, STP_ACCESS_WRITE);
		mark(STP_MARK_MODULE_EXIT, "model.encoder", 0);
		mark(STP_MARK_PHASE_END, "forward", 0);
		mark(STP_MARK_PHASE_BEGIN, "backward", 0);
		alloc(SEG + 8 * MIB + asize, 2 * MIB, sg);
		kernel("backward_kernel", SEG + 8 * MIB, asize, STP_ACCESS_READ, SEG + 8 * MIB + asize, 2 * MIB,
		       STP_ACCESS_WRITE);
		alloc(SEG + 24 * MIB + (uint64_t)i * MIB, MIB, sl);
		release(SEG + 8 * MIB);
		release(SEG + 8 * MIB + asize);
		mark(STP_MARK_PHASE_END, "backward", 0);
		mark(STP_MARK_ITER_END, NULL, i);
	}
	stp_event no = {.type = STP_EV_REFUSED};
	no.u.alloc = (stp_alloc_info){.size = 64 * MIB, .requested = 64 * MIB, .stack = py_stack("model.py:77 in evaluate"),
	                              .kind = STP_MEM_DEVICE, .device = 0, .pool = STP_POOL_TENSORS};
	emit(&no);
	return stp_writer_close(w, STP_END_EXIT, 0) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "gpu"))
		return gpu(argv[2], argc > 3 ? atoi(argv[3]) : -1);
	fprintf(stderr, "usage: viewer_trace gpu FILE [RANK]\n");
	return 2;
}
