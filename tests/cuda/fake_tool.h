/*
 * fake_tool.h - the test double of the CUDA driver (there is no GPU here):
 * what the fake libcuda.so.1 (fake_cuda.c) shares with the fake
 * libcudart.so.13 (fake_cudart.c) and the fake libcupti.so.13
 * (fake_cupti.c).  Device memory is host memory (mmap); the callbacks are
 * driven with the real CUpti_CallbackData and parameter structures of the
 * CUDA 13 headers, and activity records are the real CUpti_ActivityKernel10,
 * CUpti_ActivityMemcpy6 and CUpti_ActivityMemset4.
 *
 * The fake device clock is CLOCK_MONOTONIC + FAKE_CLOCK_SKEW (so that a
 * collector that forgets to convert is caught); a kernel runs for exactly
 * FAKE_KERNEL_NS, a copy or set for FAKE_COPY_NS, from 1 us after its call.
 */
#ifndef STPROF_TESTS_CUDA_FAKE_TOOL_H
#define STPROF_TESTS_CUDA_FAKE_TOOL_H

#include <cupti.h>
#include <stdint.h>

#define FAKE_CLOCK_SKEW 1000000000000ull
#define FAKE_KERNEL_NS 5000u
#define FAKE_COPY_NS 3000u

typedef struct fake_tool {
	CUpti_CallbackFunc cb;   /* the subscriber's callback, NULL: none */
	void *ud;
	uint8_t enabled[2][1024]; /* [0] driver, [1] runtime, by cbid */
} fake_tool;

#ifdef __cplusplus
extern "C" {
#endif
extern fake_tool fake_tool_state;
/* The device clock. */
uint64_t fake_clock(void);
/* A fresh correlation id. */
uint32_t fake_corr(void);
/* Calls the subscriber for one site of one API call. */
void fake_fire(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const char *fn, const void *params, void *ret,
               const char *symbol, uint32_t corr, CUpti_ApiCallbackSite site);
/* Queues an activity record (kind: CONCURRENT_KERNEL, MEMCPY or MEMSET). */
void fake_activity(CUpti_ActivityKind kind, uint32_t corr, uint64_t start, uint64_t dur, const char *name);
/* Takes the queued records: copies up to max into out (each
 * sizeof(fake_record) bytes apart).  Returns how many. */
typedef union fake_record {
	CUpti_Activity head;
	CUpti_ActivityKernel10 kernel;
	CUpti_ActivityMemcpy6 memcpy;
	CUpti_ActivityMemset4 memset;
} fake_record;
int fake_activity_take(fake_record *out, int max);
/* The fake libcupti's flush (set when the subscriber registers its
 * buffers).  With FAKE_ACTIVITY_EARLY=1, fake_fire runs it before every
 * EXIT callback: the records of a fast kernel or copy reach the subscriber
 * before the EXIT of the call that made them, as a real CUPTI's worker or a
 * flush on another thread can deliver them. */
extern void (*fake_early_flush)(void);
/* The device's stream id of a stream handle (7 for the default stream). */
uint32_t fake_stream_id(CUstream s);
#ifdef __cplusplus
}
#endif

/* ENTER and EXIT around a fake API's body. */
#define FAKE_API(dom, cbid, fn, params, ret_type, ret_var, symbol, ...) \
	do { \
		uint32_t corr_ = fake_corr(); \
		ret_type ret_var = (ret_type)0; \
		fake_fire(dom, cbid, fn, params, &ret_var, symbol, corr_, CUPTI_API_ENTER); \
		__VA_ARGS__; \
		fake_fire(dom, cbid, fn, params, &ret_var, symbol, corr_, CUPTI_API_EXIT); \
		return ret_var; \
	} while (0)

#endif
