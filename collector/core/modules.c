/*
 * modules.c - MODULE events: every ELF object mapped into the process, with
 * its load bias, span and GNU build-id, so stacks can be symbolized offline.
 *
 * A scan walks dl_iterate_phdr; it is cheap when nothing changed (the
 * loader's adds/subs counters are compared first).  The scanner's lock is only
 * try-locked: a thread inside dlopen holds the loader lock and may be the one
 * calling us from malloc, so we must never wait on anything here (dlclose,
 * below, is the one caller that may).
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define SEEN_MAX 8192
static pthread_mutex_t scan_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long last_adds = ~0ull, last_subs = ~0ull;
static struct seen { uintptr_t base; uint64_t hash; } *seen;
static size_t nseen;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

static void build_id(const struct dl_phdr_info *info, stp_module_info *m)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
			const uint8_t *name = p + sizeof *nh;
			const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
			const uint8_t *next = desc + ((nh->n_descsz + 3) & ~3u);
			if (next > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
				uint32_t n = nh->n_descsz > STP_BUILD_ID_MAX ? STP_BUILD_ID_MAX : nh->n_descsz;
				memcpy(m->build_id, desc, n);
				m->build_id_len = n;
				return;
			}
			p = next;
		}
	}
}

struct scan { int first, changed; };

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
	struct scan *sc = data;
	if (sc->first) {
		sc->first = 0;
		if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs &&
		    info->dlpi_adds == last_adds && info->dlpi_subs == last_subs)
			return 1; /* nothing was loaded or unloaded since the last scan */
		if (last_subs != ~0ull && info->dlpi_subs != last_subs)
			stc_unwind_invalidate(); /* unloaded code: its addresses may be reused */
		last_adds = info->dlpi_adds;
		last_subs = info->dlpi_subs;
	}
	uintptr_t lo, hi;
	if (!stc_phdr_span(info, &lo, &hi))
		return 0;
	char exe[4096];
	const char *path = info->dlpi_name;
	if (!path || !*path) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		exe[n > 0 ? n : 0] = 0;
		path = exe;
	}
	uint64_t h = hash_str(path);
	for (size_t i = 0; i < nseen; i++)
		if (seen[i].base == lo && seen[i].hash == h)
			return 0;
	if (nseen < SEEN_MAX)
		seen[nseen++] = (struct seen){lo, h};
	stp_event ev = {.type = STP_EV_MODULE};
	stp_module_info *m = &ev.u.module;
	m->path = stc_intern_string(path, strlen(path));
	m->base = lo;
	m->size = hi - lo;
	m->bias = info->dlpi_addr;
	build_id(info, m);
	stc_emit_def_event(&ev);
	sc->changed = 1;
	return 0;
}

/* Scans with scan_mu held, and releases it. */
static void scan_locked(void)
{
	if (!seen)
		seen = stc_mem_alloc(SEEN_MAX * sizeof *seen);
	if (seen) {
		struct scan sc = {1, 0};
		dl_iterate_phdr(visit, &sc);
	}
	pthread_mutex_unlock(&scan_mu);
}

void stc_modules_scan(void)
{
	if (pthread_mutex_trylock(&scan_mu))
		return;
	scan_locked();
}

/* A library may be loaded and unloaded between two flusher rounds: record
 * it before it goes.  The caller of dlclose holds no loader lock, so waiting
 * for a scan under way is safe here (it may have begun before the load). */
STC_EXPORT int dlclose(void *handle)
{
	if (!stc_real_resolved())
		stc_real_resolve();
	if (atomic_load(&g_state) == STC_ON && getpid() == g_pid && stc_out_ready() && !t_busy) {
		t_busy = 1;
		pthread_mutex_lock(&scan_mu);
		scan_locked();
		t_busy = 0;
	}
	return g_real.dlclose(handle);
}

void stc_modules_atfork_child(void)
{
	pthread_mutex_init(&scan_mu, NULL);
	nseen = 0;
	last_adds = last_subs = ~0ull;
}
