/*
 * symtest_hdr.h - a function defined in a header and compiled first in its
 * unit (symtest_hdr.c), so the unit's line table starts in this file: the
 * case where libdwarf 20210528 names the wrong file for DWARF 5.
 */
#ifndef STPROF_SYMTEST_HDR_H
#define STPROF_SYMTEST_HDR_H
#include "symtest.h"

__attribute__((noinline)) void symtest_from_header(void)
{
	symtest_record(SYMTEST_HEADER, __LINE__, 0);
	__asm__ volatile("" ::: "memory");
}
#endif
