/*
 * symtest_modules.h - this process's module map as the collector records it
 * (path, lowest mapped address, span, load bias, GNU build-id), read with
 * dl_iterate_phdr.  For tests and benchmarks of the symbolizer.
 */
#ifndef STPROF_SYMTEST_MODULES_H
#define STPROF_SYMTEST_MODULES_H
#include <stdint.h>

#include "stprof/trace.h"

typedef struct symtest_module {
	char path[4096];
	uint64_t base, size, bias;
	uint8_t build_id[STP_BUILD_ID_MAX];
	uint32_t build_id_len;
} symtest_module;

/* Fills up to max modules with a file path (the vDSO is left out); returns
 * how many. */
int symtest_modules(symtest_module *out, int max);
/* The module containing addr, NULL if none. */
const symtest_module *symtest_module_of(const symtest_module *m, int n, uint64_t addr);
#endif
