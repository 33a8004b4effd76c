/*
 * symtest.h - the program the symbolizer tests look at: functions in a
 * shared library built -O2 -g (C with a forced-inline function, C++ with a
 * namespace, a template and a method) that record their own return
 * addresses and the source lines of their calls (__LINE__), so the tests
 * know what symbolizing them must give without hard-coding any line.
 */
#ifndef STPROF_SYMTEST_H
#define STPROF_SYMTEST_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum symtest_slot {
	SYMTEST_INLINE,   /* a call inside symtest_inner, inlined into symtest_outer */
	SYMTEST_TEMPLATE, /* a call inside stp_symtest::twice<int> */
	SYMTEST_METHOD,   /* a call inside stp_symtest::Widget::poke */
	SYMTEST_STATIC,   /* a call inside a static (not exported) function */
	SYMTEST_HEADER,   /* a call inside symtest_from_header, in symtest_hdr.h */
	SYMTEST_NSLOTS
};

typedef struct symtest_site {
	uint64_t ra;         /* return address of the recording call */
	int line;            /* line of that call */
	int caller_line;     /* line where the inlined function was called (SYMTEST_INLINE) */
} symtest_site;

extern symtest_site symtest_sites[SYMTEST_NSLOTS];
/* Lines that the function symtest_outer spans. */
extern const int symtest_outer_first_line, symtest_outer_last_line;

/* Records __builtin_return_address(0) in slot (never inlined). */
void symtest_record(int slot, int line, int caller_line);
/* Fills every slot. */
void symtest_outer(void);
int symtest_run_cxx(void);
void symtest_run_static(void);
void symtest_from_header(void);

#ifdef __cplusplus
}
#endif
#endif
