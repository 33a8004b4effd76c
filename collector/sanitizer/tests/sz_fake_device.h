/*
 * sz_fake_device.h - the entry points of the fake device (sz_fake_device.c)
 * through which a test program plays a CUDA program for the Compute
 * Sanitizer backend.  Tests only.
 */
#ifndef STPROF_SZ_FAKE_DEVICE_H
#define STPROF_SZ_FAKE_DEVICE_H
#include <stdint.h>

long fake_syncs(void);  /* sanitizerStreamSynchronize calls */
long fake_errors(void); /* API misuse seen */
long fake_blocks(void); /* launches that ran with a block (sampled) */
void fake_context(void);          /* context created, one module loaded */
void fake_context_destroy(void);
void fake_malloc(uint64_t addr, uint64_t size);
void fake_free(uint64_t addr, uint64_t size);
/* a driver-made allocation (alloc 1) or free (0): flags are
 * Sanitizer_ResourceMemoryFlags (PEER 0x10 with device 1, CG_RUNTIME 0x40) */
void fake_driver_memory(int alloc, uint64_t addr, uint64_t size, uint32_t flags, int device);
/* a launch on stream s whose threads access addrs[i] (4 bytes) with flags[i] */
void fake_launch(const char *name, uint64_t s, uint32_t n, const uint64_t *addrs, const uint32_t *flags);
/* a launch's operations, by kind (the patch function each goes through) */
enum { FAKE_LDST = 0, FAKE_CP_ASYNC = 1, FAKE_BULK_G2S = 2, FAKE_BULK_S2G = 3, FAKE_BULK_RED = 4,
       FAKE_TMA_LOAD = 5, FAKE_TMA_STORE = 6 };
typedef struct fake_op {
	int kind;
	uint64_t addr;  /* TMA: the address of a 128-byte tensor map */
	uint32_t size;  /* bytes (global accesses: 1..16) */
	uint32_t flags; /* global accesses: Sanitizer_DeviceMemoryFlags */
} fake_op;
void fake_launch_ops(const char *name, uint64_t s, uint32_t n, const fake_op *ops);
unsigned fake_kinds_patched(void); /* bit k: the k-th kind the backend asks for was patched */
void fake_memcpy(uint64_t src, uint64_t dst, uint64_t size, int dir); /* dir: 2 HtoD, 3 DtoH */
void fake_memset(uint64_t addr, uint64_t size);
void fake_sync(void);

#endif
