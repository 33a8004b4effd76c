/*
 * symbolize_capture.c - LD_PRELOAD library for the symbolization benchmark:
 * collects the distinct return addresses of the call stacks of a sample of
 * malloc calls (glibc backtrace(), which unwinds with CFI, so it works in
 * libraries built without frame pointers such as libtorch), and at exit
 * writes them with the process's module map to $STP_CAPTURE_OUT:
 *
 *   module BASE SIZE BIAS BUILDID|- PATH
 *   ip ADDR
 *
 * A stand-in for the collector's stacks, so the benchmark symbolizes the
 * addresses a real PyTorch run produces.  Not part of stprof.
 */
#include <execinfo.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/symbolize/symtest_modules.h"

#define SET_SIZE (1u << 18)
#define DEPTH 48

extern void *__libc_malloc(size_t size);

static uint64_t set[SET_SIZE];
static unsigned count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int busy;
static unsigned long calls;
static int ready;

static void add(uint64_t ip)
{
	uint64_t h = (ip * 0x9e3779b97f4a7c15ull) >> 46;

	while (set[h] && set[h] != ip)
		h = (h + 1) & (SET_SIZE - 1);
	if (!set[h] && count < SET_SIZE / 2) {
		set[h] = ip;
		count++;
	}
}

void *malloc(size_t size)
{
	void *p = __libc_malloc(size);
	void *frames[DEPTH];
	int n;

	if (!ready || busy || (__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED) & 15))
		return p;
	busy = 1;
	n = backtrace(frames, DEPTH);
	pthread_mutex_lock(&lock);
	for (int i = 1; i < n; i++)
		add((uint64_t)(uintptr_t)frames[i]);
	pthread_mutex_unlock(&lock);
	busy = 0;
	return p;
}

__attribute__((constructor)) static void start(void)
{
	void *f[2];

	busy = 1;
	backtrace(f, 2); /* loads libgcc_s before any hooked call */
	busy = 0;
	ready = 1;
}

__attribute__((destructor)) static void finish(void)
{
	static symtest_module mods[1024];
	const char *out = getenv("STP_CAPTURE_OUT");
	FILE *f;
	int n;

	ready = 0;
	if (!out || !(f = fopen(out, "w")))
		return;
	n = symtest_modules(mods, 1024);
	for (int i = 0; i < n; i++) {
		fprintf(f, "module %llx %llx %llx ", (unsigned long long)mods[i].base,
			(unsigned long long)mods[i].size, (unsigned long long)mods[i].bias);
		for (uint32_t j = 0; j < mods[i].build_id_len; j++)
			fprintf(f, "%02x", mods[i].build_id[j]);
		fprintf(f, "%s %s\n", mods[i].build_id_len ? "" : "-", mods[i].path);
	}
	for (unsigned i = 0; i < SET_SIZE; i++)
		if (set[i])
			fprintf(f, "ip %llx\n", (unsigned long long)set[i]);
	fclose(f);
}
