/*
 * cuda_internal.h - the CUPTI backend of libstprof.so: what its files share.
 * Internal to collector/cuda/; compiled only when CMake found the CUPTI
 * headers (STPROF_HAVE_CUPTI).  Like every backend it sees the core through
 * collector/core/face.h only.
 *
 *   cuda_libs.c    the libraries, none linked: libcupti found and dlopened,
 *                  the runtime's and driver's functions the scan needs.
 *   cuda_inject.c  InitializeInjection and the preload path: subscribes
 *                  once, enables the callbacks and the activity kinds; the
 *                  backend's hooks.
 *   cuda_map.c     one runtime/driver callback -> what it means for the
 *                  trace (stc_cuda_rec): an object allocated or freed, a
 *                  mapping made or removed, an API call with its ranges.
 *                  No emission here: the white-box test feeds it real
 *                  CUpti_CallbackData structures.
 *   cuda_scan.c    the kernel parameter scan (conservative object refs).
 *   cuda_record.c  the callback itself: call paths, ALLOC/FREE/SEGMENT/API
 *                  events, the live-object table and the claims (face.h).
 *   cuda_activity.c device time: CUPTI activity records joined to the
 *                  launches by correlation id, CUPTI clock -> CLOCK_MONOTONIC.
 *
 * Invariants:
 *   - Nothing is recorded for a call that failed (EXIT with an error), for a
 *     call made while t_busy is set (the collector's own, the pluggable
 *     allocator's), or for a driver call made inside a runtime call (the
 *     runtime call is the one the program made: recorded once).
 *   - Every object or mapping recorded is in the devobj table until its free
 *     or unmap is recorded; a free is recorded before the memory can be
 *     handed out again (at ENTER), and taken back (re-allocated) when the
 *     call fails, as realloc does in preload.c.
 */
#ifndef STPROF_COLLECTOR_CUDA_INTERNAL_H
#define STPROF_COLLECTOR_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cupti.h>
#include <cuda_runtime_api.h>

#include "../core/face.h"
#include "stprof/trace.h"

#define STC_CUDA_HIDDEN __attribute__((visibility("hidden")))

/* ---------------------------------------------------------------- libraries */
/* Entry points looked up at run time (dlsym): CUPTI's, and the two the
 * parameter scan needs from the runtime and the driver.  NULL when absent. */
typedef struct stc_cuda_fns {
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
	CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
	CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
	CUptiResult (*result_string)(CUptiResult, const char **);
	CUptiResult (*get_version)(uint32_t *);
	CUptiResult (*get_device_id)(CUcontext, uint32_t *);
	CUptiResult (*get_stream_id_ex)(CUcontext, CUstream, uint8_t, uint32_t *);
	CUptiResult (*get_timestamp)(uint64_t *);
	CUptiResult (*activity_register)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*activity_enable)(CUpti_ActivityKind);
	CUptiResult (*activity_next)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*activity_flush_all)(uint32_t);
	cudaError_t (*rt_param_info)(const void *, size_t, size_t *, size_t *);
	CUresult (*drv_param_info)(CUfunction, size_t, size_t *, size_t *);
	CUresult (*kernel_param_info)(CUkernel, size_t, size_t *, size_t *);
	cudaError_t (*rt_func_name)(const char **, const void *);
	cudaError_t (*rt_peek_error)(void); /* cudaPeekAtLastError */
	cudaError_t (*rt_take_error)(void); /* cudaGetLastError */
	CUresult (*drv_func_name)(const char **, CUfunction);
} stc_cuda_fns;
STC_CUDA_HIDDEN extern stc_cuda_fns g_cu;
/* dlopens libcupti and looks up its entry points in g_cu (cuda_libs.c);
 * -1 when no libcupti could be found. */
STC_CUDA_HIDDEN int stc_cuda_open_cupti(void);
/* 1 when the program loaded libcudart or libcuda. */
STC_CUDA_HIDDEN int stc_cuda_linked(void);
/* Looks up rt_param_info/drv_param_info in the loaded libcudart/libcuda
 * (once they are loaded; cheap after the first success). */
STC_CUDA_HIDDEN void stc_cuda_resolve_cuda(void);

/* ---------------------------------------------------------------- mapping */
enum stc_cuda_what {
	STC_CU_NONE = 0,
	STC_CU_ALLOC,       /* addr, size, kind, device, stream, pool */
	STC_CU_FREE,        /* addr (kind from the object table), stream */
	STC_CU_MAP,         /* VMM: physical memory mapped at [addr, addr+size) */
	STC_CU_UNMAP,       /* VMM: [addr, addr+size) unmapped */
	STC_CU_HANDLE_NEW,  /* VMM: cuMemCreate: handle -> device (bookkeeping) */
	STC_CU_HANDLE_DEL,  /* VMM: cuMemRelease */
	STC_CU_API,         /* api kind, name, stream, ranges */
	STC_CU_REFUSED      /* an allocation refused for want of memory: size,
	                     * kind, stream, pool (addr 0) */
};

#define STC_CU_RANGES_MAX 64

typedef struct stc_cuda_rec {
	int what;            /* stc_cuda_what */
	int runtime;         /* 1: runtime API, 0: driver API */
	uint64_t addr, size;
	uint8_t kind;        /* stp_mem_kind (ALLOC) */
	int32_t device;      /* -1: the context's device (filled by the caller) */
	uint64_t stream;     /* CUstream / cudaStream_t handle value */
	uint64_t pool;       /* memory pool handle value, 0 = the default */
	uint64_t handle;     /* VMM allocation handle */
	uint8_t api;         /* stp_api_kind */
	const char *name;    /* API name: kernel symbol or function name */
	uint32_t nranges;
	stp_range ranges[STC_CU_RANGES_MAX];
} stc_cuda_rec;

/* What the callback means.  At ENTER only frees (and unmaps) are mapped, so
 * that they are recorded before the memory can be reused; everything else
 * at EXIT, and only when the call succeeded, but for an allocation that
 * failed for want of memory (cudaErrorMemoryAllocation,
 * CUDA_ERROR_OUT_OF_MEMORY): STC_CU_REFUSED.  Returns rec->what. */
STC_CUDA_HIDDEN int stc_cuda_map(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const CUpti_CallbackData *cb,
                                 stc_cuda_rec *rec);
/* The callback ids the backend enables, per domain; 0-terminated. */
STC_CUDA_HIDDEN extern const CUpti_CallbackId stc_cuda_runtime_cbids[];
STC_CUDA_HIDDEN extern const CUpti_CallbackId stc_cuda_driver_cbids[];
/* 1 when the callback succeeded (its return value says so). */
STC_CUDA_HIDDEN int stc_cuda_succeeded(CUpti_CallbackDomain dom, const CUpti_CallbackData *cb);

/* ---------------------------------------------------------------- scan */
/* Scans a launch's arguments for 8-byte values inside live objects (or
 * segments) of the devobj table; appends each object once, as a range with
 * mode read|write, to rec.  Arguments in the void** form come with their
 * sizes from the function's parameter info (get_info(i, &off, &size) != 0
 * ends the list); without it nothing is scanned (the array's length is
 * unknown).  A packed buffer (cuLaunchKernel's `extra`) is scanned at every
 * 8-byte-aligned offset below its size. */
typedef int (*stc_cuda_param_info_fn)(const void *fn, size_t i, size_t *off, size_t *size);
STC_CUDA_HIDDEN void stc_cuda_scan_args(void *const *args, const void *fn, stc_cuda_param_info_fn info,
                                        stc_cuda_rec *rec);
STC_CUDA_HIDDEN void stc_cuda_scan_buffer(const void *buf, size_t len, stc_cuda_rec *rec);
/* One pointer-sized value: appended when it lies inside a live object. */
STC_CUDA_HIDDEN void stc_cuda_scan_value(uint64_t v, stc_cuda_rec *rec);
/* Parameter info through cudaFuncGetParamInfo / cuFuncGetParamInfo, cached
 * per function (the first launch of a kernel asks, later ones read). */
STC_CUDA_HIDDEN int stc_cuda_rt_param_info(const void *fn, size_t i, size_t *off, size_t *size);
STC_CUDA_HIDDEN int stc_cuda_drv_param_info(const void *fn, size_t i, size_t *off, size_t *size);
/* A launched kernel's name when the callback gives no symbolName:
 * cudaFuncGetName (drv 0: a stub or a cudaKernel_t) or cuFuncGetName (drv
 * 1); NULL when neither knows it. */
STC_CUDA_HIDDEN const char *stc_cuda_kernel_name(const void *fn, int drv);

/* ---------------------------------------------------------------- activity */
/* Starts activity collection (kernel, memcpy, memset).  0 on success. */
STC_CUDA_HIDDEN int stc_cuda_activity_start(void);
/* An API event waiting for its device time: its seq is taken now (so it
 * sits among the thread's events where the call was made), it is kept by
 * correlation id (and the id of the driver call inside the runtime call,
 * alias, 0 = none) until the activity record comes, then written with the
 * device's begin and end (see cuda_activity.c). */
STC_CUDA_HIDDEN void stc_cuda_activity_hold(uint32_t correlation, uint32_t alias, stp_event *ev, uint64_t begin_ns);
/* Drains CUPTI's buffers (final: also forces the incomplete ones) and
 * samples the clock; a no-op before activity started, after CUDA's teardown
 * (flush_off) and in a fork child.  The backend's flush hook. */
STC_CUDA_HIDDEN void stc_cuda_activity_flush(int final);
STC_CUDA_HIDDEN void stc_cuda_activity_flush_off(void);
/* Writes the held events that got their device time (and, once the
 * recording is over, every one: with host times past the deadline) and
 * returns the watermark lowered below the first still held.  The backend's
 * mark hook (face.h). */
STC_CUDA_HIDDEN uint64_t stc_cuda_activity_mark(uint64_t mark, int try_only);
/* 1 once activity records come: API events are held for their device time. */
STC_CUDA_HIDDEN int stc_cuda_activity_holds(void);
STC_CUDA_HIDDEN void stc_cuda_activity_atfork_child(void);
/* CUPTI timestamp -> CLOCK_MONOTONIC ns. */
STC_CUDA_HIDDEN uint64_t stc_cuda_to_monotonic(uint64_t cupti_ns);

/* ---------------------------------------------------------------- record */
STC_CUDA_HIDDEN void CUPTIAPI stc_cuda_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                                const void *data);

#endif
