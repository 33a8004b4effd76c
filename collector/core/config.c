/*
 * config.c - the collector's options, from STPROF_* environment variables
 * (the stprof CLI validates its flags and passes them this way).  Values that
 * do not parse are ignored and the default stays: the collector never prints
 * into the profiled program's output.
 *
 *   STPROF_OUTPUT     trace path (default stprof-<pid>.stp in the cwd)
 *   STPROF_MIN_SIZE   smallest allocation recorded, bytes (default 0: all)
 *   STPROF_DEPTH      frames per call path, 0..256 (default 32)
 *   STPROF_HOST_DEPTH frames per host-heap call path (malloc, new), 0..256
 *                     (default STPROF_DEPTH's; 8 in a Python process when
 *                     STPROF_DEPTH is not given: `import torch` alone makes
 *                     about a million interpreter allocations whose deep
 *                     native paths cost more than the run's tensors; tensor,
 *                     CUDA and access events keep STPROF_DEPTH)
 *   STPROF_FLUSH_MS   flush period in ms, 1..100 (default 50)
 *   STPROF_UNWIND     fast (default) | libunwind | check: how call paths are
 *                     walked; check runs both and records how often they
 *                     differ (an annotation "stprof.unwind_mismatches")
 *   STPROF_ACCESSES   1 | ops: the Python shim records aten ops' accesses;
 *                     exact: the Compute Sanitizer backend records kernels'
 *                     (sanitizer.h)
 *   STPROF_SAMPLE_LAUNCHES  with exact: every Nth kernel launch gets its
 *                     accesses recorded, 1..1000000 (default 1: all)
 *   STPROF_HEAP_SAMPLE host-heap allocations below this many bytes are
 *                     sampled, one per that many bytes on average (sample.c);
 *                     0: every allocation.  Default 0, or 64 KiB in a
 *                     Python process (the interpreter's and the framework's
 *                     churn, ~10^6 allocations a step, costs more than
 *                     everything else; docs/record.md, "Host heap")
 *   STPROF_HEAP_FULL_ITERS with sampling, the first N iterations of a
 *                     marked loop record every heap allocation (default 2)
 *   STPROF_FULL       1: every event, whatever the defaults (no sampling,
 *                     no folding of steady iterations)
 *   STPROF_FOLD_KEEP  steady-state folding keeps the first and the last N
 *                     iterations in full, 0..1000 (default 2; 0: no folding)
 *   STPROF_LEAN       0: every iteration of a Python loop recorded in full
 *                     detail before folding (default 1: lean once they
 *                     repeat; fold.c, "Lean iterations")
 *   STPROF_SKIP_EXEC  images not recorded unless they are the recorded
 *                     command's: comma-separated shell patterns of program
 *                     names (default STC_SKIP_EXEC_DEFAULT, the toolchain;
 *                     empty: every image recorded; skipexec.c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

stc_config g_cfg;

int stc_quiet(void)
{
	const char *q = getenv("STPROF_QUIET");
	return q && *q && strcmp(q, "0");
}

void stc_config_defaults(stc_config *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->output, sizeof c->output, "stprof-%d.stp", (int)getpid());
	c->depth = STC_DEPTH_DEFAULT;
	c->host_depth = STC_DEPTH_DEFAULT;
	c->flush_ms = STC_FLUSH_MS_DEFAULT;
	c->heap_full_iters = STC_HEAP_FULL_ITERS_DEFAULT;
	c->fold_keep = STC_FOLD_KEEP_DEFAULT;
	c->lean = 1;
	snprintf(c->skip_exec, sizeof c->skip_exec, "%s", STC_SKIP_EXEC_DEFAULT);
}

/* Digits only, no sign, no overflow. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		unsigned d = (unsigned)(*s - '0');
		if (v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int stc_config_set(stc_config *c, const char *name, const char *value)
{
	uint64_t v;
	if (!name || !value)
		return -1;
	if (!strcmp(name, "OUTPUT")) {
		size_t n = strlen(value);
		if (n == 0 || n >= sizeof c->output)
			return -1;
		memcpy(c->output, value, n + 1);
		return 0;
	}
	if (!strcmp(name, "MIN_SIZE")) {
		if (parse_u64(value, UINT64_MAX, &v))
			return -1;
		c->min_size = v;
		return 0;
	}
	if (!strcmp(name, "DEPTH")) {
		if (parse_u64(value, STC_DEPTH_MAX, &v))
			return -1;
		c->depth = (uint32_t)v;
		c->depth_set = 1;
		return 0;
	}
	if (!strcmp(name, "HOST_DEPTH")) {
		if (parse_u64(value, STC_DEPTH_MAX, &v))
			return -1;
		c->host_depth = (uint32_t)v;
		c->host_depth_set = 1;
		return 0;
	}
	if (!strcmp(name, "FLUSH_MS")) {
		if (parse_u64(value, 100, &v) || v == 0)
			return -1;
		c->flush_ms = (uint32_t)v;
		return 0;
	}
	if (!strcmp(name, "UNWIND")) {
		if (!strcmp(value, "fast"))
			c->unwind = STC_UNWIND_FAST;
		else if (!strcmp(value, "libunwind"))
			c->unwind = STC_UNWIND_LIBUNWIND;
		else if (!strcmp(value, "check"))
			c->unwind = STC_UNWIND_CHECK;
		else
			return -1;
		return 0;
	}
	if (!strcmp(name, "ACCESSES")) {
		if (!strcmp(value, "1") || !strcmp(value, "ops"))
			c->accesses = STC_ACCESSES_OPS;
		else if (!strcmp(value, "exact"))
			c->accesses = STC_ACCESSES_EXACT;
		else if (!strcmp(value, "0"))
			c->accesses = STC_ACCESSES_NONE;
		else
			return -1;
		return 0;
	}
	if (!strcmp(name, "HEAP_SAMPLE")) {
		if (parse_u64(value, 1ull << 40, &v))
			return -1;
		c->heap_sample = v;
		c->heap_sample_set = 1;
		return 0;
	}
	if (!strcmp(name, "HEAP_FULL_ITERS")) {
		if (parse_u64(value, 1000000, &v))
			return -1;
		c->heap_full_iters = (uint32_t)v;
		return 0;
	}
	if (!strcmp(name, "FOLD_KEEP")) {
		if (parse_u64(value, 1000, &v))
			return -1;
		c->fold_keep = (uint32_t)v;
		return 0;
	}
	if (!strcmp(name, "FULL")) {
		if (strcmp(value, "0") && strcmp(value, "1"))
			return -1;
		c->full = value[0] == '1';
		return 0;
	}
	if (!strcmp(name, "LEAN")) {
		if (strcmp(value, "0") && strcmp(value, "1"))
			return -1;
		c->lean = value[0] == '1';
		return 0;
	}
	if (!strcmp(name, "SKIP_EXEC")) {
		size_t n = strlen(value);
		if (n >= sizeof c->skip_exec)
			return -1;
		memcpy(c->skip_exec, value, n + 1);
		return 0;
	}
	if (!strcmp(name, "SAMPLE_LAUNCHES")) {
		if (parse_u64(value, 1000000, &v) || v == 0)
			return -1;
		c->sample_launches = (uint32_t)v;
		return 0;
	}
	return -1;
}

void stc_config_from_env(stc_config *c)
{
	static const char *names[] = {"OUTPUT",          "MIN_SIZE",    "DEPTH",           "HOST_DEPTH",
	                              "FLUSH_MS",        "UNWIND",      "ACCESSES",        "SAMPLE_LAUNCHES",
	                              "HEAP_SAMPLE",     "HEAP_FULL_ITERS", "FULL",        "FOLD_KEEP",
	                              "LEAN",            "SKIP_EXEC"};
	char var[32];
	stc_config_defaults(c);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(var, sizeof var, "STPROF_%s", names[i]);
		const char *v = getenv(var);
		if (v)
			stc_config_set(c, names[i], v);
	}
}

void stc_config_host_depth(stc_config *c, int python)
{
	if (!c->host_depth_set)
		c->host_depth =
		        python && !c->depth_set && c->depth > STC_HOST_DEPTH_PYTHON ? STC_HOST_DEPTH_PYTHON : c->depth;
	if (c->full)
		c->heap_sample = 0;
	else if (!c->heap_sample_set)
		c->heap_sample = python ? STC_HEAP_SAMPLE_PYTHON : 0;
}
