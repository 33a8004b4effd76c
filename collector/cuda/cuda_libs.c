/*
 * cuda_libs.c - the CUDA libraries the CUPTI backend calls, none of them
 * linked (libstprof.so loads where CUDA is absent): libcupti, dlopened from
 * STPROF_CUPTI_LIB, else beside the loaded libcudart (and the cuda_cupti
 * directory of a pip wheel beside its cuda_runtime), else $CUDA_HOME and
 * /usr/local/cuda, else the default search path; and the few runtime and
 * driver functions the parameter scan needs, looked up in the libcudart
 * and libcuda the program loaded.  Every entry point sits in g_cu, NULL
 * when absent.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

stc_cuda_fns g_cu;

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


int stc_cuda_open_cupti(void)
{
	void *h = open_cupti();
	if (!h)
		return -1;
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
	return 0;
}

int stc_cuda_linked(void)
{
	struct find_ctx c;
	return *loaded_path("libcudart.so", &c) || *loaded_path("libcuda.so", &c);
}
