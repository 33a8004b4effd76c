/*
 * modspan.c - where named libraries sit in memory (face.h, stc_modset): the
 * address spans of the loaded objects whose file names start with given
 * prefixes, so that a backend can tell the frames of a call path that lie
 * inside the CUDA libraries (and drop them: a path then starts at the
 * caller of the CUDA API).
 *
 * Invariants:
 *   - A set is looked up again (dl_iterate_phdr) only while one of its
 *     prefixes has no loaded object yet (it may load later), and only when
 *     the loader has loaded or unloaded an object since the last walk (its
 *     dlpi_adds + dlpi_subs counters, read from the first object alone);
 *     a found span is published once, with release order, and never
 *     changes.
 *   - At most two objects per prefix (two CUDA versions side by side).
 */
#include <link.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

typedef struct find_ctx {
	const stc_modset *set;
	stc_modspan found[STC_MODSET_MAX][2];
} find_ctx;

static int find_mods(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	find_ctx *fc = data;
	const char *n = info->dlpi_name, *slash = n ? strrchr(n, '/') : NULL;
	const char *base = slash ? slash + 1 : n;
	if (!base || !*base)
		return 0;
	for (unsigned m = 0; m < fc->set->n; m++) {
		const char *p = fc->set->prefix[m];
		if (strncmp(base, p, strlen(p)))
			continue;
		uintptr_t lo, hi;
		if (!stc_phdr_span(info, &lo, &hi))
			continue;
		int k = fc->found[m][0].hi ? 1 : 0;
		if (!fc->found[m][k].hi)
			fc->found[m][k] = (stc_modspan){lo, hi};
	}
	return 0;
}

/* The loader's count of objects loaded and unloaded so far (0 when this
 * libc does not say): the first object's dlpi_adds + dlpi_subs. */
static int count_loads(struct dl_phdr_info *info, size_t size, void *data)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
		*(unsigned long long *)data = info->dlpi_adds + info->dlpi_subs;
	return 1; /* one object is enough */
}

void stc_modset_scan(stc_modset *set)
{
	int missing = 0;
	for (unsigned m = 0; m < set->n; m++)
		missing |= !atomic_load_explicit(&set->done[m], memory_order_acquire);
	if (!missing)
		return;
	unsigned long long loads = 0;
	dl_iterate_phdr(count_loads, &loads);
	if (loads && loads == atomic_load_explicit(&set->loads, memory_order_relaxed))
		return; /* nothing loaded since the last walk */
	atomic_store_explicit(&set->loads, loads, memory_order_relaxed);
	find_ctx fc = {.set = set};
	dl_iterate_phdr(find_mods, &fc);
	for (unsigned m = 0; m < set->n; m++)
		if (fc.found[m][0].hi && !atomic_load(&set->done[m])) {
			memcpy(set->span[m], fc.found[m], sizeof fc.found[m]);
			atomic_store_explicit(&set->done[m], 1, memory_order_release);
		}
}

int stc_modset_has(const stc_modset *set, unsigned m, uint64_t ip)
{
	if (m >= set->n || !atomic_load_explicit(&set->done[m], memory_order_acquire))
		return 0;
	return (ip >= set->span[m][0].lo && ip < set->span[m][0].hi) ||
	       (ip >= set->span[m][1].lo && ip < set->span[m][1].hi);
}

uint32_t stc_modset_skip(const stc_modset *set, unsigned nskip, const uint64_t *ips, uint32_t d)
{
	uint32_t first = 0;
	for (; first < d; first++) {
		int in = 0;
		for (unsigned m = 0; m < nskip && !in; m++)
			in = stc_modset_has(set, m, ips[first]);
		if (!in)
			break;
	}
	return first;
}
