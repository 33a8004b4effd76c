/*
 * fake_cupti.c - the test double of libcupti.so.13 (see fake_tool.h): one
 * subscriber (a second gets CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
 * and so does the first when FAKE_CUPTI_BUSY=1, as when another tool holds
 * CUPTI), callbacks enabled one by one, and the activity API: buffers asked
 * from the client, filled with the records fake_cuda.c queued, given back
 * by cuptiActivityFlushAll.
 */
#include <stdlib.h>
#include <string.h>

#include "fake_tool.h"

static CUpti_BuffersCallbackRequestFunc want_buf;
static CUpti_BuffersCallbackCompleteFunc done_buf;
static int activity_on;

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud)
{
	const char *busy = getenv("FAKE_CUPTI_BUSY");
	if (fake_tool_state.cb || (busy && !strcmp(busy, "1")))
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	fake_tool_state.cb = cb;
	fake_tool_state.ud = ud;
	*sub = (CUpti_SubscriberHandle)(void *)&fake_tool_state;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
	(void)sub;
	fake_tool_state.cb = NULL;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub, CUpti_CallbackDomain dom,
                                CUpti_CallbackId cbid)
{
	(void)sub;
	if (cbid >= 1024 || (dom != CUPTI_CB_DOMAIN_RUNTIME_API && dom != CUPTI_CB_DOMAIN_DRIVER_API))
		return CUPTI_ERROR_INVALID_PARAMETER;
	fake_tool_state.enabled[dom == CUPTI_CB_DOMAIN_RUNTIME_API][cbid] = (uint8_t)enable;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
	*s = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (fake)";
	return CUPTI_SUCCESS;
}

/* FAKE_CUPTI_VERSION: the libcupti of another CUDA release (a pip wheel's
 * beside PyTorch is rarely the toolkit's stprof was built with). */
CUptiResult cuptiGetVersion(uint32_t *v)
{
	const char *e = getenv("FAKE_CUPTI_VERSION");
	*v = e && *e ? (uint32_t)strtoul(e, NULL, 10) : CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetDeviceId(CUcontext ctx, uint32_t *dev)
{
	(void)ctx;
	*dev = 0;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetStreamIdEx(CUcontext ctx, CUstream s, uint8_t per_thread, uint32_t *id)
{
	(void)ctx;
	(void)per_thread;
	*id = fake_stream_id(s);
	return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t *t)
{
	*t = fake_clock();
	return CUPTI_SUCCESS;
}

static void early_flush(void) { cuptiActivityFlushAll(0); }

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done)
{
	want_buf = req;
	done_buf = done;
	fake_early_flush = early_flush;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	(void)kind;
	activity_on = 1;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	uint8_t *next = *rec ? (uint8_t *)*rec + sizeof(fake_record) : buf;
	if (next + sizeof(fake_record) > buf + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)(void *)next;
	return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	if (!activity_on || !want_buf || !done_buf)
		return CUPTI_SUCCESS;
	for (;;) {
		uint8_t *buf = NULL;
		size_t size = 0, max = 0;
		want_buf(&buf, &size, &max);
		if (!buf || size < sizeof(fake_record))
			return CUPTI_ERROR_OUT_OF_MEMORY;
		int n = fake_activity_take((fake_record *)(void *)buf, (int)(size / sizeof(fake_record)));
		done_buf((CUcontext)(uintptr_t)0x1000, 0, buf, size, (size_t)n * sizeof(fake_record));
		if (n == 0 || (size_t)n < size / sizeof(fake_record))
			return CUPTI_SUCCESS;
	}
}
