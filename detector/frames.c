/*
 * frames.c - module table and frame cache (see frames.h).
 *
 * Modules are kept sorted by base; a lookup is a binary search for the last
 * module whose base is <= ip.  Resolved frames are cached by (ip, caller) in
 * a det_map so a hot call path is looked up once.
 */
#include "frames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "livemap.h"
#include "stprof/srcframe.h"

/* Names come from the symbolizer (symbolize/, stprof/symbolize.h). */
#include "stprof/symbolize.h"

typedef struct det_module {
	char *path;
	const char *base_name;
	uint64_t base, size, bias;
	uint8_t cls;            /* DET_MOD_* of the path, computed once */
} det_module;

struct det_frames {
	det_module *mods;
	uint32_t nmods, cap;
	stp_det_frame *cache;   /* resolved frames; det_map value = index */
	uint64_t mc_ip[4096];   /* det_frames_module_class's cache */
	uint8_t mc_cls[4096];
	uint32_t ncache, cache_cap;
	det_map index;
	char **owned;           /* strings built here ("f (inlined into g)") */
	stp_det_frame *src;     /* source frames (stprof/srcframe.h) by index */
	char **src_text;
	uint32_t nsrc;
	const stp_reader *rd;   /* names Python frames */
	det_map interned;       /* hash of a text -> index in owned */
	uint32_t nowned, owned_cap;
	stp_symbolizer *sym;
	int program_done;       /* program_root looked for */
	char *program_root;     /* the program's installed package, NULL */
	size_t program_len;
};

det_frames *det_frames_new(void)
{
	det_frames *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	if (det_map_init(&f->index, 256) < 0) {
		free(f);
		return NULL;
	}
	if (det_map_init(&f->interned, 64) < 0) {
		det_map_destroy(&f->index);
		free(f);
		return NULL;
	}
	f->sym = stp_sym_new();
	if (!f->sym) {
		det_map_destroy(&f->index);
		det_map_destroy(&f->interned);
		free(f);
		return NULL;
	}
	return f;
}

void det_frames_free(det_frames *f)
{
	if (!f)
		return;
	for (uint32_t i = 0; i < f->nmods; i++)
		free(f->mods[i].path);
	free(f->mods);
	free(f->cache);
	det_map_destroy(&f->index);
	det_map_destroy(&f->interned);
	for (uint32_t i = 0; i < f->nowned; i++)
		free(f->owned[i]);
	free(f->owned);
	for (uint32_t i = 0; i < f->nsrc; i++)
		free(f->src_text[i]);
	free(f->src_text);
	free(f->src);
	stp_sym_free(f->sym);
	free(f->program_root);
	free(f);
}

int det_frames_symbolized(const det_frames *f)
{
	(void)f;
	return 1;
}

uint32_t det_frames_warnings(const det_frames *f, const char **out, uint32_t max)
{
	uint32_t n = 0;
	size_t c = stp_sym_warning_count(f->sym);
	for (size_t i = 0; i < c && n < max; i++)
		out[n++] = stp_sym_warning(f->sym, i);
	return n;
}

static const char *own(det_frames *f, char *s)
{
	if (!s)
		return NULL;
	if (f->nowned == f->owned_cap) {
		uint32_t nc = f->owned_cap ? f->owned_cap * 2 : 64;
		char **n = realloc(f->owned, nc * sizeof *n);
		if (!n) {
			free(s);
			return NULL;
		}
		f->owned = n;
		f->owned_cap = nc;
	}
	f->owned[f->nowned++] = s;
	return s;
}

const char *det_frames_intern(det_frames *f, const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull, v;
	for (const char *p = s; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	for (h |= 1;; h += 2) { /* probe on: two texts of one hash */
		if (!det_map_get(&f->interned, h, &v))
			break;
		if (!strcmp(f->owned[v], s))
			return f->owned[v];
	}
	char *c = strdup(s);
	if (!c || !own(f, c))
		return NULL;
	det_map_put(&f->interned, h, f->nowned - 1, NULL);
	return c;
}

/* A frame known by name (stprof/srcframe.h): kept in its own table, never
 * given to the symbolizer. */
static int add_srcframe(det_frames *f, const char *path, uint64_t base)
{
	uint64_t k = (base - STP_SRCFRAME_BASE) / STP_SRCFRAME_STRIDE;
	char *copy;
	const char *fn, *file;
	uint32_t line;
	if (k >= (1u << 26) || stp_srcframe_parse(path, &copy, &fn, &file, &line) < 0)
		return 0; /* not one we can show: the frame stays an address */
	if (k >= f->nsrc) {
		uint32_t nn = (uint32_t)k + 1 > f->nsrc * 2 ? (uint32_t)k + 1 : f->nsrc * 2;
		stp_det_frame *ns = realloc(f->src, nn * sizeof *ns);
		if (ns)
			f->src = ns;
		char **nt = ns ? realloc(f->src_text, nn * sizeof *nt) : NULL;
		if (!nt) {
			free(copy);
			return -1;
		}
		f->src_text = nt;
		memset(f->src + f->nsrc, 0, (nn - f->nsrc) * sizeof *ns);
		memset(f->src_text + f->nsrc, 0, (nn - f->nsrc) * sizeof *nt);
		f->nsrc = nn;
	}
	free(f->src_text[k]);
	f->src_text[k] = copy;
	f->src[k] = (stp_det_frame){.ip = base, .module = "", .function = fn, .file = *file ? file : NULL,
	                            .line = line};
	return 0;
}

int det_frames_add_module(det_frames *f, const char *path, uint64_t base, uint64_t size, uint64_t bias,
                          const uint8_t *build_id, uint32_t build_id_len)
{
	if (base >= STP_SRCFRAME_BASE && stp_srcframe_is(path))
		return add_srcframe(f, path, base);
	if (size && path && *path)
		stp_sym_add_module(f->sym, path, base, size, bias, build_id, build_id_len);
	/* the same mapping seen again (a re-announced module): keep one */
	for (uint32_t i = 0; i < f->nmods; i++)
		if (f->mods[i].base == base && f->mods[i].size == size && !strcmp(f->mods[i].path, path))
			return 0;
	if (f->nmods == f->cap) {
		uint32_t nc = f->cap ? f->cap * 2 : 32;
		det_module *nm = realloc(f->mods, nc * sizeof *nm);
		if (!nm)
			return -1;
		f->mods = nm;
		f->cap = nc;
	}
	char *p = strdup(path);
	if (!p)
		return -1;
	uint32_t at = f->nmods;
	while (at > 0 && f->mods[at - 1].base > base) {
		f->mods[at] = f->mods[at - 1];
		at--;
	}
	const char *slash = strrchr(p, '/');
	f->mods[at] = (det_module){p, slash ? slash + 1 : p, base, size, bias, 0};
	stp_det_frame probe = {.module = p};
	f->mods[at].cls = (uint8_t)((det_frames_is_plumbing(&probe) ? DET_MOD_PLUMBING : 0) |
	                            (det_frames_is_interpreter(&probe) ? DET_MOD_INTERPRETER : 0));
	f->nmods++;
	memset(f->mc_cls, 0, sizeof f->mc_cls);
	/* cached frames may now resolve differently */
	f->ncache = 0;
	det_map_destroy(&f->index);
	return det_map_init(&f->index, 256);
}

static const det_module *find_module(const det_frames *f, uint64_t ip)
{
	uint32_t lo = 0, hi = f->nmods;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (f->mods[mid].base <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the module just below; an earlier one may be larger (overlaps are
	 * rare but legal after unmap/remap): scan back a little */
	for (uint32_t i = lo, n = 0; i > 0 && n < 8; i--, n++) {
		const det_module *m = &f->mods[i - 1];
		if (ip >= m->base && ip - m->base < m->size)
			return m;
	}
	return NULL;
}

/* The program's own installed package (det_pyentry_package), from the
 * first path of the trace that tells: each stack whose innermost frame is
 * a Python one, its Python frames outermost first.  Looked at once; at
 * most PROGRAM_LOOK paths. */
#define PROGRAM_LOOK 4096u
#define PROGRAM_DEPTH 256u
static void find_program_root(det_frames *f)
{
	f->program_done = 1;
	uint32_t n = stp_reader_stack_count(f->rd), looked = 0;
	char *files[PROGRAM_DEPTH];
	for (uint32_t s = 1; s <= n && looked < PROGRAM_LOOK; s++) {
		uint32_t parent, depth = 0;
		uint64_t ip;
		if (stp_reader_stack_node(f->rd, s, &parent, &ip) != 0 || !STP_IS_PYFRAME(ip))
			continue;
		looked++;
		uint32_t k = s;
		for (; k && depth < PROGRAM_DEPTH && stp_reader_stack_node(f->rd, k, &parent, &ip) == 0; k = parent) {
			char *file, *func;
			uint32_t line;
			if (STP_IS_PYFRAME(ip) && det_pyframe_parse(stp_reader_string(f->rd, (uint32_t)ip), &file, &line, &func) == 0) {
				free(func);
				files[depth++] = file;
			}
		}
		int whole = !k; /* else deeper than PROGRAM_DEPTH Python frames: its outermost unknown */
		const char *outer[PROGRAM_DEPTH];
		for (uint32_t i = 0; i < depth; i++) /* outermost first */
			outer[i] = files[depth - 1 - i];
		size_t len = 0;
		uint32_t at = 0;
		int r = whole ? det_pyentry_package(outer, depth, &at, &len) : 0;
		if (r == 1 && (f->program_root = strndup(outer[at], len)))
			f->program_len = len;
		for (uint32_t i = 0; i < depth; i++)
			free(files[i]);
		if (r)
			return;
	}
}

void det_frames_resolve(det_frames *f, uint64_t ip, int caller, stp_det_frame *out)
{
	uint64_t key = ip ^ ((uint64_t)(caller != 0) << 63), idx;
	if (ip >= STP_SRCFRAME_BASE) {
		uint64_t k = (ip - STP_SRCFRAME_BASE) / STP_SRCFRAME_STRIDE;
		if (k < f->nsrc && f->src_text[k]) {
			*out = f->src[k];
			out->ip = ip;
			return;
		}
	}
	if (key && det_map_get(&f->index, key, &idx)) {
		*out = f->cache[idx];
		return;
	}
	stp_det_frame fr = {.ip = ip, .module = "", .offset = ip};
	if (STP_IS_PYFRAME(ip)) {
		char *file, *func;
		if (f->rd && det_pyframe_parse(stp_reader_string(f->rd, (uint32_t)ip), &file, &fr.line, &func) == 0) {
			fr.file = own(f, file);
			fr.function = own(f, func);
			fr.interpreted = 1;
			if (!f->program_done)
				find_program_root(f);
			fr.program = fr.file && f->program_root && !strncmp(fr.file, f->program_root, f->program_len) &&
			             (f->program_root[f->program_len - 1] == '/' || !fr.file[f->program_len]);
		}
		goto done;
	}
	const det_module *m = find_module(f, ip);
	if (m) {
		fr.module = m->path;
		fr.offset = ip - m->bias;
	}
	/* function, file and line; an inlined call is named with the function
	 * it was inlined into */
	stp_frame sf[STP_SYM_MAX_FRAMES];
	int n = stp_sym_lookup(f->sym, ip, caller, sf, STP_SYM_MAX_FRAMES);
	if (n > STP_SYM_MAX_FRAMES)
		n = STP_SYM_MAX_FRAMES;
	if (n >= 1 && sf[0].function) {
		fr.function = sf[0].function;
		fr.file = sf[0].file;
		fr.line = sf[0].line;
		if ((sf[0].flags & STP_FRAME_INLINED) && n >= 2 && sf[n - 1].function &&
		    strcmp(sf[0].function, sf[n - 1].function)) {
			size_t len = strlen(sf[0].function) + strlen(sf[n - 1].function) + 20;
			char *t = malloc(len);
			if (t) {
				snprintf(t, len, "%s (inlined into %s)", sf[0].function, sf[n - 1].function);
				fr.function = own(f, t) ? t : sf[0].function;
			}
		}
	}
done:
	if (f->ncache == f->cache_cap) {
		uint32_t nc = f->cache_cap ? f->cache_cap * 2 : 256;
		stp_det_frame *ncch = realloc(f->cache, nc * sizeof *ncch);
		if (!ncch) {
			*out = fr;
			return;
		}
		f->cache = ncch;
		f->cache_cap = nc;
	}
	f->cache[f->ncache] = fr;
	if (key)
		det_map_put(&f->index, key, f->ncache, NULL);
	f->ncache++;
	*out = fr;
}

uint32_t det_frames_resolve_inline(det_frames *f, uint64_t ip, int caller, stp_det_frame *out, uint32_t max)
{
	stp_det_frame one;
	det_frames_resolve(f, ip, caller, &one);
	if (!max)
		return 0;
	out[0] = one;
	if (STP_IS_PYFRAME(ip) || ip >= STP_SRCFRAME_BASE || !one.function || !strstr(one.function, " (inlined into "))
		return 1;
	stp_frame sf[STP_SYM_MAX_FRAMES];
	int n = stp_sym_lookup(f->sym, ip, caller, sf, STP_SYM_MAX_FRAMES);
	if (n > STP_SYM_MAX_FRAMES)
		n = STP_SYM_MAX_FRAMES;
	uint32_t m = 0;
	for (int i = 0; i < n && m < max; i++) {
		out[m] = one;
		out[m].function = sf[i].function;
		out[m].file = sf[i].file;
		out[m].line = sf[i].line;
		m++;
	}
	return m ? m : 1;
}

void det_frames_set_reader(det_frames *f, const stp_reader *rd) { f->rd = rd; }

static int starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

const char *det_frames_module_of(const det_frames *f, uint64_t ip)
{
	const det_module *m = find_module(f, ip);
	return m ? m->path : "";
}

unsigned det_frames_module_class(det_frames *f, uint64_t ip)
{
	/* call paths share most frames: a direct-mapped cache of recent ips
	 * (value + 1; 0 = empty) saves the binary search over the modules */
	uint32_t h = (uint32_t)((ip * 0x9e3779b97f4a7c15ull) >> 52);
	if (f->mc_ip[h] == ip && f->mc_cls[h])
		return f->mc_cls[h] - 1u;
	const det_module *m = find_module(f, ip);
	unsigned c = m ? m->cls : 0;
	f->mc_ip[h] = ip;
	f->mc_cls[h] = (uint8_t)(c + 1);
	return c;
}

int det_frames_is_interpreter(const stp_det_frame *fr)
{
	const char *b = fr->module ? strrchr(fr->module, '/') : NULL;
	b = b ? b + 1 : (fr->module ? fr->module : "");
	return starts(b, "python") || starts(b, "libpython");
}

int det_frames_is_plumbing(const stp_det_frame *fr)
{
	const char *b = fr->module ? strrchr(fr->module, '/') : NULL;
	b = b ? b + 1 : (fr->module ? fr->module : "");
	if (starts(b, "libstprof") || starts(b, "libc.so") || starts(b, "libc-") || starts(b, "ld-linux") ||
	    starts(b, "libstdc++") || starts(b, "libc10.so"))
		return 1;
	if (fr->function) {
		static const char *const alloc_fns[] = {"malloc", "calloc", "realloc", "free", "posix_memalign",
		                                        "aligned_alloc", "memalign", "valloc", "operator new",
		                                        "operator new[]", 0};
		for (int i = 0; alloc_fns[i]; i++)
			if (!strcmp(fr->function, alloc_fns[i]))
				return 1;
	}
	return 0;
}
