/*
 * symbolize.c - the symbolizer: module map, address cache, warnings, text.
 *
 * Owns the public stp_sym_* API (include/stprof/symbolize.h).  Modules are
 * kept in the order added; the ones not replaced by a later overlapping
 * module form the active map, sorted by base for binary search (rebuilt
 * lazily after additions).  Module files are shared by (path, build-id):
 * two mappings of one file read it once.  Every answered address is cached
 * with all its frames (at most LOOKUP_FRAMES), keyed by (ip, is_return).
 *
 * Invariants: frames handed out point to strings owned by this symbolizer
 * (module paths here, names and files in the sym_file objects), which live
 * until stp_sym_free(); mappings are never freed before that, only marked
 * inactive, so earlier answers stay valid.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize_int.h"

#define LOOKUP_FRAMES 64
#define MAX_WARNINGS 10000
#define DEFAULT_DEBUG_DIR "/usr/lib/debug"

typedef struct sym_map {
	uint64_t base, end, bias;
	sym_file *file;
	int active;
} sym_map;

typedef struct cache_ent {
	uint64_t ip;
	uint32_t start, total; /* frames in s->pool */
	uint8_t used, ret;
} cache_ent;

struct stp_symbolizer {
	sym_map *maps;
	size_t nmaps, capmaps;
	struct map_ix *index; /* active maps sorted by base */
	size_t nindex;
	int dirty;
	sym_file **files;
	size_t nfiles, capfiles;
	char **dirs;     /* user debug dirs, then the default */
	size_t ndirs, capdirs;
	unsigned options;
	cache_ent *cache;
	size_t ccap, cused;
	stp_frame *pool;
	size_t npool, cappool;
	char **warnings;
	size_t nwarn, capwarn;
	stp_sym_stats stats;
};

stp_symbolizer *stp_sym_new(void)
{
	stp_symbolizer *s = calloc(1, sizeof(*s));

	if (s && stp_sym_add_debug_dir(s, DEFAULT_DEBUG_DIR)) {
		free(s);
		return NULL;
	}
	return s;
}

void stp_sym_free(stp_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nfiles; i++)
		sym_file_free(s->files[i]);
	for (size_t i = 0; i < s->ndirs; i++)
		free(s->dirs[i]);
	for (size_t i = 0; i < s->nwarn; i++)
		free(s->warnings[i]);
	free(s->files);
	free(s->dirs);
	free(s->warnings);
	free(s->maps);
	free(s->index);
	free(s->cache);
	free(s->pool);
	free(s);
}

void stp_sym_set_options(stp_symbolizer *s, unsigned options)
{
	if (s)
		s->options = options;
}

int stp_sym_add_debug_dir(stp_symbolizer *s, const char *dir)
{
	char *copy;
	size_t at;

	if (!s || !dir || !*dir)
		return -1;
	if (s->ndirs && !strcmp(dir, DEFAULT_DEBUG_DIR))
		return 0;
	if (stp_sym_grow_((void **)&s->dirs, &s->capdirs, s->ndirs + 1, sizeof(*s->dirs)))
		return -1;
	copy = strdup(dir);
	if (!copy)
		return -1;
	/* before the default, which stays last */
	at = s->ndirs ? s->ndirs - 1 : 0;
	memmove(&s->dirs[at + 1], &s->dirs[at], (s->ndirs - at) * sizeof(*s->dirs));
	s->dirs[at] = copy;
	s->ndirs++;
	return 0;
}

static sym_file *file_for(stp_symbolizer *s, const char *path, const uint8_t *id, size_t idlen)
{
	sym_file *f;

	for (size_t i = 0; i < s->nfiles; i++)
		if (sym_file_matches(s->files[i], path, id, idlen))
			return s->files[i];
	if (stp_sym_grow_((void **)&s->files, &s->capfiles, s->nfiles + 1, sizeof(*s->files)))
		return NULL;
	f = sym_file_new(path, id, idlen);
	if (f)
		s->files[s->nfiles++] = f;
	return f;
}

int stp_sym_add_module(stp_symbolizer *s, const char *path, uint64_t base, uint64_t size,
		       uint64_t bias, const uint8_t *build_id, size_t build_id_len)
{
	sym_file *f;
	uint64_t end;

	if (!s || !path || !*path || !size || build_id_len > STP_BUILD_ID_MAX ||
	    (build_id_len && !build_id))
		return -1;
	end = base + size < base ? UINT64_MAX : base + size;
	f = file_for(s, path, build_id, build_id_len);
	if (!f || s->nmaps >= UINT32_MAX ||
	    stp_sym_grow_((void **)&s->maps, &s->capmaps, s->nmaps + 1, sizeof(*s->maps)))
		return -1;
	for (size_t i = 0; i < s->nmaps; i++)
		if (s->maps[i].active && s->maps[i].base < end && base < s->maps[i].end)
			s->maps[i].active = 0;
	s->maps[s->nmaps++] = (sym_map){base, end, bias, f, 1};
	s->dirty = 1;
	s->stats.modules++;
	/* answers cached for addresses in the replaced range would be stale */
	if (s->cused) {
		memset(s->cache, 0, s->ccap * sizeof(*s->cache));
		s->cused = 0;
		s->npool = 0;
	}
	return 0;
}

int stp_sym_add_module_info(stp_symbolizer *s, const stp_reader *r, const stp_module_info *m)
{
	if (!r || !m)
		return -1;
	return stp_sym_add_module(s, stp_reader_string(r, m->path), m->base, m->size, m->bias,
				  m->build_id, m->build_id_len);
}

typedef struct map_ix {
	uint64_t base, end;
	uint32_t map;
} map_ix;

static int cmp_index(const void *a, const void *b)
{
	const map_ix *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

static void rebuild_index(stp_symbolizer *s)
{
	map_ix *ix = realloc(s->index, (s->nmaps ? s->nmaps : 1) * sizeof(*ix));

	if (!ix)
		return;
	s->index = ix;
	s->nindex = 0;
	for (size_t i = 0; i < s->nmaps; i++)
		if (s->maps[i].active)
			ix[s->nindex++] = (map_ix){s->maps[i].base, s->maps[i].end, (uint32_t)i};
	qsort(ix, s->nindex, sizeof(*ix), cmp_index);
	s->dirty = 0;
}

static sym_map *find_map(stp_symbolizer *s, uint64_t ip)
{
	size_t lo = 0, hi;

	if (s->dirty)
		rebuild_index(s);
	hi = s->nindex;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->index[mid].base <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || ip >= s->index[lo - 1].end)
		return NULL;
	return &s->maps[s->index[lo - 1].map];
}

/* ---------------------------------------------------------------- warnings */

static void add_warning(void *arg, const char *msg)
{
	stp_symbolizer *s = arg;
	char *copy;

	if (s->nwarn >= MAX_WARNINGS ||
	    stp_sym_grow_((void **)&s->warnings, &s->capwarn, s->nwarn + 1, sizeof(*s->warnings)))
		return;
	copy = strdup(msg);
	if (copy)
		s->warnings[s->nwarn++] = copy;
}

size_t stp_sym_warning_count(const stp_symbolizer *s)
{
	return s ? s->nwarn : 0;
}

const char *stp_sym_warning(const stp_symbolizer *s, size_t i)
{
	return s && i < s->nwarn ? s->warnings[i] : NULL;
}

/* ---------------------------------------------------------------- cache */

static size_t hash_ip(uint64_t ip, int ret, size_t cap)
{
	return (size_t)(((ip ^ (uint64_t)ret) * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static cache_ent *cache_find(stp_symbolizer *s, uint64_t ip, int ret)
{
	if (!s->ccap)
		return NULL;
	for (size_t h = hash_ip(ip, ret, s->ccap);; h = (h + 1) & (s->ccap - 1)) {
		cache_ent *e = &s->cache[h];

		if (!e->used)
			return NULL;
		if (e->ip == ip && e->ret == ret)
			return e;
	}
}

static void cache_put(stp_symbolizer *s, uint64_t ip, int ret, const stp_frame *f, int n)
{
	cache_ent *e;
	size_t h;

	if ((s->cused + 1) * 2 > s->ccap) {
		size_t cap = s->ccap ? s->ccap * 2 : 1024;
		cache_ent *c = calloc(cap, sizeof(*c));

		if (!c)
			return;
		for (size_t i = 0; i < s->ccap; i++) {
			if (!s->cache[i].used)
				continue;
			for (h = hash_ip(s->cache[i].ip, s->cache[i].ret, cap); c[h].used;
			     h = (h + 1) & (cap - 1))
				;
			c[h] = s->cache[i];
		}
		free(s->cache);
		s->cache = c;
		s->ccap = cap;
	}
	if (s->npool + (size_t)n > UINT32_MAX ||
	    stp_sym_grow_((void **)&s->pool, &s->cappool, s->npool + (size_t)n, sizeof(*s->pool)))
		return;
	for (h = hash_ip(ip, ret, s->ccap); s->cache[h].used; h = (h + 1) & (s->ccap - 1))
		;
	e = &s->cache[h];
	e->ip = ip;
	e->ret = (uint8_t)ret;
	e->used = 1;
	e->start = (uint32_t)s->npool;
	e->total = (uint32_t)n;
	memcpy(&s->pool[s->npool], f, (size_t)n * sizeof(*f));
	s->npool += (size_t)n;
	s->cused++;
}

/* ---------------------------------------------------------------- lookup */

int stp_sym_lookup(stp_symbolizer *s, uint64_t ip, int is_return_address, stp_frame *out,
		   int max)
{
	stp_frame buf[LOOKUP_FRAMES];
	int ret = is_return_address ? 1 : 0, n;
	cache_ent *e;
	sym_map *m;

	if (!s || max < 0 || (max > 0 && !out))
		return 0;
	s->stats.lookups++;
	e = cache_find(s, ip, ret);
	if (e) {
		s->stats.cache_hits++;
		if (max > 0)
			memcpy(out, &s->pool[e->start],
			       (size_t)((int)e->total < max ? (int)e->total : max) * sizeof(*out));
		return (int)e->total;
	}
	m = find_map(s, ip);
	if (!m) {
		memset(&buf[0], 0, sizeof(buf[0]));
		buf[0].ip = ip;
		n = 1;
	} else {
		uint64_t orig = ip - m->bias;
		uint64_t pc = ret && ip > m->base ? orig - 1 : orig;
		const char *path = sym_file_path(m->file);
		/* the default directory is last: dropped by STP_SYM_NO_SYSTEM_DEBUG */
		sym_file_config cfg = {(const char *const *)s->dirs,
				       s->ndirs - (s->options & STP_SYM_NO_SYSTEM_DEBUG ? 1 : 0),
				       s->options};
		sym_file_stats before, after;

		sym_file_get_stats(m->file, &before);
		sym_file_load(m->file, &cfg, add_warning, s);
		n = sym_file_lookup(m->file, pc, orig, buf, LOOKUP_FRAMES, add_warning, s);
		if (n > LOOKUP_FRAMES)
			n = LOOKUP_FRAMES;
		sym_file_get_stats(m->file, &after);
		if (!before.loaded) {
			s->stats.files_loaded++;
			s->stats.dwarf_loaded += after.dwarf ? 1 : 0;
			s->stats.elf_symbols += after.symbols;
		}
		s->stats.cus_loaded += after.cus - before.cus;
		for (int i = 0; i < n; i++) {
			buf[i].ip = ip;
			buf[i].module = path;
			buf[i].module_offset = orig;
		}
	}
	cache_put(s, ip, ret, buf, n);
	if (max > 0)
		memcpy(out, buf, (size_t)(n < max ? n : max) * sizeof(*out));
	return n;
}

void stp_sym_get_stats(const stp_symbolizer *s, stp_sym_stats *out)
{
	if (!out)
		return;
	if (!s) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = s->stats;
}

/* ---------------------------------------------------------------- text */

static const char *last_component(const char *p)
{
	const char *sl = p ? strrchr(p, '/') : NULL;

	return sl && sl[1] ? sl + 1 : p;
}

size_t stp_sym_format(const stp_frame *f, unsigned flags, char *buf, size_t len)
{
	char tmp[64];
	size_t o = 0;
	int w;

#define PUT(...)                                                                            \
	do {                                                                                \
		w = snprintf(buf ? buf + (o < len ? o : len) : NULL,                        \
			     buf && o < len ? len - o : 0, __VA_ARGS__);                    \
		if (w > 0)                                                                  \
			o += (size_t)w;                                                     \
	} while (0)

	if (buf && len)
		buf[0] = 0;
	if (!f)
		return 0;
	if (flags & STP_FMT_ADDRESS)
		PUT("0x%" PRIx64 " ", f->ip);
	if (f->function && f->file && f->line) {
		PUT("%s (%s:%u)", f->function,
		    flags & STP_FMT_FULL_PATH ? f->file : last_component(f->file), f->line);
	} else if (f->function) {
		if (f->function_offset)
			snprintf(tmp, sizeof(tmp), "+0x%" PRIx64, f->function_offset);
		else
			tmp[0] = 0;
		if (f->module)
			PUT("%s%s (%s)", f->function, tmp, last_component(f->module));
		else
			PUT("%s%s", f->function, tmp);
	} else if (f->file && f->line && f->module) {
		PUT("%s+0x%" PRIx64 " (%s:%u)", last_component(f->module), f->module_offset,
		    flags & STP_FMT_FULL_PATH ? f->file : last_component(f->file), f->line);
	} else if (f->module) {
		PUT("%s+0x%" PRIx64, last_component(f->module), f->module_offset);
	} else {
		PUT("0x%" PRIx64, f->ip);
	}
	if (f->flags & STP_FRAME_INLINED)
		PUT(" [inlined]");
	if ((flags & STP_FMT_MODULE) && f->module && f->function && f->file && f->line)
		PUT(" [%s]", last_component(f->module));
	if (f->flags & STP_FRAME_UNRELIABLE)
		PUT(" [build-id mismatch]");
#undef PUT
	return o;
}
