/*
 * phdr.c - the span of a loaded object: the lowest and highest address of
 * its PT_LOAD segments, as dl_iterate_phdr reports them.  Used by the
 * module scanner, the unwinder (which modules hold rules) and the backends
 * that place a return address in a library (PyTorch's interpreter, CUDA's
 * libc10_cuda).  No state.
 */
#include <link.h>
#include <stdint.h>

#include "internal.h"

int stc_phdr_span(const struct dl_phdr_info *info, uintptr_t *lo_out, uintptr_t *hi_out)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
		lo = a < lo ? a : lo;
		hi = b > hi ? b : hi;
	}
	*lo_out = lo;
	*hi_out = hi;
	return hi > lo;
}
