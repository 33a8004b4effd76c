/*
 * cuda_inject.c - starting the CUPTI backend: InitializeInjection (the
 * driver calls it at cuInit when CUDA_INJECTION64_PATH names libstprof.so,
 * which `stprof record` sets), or the preload path (a program linked with
 * libcudart or libcuda, run with LD_PRELOAD alone).  Both lead to
 * stc_cuda_start, which runs once per process.
 *
 * libcupti is dlopened, never linked (libstprof.so loads where CUDA is
 * absent): STPROF_CUPTI_LIB, else beside the loaded libcudart (and the
 * cuda_cupti directory of a pip wheel beside its cuda_runtime), else
 * $CUDA_HOME and /usr/local/cuda, else the default search path.  One
 * subscriber per process: when another tool (Nsight Systems, PyTorch's
 * profiler) holds CUPTI, one line on stderr says so and the program runs on
 * without CUDA events.  STPROF_CUDA=0 turns the backend off.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_internal.h"
#include "internal.h"

stc_cuda_fns g_cu;
static _Atomic int started;
static _Atomic int cupti_done; /* CUDA is being torn down: no more CUPTI calls */
static _Atomic int recording;  /* subscribed, callbacks enabled */

/* The Compute Sanitizer backend asks (a weak reference there): while CUPTI
 * records the device allocations, it records none of its own. */
__attribute__((visibility("hidden"))) int stc_cupti_records_memory(void);
int stc_cupti_records_memory(void) { return atomic_load(&recording) && !atomic_load(&cupti_done); }
static CUpti_SubscriberHandle subscriber;

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

/* ---------------------------------------------------------------- finding */
struct find_ctx {
	const char *prefix;
	char path[4096];
};

static int find_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct find_ctx *c = data;
	const char *n = info->dlpi_name, *slash = n ? strrchr(n, '/') : NULL;
	const char *base = slash ? slash + 1 : n;
	if (base && !strncmp(base, c->prefix, strlen(c->prefix))) {
		snprintf(c->path, sizeof c->path, "%s", n);
		return 1;
	}
	return 0;
}

/* The path of a loaded object whose name starts with prefix, or "". */
static const char *loaded_path(const char *prefix, struct find_ctx *c)
{
	c->prefix = prefix;
	c->path[0] = 0;
	dl_iterate_phdr(find_loaded, c);
	return c->path;
}

/* dlopens the first libcupti.so* in dir. */
static void *try_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	char path[4096];
	void *h = NULL;
	struct dirent *e;
	while (!h && (e = readdir(d))) {
		if (strncmp(e->d_name, "libcupti.so", 11))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	}
	closedir(d);
	return h;
}

static void *open_cupti(void)
{
	const char *env = getenv("STPROF_CUPTI_LIB");
	if (env && *env)
		return dlopen(env, RTLD_NOW | RTLD_LOCAL);
	struct find_ctx c;
	char dir[4096];
	void *h = NULL;
	const char *rt = loaded_path("libcudart.so", &c);
	if (*rt) {
		snprintf(dir, sizeof dir, "%s", rt);
		char *slash = strrchr(dir, '/');
		if (slash) {
			*slash = 0;
			h = try_dir(dir);
			if (!h) { /* nvidia/cuda_runtime/lib -> nvidia/cuda_cupti/lib */
				char wheel[4200];
				snprintf(wheel, sizeof wheel, "%s/../../cuda_cupti/lib", dir);
				h = try_dir(wheel);
			}
		}
	}
	const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
	for (size_t i = 0; !h && i < sizeof roots / sizeof roots[0]; i++) {
		if (!roots[i] || !*roots[i])
			continue;
		snprintf(dir, sizeof dir, "%s/lib64", roots[i]);
		if (!(h = try_dir(dir))) {
			snprintf(dir, sizeof dir, "%s/extras/CUPTI/lib64", roots[i]);
			h = try_dir(dir);
		}
	}
	if (!h)
		h = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
	return h;
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define SYM(h, field, name) (*(void **)&g_cu.field = dlsym(h, name))

void stc_cuda_resolve_cuda(void)
{
	static _Atomic int tries;
	if ((g_cu.rt_param_info && g_cu.drv_param_info) || atomic_load(&tries) >= 8)
		return;
	atomic_fetch_add(&tries, 1);
	struct find_ctx c;
	void *h;
	if (!g_cu.rt_param_info && *loaded_path("libcudart.so", &c) &&
	    (h = dlopen(c.path, RTLD_NOLOAD | RTLD_LAZY))) {
		SYM(h, rt_param_info, "cudaFuncGetParamInfo");
		SYM(h, rt_func_name, "cudaFuncGetName");
		SYM(h, rt_peek_error, "cudaPeekAtLastError");
		SYM(h, rt_take_error, "cudaGetLastError");
	}
	if (!g_cu.drv_param_info && *loaded_path("libcuda.so", &c) && (h = dlopen(c.path, RTLD_NOLOAD | RTLD_LAZY))) {
		SYM(h, drv_param_info, "cuFuncGetParamInfo");
		/* cuLaunchKernel takes a CUkernel (a library's kernel) as well */
		SYM(h, kernel_param_info, "cuKernelGetParamInfo");
		SYM(h, drv_func_name, "cuFuncGetName");
	}
}

/* ---------------------------------------------------------------- start */
static void at_exit(void)
{
	/* runs before the CUDA runtime's own teardown (registered after it) */
	if (atomic_exchange(&cupti_done, 1))
		return;
	void (*fh)(int) = atomic_load(&g_cuda_flush_hook);
	if (fh)
		fh(1);
	atomic_store(&g_cuda_flush_hook, NULL);
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
	void *h = open_cupti();
	if (!h) {
		say("stprof: CUDA: cannot find libcupti (set STPROF_CUPTI_LIB to its path); recording without CUDA "
		    "events\n");
		return;
	}
	SYM(h, subscribe, "cuptiSubscribe");
	SYM(h, unsubscribe, "cuptiUnsubscribe");
	SYM(h, enable_callback, "cuptiEnableCallback");
	SYM(h, result_string, "cuptiGetResultString");
	SYM(h, get_version, "cuptiGetVersion");
	SYM(h, get_device_id, "cuptiGetDeviceId");
	SYM(h, get_stream_id_ex, "cuptiGetStreamIdEx");
	SYM(h, get_timestamp, "cuptiGetTimestamp");
	SYM(h, activity_register, "cuptiActivityRegisterCallbacks");
	SYM(h, activity_enable, "cuptiActivityEnable");
	SYM(h, activity_next, "cuptiActivityGetNextRecord");
	SYM(h, activity_flush_all, "cuptiActivityFlushAll");
	if (!g_cu.subscribe || !g_cu.enable_callback) {
		say("stprof: CUDA: %s has no cuptiSubscribe; recording without CUDA events\n", "libcupti");
		return;
	}
	CUptiResult rc = g_cu.subscribe(&subscriber, stc_cuda_callback, NULL);
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
	atomic_store(&recording, 1);
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

/* The preload path: called at the end of stc_init.  Without an injection
 * path the driver will not call us: start now if CUDA is linked in. */
void stc_cuda_preload_init(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	if (!cuda_wanted() || (inj && *inj))
		return;
	struct find_ctx c;
	if (!*loaded_path("libcudart.so", &c) && !*loaded_path("libcuda.so", &c))
		return;
	start();
}

void stc_cuda_finish(void)
{
	if (atomic_load(&cupti_done))
		return;
	void (*fh)(int) = atomic_load(&g_cuda_flush_hook);
	if (fh)
		fh(1);
}
