/*
 * cuda_record.c - the CUPTI callback: runtime and driver API calls of the
 * program become trace events, each with the native call path of the
 * calling thread (CUPTI calls back synchronously on the caller), and the
 * live-object table (face.h) follows every object and mapping recorded.
 *
 *   ALLOC / FREE       device, managed and pinned objects (cuda_map.c)
 *   SEGMENT_RESERVE /  VMM mappings (cuMemMap / cuMemUnmap)
 *   SEGMENT_RELEASE
 *   API                kernel launches (with the objects their arguments
 *                      point into), copies, sets (with ranges), syncs
 *
 * Rules (face.h's g_torch_cuda_mode is the contract with the PyTorch shim):
 *   - t_busy set: the collector's own call, or the pluggable allocator's:
 *     nothing is recorded.
 *   - A driver call inside a runtime call is the runtime call's own work:
 *     not recorded again (its correlation id is kept as an alias, the
 *     device's activity record may name either).
 *   - STC_TORCH_CUDA_CACHING: an allocation, free or mapping whose call
 *     path passes through libc10_cuda is PyTorch's segment, recorded by the
 *     shim from PyTorch's own trace: skipped here.
 *   - A device allocation made by XLA's own code (the first frame past the
 *     CUDA libraries lies in JAX's CUDA plugin, xla_cuda_plugin.so) is a
 *     region of XLA's allocator (its BFC's, or a buffer of the platform
 *     allocator): SEGMENT_RESERVE / RELEASE of pool STP_POOL_JAX, a segment
 *     in the live-object table, since JAX's buffers inside it are recorded
 *     by the JAX backend (docs/jax.md).  Allocations XLA's libraries make
 *     (cuBLAS, cuDNN: their own frames come first) stay objects.
 *   - Leading frames inside libcupti, libcuda and libcudart are dropped: a
 *     call path starts at the caller of the CUDA API.
 */
#include <pthread.h>
#include <string.h>

#include "cuda_internal.h"

static STC_TLS int t_rt_depth;      /* runtime calls this thread is inside */
static STC_TLS uint32_t t_drv_corr; /* the last driver call's inside it */
static STC_TLS uint64_t t_enter_ns; /* ENTER time of the current call */
/* The driver launch inside a runtime launch, scanned with the driver's
 * parameter info: used when the runtime's gave none (cudaFuncGetParamInfo
 * missing or refusing the function). */
#define DRV_RANGES 16
static STC_TLS int t_drv_scanned;
static STC_TLS const char *t_drv_name; /* its kernel's name */
static STC_TLS uint64_t t_drv_stream;  /* its stream */
static STC_TLS uint32_t t_drv_n;
static STC_TLS stp_range t_drv_ranges[DRV_RANGES];
static STC_TLS int t_free_pending;  /* a free recorded at ENTER, awaiting EXIT */
static STC_TLS stc_devobj t_free_obj;

/* ---------------------------------------------------------------- modules */
enum { M_CUPTI, M_CUDA, M_CUDART, M_C10_CUDA, M_COUNT };
static const char *const mod_prefix[M_COUNT] = {"libcupti.so", "libcuda.so", "libcudart.so", "libc10_cuda.so"};
static stc_modset mods = {.prefix = mod_prefix, .n = M_COUNT};
/* JAX's CUDA plugin, a set of its own, looked up only for device
 * allocations (most programs never load it) */
static const char *const xla_prefix[1] = {"xla_cuda_plugin"};
static stc_modset xla_mods = {.prefix = xla_prefix, .n = 1};

/* The call path of the CUDA call: 0 and *skip = 1 when it passes through
 * libc10_cuda in caching mode (PyTorch's segment: the shim records it);
 * *xla = 1 when its first frame past the CUDA libraries is XLA's (xla may
 * be NULL).  With python, an allocation's: in a Python program, completed
 * with the Python line that called (launches and copies keep their native
 * path: a Python walk per launch would cost too much). */
static __attribute__((noinline)) uint32_t call_path(int check_c10, int *skip, int python, int *xla)
{
	uint64_t ips[STC_DEPTH_MAX];
	*skip = 0;
	if (xla)
		*xla = 0;
	uint32_t want = g_cfg.depth, walk = want;
	if (check_c10 && walk < 64)
		walk = 64;
	if (xla && walk < 24) /* the CUDA libraries' frames and the first past them */
		walk = 24;
	if (!walk)
		return 0;
	stc_modset_scan(&mods);
	uint32_t d = stc_unwind(ips, walk);
	uint32_t first = stc_modset_skip(&mods, M_CUDART + 1, ips, d);
	if (xla && first < d) {
		stc_modset_scan(&xla_mods);
		*xla = stc_modset_has(&xla_mods, 0, ips[first]);
	}
	if (check_c10)
		for (uint32_t i = first; i < d; i++)
			if (stc_modset_has(&mods, M_C10_CUDA, ips[i])) {
				*skip = 1;
				return 0;
			}
	d -= first;
	if (d > want)
		d = want;
	/* in a Python program, the line that called (cuBLAS's workspace at the
	 * first matmul's line): never waiting for the GIL, under CUDA's locks */
	if (python)
		d = stc_py_complete(ips + first, d, STC_DEPTH_MAX - first, STC_GIL_NEVER);
	return d ? stc_intern_stack(ips + first, d) : 0;
}

/* ---------------------------------------------------------------- ids */
static int32_t ctx_device(CUcontext ctx)
{
	uint32_t dev;
	if (ctx && g_cu.get_device_id && g_cu.get_device_id(ctx, &dev) == CUPTI_SUCCESS)
		return (int32_t)dev;
	return 0;
}

/* CUPTI's id of a stream (the one activity records carry), else its handle. */
static uint64_t stream_id(CUcontext ctx, uint64_t stream)
{
	uint32_t id;
	if (stream && ctx && g_cu.get_stream_id_ex &&
	    g_cu.get_stream_id_ex(ctx, (CUstream)(uintptr_t)stream, 0, &id) == CUPTI_SUCCESS)
		return id;
	return stream;
}

/* Memory pools as small numbers: 16, 17, ... in order of first use (0 is a
 * device's default pool, 1 the tensors of a framework). */
#define POOLS_MAX 256
static uint64_t pools[POOLS_MAX];
static unsigned npools;
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;

static uint32_t pool_id(uint64_t handle)
{
	if (!handle)
		return 0;
	pthread_mutex_lock(&pools_mu);
	unsigned i = 0;
	while (i < npools && pools[i] != handle)
		i++;
	if (i == npools && npools < POOLS_MAX)
		pools[npools++] = handle;
	pthread_mutex_unlock(&pools_mu);
	return i < POOLS_MAX ? 16 + i : 16 + POOLS_MAX;
}

/* ---------------------------------------------------------------- events */
static void emit_alloc(unsigned type, const stc_devobj *o, uint64_t stream, uint32_t pool)
{
	stp_event ev = {.type = (uint8_t)type};
	ev.u.alloc.addr = o->addr;
	ev.u.alloc.size = ev.u.alloc.requested = o->size;
	ev.u.alloc.stack = o->stack;
	ev.u.alloc.kind = o->kind;
	ev.u.alloc.device = o->device;
	ev.u.alloc.stream = stream;
	ev.u.alloc.pool = pool;
	stc_emit(&ev);
}

static void emit_free(const stc_devobj *o, uint64_t stream)
{
	stp_event ev = {.type = STP_EV_FREE};
	ev.u.free.addr = o->addr;
	ev.u.free.size = o->size;
	ev.u.free.kind = o->kind;
	ev.u.free.device = o->device;
	ev.u.free.stream = stream;
	stc_emit(&ev);
}

/* XLA's regions live now (segments recorded here, released by their free):
 * few (a BFC grows by doubling), a small table under a lock. */
#define XLA_REGIONS_MAX 1024
static uint64_t xla_regions[XLA_REGIONS_MAX];
static unsigned nxla_regions;
static pthread_mutex_t xla_mu = PTHREAD_MUTEX_INITIALIZER;

static int xla_region_add(uint64_t addr)
{
	pthread_mutex_lock(&xla_mu);
	int ok = nxla_regions < XLA_REGIONS_MAX;
	if (ok)
		xla_regions[nxla_regions++] = addr;
	pthread_mutex_unlock(&xla_mu);
	return ok;
}

static int xla_region_take(uint64_t addr)
{
	pthread_mutex_lock(&xla_mu);
	unsigned i = 0;
	while (i < nxla_regions && xla_regions[i] != addr)
		i++;
	int found = i < nxla_regions;
	if (found)
		xla_regions[i] = xla_regions[--nxla_regions];
	pthread_mutex_unlock(&xla_mu);
	return found;
}

static void do_alloc(const CUpti_CallbackData *cb, stc_cuda_rec *r, int caching)
{
	int skip, xla;
	uint32_t stack = call_path(caching, &skip, 1, &xla);
	if (skip)
		return;
	stc_devobj o = {.addr = r->addr, .size = r->size, .kind = r->kind, .stack = stack};
	o.device = r->kind == STP_MEM_PINNED ? -1 : ctx_device(cb->context);
	if (xla && r->kind == STP_MEM_DEVICE && xla_region_add(r->addr)) {
		o.segment = 1;
		stc_devobj_add(o.addr, o.size, o.device, o.kind, 1, stack);
		emit_alloc(STP_EV_SEGMENT_RESERVE, &o, stream_id(cb->context, r->stream), STP_POOL_JAX);
		return;
	}
	stc_devobj_add(o.addr, o.size, o.device, o.kind, 0, stack);
	emit_alloc(STP_EV_ALLOC, &o, stream_id(cb->context, r->stream), pool_id(r->pool));
}

/* An allocation refused for want of memory: a REFUSED event with the path
 * of the call.  PyTorch's caching allocator's (c10_cuda on the path) goes
 * to the tensors' pool, beside the tensors it would have held, as an
 * attempt (requested 0: the bytes it asked the driver for, not a caller's
 * request): it frees its cache and asks again, so a refusal is not yet an
 * out-of-memory error; when it gives up it reports the request itself
 * (torch_cuda_caching.c's record_oom). */
static void do_refused(const CUpti_CallbackData *cb, stc_cuda_rec *r, int caching)
{
	int c10 = 0, skip;
	if (caching)
		call_path(1, &c10, 0, NULL);
	stp_event ev = {.type = STP_EV_REFUSED};
	ev.u.alloc.size = r->size;
	ev.u.alloc.requested = c10 ? 0 : r->size;
	ev.u.alloc.kind = r->kind;
	ev.u.alloc.device = r->kind == STP_MEM_PINNED ? -1 : r->device >= 0 ? r->device : ctx_device(cb->context);
	ev.u.alloc.stream = stream_id(cb->context, r->stream);
	ev.u.alloc.pool = c10 ? STP_POOL_TENSORS : pool_id(r->pool);
	ev.u.alloc.stack = call_path(0, &skip, 1, NULL);
	stc_emit(&ev);
}

static void do_free(const CUpti_CallbackData *cb, stc_cuda_rec *r)
{
	stc_devobj o;
	if (xla_region_take(r->addr)) { /* XLA's region goes back */
		if (stc_devobj_remove(r->addr, &o) && o.segment) {
			o.stack = 0;
			emit_alloc(STP_EV_SEGMENT_RELEASE, &o, stream_id(cb->context, r->stream), STP_POOL_JAX);
		}
		return;
	}
	if (!stc_devobj_find(r->addr, &o) || o.addr != r->addr || o.segment)
		return; /* not recorded (before the start, or PyTorch's segment) */
	stc_devobj_remove(r->addr, &o);
	emit_free(&o, stream_id(cb->context, r->stream));
	t_free_pending = 1;
	t_free_obj = o;
}

static void do_map(const CUpti_CallbackData *cb, stc_cuda_rec *r, int caching)
{
	int skip;
	uint32_t stack = call_path(caching, &skip, 1, NULL);
	if (skip)
		return;
	stc_devobj o = {.addr = r->addr, .size = r->size, .kind = STP_MEM_DEVICE, .segment = 1, .stack = stack};
	o.device = ctx_device(cb->context);
	stc_devobj_add(o.addr, o.size, o.device, o.kind, 1, stack);
	emit_alloc(STP_EV_SEGMENT_RESERVE, &o, 0, 0);
}

/* Releases the recorded mappings that tile [addr, addr+size) from addr on. */
static void do_unmap(stc_cuda_rec *r)
{
	uint64_t p = r->addr, end = r->addr + r->size;
	stc_devobj o;
	while (p < end && stc_devobj_find(p, &o) && o.addr == p && o.segment) {
		stc_devobj_remove(p, &o);
		o.stack = 0;
		emit_alloc(STP_EV_SEGMENT_RELEASE, &o, 0, 0);
		p = o.addr + o.size;
	}
}

static void do_api(const CUpti_CallbackData *cb, stc_cuda_rec *r)
{
	int skip;
	stp_event ev = {.type = STP_EV_API};
	ev.u.api.kind = r->api;
	ev.u.api.name = r->name ? stc_intern_string(r->name, strnlen(r->name, 4096)) : 0;
	ev.u.api.device = ctx_device(cb->context);
	ev.u.api.stream = stream_id(cb->context, r->stream);
	ev.u.api.stack = call_path(0, &skip, 0, NULL);
	ev.u.api.nranges = r->nranges;
	ev.u.api.ranges = r->nranges ? r->ranges : NULL;
	if (r->api != STP_API_SYNC && stc_cuda_activity_holds())
		stc_cuda_activity_hold(cb->correlationId, r->runtime ? t_drv_corr : 0, &ev, t_enter_ns);
	else
		stc_emit_span(&ev, t_enter_ns);
}

static void drv_scan(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	if (!cb->functionParams)
		return;
	t_busy = 1;
	stc_cuda_rec r;
	r.nranges = 0;
	CUfunction f;
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
		const cuLaunchKernelEx_params *q = cb->functionParams;
		f = q->f;
		t_drv_stream = q->config ? (uint64_t)(uintptr_t)q->config->hStream : 0;
		stc_cuda_scan_args(q->kernelParams, q->f, stc_cuda_drv_param_info, &r);
	} else {
		const cuLaunchKernel_params *q = cb->functionParams;
		f = q->f;
		t_drv_stream = (uint64_t)(uintptr_t)q->hStream;
		stc_cuda_scan_args(q->kernelParams, q->f, stc_cuda_drv_param_info, &r);
	}
	t_drv_n = r.nranges < DRV_RANGES ? r.nranges : DRV_RANGES;
	memcpy(t_drv_ranges, r.ranges, t_drv_n * sizeof(stp_range));
	t_drv_scanned = 1;
	t_drv_name = cb->symbolName && *cb->symbolName ? cb->symbolName : stc_cuda_kernel_name(f, 1);
	t_busy = 0;
}

/* ---------------------------------------------------------------- callback */
void CUPTIAPI stc_cuda_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
	(void)ud;
	if (dom != CUPTI_CB_DOMAIN_RUNTIME_API && dom != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	const CUpti_CallbackData *cb = data;
	int enter = cb->callbackSite == CUPTI_API_ENTER;
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
		if (enter && t_rt_depth++ == 0) {
			t_drv_corr = 0;
			t_drv_scanned = 0;
		}
		else if (!enter && t_rt_depth > 0)
			t_rt_depth--;
		if (!enter && t_rt_depth > 0)
			return; /* a runtime call inside another (not ours to record) */
		if (enter && t_rt_depth > 1)
			return;
	} else if (t_rt_depth > 0) {
		if (enter) {
			t_drv_corr = cb->correlationId;
			if (!t_busy && (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
			                cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
			                cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
			                cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz))
				drv_scan(cbid, cb);
		}
		return;
	}
	if (t_busy || atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON)
		return;
	t_busy = 1;
	stc_cuda_rec r;
	if (enter) {
		t_enter_ns = stc_now();
		t_free_pending = 0;
		switch (stc_cuda_map(dom, cbid, cb, &r)) {
		case STC_CU_FREE:
			do_free(cb, &r);
			break;
		case STC_CU_UNMAP:
			do_unmap(&r);
			break;
		}
		t_busy = 0;
		return;
	}
	if (t_free_pending) { /* the free failed: the object lives on */
		t_free_pending = 0;
		if (!stc_cuda_succeeded(dom, cb)) {
			stc_devobj_add(t_free_obj.addr, t_free_obj.size, t_free_obj.device, t_free_obj.kind, 0,
			               t_free_obj.stack);
			emit_alloc(STP_EV_ALLOC, &t_free_obj, 0, 0);
		}
	}
	int caching = atomic_load_explicit(&g_torch_cuda_mode, memory_order_relaxed) == STC_TORCH_CUDA_CACHING;
	switch (stc_cuda_map(dom, cbid, cb, &r)) {
	case STC_CU_ALLOC:
		do_alloc(cb, &r, caching);
		break;
	case STC_CU_MAP:
		do_map(cb, &r, caching);
		break;
	case STC_CU_REFUSED:
		do_refused(cb, &r, caching);
		break;
	case STC_CU_API:
		/* --accesses=exact: the Compute Sanitizer backend records every
		 * launch, copy and set with its exact accesses (face.h's claims) */
		if (r.api != STP_API_SYNC && atomic_load(&g_sanitizer_api_pid) == g_pid)
			break;
		if (r.api == STP_API_KERNEL && r.runtime && t_drv_scanned) {
			if (!r.nranges) {
				memcpy(r.ranges, t_drv_ranges, t_drv_n * sizeof(stp_range));
				r.nranges = t_drv_n;
			}
			if (r.name == cb->functionName && t_drv_name && *t_drv_name)
				r.name = t_drv_name; /* the runtime callback did not name the kernel */
			if (!cb->functionParams)
				r.stream = t_drv_stream; /* nor gave its parameters */
		}
		do_api(cb, &r);
		break;
	}
	t_busy = 0;
}
