/*
 * sz_fake_program.c - a "CUDA program" played on the fake device of
 * sz_fake_device.c, for tests/collector/test_sanitizer_fake.sh:
 *
 *   known   the objects of tests/sanitizer/known_objects.cu: in copied in
 *           and only read (all of it) by k_scale, out written by it and
 *           copied back, scratch written by k_fill twice and never read,
 *           unused never touched, 2,000 small objects (small1999's last
 *           word read, small1500 set and then read and written by an
 *           atomic on its 4th word, an atomicAdd whose result is unused: a
 *           RED, which the sanitizer flags ATOMIC_WRITE_ONLY);
 *           accesses one past in's end and in the gap after out (no hit);
 *           in mapped into a peer device and unmapped again, and a driver
 *           buffer (CG_RUNTIME) made and freed: none of them the program's;
 *           "obj NAME ADDR SIZE" lines
 *   many N  N launches reading object i % 2000 with no synchronization
 *           in between, then one; object 7 freed and reallocated half-way
 *   churn N N launches, each after a new 4 KiB activation is allocated
 *           and the one 16 launches older freed, over 2,000 live objects:
 *           the table changes at every launch (a PyTorch step's shape)
 *   planted the calls of tests/sanitizer/planted.cu, one object per DrGPUM
 *           pattern (and one clean object), in the same order; "obj NAME
 *           ADDR SIZE" lines name them
 *   library a library's workspace (allocated inside a function whose name
 *           says so, as cuBLAS's is under PyTorch's getCurrentCUDABlasHandle)
 *           and the program's own object of the same size, neither ever
 *           touched, while a third is written and read: both are unused,
 *           only the program's is a finding
 *
 * Ends with "fake errors=E syncs=S blocks=B" (the fake device's counts).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sz_fake_device.h"

#define R 0x1u
#define W 0x2u
#define ATOM_WO 0x100u /* SANITIZER_MEMORY_DEVICE_FLAG_ATOMIC_WRITE_ONLY */
#define PEER 0x10u     /* SANITIZER_MEMORY_FLAG_PEER */
#define CG_RT 0x40u    /* SANITIZER_MEMORY_FLAG_CG_RUNTIME */
#define BIG (1u << 20)
#define NSMALL 2000
#define SMALL 512

static const uint64_t IN = 0x7f0000000000ull, OUT = IN + 2 * BIG, SCRATCH = IN + 4 * BIG, UNUSED = IN + 6 * BIG;
static const uint64_t SMALLS = IN + 8 * BIG; /* small[i] at SMALLS + i * 1024 */

static uint64_t small(int i) { return SMALLS + (uint64_t)i * 1024; }

/* Accesses that cover all of [addr, addr + size): one 4-byte access at the
 * start of each 32nd and one at the last word, from ops[k]; returns how
 * many were added. */
static uint32_t sweep(fake_op *ops, uint32_t k, uint64_t addr, uint64_t size, uint32_t flags)
{
	uint32_t n = 0;
	for (uint32_t c = 0; c < 32; c++)
		ops[k + n++] = (fake_op){.kind = FAKE_LDST, .addr = addr + size * c / 32, .size = 4, .flags = flags};
	ops[k + n++] = (fake_op){.kind = FAKE_LDST, .addr = addr + size - 4, .size = 4, .flags = flags};
	return n;
}

static void known(void)
{
	static float host[BIG / 4];
	fake_malloc(IN, BIG);
	fake_malloc(OUT, BIG);
	fake_malloc(SCRATCH, BIG);
	fake_malloc(UNUSED, BIG);
	for (int i = 0; i < NSMALL; i++)
		fake_malloc(small(i), SMALL);
	printf("obj in %#llx %u\nobj out %#llx %u\nobj scratch %#llx %u\nobj unused %#llx %u\n", (unsigned long long)IN,
	       BIG, (unsigned long long)OUT, BIG, (unsigned long long)SCRATCH, BIG, (unsigned long long)UNUSED, BIG);
	printf("obj small1500 %#llx %u\nobj small1999 %#llx %u\n", (unsigned long long)small(1500), SMALL,
	       (unsigned long long)small(1999), SMALL);
	/* peer access enabled, then disabled: in mapped into device 1 and
	 * unmapped; a cooperative-groups buffer of the driver's, made and freed */
	fake_driver_memory(1, IN, BIG, PEER, 1);
	fake_driver_memory(0, IN, BIG, PEER, 1);
	fake_driver_memory(1, IN + 16 * BIG, BIG, CG_RT, 0);
	fake_driver_memory(0, IN + 16 * BIG, BIG, CG_RT, 0);
	fake_memset(small(1500), SMALL);
	fake_memcpy((uint64_t)(uintptr_t)host, IN, BIG, 2);
	/* k_scale reads all of in and writes all of out (a thread per 32nd
	 * and the last word), with strays one past in and after out */
	fake_op k1[80];
	uint32_t n1 = sweep(k1, 0, IN, BIG, R);
	n1 += sweep(k1, n1, OUT, BIG, W);
	k1[n1++] = (fake_op){.kind = FAKE_LDST, .addr = IN + BIG, .size = 4, .flags = R};
	k1[n1++] = (fake_op){.kind = FAKE_LDST, .addr = OUT + BIG + 100, .size = 4, .flags = W};
	fake_launch_ops("k_scale", 0, n1, k1);
	fake_op k2[40];
	uint32_t n2 = sweep(k2, 0, SCRATCH, BIG, W);
	fake_launch_ops("k_fill", 0, n2, k2);
	fake_launch_ops("k_fill", 0, n2, k2);
	uint64_t a3[] = {small(1999) + SMALL - 4, small(1500) + 12};
	uint32_t f3[] = {R, W | ATOM_WO};
	fake_launch("k_touch", 0, 2, a3, f3);
	fake_sync();
	fake_memcpy(OUT, (uint64_t)(uintptr_t)host, BIG, 3);
	for (int i = 0; i < NSMALL; i++)
		fake_free(small(i), SMALL);
	fake_free(UNUSED, BIG);
	fake_free(SCRATCH, BIG);
	fake_free(OUT, BIG);
	fake_free(IN, BIG);
}

static void many(int n)
{
	for (int i = 0; i < NSMALL; i++)
		fake_malloc(small(i), SMALL);
	for (int k = 0; k < n; k++) {
		if (k == n / 2) { /* object 7 freed and made again: a new map */
			fake_free(small(7), SMALL);
			fake_malloc(small(7), SMALL);
		}
		uint64_t a = small(k % NSMALL) + 8;
		uint32_t f = R;
		fake_launch("k_read", 0, 1, &a, &f);
	}
	fake_sync();
	for (int i = 0; i < NSMALL; i++)
		fake_free(small(i), SMALL);
}

/* A PyTorch-shaped stream of launches: NSMALL live objects (the model),
 * and before each launch a new activation allocated, the oldest of 16
 * freed: the live-object table changes at every launch, as a caching
 * allocator's tensors change it between a training step's kernels. */
static void churn(int n)
{
	for (int i = 0; i < NSMALL; i++)
		fake_malloc(small(i), SMALL);
	const uint64_t ACT = IN + 32 * BIG; /* activation k at ACT + (k % 32) * 4096 */
	for (int k = 0; k < n; k++) {
		if (k >= 16)
			fake_free(ACT + (uint64_t)((k - 16) % 32) * 4096, 4096);
		fake_malloc(ACT + (uint64_t)(k % 32) * 4096, 4096);
		uint64_t a[2] = {small(k % NSMALL) + 8, ACT + (uint64_t)(k % 32) * 4096};
		uint32_t f[2] = {R, W};
		fake_launch("k_act", 0, 2, a, f);
	}
	fake_sync();
	for (int k = n > 16 ? n - 16 : 0; k < n; k++)
		fake_free(ACT + (uint64_t)(k % 32) * 4096, 4096);
	for (int i = 0; i < NSMALL; i++)
		fake_free(small(i), SMALL);
}

/* planted.cu's kernels: k_init writes all of [p, p + n), k_touch reads and
 * writes it */
static void k_init(const char *name, uint64_t p, uint64_t n)
{
	(void)name;
	fake_op ops[40];
	fake_launch_ops("k_init", 0, sweep(ops, 0, p, n, W), ops);
}

static void k_touch(uint64_t p, uint64_t n)
{
	fake_op ops[80];
	uint32_t k = sweep(ops, 0, p, n, R);
	k += sweep(ops, k, p, n, W);
	fake_launch_ops("k_touch", 0, k, ops);
}

static void planted(void)
{
	const uint64_t M = 1 << 20;
	const uint64_t S_EARLY = 8 * M, S_LATE = 10 * M, S_UNUSED = 12 * M, S_DEAD = 14 * M, S_IDLE = 16 * M,
	               S_OK = 1 * M, S_RED = 6 * M, S_PART = 20 * M, S_LEAK = 18 * M, S_SLICES = 24 * M,
	               S_HOT = 28 * M;
	const uint64_t base = 0x7f1000000000ull, step = 32 * M;
	const uint64_t early = base, late = base + step, unused = base + 2 * step, dead = base + 3 * step,
	               idle = base + 4 * step, ok = base + 5 * step, red1 = base + 6 * step, red2 = base + 7 * step,
	               part = base + 8 * step, leak = base + 9 * step, slices = base + 10 * step,
	               hot = base + 11 * step;
	printf("obj early %#llx %llu\nobj late %#llx %llu\nobj unused %#llx %llu\nobj dead %#llx %llu\n"
	       "obj idle %#llx %llu\nobj ok %#llx %llu\nobj red1 %#llx %llu\nobj red2 %#llx %llu\n"
	       "obj part %#llx %llu\nobj leak %#llx %llu\n",
	       (unsigned long long)early, (unsigned long long)S_EARLY, (unsigned long long)late,
	       (unsigned long long)S_LATE, (unsigned long long)unused, (unsigned long long)S_UNUSED,
	       (unsigned long long)dead, (unsigned long long)S_DEAD, (unsigned long long)idle,
	       (unsigned long long)S_IDLE, (unsigned long long)ok, (unsigned long long)S_OK, (unsigned long long)red1,
	       (unsigned long long)S_RED, (unsigned long long)red2, (unsigned long long)S_RED,
	       (unsigned long long)part, (unsigned long long)S_PART, (unsigned long long)leak,
	       (unsigned long long)S_LEAK);
	printf("obj slices %#llx %llu\nobj hot %#llx %llu\n", (unsigned long long)slices, (unsigned long long)S_SLICES,
	       (unsigned long long)hot, (unsigned long long)S_HOT);
	float v = 0;
	fake_malloc(early, S_EARLY); /* PLANT:early-allocation */
	fake_malloc(late, S_LATE); /* PLANT:late-deallocation */
	k_init("late", late, S_LATE);
	k_touch(late, S_LATE);
	fake_malloc(unused, S_UNUSED); /* PLANT:unused-allocation */
	fake_malloc(dead, S_DEAD); /* PLANT:dead-write */
	k_init("dead", dead, S_DEAD);
	fake_memset(dead, S_DEAD);
	k_touch(dead, S_DEAD);
	fake_free(dead, S_DEAD);
	fake_malloc(idle, S_IDLE); /* PLANT:temporary-idleness */
	k_init("idle", idle, S_IDLE);
	k_touch(idle, S_IDLE);
	fake_malloc(ok, S_OK);
	k_init("ok", ok, S_OK);
	k_touch(ok, S_OK);
	fake_free(ok, S_OK);
	fake_malloc(red1, S_RED);
	k_init("red1", red1, S_RED);
	k_touch(red1, S_RED);
	fake_free(red1, S_RED);
	k_init("early", early, S_EARLY);
	k_touch(early, S_EARLY);
	fake_free(early, S_EARLY);
	fake_malloc(red2, S_RED); /* PLANT:redundant-allocation */
	k_init("red2", red2, S_RED);
	k_touch(red2, S_RED);
	fake_free(red2, S_RED);
	k_touch(idle, S_IDLE);
	fake_free(idle, S_IDLE);
	fake_malloc(part, S_PART); /* PLANT:overallocation */
	k_init("part", part, S_PART / 8);
	k_touch(part, S_PART / 8);
	fake_free(part, S_PART);
	fake_malloc(slices, S_SLICES); /* PLANT:structured-access */
	for (uint64_t k = 0; k < 8; k++)
		k_touch(slices + k * (S_SLICES / 8), S_SLICES / 8);
	fake_free(slices, S_SLICES);
	fake_malloc(hot, S_HOT); /* PLANT:non-uniform-frequency */
	k_init("hot", hot, S_HOT);
	for (int k = 0; k < 10; k++)
		k_touch(hot, S_HOT / 16);
	k_touch(hot, S_HOT);
	fake_free(hot, S_HOT);
	fake_malloc(leak, S_LEAK); /* PLANT:memory-leak */
	k_init("leak", leak, S_LEAK);
	k_touch(leak, S_LEAK);
	fake_memcpy(leak, (uint64_t)(uintptr_t)&v, sizeof v, 3);
	fake_sync();
	fake_free(unused, S_UNUSED);
	fake_free(late, S_LATE);
}

/* stands in for a library's handle creation: its name says "workspace" */
__attribute__((noinline)) static void blas_workspace_alloc(uint64_t addr, uint64_t size)
{
	fake_malloc(addr, size);
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays on the path */
}

static void library(void)
{
	const uint64_t M = 1 << 20, ws = 0x7f2000000000ull, mine = ws + 64 * M, used = ws + 128 * M;
	printf("obj workspace %#llx %llu\nobj mine %#llx %llu\n", (unsigned long long)ws, (unsigned long long)(32 * M),
	       (unsigned long long)mine, (unsigned long long)(32 * M));
	blas_workspace_alloc(ws, 32 * M);
	fake_malloc(mine, 32 * M);
	fake_malloc(used, M);
	k_init("used", used, M);
	k_touch(used, M);
	fake_free(used, M);
	fake_sync();
	fake_free(mine, 32 * M);
	fake_free(ws, 32 * M);
}

int main(int argc, char **argv)
{
	fake_context();
	if (argc > 1 && !strcmp(argv[1], "known"))
		known();
	else if (argc > 2 && !strcmp(argv[1], "many"))
		many(atoi(argv[2]));
	else if (argc > 2 && !strcmp(argv[1], "churn"))
		churn(atoi(argv[2]));
	else if (argc > 1 && !strcmp(argv[1], "planted"))
		planted();
	else if (argc > 1 && !strcmp(argv[1], "library"))
		library();
	else
		return 2;
	fake_context_destroy();
	printf("fake errors=%ld syncs=%ld blocks=%ld\n", fake_errors(), fake_syncs(), fake_blocks());
	return 0;
}
