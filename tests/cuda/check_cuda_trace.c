/*
 * check_cuda_trace.c - checks the trace of tests/cuda/cuda_prog.cu against
 * the objects the program named ($CUDA_PROG_ADDRS: "NAME ADDR SIZE"):
 *
 *   check_cuda_trace [--fake] TRACE ADDRS
 *
 * Exactly the expected CUDA objects (kind, size, device, pool), each freed;
 * the VMM mapping as a segment reserved and released; the four kernels with
 * exactly the objects their arguments point into (one past e's end is not
 * e); the copies and sets with their ranges and directions; the syncs; a
 * call path starting in cuda_prog for each; device times (--fake: the fake
 * driver's exact durations).  Prints every failure and exits 1 if any.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/trace.h"

#define RW (STP_ACCESS_READ | STP_ACCESS_WRITE)

typedef struct obj {
	char name[8];
	uint64_t addr, size;
	int allocs, frees;
	uint8_t kind;
	int32_t device;
	uint32_t pool;
} obj;

static obj objs[32];
static int nobjs, failures, checks;
static uint64_t exe_lo, exe_hi;

__attribute__((format(printf, 2, 3))) static void check(int ok, const char *fmt, ...)
{
	checks++;
	if (!ok) {
		failures++;
		fprintf(stderr, "check_cuda_trace: FAIL: ");
		va_list ap;
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

static obj *by_name(const char *n)
{
	for (int i = 0; i < nobjs; i++)
		if (!strcmp(objs[i].name, n))
			return &objs[i];
	fprintf(stderr, "check_cuda_trace: %s not in the address file\n", n);
	exit(2);
}

static obj *by_addr(uint64_t a)
{
	for (int i = 0; i < nobjs; i++)
		if (objs[i].addr == a)
			return &objs[i];
	return NULL;
}

typedef struct api {
	uint8_t kind;
	char name[128];
	uint64_t stream, time, end;
	int in_exe;
	uint32_t n;
	stp_range r[16];
} api;
static api apis[64];
static int napis;

/* The innermost frame of a call path lies in cuda_prog itself. */
static int starts_in_exe(stp_reader *r, uint32_t stack)
{
	uint64_t ip;
	return stack && stp_reader_stack(r, stack, &ip, 1) == 1 && ip >= exe_lo && ip < exe_hi;
}

/* The API event i has exactly these ranges (names; mode m). */
static void expect_ranges(const api *a, const char *what, const char *const *names, int n, uint32_t mode)
{
	int ok = (int)a->n == n;
	for (int i = 0; ok && i < n; i++) {
		const obj *o = by_name(names[i]);
		int found = 0;
		for (uint32_t k = 0; k < a->n; k++)
			found |= a->r[k].addr == o->addr && a->r[k].size == o->size && a->r[k].mode == mode;
		ok = found;
	}
	check(ok, "%s: not exactly the expected object ranges", what);
}

int main(int argc, char **argv)
{
	int fake = argc > 1 && !strcmp(argv[1], "--fake");
	if (argc != 3 + fake) {
		fprintf(stderr, "usage: check_cuda_trace [--fake] TRACE ADDRS\n");
		return 2;
	}
	FILE *f = fopen(argv[2 + fake], "r");
	if (!f) {
		perror(argv[2 + fake]);
		return 2;
	}
	obj o = {0};
	while (nobjs < 32 && fscanf(f, "%7s %" SCNu64 " %" SCNu64, o.name, &o.addr, &o.size) == 3)
		objs[nobjs++] = o;
	fclose(f);
	static const struct { const char *n; uint8_t kind; int32_t dev; uint32_t pool; } want[] = {
		{"a", STP_MEM_DEVICE, 0, 0}, {"b", STP_MEM_DEVICE, 0, 0}, {"c", STP_MEM_DEVICE, 0, 0},
		{"e", STP_MEM_DEVICE, 0, 0}, {"x", STP_MEM_DEVICE, 0, 0}, {"y", STP_MEM_DEVICE, 0, 16},
		{"d", STP_MEM_DEVICE, 0, 0}, {"m", STP_MEM_MANAGED, 0, 0}, {"hp", STP_MEM_PINNED, -1, 0},
		{"hq", STP_MEM_PINNED, -1, 0}};
	const size_t nwant = sizeof want / sizeof want[0];

	char err[512];
	stp_reader *r = stp_reader_open(argv[1 + fake], err, sizeof err);
	if (!r) {
		fprintf(stderr, "check_cuda_trace: %s\n", err);
		return 2;
	}
	stp_event ev;
	int rc, cuda_allocs = 0, syncs = 0, seg_res = 0, seg_rel = 0, stacks_ok = 1;
	uint64_t first = 0, last = 0;
	const obj *va = by_name("va");
	while ((rc = stp_reader_next(r, &ev)) == 1) {
		if (!first)
			first = ev.time_ns;
		if (ev.time_ns > last && ev.type != STP_EV_API)
			last = ev.time_ns;
		if (ev.type == STP_EV_MODULE) {
			const char *p = stp_reader_string(r, ev.u.module.path);
			size_t n = strlen(p);
			if (n >= 10 && !strcmp(p + n - 10, "/cuda_prog")) {
				exe_lo = ev.u.module.base;
				exe_hi = ev.u.module.base + ev.u.module.size;
			}
		} else if (ev.type == STP_EV_ALLOC && ev.u.alloc.kind != STP_MEM_HOST) {
			cuda_allocs++;
			obj *x = by_addr(ev.u.alloc.addr);
			if (!x) {
				check(0, "an ALLOC of %s no object of the program", "an address");
				continue;
			}
			x->allocs++;
			x->kind = ev.u.alloc.kind;
			x->device = ev.u.alloc.device;
			x->pool = ev.u.alloc.pool;
			check(ev.u.alloc.size == x->size, "%s: ALLOC size", x->name);
			stacks_ok &= starts_in_exe(r, ev.u.alloc.stack);
		} else if (ev.type == STP_EV_FREE && ev.u.free.kind != STP_MEM_HOST) {
			obj *x = by_addr(ev.u.free.addr);
			check(x && x->allocs == 1, "a FREE of %s not allocated before", x ? x->name : "an unknown address");
			if (x)
				x->frees++;
		} else if (ev.type == STP_EV_SEGMENT_RESERVE) {
			seg_res++;
			check(ev.u.segment.addr == va->addr && ev.u.segment.size == va->size && ev.u.segment.device == 0,
			      "%s: SEGMENT_RESERVE is not the mapping", "va");
			stacks_ok &= starts_in_exe(r, ev.u.segment.stack);
		} else if (ev.type == STP_EV_SEGMENT_RELEASE) {
			seg_rel++;
			check(seg_res == 1 && ev.u.segment.addr == va->addr && ev.u.segment.size == va->size,
			      "%s: SEGMENT_RELEASE is not the mapping's", "va");
		} else if (ev.type == STP_EV_API) {
			if (ev.u.api.kind == STP_API_SYNC) {
				syncs++;
				stacks_ok &= starts_in_exe(r, ev.u.api.stack);
				continue;
			}
			if (napis == 64)
				continue;
			api *a = &apis[napis++];
			a->kind = ev.u.api.kind;
			snprintf(a->name, sizeof a->name, "%s", stp_reader_string(r, ev.u.api.name));
			a->stream = ev.u.api.stream;
			a->time = ev.time_ns;
			a->end = ev.u.api.end_ns;
			a->in_exe = starts_in_exe(r, ev.u.api.stack);
			a->n = ev.u.api.nranges < 16 ? ev.u.api.nranges : 16;
			memcpy(a->r, ev.u.api.ranges, a->n * sizeof(stp_range));
		}
	}
	check(rc == 0, "the trace does not read to its end: %s", rc < 0 ? stp_reader_error(r) : "");
	const stp_trace_stats *st = stp_reader_stats(r);
	check(st->whole && st->lost_events == 0, "%s: not whole, or events lost", argv[1 + fake]);
	check(exe_lo != 0, "%s: no MODULE event for cuda_prog", argv[1 + fake]);

	/* objects */
	check(cuda_allocs == (int)nwant, "%s: not exactly 10 CUDA ALLOC events", "trace");
	for (size_t i = 0; i < nwant; i++) {
		obj *x = by_name(want[i].n);
		check(x->allocs == 1 && x->frees == 1, "%s: not allocated once and freed once", x->name);
		check(x->kind == want[i].kind && x->device == want[i].dev && x->pool == want[i].pool,
		      "%s: wrong kind, device or pool", x->name);
	}
	check(seg_res == 1 && seg_rel == 1, "%s: not one segment reserved and released", "va");
	check(syncs >= 4, "%s: fewer than 4 SYNC events", "trace");
	check(stacks_ok, "%s: an allocation, mapping or sync whose call path does not start in cuda_prog", "trace");

	/* API events, in program order */
	int k = 0, c = 0, s = 0;
	const api *kern[4] = {0}, *copy[3] = {0}, *set[2] = {0};
	for (int i = 0; i < napis; i++) {
		const api *a = &apis[i];
		check(a->in_exe, "%s: call path does not start in cuda_prog", a->name);
		check(a->end >= a->time && a->time >= first && a->time <= last + 1000000000ull,
		      "%s: device time outside the recording", a->name);
		if (a->kind == STP_API_KERNEL && k < 4)
			kern[k++] = a;
		else if (a->kind == STP_API_MEMCPY && c < 3)
			copy[c++] = a;
		else if (a->kind == STP_API_MEMSET && s < 2)
			set[s++] = a;
		if (fake)
			check(a->end - a->time == (a->kind == STP_API_KERNEL ? 5000u : 3000u),
			      "%s: not the fake device's duration (activity not joined?)", a->name);
	}
	check(k == 4 && c == 3 && s == 2 && napis == 9, "%s: not 4 kernels, 3 copies and 2 sets", "trace");
	if (k == 4 && c == 3 && s == 2) {
		check(strstr(kern[0]->name, "scale") && strstr(kern[1]->name, "add3") &&
		      strstr(kern[2]->name, "touch_end") && strstr(kern[3]->name, "scale"),
		      "%s: kernel names", "trace");
		expect_ranges(kern[0], "scale(c, a)", (const char *const[]){"c", "a"}, 2, RW);
		expect_ranges(kern[1], "add3(x, a, b)", (const char *const[]){"x", "a", "b"}, 3, RW);
		expect_ranges(kern[2], "touch_end(e + 1000, m)", (const char *const[]){"m"}, 1, RW);
		expect_ranges(kern[3], "scale(va, y)", (const char *const[]){"va", "y"}, 2, RW);
		check(kern[1]->stream != kern[0]->stream, "%s: add3 is not on its own stream", "add3");
		const obj *hp = by_name("hp"), *h = by_name("h"), *a = by_name("a"), *b = by_name("b"), *cc = by_name("c");
		const uint64_t n = a->size;
		check(copy[0]->n == 2 && copy[0]->r[0].addr == hp->addr && copy[0]->r[0].size == n &&
		      copy[0]->r[0].mode == STP_ACCESS_READ && copy[0]->r[1].addr == a->addr &&
		      copy[0]->r[1].mode == STP_ACCESS_WRITE, "%s: ranges", "cudaMemcpy(a <- hp)");
		check(copy[1]->n == 2 && copy[1]->r[0].addr == h->addr && copy[1]->r[0].mode == STP_ACCESS_READ &&
		      copy[1]->r[1].addr == b->addr && copy[1]->r[1].mode == STP_ACCESS_WRITE,
		      "%s: ranges", "cudaMemcpyAsync(b <- h)");
		check(copy[2]->n == 2 && copy[2]->r[0].addr == cc->addr && copy[2]->r[0].mode == STP_ACCESS_READ &&
		      copy[2]->r[1].addr == hp->addr && copy[2]->r[1].mode == STP_ACCESS_WRITE,
		      "%s: ranges", "cudaMemcpy(hp <- c)");
		expect_ranges(set[0], "cudaMemset(c)", (const char *const[]){"c"}, 1, STP_ACCESS_WRITE);
		expect_ranges(set[1], "cudaMemsetAsync(y)", (const char *const[]){"y"}, 1, STP_ACCESS_WRITE);
	}
	stp_reader_close(r);
	if (failures) {
		fprintf(stderr, "check_cuda_trace: %d of %d checks failed\n", failures, checks);
		return 1;
	}
	printf("check_cuda_trace: %d checks passed (%d objects, 4 kernels, 3 copies, 2 sets, %d syncs)\n", checks,
	       (int)nwant, syncs);
	return 0;
}
