/* sample_trace.c - see sample_trace.h. */
#include <stdio.h>
#include <string.h>

#include "sample_trace.h"
#include "stprof/trace.h"

#define MAIN 0
#define AUTOGRAD 1
#define DEV0 0x7fa000000000ull
#define MIB (1ull << 20)

typedef struct live { uint64_t addr, size, req; int kind; } live;

typedef struct W {
	stp_writer *w;
	uint32_t tids[2];
	uint64_t t;
	sample_facts *f;
	live live[256];
	int nlive;
	int failed;
} W;

static void put(W *w, stp_event *ev, int who)
{
	ev->seq = STP_SEQ_AUTO;
	ev->tid = w->tids[who];
	ev->time_ns = w->t;
	if (!w->f->t_first)
		w->f->t_first = w->t;
	if (w->t > w->f->t_last)
		w->f->t_last = w->t;
	if (stp_writer_event(w->w, ev) < 0)
		w->failed = 1;
}

static void count_live(W *w)
{
	uint64_t dev = 0, host = 0;
	for (int i = 0; i < w->nlive; i++) {
		dev += w->live[i].kind == STP_MEM_DEVICE;
		host += w->live[i].kind == STP_MEM_HOST;
	}
	if (dev > w->f->peak_device_live)
		w->f->peak_device_live = dev;
	if (host > w->f->peak_host_live)
		w->f->peak_host_live = host;
}

static void drop_live(W *w, uint64_t addr)
{
	for (int i = 0; i < w->nlive; i++) {
		if (w->live[i].addr != addr)
			continue;
		if (w->live[i].kind == STP_MEM_DEVICE) {
			w->f->end_requested -= (int64_t)w->live[i].req;
			w->f->end_allocated -= (int64_t)w->live[i].size;
		}
		w->live[i] = w->live[--w->nlive];
		return;
	}
}

static void alloc(W *w, int who, uint64_t dt, uint64_t addr, uint64_t size, uint64_t req, uint32_t stack,
                  int kind, uint64_t stream)
{
	w->t += dt;
	stp_event ev = {.type = STP_EV_ALLOC};
	ev.u.alloc = (stp_alloc_info){.addr = addr, .size = size, .requested = req, .stack = stack,
	                              .kind = (uint8_t)kind, .device = kind == STP_MEM_DEVICE ? 0 : -1,
	                              .stream = stream};
	put(w, &ev, who);
	drop_live(w, addr); /* an address reused without a free */
	w->live[w->nlive++] = (live){addr, size, req, kind};
	if (kind == STP_MEM_DEVICE) {
		w->f->end_requested += (int64_t)req;
		w->f->end_allocated += (int64_t)size;
	}
	w->f->objects++;
	count_live(w);
}

static void release(W *w, int who, uint64_t dt, uint64_t addr, int kind, uint64_t stream)
{
	w->t += dt;
	stp_event ev = {.type = STP_EV_FREE};
	ev.u.free = (stp_free_info){.addr = addr, .kind = (uint8_t)kind,
	                            .device = kind == STP_MEM_DEVICE ? 0 : -1, .stream = stream};
	put(w, &ev, who);
	drop_live(w, addr);
}

static void api(W *w, int who, uint64_t dt, int kind, const char *name, uint64_t stream, uint64_t dur,
                const stp_range *ranges, uint32_t n)
{
	w->t += dt;
	stp_event ev = {.type = STP_EV_API};
	ev.u.api = (stp_api_info){.kind = (uint8_t)kind, .name = name ? stp_writer_string(w->w, name) : 0,
	                          .device = 0, .stream = stream, .end_ns = w->t + dur, .nranges = n,
	                          .ranges = ranges};
	put(w, &ev, who);
	w->f->api_calls++;
}

static void mark(W *w, int who, uint64_t dt, int kind, const char *name, int64_t value)
{
	w->t += dt;
	stp_event ev = {.type = STP_EV_MARKER};
	ev.u.marker = (stp_marker_info){.kind = (uint8_t)kind, .name = name ? stp_writer_string(w->w, name) : 0,
	                                .value = value};
	put(w, &ev, who);
}

static void segment(W *w, uint64_t dt, int reserve, uint64_t addr, uint64_t size)
{
	w->t += dt;
	stp_event ev = {.type = reserve ? STP_EV_SEGMENT_RESERVE : STP_EV_SEGMENT_RELEASE};
	ev.u.segment = (stp_segment_info){.addr = addr, .size = size, .requested = size, .kind = STP_MEM_DEVICE,
	                                  .device = 0};
	put(w, &ev, MAIN);
	w->f->end_reserved += reserve ? (int64_t)size : -(int64_t)size;
}

int sample_trace_write(const char *path, uint32_t pid, int rank, const char *host, uint64_t t0,
                       sample_facts *facts)
{
	sample_facts dummy;
	char err[256];
	W w;
	memset(&w, 0, sizeof w);
	w.f = facts ? facts : &dummy;
	memset(w.f, 0, sizeof *w.f);
	w.w = stp_writer_open(path, err, sizeof err);
	if (!w.w) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	w.tids[MAIN] = pid;
	w.tids[AUTOGRAD] = pid + 1;
	w.t = t0;

	stp_event ev = {.type = STP_EV_PROCESS};
	ev.u.process = (stp_process_info){.pid = pid, .ppid = 1, .rank = rank, .local_rank = rank,
	                                  .world_size = rank >= 0 ? 2 : -1,
	                                  .cmdline = stp_writer_string(w.w, "python3 train.py --epochs 1"),
	                                  .exe = stp_writer_string(w.w, "/usr/bin/python3.11"),
	                                  .hostname = stp_writer_string(w.w, host),
	                                  .start_realtime_ns = 1700000000000000000ull + (uint64_t)(rank > 0 ? rank : 0) * 1000,
	                                  .start_monotonic_ns = t0};
	put(&w, &ev, MAIN);
	ev = (stp_event){.type = STP_EV_THREAD};
	ev.u.thread = (stp_thread_info){.tid = pid, .name = stp_writer_string(w.w, "python3")};
	put(&w, &ev, MAIN);
	ev.u.thread = (stp_thread_info){.tid = pid + 1, .name = stp_writer_string(w.w, "pt_autograd_0")};
	put(&w, &ev, AUTOGRAD);
	ev = (stp_event){.type = STP_EV_MODULE};
	ev.u.module = (stp_module_info){.path = stp_writer_string(w.w, "/opt/app/train"), .base = 0x400000,
	                                .size = 0x100000, .bias = 0};
	put(&w, &ev, MAIN);
	ev.u.module = (stp_module_info){.path = stp_writer_string(w.w, "/usr/lib/libtorch_cuda.so"),
	                                .base = 0x7f1000000000ull, .size = 0x1000000, .bias = 0x7f1000000000ull};
	put(&w, &ev, MAIN);

	const uint64_t s_w[] = {0x401000, 0x402000, 0x403000};
	const uint64_t s_act[] = {0x7f1000012340ull, 0x401100, 0x402000, 0x403000};
	const uint64_t s_grad[] = {0x7f1000012340ull, 0x401200, 0x403000};
	const uint64_t s_tmp[] = {0x7f1000022220ull, 0x401300};
	const uint64_t s_host[] = {0x401400, 0x403000};
	uint32_t st_w = stp_writer_stack(w.w, s_w, 3), st_act = stp_writer_stack(w.w, s_act, 4),
	         st_grad = stp_writer_stack(w.w, s_grad, 3), st_tmp = stp_writer_stack(w.w, s_tmp, 2),
	         st_host = stp_writer_stack(w.w, s_host, 2);
	w.f->train_ip = 0x401100;

	segment(&w, 100, 1, DEV0, 64 * MIB);
	for (int i = 0; i < 4; i++)
		alloc(&w, MAIN, 50, DEV0 + (uint64_t)i * 4 * MIB, 4 * MIB, 4 * MIB - 100, st_w, STP_MEM_DEVICE, 7);
	alloc(&w, MAIN, 20, 0x555560000000ull, 1024, 1000, st_host, STP_MEM_HOST, 0);
	mark(&w, MAIN, 10, STP_MARK_ANNOTATION, "config loaded", 1);

	const uint64_t A = DEV0 + 16 * MIB, T = DEV0 + 17 * MIB, G = DEV0 + 18 * MIB;
	for (int it = 0; it < 3; it++) {
		mark(&w, MAIN, 1000, STP_MARK_ITER_BEGIN, NULL, it);
		mark(&w, MAIN, 10, STP_MARK_PHASE_BEGIN, "forward", 0);
		mark(&w, MAIN, 10, STP_MARK_MODULE_ENTER, "model.layer1", 0);
		mark(&w, MAIN, 10, STP_MARK_MODULE_ENTER, "model.layer1.attn", 0);
		alloc(&w, MAIN, 10, A, MIB, MIB, st_act, STP_MEM_DEVICE, 7);
		stp_range r1[2] = {{DEV0, 4 * MIB, STP_ACCESS_READ}, {A, MIB, STP_ACCESS_WRITE}};
		api(&w, MAIN, 10, STP_API_KERNEL, "gemm", 7, 100, r1, 2);
		mark(&w, MAIN, 200, STP_MARK_MODULE_EXIT, "model.layer1.attn", 0);
		mark(&w, MAIN, 10, STP_MARK_MODULE_EXIT, "model.layer1", 0);
		alloc(&w, MAIN, 10, T, 256 << 10, 200000, st_tmp, STP_MEM_DEVICE, 7);
		stp_range r2[1] = {{T, 256 << 10, STP_ACCESS_WRITE}};
		api(&w, MAIN, 10, STP_API_MEMSET, NULL, 7, 30, r2, 1);
		/* Two kernels on stream 7 that overlap without nesting. */
		api(&w, MAIN, 100, STP_API_KERNEL, "k_overlap_a", 7, 200, NULL, 0);
		api(&w, AUTOGRAD, 50, STP_API_KERNEL, "k_overlap_b", 7, 250, r2, 1);
		mark(&w, MAIN, 400, STP_MARK_PHASE_END, "forward", 0);
		mark(&w, AUTOGRAD, 10, STP_MARK_PHASE_BEGIN, "backward", 0);
		mark(&w, AUTOGRAD, 10, STP_MARK_MODULE_ENTER, "model.layer1", 0);
		alloc(&w, AUTOGRAD, 10, G, 4 * MIB, 4 * MIB, st_grad, STP_MEM_DEVICE, 13);
		stp_range r3[2] = {{A, MIB, STP_ACCESS_READ}, {G, 4 * MIB, STP_ACCESS_WRITE}};
		api(&w, AUTOGRAD, 10, STP_API_MEMCPY, "cudaMemcpyAsync", 13, 80, r3, 2);
		mark(&w, AUTOGRAD, 100, STP_MARK_MODULE_EXIT, "model.layer1", 0);
		release(&w, AUTOGRAD, 10, T, STP_MEM_DEVICE, 7);
		release(&w, AUTOGRAD, 10, A, STP_MEM_DEVICE, 13);
		mark(&w, AUTOGRAD, 10, STP_MARK_PHASE_END, "backward", 0);
		mark(&w, MAIN, 10, STP_MARK_PHASE_BEGIN, "optimizer", 0);
		stp_range r4[2] = {{DEV0, 16 * MIB, STP_ACCESS_READ | STP_ACCESS_WRITE}, {G, 4 * MIB, STP_ACCESS_READ}};
		api(&w, MAIN, 10, STP_API_KERNEL, "adam", 7, 150, r4, 2);
		release(&w, MAIN, 200, G, STP_MEM_DEVICE, 13);
		mark(&w, MAIN, 10, STP_MARK_PHASE_END, "optimizer", 0);
		mark(&w, MAIN, 10, STP_MARK_ITER_END, NULL, it);
		w.f->iterations++;
	}
	/* The awkward cases. */
	release(&w, MAIN, 100, 0xdead0000ull, STP_MEM_DEVICE, 7);  /* never allocated */
	mark(&w, MAIN, 10, STP_MARK_PHASE_END, "forward", 0);      /* never begun */
	const uint64_t X = DEV0 + 24 * MIB;
	alloc(&w, MAIN, 10, X, MIB, MIB, st_tmp, STP_MEM_DEVICE, 7);
	alloc(&w, MAIN, 10, X, 2 * MIB, 2 * MIB, st_act, STP_MEM_DEVICE, 7); /* reused, no free */
	w.t -= 5;                                                  /* a little back in time */
	alloc(&w, AUTOGRAD, 0, DEV0 + 30 * MIB, 512, 500, st_grad, STP_MEM_DEVICE, 13);
	release(&w, AUTOGRAD, 20, DEV0 + 30 * MIB, STP_MEM_DEVICE, 13);
	release(&w, MAIN, 10, 0x555560000000ull, STP_MEM_HOST, 0);
	/* Clock skew between threads: another thread touches and frees an
	 * object a little before its allocation's timestamp. */
	const uint64_t Z = DEV0 + 32 * MIB;
	alloc(&w, MAIN, 10, Z, 4096, 4096, st_tmp, STP_MEM_DEVICE, 7);
	w.t -= 3;
	stp_range rz[1] = {{Z, 4096, STP_ACCESS_READ}};
	api(&w, AUTOGRAD, 0, STP_API_KERNEL, "early_reader", 13, 1, rz, 1);
	release(&w, AUTOGRAD, 1, Z, STP_MEM_DEVICE, 13);
	w.t += 2;
	api(&w, MAIN, 10, STP_API_SYNC, "cudaStreamSynchronize", 7, 0, NULL, 0);
	api(&w, MAIN, 10, STP_API_SYNC, "cudaDeviceSynchronize", 0, 40, NULL, 0);
	segment(&w, 10, 1, DEV0 + 64 * MIB, 2 * MIB);
	segment(&w, 10, 0, DEV0 + 64 * MIB, 2 * MIB);
	mark(&w, MAIN, 10, STP_MARK_MODULE_ENTER, "left.open", 0); /* closed at the end */
	mark(&w, MAIN, 100, STP_MARK_ANNOTATION, "done", 0);
	w.f->unfreed = (uint64_t)w.nlive;
	if (stp_writer_close(w.w, STP_END_EXIT, 0) < 0 || w.failed)
		return -1;
	return 0;
}
