/* util.c - see util.h. */
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static char self_dir[PATH_MAX];

void stprof_cli_init(const char *argv0)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		snprintf(exe, sizeof exe, "%s", argv0);
		n = (ssize_t)strlen(exe);
	}
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(exe, sizeof exe, ".");
	snprintf(self_dir, sizeof self_dir, "%s", exe);
}

const char *stprof_self_dir(void) { return self_dir; }

void stprof_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("stprof: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int stprof_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

int stprof_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	case 'b': case 'B': break;
	default: return -1;
	}
	if (shift && (*end == 'i' || *end == 'I'))
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -1;
	if (shift && v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

const char *stprof_fmt_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else
		snprintf(buf, len, "%.2f %s", v, unit[u]);
	return buf;
}

const char *stprof_fmt_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
	else if (ns >= 1000ull)
		snprintf(buf, len, "%.1f us", (double)ns / 1e3);
	else
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	return buf;
}

const char *stprof_collector_path(void)
{
	static char path[PATH_MAX];
	const char *env = getenv("STPROF_LIB");
	if (env && *env)
		return access(env, R_OK) == 0 ? env : NULL;
	static const char *rel[] = {"/libstprof.so", "/../lib/libstprof.so", "/../lib/stprof/libstprof.so"};
	for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
		snprintf(path, sizeof path, "%s%s", self_dir, rel[i]);
		char real[PATH_MAX];
		if (access(path, R_OK) == 0 && realpath(path, real)) {
			snprintf(path, sizeof path, "%s", real);
			return path;
		}
	}
	return NULL;
}

stp_reader *stprof_open_trace(const char *path)
{
	char err[512];
	stp_reader *r = stp_reader_open(path, err, sizeof err);
	if (!r)
		stprof_err("%s", err);
	return r;
}

/* Parses "1.5s", "200ms", "30us", "1000ns", "1000". -1 on error. */
int stprof_parse_time(const char *s, uint64_t *out)
{
	char *end;
	if (!*s || *s == '-' || *s == '+')
		return -1;
	double v = strtod(s, &end);
	if (end == s || !isfinite(v) || v < 0)
		return -1;
	double mult = 1;
	if (!strcmp(end, "") || !strcmp(end, "ns"))
		mult = 1;
	else if (!strcmp(end, "us"))
		mult = 1e3;
	else if (!strcmp(end, "ms"))
		mult = 1e6;
	else if (!strcmp(end, "s"))
		mult = 1e9;
	else
		return -1;
	v *= mult;
	if (v >= 1.8e19)
		return -1;
	*out = (uint64_t)(v + 0.5);
	return 0;
}

int stprof_parse_window(const char *s, uint64_t *lo, uint64_t *hi)
{
	const char *colon = strchr(s, ':');
	if (!colon || strchr(colon + 1, ':'))
		return -1;
	char a[64];
	size_t n = (size_t)(colon - s);
	if (n >= sizeof a)
		return -1;
	memcpy(a, s, n);
	a[n] = 0;
	*lo = 0;
	*hi = UINT64_MAX;
	if (n && stprof_parse_time(a, lo) < 0)
		return -1;
	if (colon[1] && stprof_parse_time(colon + 1, hi) < 0)
		return -1;
	return *hi < *lo ? -1 : 0;
}
