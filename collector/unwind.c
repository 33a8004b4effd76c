/*
 * unwind.c - native call paths with libunwind (unw_backtrace, which walks
 * with a per-thread cache of unwind info).  Frames inside libstprof.so itself
 * (the interposer and this code) are dropped, so a call path starts at the
 * caller of malloc/free/new.
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>

#include "internal.h"

static uintptr_t self_lo, self_hi;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t probe = (uintptr_t)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (probe >= lo && probe < hi) {
			/* the whole object: every PT_LOAD of it */
			self_lo = UINTPTR_MAX;
			self_hi = 0;
			for (int k = 0; k < info->dlpi_phnum; k++) {
				const ElfW(Phdr) *q = &info->dlpi_phdr[k];
				if (q->p_type != PT_LOAD)
					continue;
				uintptr_t a = info->dlpi_addr + q->p_vaddr, b = a + q->p_memsz;
				if (a < self_lo)
					self_lo = a;
				if (b > self_hi)
					self_hi = b;
			}
			return 1;
		}
	}
	return 0;
}

void stc_unwind_init(void)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&stc_unwind_init);
}

uint32_t stc_unwind(uint64_t *ips, uint32_t max)
{
	void *buf[STC_DEPTH_MAX + 16];
	int want = (int)max + 8; /* room for our own frames, dropped below */
	if (want > (int)(sizeof buf / sizeof buf[0]))
		want = (int)(sizeof buf / sizeof buf[0]);
	int n = unw_backtrace(buf, want);
	int i = 0;
	while (i < n && (uintptr_t)buf[i] >= self_lo && (uintptr_t)buf[i] < self_hi)
		i++;
	uint32_t out = 0;
	for (; i < n && out < max; i++)
		ips[out++] = (uint64_t)(uintptr_t)buf[i];
	return out;
}
