/*
 * sz_fake_program.c - a "CUDA program" played on the fake device of
 * sz_fake_device.c, for tests/collector/test_sanitizer_fake.sh:
 *
 *   known   the objects of tests/sanitizer/known_objects.cu: in copied in
 *           and only read by k_scale, out written by it and copied back,
 *           scratch written by k_fill twice and never read, unused never
 *           touched, 2,000 small objects (small1999 read, small1500 set and
 *           then read and written by an atomic, an atomicAdd whose result
 *           is unused: a RED, which the sanitizer flags ATOMIC_WRITE_ONLY);
 *           accesses one past in's end and in the gap after out (no hit);
 *           in mapped into a peer device and unmapped again, and a driver
 *           buffer (CG_RUNTIME) made and freed: none of them the program's;
 *           "obj NAME ADDR SIZE" lines
 *   many N  N launches reading object i % 2000 with no synchronization
 *           in between, then one; object 7 freed and reallocated half-way
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
	uint64_t a1[] = {IN, IN + 4, IN + BIG - 4, IN + BIG, OUT, OUT + BIG - 4, OUT + BIG + 100};
	uint32_t f1[] = {R, R, R, R, W, W, W};
	fake_launch("k_scale", 0, 7, a1, f1);
	uint64_t a2[] = {SCRATCH, SCRATCH + 8, SCRATCH + BIG - 1};
	uint32_t f2[] = {W, W, W};
	fake_launch("k_fill", 0, 3, a2, f2);
	fake_launch("k_fill", 0, 3, a2, f2);
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

int main(int argc, char **argv)
{
	fake_context();
	if (argc > 1 && !strcmp(argv[1], "known"))
		known();
	else if (argc > 2 && !strcmp(argv[1], "many"))
		many(atoi(argv[2]));
	else
		return 2;
	fake_context_destroy();
	printf("fake errors=%ld syncs=%ld blocks=%ld\n", fake_errors(), fake_syncs(), fake_blocks());
	return 0;
}
