/*
 * symtest_lib.c - C part of the symbolizer's test library (see symtest.h).
 * Built -O2 -g whatever the build type, so symtest_inner really is inlined.
 */
#include "symtest.h"

#ifdef __clang__
#define SYMTEST_NOINLINE __attribute__((noinline, used))
#else
#define SYMTEST_NOINLINE __attribute__((noinline, noclone, used))
#endif

symtest_site symtest_sites[SYMTEST_NSLOTS];

SYMTEST_NOINLINE void symtest_record(int slot, int line, int caller_line)
{
	symtest_sites[slot].ra =
		(uint64_t)(uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0));
	symtest_sites[slot].line = line;
	symtest_sites[slot].caller_line = caller_line;
	__asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) void symtest_inner(int caller_line)
{
	symtest_record(SYMTEST_INLINE, __LINE__, caller_line);
	__asm__ volatile("" ::: "memory"); /* no tail call */
}

const int symtest_outer_first_line = __LINE__ + 1;
SYMTEST_NOINLINE void symtest_outer(void)
{
	symtest_inner(__LINE__);
	__asm__ volatile("" ::: "memory");
}
const int symtest_outer_last_line = __LINE__ - 1;

static SYMTEST_NOINLINE void symtest_hidden(void)
{
	symtest_record(SYMTEST_STATIC, __LINE__, 0);
	__asm__ volatile("" ::: "memory");
}

void symtest_run_static(void)
{
	symtest_hidden();
	__asm__ volatile("" ::: "memory");
}
