/*
 * cuda_inject.c - starting the CUPTI backend: InitializeInjection (the
 * driver calls it at cuInit when CUDA_INJECTION64_PATH names libstprof.so,
 * which `stprof record` sets), or the preload path (a program linked with
 * libcudart or libcuda, run with LD_PRELOAD alone; the backend's start hook).
 * Both lead to start(), which runs once per process.
 *
 * libcupti is dlopened, never linked (cuda_libs.c).  One subscriber per
 * process: when another tool (Nsight Systems, PyTorch's
 * profiler) holds CUPTI, one line on stderr says so and the program runs on
 * without CUDA events; when stprof's own Compute Sanitizer backend holds it
 * (--accesses=exact, started first), the line says what that loses.  STPROF_CUDA=0 turns the backend off.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_internal.h"

static _Atomic int started;
static _Atomic int cupti_done; /* CUDA is being torn down: no more CUPTI calls */

static CUpti_SubscriberHandle subscriber;

#define STR_(x) #x
#define STR(x) STR_(x)

STC_EXPORT int InitializeInjection(void);

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	if (stc_quiet())
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n > 0 && write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0)
		return;
}

/* ---------------------------------------------------------------- start */
static void at_exit(void)
{
	/* runs before the CUDA runtime's own teardown (registered after it) */
	if (atomic_exchange(&cupti_done, 1))
		return;
	atomic_store(&g_cupti_records_memory, 0);
	stc_cuda_activity_flush(1);
	stc_cuda_activity_flush_off();
}

static int cuda_wanted(void)
{
	const char *v = getenv("STPROF_CUDA");
	return !v || strcmp(v, "0");
}

static void start(void)
{
	if (atomic_exchange(&started, 1))
		return; /* preload and injection: once */
	if (stc_cuda_open_cupti() != 0) {
		say("stprof: CUDA: cannot find libcupti (set STPROF_CUPTI_LIB to its path); recording without CUDA "
		    "events\n");
		return;
	}
	if (!g_cu.subscribe || !g_cu.enable_callback) {
		say("stprof: CUDA: %s has no cuptiSubscribe; recording without CUDA events\n", "libcupti");
		return;
	}
	CUptiResult rc = g_cu.subscribe(&subscriber, stc_cuda_callback, NULL);
	if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && atomic_load(&g_sanitizer_api_pid) == g_pid) {
		/* our own --accesses=exact holds the one subscription: say what
		 * is lost (the report says it too: docs/accesses.md) */
		say("stprof: CUDA: --accesses=exact's Compute Sanitizer holds the driver's one tools subscription, so "
		    "no CUPTI: kernels are timed on the device by the patch, copies and sets carry host times\n");
		return;
	}
	if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		say("stprof: CUDA: another tool (Nsight Systems, PyTorch's profiler, a sanitizer, ...) already holds "
		    "CUPTI; recording without CUDA events\n");
		return;
	}
	if (rc != CUPTI_SUCCESS) {
		const char *s = NULL;
		if (g_cu.result_string)
			g_cu.result_string(rc, &s);
		say("stprof: CUDA: cuptiSubscribe failed (%s); recording without CUDA events\n", s ? s : "error");
		return;
	}
	for (const CUpti_CallbackId *id = stc_cuda_runtime_cbids; *id; id++)
		g_cu.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, *id);
	for (const CUpti_CallbackId *id = stc_cuda_driver_cbids; *id; id++)
		g_cu.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, *id);
	/* subscribed, callbacks enabled: the Compute Sanitizer backend records
	 * no device allocations of its own now */
	atomic_store(&g_cupti_records_memory, 1);
	const char *act = getenv("STPROF_CUDA_ACTIVITY");
	if ((!act || strcmp(act, "0")) && stc_cuda_activity_start() != 0)
		say("stprof: CUDA: no activity records from this libcupti (stprof was built for CUPTI API %s); "
		    "kernels and copies carry host times\n", STR(CUPTI_API_VERSION));
	atexit(at_exit);
}

int InitializeInjection(void)
{
	if (!cuda_wanted() || atomic_load(&g_state) != STC_ON)
		return 1;
	int was = t_busy;
	t_busy = 1;
	start();
	t_busy = was;
	return 1;
}

/* The preload path: the start hook, at the end of the collector's start.
 * Without an injection path the driver will not call us: start now if CUDA
 * is linked in. */
static void preload_init(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	if (!cuda_wanted() || (inj && *inj))
		return;
	if (!stc_cuda_linked())
		return;
	start();
}

/* ---------------------------------------------------------------- hooks */
/* The finish hook: the last device times, while still recording. */
static void finish(void)
{
	if (atomic_load(&cupti_done))
		return;
	int was = t_busy;
	t_busy = 1;
	stc_cuda_activity_flush(1);
	t_busy = was;
}

STC_BACKEND(cuda) = {
	.name = "cuda",
	.start = preload_init,
	.finish = finish,
	.fork_child = stc_cuda_activity_atfork_child,
	.flush = stc_cuda_activity_flush,
	.mark = stc_cuda_activity_mark,
};
