/*
 * symbolize_demangle.c - C++ name demangling for the symbolizer.
 *
 * Uses the C++ runtime's own demangler, __cxa_demangle (libstdc++, linked
 * into stp_symbolize), declared here with C linkage so this file stays C.
 * It is the demangler of the toolchain that built the code being profiled,
 * needs no extra package (libiberty's cplus_demangle would need
 * libiberty-dev) and prints what c++filt prints.  Only Itanium-ABI names
 * ("_Z...") are passed to it; everything else is left as is.
 */
#include <stdlib.h>
#include <string.h>

#include "symbolize_int.h"

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *sym_demangle(const char *name)
{
	int status = 0;
	char *out;

	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	out = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}
