/*
 * symtest_modules.c - the module map of this process (see symtest_modules.h).
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "symtest_modules.h"

typedef struct iter_arg {
	symtest_module *out;
	int n, max;
} iter_arg;

static void note_build_id(symtest_module *m, const char *p, size_t len)
{
	size_t off = 0;

	while (off + sizeof(ElfW(Nhdr)) <= len) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)(p + off);
		size_t name = off + sizeof(*nh), desc = name + ((nh->n_namesz + 3) & ~3u);
		size_t next = desc + ((nh->n_descsz + 3) & ~3u);

		if (next > len)
			return;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
		    !memcmp(p + name, "GNU", 4) && nh->n_descsz <= STP_BUILD_ID_MAX) {
			memcpy(m->build_id, p + desc, nh->n_descsz);
			m->build_id_len = nh->n_descsz;
			return;
		}
		off = next;
	}
}

static int one(struct dl_phdr_info *info, size_t size, void *varg)
{
	iter_arg *a = varg;
	symtest_module *m;
	uint64_t lo = UINT64_MAX, hi = 0;

	(void)size;
	if (a->n >= a->max)
		return 1;
	m = &a->out[a->n];
	memset(m, 0, sizeof(*m));
	if (info->dlpi_name && info->dlpi_name[0]) {
		if (info->dlpi_name[0] != '/')
			return 0; /* linux-vdso.so.1 */
		strncpy(m->path, info->dlpi_name, sizeof(m->path) - 1);
	} else {
		ssize_t k = readlink("/proc/self/exe", m->path, sizeof(m->path) - 1);

		if (k <= 0)
			return 0;
		m->path[k] = 0;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD) {
			if (ph->p_vaddr < lo)
				lo = ph->p_vaddr;
			if (ph->p_vaddr + ph->p_memsz > hi)
				hi = ph->p_vaddr + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE && !m->build_id_len) {
			note_build_id(m, (const char *)(info->dlpi_addr + ph->p_vaddr),
				      ph->p_memsz);
		}
	}
	if (lo >= hi)
		return 0;
	m->bias = info->dlpi_addr;
	m->base = info->dlpi_addr + lo;
	m->size = hi - lo;
	a->n++;
	return 0;
}

int symtest_modules(symtest_module *out, int max)
{
	iter_arg a = {out, 0, max};

	dl_iterate_phdr(one, &a);
	return a.n;
}

const symtest_module *symtest_module_of(const symtest_module *m, int n, uint64_t addr)
{
	for (int i = 0; i < n; i++)
		if (addr >= m[i].base && addr < m[i].base + m[i].size)
			return &m[i];
	return NULL;
}
