/*
 * test_modspan.c - named libraries in memory (collector/core/modspan.c):
 * a loaded library's span is found and holds its functions' addresses; a
 * prefix not loaded stays missing, and is found once a dlopen loads it (the
 * loader's counters changed since the last walk); stc_modset_skip counts
 * only the leading frames inside the skipped libraries.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "../face.h"
#include "check.h"

static const char *const prefixes[] = {"libc.so", "libz.so"};

int main(void)
{
	stc_modset set = {.prefix = prefixes, .n = 2};
	/* libc's own qsort, not a sanitizer's interceptor of the same name */
	void *c = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	uint64_t in_libc = c ? (uint64_t)(uintptr_t)dlsym(c, "qsort") : 0;
	uint64_t in_main = (uint64_t)(uintptr_t)&main;
	CHECK(in_libc != 0);
	stc_modset_scan(&set);
	CHECK(stc_modset_has(&set, 0, in_libc));
	CHECK(!stc_modset_has(&set, 0, in_main));
	CHECK(!stc_modset_has(&set, 1, in_libc)); /* libz: not loaded (yet) */
	CHECK(atomic_load(&set.loads) != 0);

	/* nothing loaded since: a scan walks nothing and finds nothing new */
	unsigned long long before = atomic_load(&set.loads);
	stc_modset_scan(&set);
	CHECK(atomic_load(&set.loads) == before);
	CHECK(!stc_modset_has(&set, 1, in_libc));

	/* a library loaded later is found by the next scan */
	void *z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	if (z) {
		uint64_t in_z = (uint64_t)(uintptr_t)dlsym(z, "crc32");
		CHECK(in_z != 0);
		stc_modset_scan(&set);
		CHECK(atomic_load(&set.loads) != before);
		CHECK(stc_modset_has(&set, 1, in_z));
		CHECK(!stc_modset_has(&set, 1, in_libc));
		/* the leading frames inside libc and libz are skipped, then none */
		uint64_t ips[4] = {in_libc, in_z, in_main, in_libc};
		CHECK_EQ_U(stc_modset_skip(&set, 2, ips, 4), 2);
		CHECK_EQ_U(stc_modset_skip(&set, 1, ips, 4), 1);
		CHECK_EQ_U(stc_modset_skip(&set, 2, ips + 2, 2), 0);
	}
	return check_done();
}
