/*
 * sz_fake_device.c - a stand-in for libsanitizer-public.so and the GPU
 * behind it (no GPU or driver here), for the end-to-end test of the
 * Compute Sanitizer backend (tests/collector/test_sanitizer_fake.sh).  It
 * exports the sanitizer* functions the backend uses, with "device memory"
 * in host memory, and entry points (fake_*) through which a test program
 * plays a CUDA program: contexts, modules, allocations, launches whose
 * global memory accesses run the patch's own code (sanitizer_hits.h) on
 * the block the backend gave the launch, copies, sets, synchronizations.
 * Kernels run at once, in the launch call; copies are synchronous.
 *
 * What it checks of the backend, as a driver would: patches are loaded
 * from a readable file into a known context before modules are patched;
 * each instruction kind is patched with the function the patch file has
 * for it (sanitizer_patch.cu's names); launch data is set between launch
 * begin and end.  Violations are counted (fake_errors).  Device memory
 * comes back from sanitizerAlloc full of garbage (0xa5), as a GPU's may:
 * the backend must zero what it reads.  The device clock
 * (%globaltimer) is CLOCK_REALTIME, another clock than the collector's.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <sanitizer.h>

#include "../sanitizer_hits.h"
#include "sz_fake_device.h"

#define EXPORT __attribute__((visibility("default")))

static Sanitizer_CallbackFunc cb;
static void *cb_userdata;
static uint32_t domains;
static CUcontext patched_ctx[8];
static int npatched_ctx;
static CUmodule patched_mod[8];
static int npatched_mod, instructions_ok;
static const void *launch_data;
static int in_launch, launch_data_set;
static long n_syncs, n_errors, n_blocks;

EXPORT long fake_syncs(void) { return n_syncs; }
EXPORT long fake_errors(void) { return n_errors; }
EXPORT long fake_blocks(void) { return n_blocks; }

/* ---------------------------------------------------------------- the API */

EXPORT SanitizerResult sanitizerSubscribe(Sanitizer_SubscriberHandle *h, Sanitizer_CallbackFunc f, void *ud)
{
	if (cb)
		return SANITIZER_ERROR_MAX_LIMIT_REACHED;
	cb = f;
	cb_userdata = ud;
	*h = (Sanitizer_SubscriberHandle)(uintptr_t)1;
	return SANITIZER_SUCCESS;
}

EXPORT SanitizerResult sanitizerEnableDomain(uint32_t enable, Sanitizer_SubscriberHandle h, Sanitizer_CallbackDomain d)
{
	(void)h;
	if (enable)
		domains |= 1u << d;
	return SANITIZER_SUCCESS;
}

EXPORT SanitizerResult sanitizerAddPatchesFromFile(const char *path, CUcontext ctx)
{
	if (access(path, R_OK) != 0 || npatched_ctx == 8) {
		n_errors++;
		return SANITIZER_ERROR_INVALID_PARAMETER;
	}
	patched_ctx[npatched_ctx++] = ctx;
	return SANITIZER_SUCCESS;
}

static const struct {
	Sanitizer_InstructionId id;
	const char *fn;
} patch_fns[] = {
	{SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, "stprof_sz_access"},
	{SANITIZER_INSTRUCTION_MEMCPY_ASYNC, "stprof_sz_cp_async"},
	{SANITIZER_INSTRUCTION_BULK_COPY_GLOBAL_TO_SHARED, "stprof_sz_bulk_g2s"},
	{SANITIZER_INSTRUCTION_BULK_COPY_SHARED_TO_GLOBAL, "stprof_sz_bulk_s2g"},
	{SANITIZER_INSTRUCTION_BULK_REDUCTION_SHARED_TO_GLOBAL, "stprof_sz_bulk_red"},
	{SANITIZER_INSTRUCTION_TMA_LOAD, "stprof_sz_tma_load"},
	{SANITIZER_INSTRUCTION_TMA_STORE, "stprof_sz_tma_store"},
	{SANITIZER_INSTRUCTION_BLOCK_ENTER, "stprof_sz_block_enter"},
	{SANITIZER_INSTRUCTION_BLOCK_EXIT, "stprof_sz_block_exit"},
};
static unsigned kinds_patched; /* bit k: patch_fns[k] */

EXPORT unsigned fake_kinds_patched(void) { return kinds_patched; }

EXPORT SanitizerResult sanitizerPatchInstructions(const Sanitizer_InstructionId id, CUmodule m, const char *name)
{
	(void)m;
	for (unsigned k = 0; k < sizeof patch_fns / sizeof patch_fns[0]; k++)
		if (patch_fns[k].id == id) {
			if (strcmp(name, patch_fns[k].fn)) {
				n_errors++;
				return SANITIZER_ERROR_INVALID_PARAMETER;
			}
			kinds_patched |= 1u << k;
			if (k == 0)
				instructions_ok = 1;
			return SANITIZER_SUCCESS;
		}
	return SANITIZER_ERROR_NOT_SUPPORTED; /* a kind this device lacks: not an error */
}

EXPORT SanitizerResult sanitizerPatchModule(CUmodule m)
{
	if (!instructions_ok || npatched_mod == 8) {
		n_errors++;
		return SANITIZER_ERROR_INVALID_PARAMETER;
	}
	patched_mod[npatched_mod++] = m;
	return SANITIZER_SUCCESS;
}

EXPORT SanitizerResult sanitizerSetLaunchCallbackData(Sanitizer_LaunchHandle l, CUfunction f, Sanitizer_StreamHandle s,
                                                      const void *ud)
{
	(void)l;
	(void)f;
	(void)s;
	if (!in_launch)
		n_errors++;
	launch_data = ud;
	launch_data_set = 1;
	return SANITIZER_SUCCESS;
}

EXPORT SanitizerResult sanitizerAlloc(CUcontext ctx, void **p, size_t size)
{
	(void)ctx;
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return SANITIZER_ERROR_OUT_OF_MEMORY;
	memset(m, 0xa5, size); /* device memory is not zeroed */
	*p = m;
	return SANITIZER_SUCCESS;
}

EXPORT SanitizerResult sanitizerFree(CUcontext ctx, void *p)
{
	(void)ctx;
	(void)p; /* the size is not known here: left mapped (a test) */
	return SANITIZER_SUCCESS;
}

EXPORT SanitizerResult sanitizerAllocHost(CUcontext ctx, void **p, size_t size)
{
	return sanitizerAlloc(ctx, p, size);
}

EXPORT SanitizerResult sanitizerFreeHost(CUcontext ctx, void *p) { return sanitizerFree(ctx, p); }

EXPORT SanitizerResult sanitizerMemset(void *p, int value, size_t n, Sanitizer_StreamHandle s)
{
	(void)s;
	memset(p, value, n);
	return SANITIZER_SUCCESS;
}

EXPORT SanitizerResult sanitizerMemcpyHostToDeviceAsync(void *dst, void *src, size_t n, Sanitizer_StreamHandle s)
{
	(void)s;
	memcpy(dst, src, n);
	return SANITIZER_SUCCESS;
}

EXPORT SanitizerResult sanitizerMemcpyDeviceToHost(void *dst, void *src, size_t n, Sanitizer_StreamHandle s)
{
	(void)s;
	memcpy(dst, src, n);
	return SANITIZER_SUCCESS;
}

EXPORT SanitizerResult sanitizerStreamSynchronize(Sanitizer_StreamHandle s)
{
	(void)s;
	n_syncs++;
	return SANITIZER_SUCCESS;
}

/* ---------------------------------------------------------------- the program's side */

static void call(Sanitizer_CallbackDomain d, Sanitizer_CallbackId id, const void *data)
{
	if (cb && (domains & (1u << d)))
		cb(cb_userdata, d, id, data);
}

#define CTX ((CUcontext)(uintptr_t)0xc0)
#define MOD ((CUmodule)(uintptr_t)0x30)

EXPORT void fake_context(void)
{
	/* the device field as a library of another release fills it: at
	 * another offset, so read here it is garbage (seen on an H100: the
	 * 13.0 library under 13.5's headers); the backend must not use it */
	Sanitizer_ResourceContextData cd = {.context = CTX, .device = 468790928};
	call(SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_FINISHED, &cd);
	Sanitizer_ResourceModuleData md = {.context = CTX, .module = MOD};
	call(SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CBID_RESOURCE_MODULE_LOADED, &md);
	if (npatched_ctx != 1 || patched_ctx[0] != CTX || npatched_mod != 1)
		n_errors++;
}

EXPORT void fake_context_destroy(void)
{
	Sanitizer_ResourceContextData cd = {.context = CTX, .device = 468790928};
	call(SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &cd);
}

EXPORT void fake_malloc(uint64_t addr, uint64_t size)
{
	Sanitizer_ResourceMemoryData md = {.address = addr, .size = size, .context = CTX, .device = 0};
	call(SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC, &md);
}

EXPORT void fake_free(uint64_t addr, uint64_t size)
{
	Sanitizer_ResourceMemoryData md = {.address = addr, .size = size, .context = CTX, .device = 0};
	call(SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE, &md);
}

/* What the driver reports besides the program's own allocations: with peer
 * access enabled, an allocation of device 0 mapped into device 1 comes as
 * another DEVICE_MEMORY_ALLOC at the same address (flags PEER, device 1,
 * sourceDevice 0), and its unmapping as a FREE; the driver's own buffers
 * (cooperative groups, dynamic parallelism) come with CG_RUNTIME / CNP. */
EXPORT void fake_driver_memory(int alloc, uint64_t addr, uint64_t size, uint32_t flags, int device)
{
	Sanitizer_ResourceMemoryData md = {.address = addr, .size = size, .context = CTX, .device = device,
	                                   .flags = flags, .sourceDevice = 0};
	call(SANITIZER_CB_DOMAIN_RESOURCE,
	     alloc ? SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC : SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE, &md);
}

static uint64_t device_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A launch on stream s whose threads make the n operations of ops, each
 * through the patch function the backend patched for its kind (an
 * unpatched kind is not seen, as on a GPU). */
EXPORT void fake_launch_ops(const char *name, uint64_t s, uint32_t n, const fake_op *ops)
{
	Sanitizer_LaunchData ld = {.context = CTX, .stream = (CUstream)(uintptr_t)s,
	                           .hStream = (Sanitizer_StreamHandle)(uintptr_t)(s + 1), .module = MOD,
	                           .function = (CUfunction)(uintptr_t)0xf0, .functionName = name, .gridDim_x = 1,
	                           .gridDim_y = 1, .gridDim_z = 1, .blockDim_x = 32, .blockDim_y = 1, .blockDim_z = 1,
	                           .hLaunch = (Sanitizer_LaunchHandle)(uintptr_t)0x1a, .device = 0};
	in_launch = 1;
	launch_data = NULL;
	launch_data_set = 0;
	call(SANITIZER_CB_DOMAIN_LAUNCH, SANITIZER_CBID_LAUNCH_BEGIN, &ld);
	in_launch = 0;
	if (!launch_data_set)
		n_errors++;
	/* the kernel: every operation calls the patch with the launch's data */
	uint64_t ud = (uint64_t)(uintptr_t)launch_data;
	if (ud) {
		n_blocks++;
		if (kinds_patched & (1u << 7))
			stc_sz_block_time(ud, device_clock(), 0);
		for (uint32_t i = 0; i < n; i++) {
			const fake_op *o = &ops[i];
			if (!(kinds_patched & (1u << o->kind)))
				continue;
			switch (o->kind) {
			case FAKE_LDST:
				stc_sz_access(ud, o->addr, o->size, o->flags);
				break;
			case FAKE_CP_ASYNC:
			case FAKE_BULK_G2S:
				stc_sz_range(ud, o->addr, o->size, STC_SZ_HIT_READ);
				break;
			case FAKE_BULK_S2G:
				stc_sz_range(ud, o->addr, o->size, STC_SZ_HIT_WRITE);
				break;
			case FAKE_BULK_RED:
				stc_sz_range(ud, o->addr, o->size, STC_SZ_HIT_READ | STC_SZ_HIT_WRITE);
				break;
			case FAKE_TMA_LOAD:
				stc_sz_tensor_map(ud, o->addr, STC_SZ_HIT_READ);
				break;
			case FAKE_TMA_STORE:
				stc_sz_tensor_map(ud, o->addr, STC_SZ_HIT_WRITE);
				break;
			}
		}
		if (kinds_patched & (1u << 8))
			stc_sz_block_time(ud, device_clock(), 1);
	}
	call(SANITIZER_CB_DOMAIN_LAUNCH, SANITIZER_CBID_LAUNCH_END, &ld);
}

EXPORT void fake_launch(const char *name, uint64_t s, uint32_t n, const uint64_t *addrs, const uint32_t *flags)
{
	fake_op ops[64];
	for (uint32_t i = 0; i < n && i < 64; i++)
		ops[i] = (fake_op){.kind = FAKE_LDST, .addr = addrs[i], .size = 4, .flags = flags[i]};
	fake_launch_ops(name, s, n < 64 ? n : 64, ops);
}

EXPORT void fake_memcpy(uint64_t src, uint64_t dst, uint64_t size, int dir)
{
	Sanitizer_MemcpyData cd = {.srcContext = CTX, .dstContext = CTX, .srcAddress = src, .dstAddress = dst,
	                           .size = size, .direction = (Sanitizer_MemcpyDirection)dir};
	call(SANITIZER_CB_DOMAIN_MEMCPY, SANITIZER_CBID_MEMCPY_STARTING, &cd);
}

EXPORT void fake_memset(uint64_t addr, uint64_t size)
{
	Sanitizer_MemsetData sd = {.context = CTX, .address = addr, .width = size, .height = 1, .elementSize = 1};
	call(SANITIZER_CB_DOMAIN_MEMSET, SANITIZER_CBID_MEMSET_STARTING, &sd);
}

EXPORT void fake_sync(void)
{
	Sanitizer_SynchronizeData sd = {.context = CTX};
	call(SANITIZER_CB_DOMAIN_SYNCHRONIZE, SANITIZER_CBID_SYNCHRONIZE_CONTEXT_SYNCHRONIZED, &sd);
}
