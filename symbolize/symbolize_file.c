/*
 * symbolize_file.c - one module file of the symbolizer and its debug info.
 *
 * Owns, for one (path, recorded build-id): finding the ELF files to read,
 * checking the build-id, the module's function symbols and its DWARF, and
 * answering "what is at this pc".  Loading happens once, on the first
 * lookup.
 *
 * Which files are read:
 *   - the module file itself, when it can be opened;
 *   - a separate debug file, looked for when the module lacks DWARF or a
 *     full .symtab, or is not the file that ran: DIR/.build-id/xx/yyyy.debug
 *     for the recorded build-id (else the file's own), then, when the module
 *     file is the right one, its .gnu_debuglink name beside it, in .debug/
 *     beside it and under DIR/<its directory>.  A debug file is used only if
 *     its build-id equals the expected one (when one is known).
 * A module file whose build-id differs from the recorded one is "mismatched":
 * its own symbols are still used, flagged unreliable, and its DWARF is not
 * (lines would be wrong), unless a debug file with the recorded build-id is
 * found, which then replaces it entirely.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize_int.h"

#define LOOKUP_FRAMES 64

struct sym_file {
	char *path;
	uint8_t want_id[STP_BUILD_ID_MAX];
	uint32_t want_id_len;
	int loaded;
	sym_elf main, debug;
	int main_ok, debug_ok;
	int mismatch;     /* frames are unreliable */
	unsigned options;
	sym_symtab syms;
	char *debug_path;
	sym_dwarf *dwarf;
	int dwarf_warned;
};

sym_file *sym_file_new(const char *path, const uint8_t *build_id, size_t build_id_len)
{
	sym_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->path = strdup(path);
	if (!f->path) {
		free(f);
		return NULL;
	}
	if (build_id && build_id_len <= STP_BUILD_ID_MAX) {
		memcpy(f->want_id, build_id, build_id_len);
		f->want_id_len = (uint32_t)build_id_len;
	}
	f->main.fd = f->debug.fd = -1;
	return f;
}

void sym_file_free(sym_file *f)
{
	if (!f)
		return;
	sym_dwarf_close(f->dwarf);
	sym_symtab_free(&f->syms);
	if (f->main_ok)
		sym_elf_close(&f->main);
	if (f->debug_ok)
		sym_elf_close(&f->debug);
	free(f->debug_path);
	free(f->path);
	free(f);
}

const char *sym_file_path(const sym_file *f)
{
	return f->path;
}

int sym_file_matches(const sym_file *f, const char *path, const uint8_t *build_id,
		     size_t build_id_len)
{
	if (strcmp(f->path, path) || build_id_len != f->want_id_len)
		return 0;
	return !build_id_len || !memcmp(f->want_id, build_id, build_id_len);
}

static void hex(char *out, size_t outlen, const uint8_t *id, size_t len)
{
	size_t o = 0;

	out[0] = 0;
	for (size_t i = 0; i < len && o + 3 <= outlen; i++)
		o += (size_t)snprintf(out + o, outlen - o, "%02x", id[i]);
}

static void warnf(sym_warn_fn warn, void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void warnf(sym_warn_fn warn, void *arg, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	if (!warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	warn(arg, msg);
}

/* Opens candidate as the debug file if it is usable and has the expected
 * build-id (when one is known).  Returns 1 when taken. */
static int try_debug(sym_file *f, const char *candidate, const uint8_t *id, size_t idlen)
{
	char err[128];
	sym_elf e;

	if (!strcmp(candidate, f->path) || access(candidate, R_OK))
		return 0;
	if (sym_elf_open(&e, candidate, err, sizeof(err)))
		return 0;
	if ((!e.has_dwarf && !e.has_symtab) ||
	    (idlen && (e.build_id_len != idlen || memcmp(e.build_id, id, idlen)))) {
		sym_elf_close(&e);
		return 0;
	}
	f->debug_path = strdup(candidate);
	if (!f->debug_path) {
		sym_elf_close(&e);
		return 0;
	}
	f->debug = e;
	f->debug_ok = 1;
	return 1;
}

static int fits(int written, size_t size)
{
	return written >= 0 && (size_t)written < size;
}

static void find_debug(sym_file *f, const sym_file_config *cfg)
{
	const uint8_t *id = f->want_id_len ? f->want_id : f->main.build_id;
	size_t idlen = f->want_id_len ? f->want_id_len : (f->main_ok ? f->main.build_id_len : 0);
	char path[4096], idhex[2 * STP_BUILD_ID_MAX + 1], dir[4096];
	const char *slash;
	size_t dirlen;

	if (idlen >= 2) {
		hex(idhex, sizeof(idhex), id, idlen);
		for (size_t i = 0; i < cfg->ndebug_dirs; i++)
			if (fits(snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug",
					  cfg->debug_dirs[i], idhex, idhex + 2),
				 sizeof(path)) &&
			    try_debug(f, path, id, idlen))
				return;
	}
	if (!f->main_ok || f->mismatch || !f->main.debuglink || strchr(f->main.debuglink, '/'))
		return;
	slash = strrchr(f->path, '/');
	dirlen = slash ? (size_t)(slash - f->path) : 1;
	if (dirlen >= sizeof(dir))
		return;
	memcpy(dir, slash ? f->path : ".", dirlen);
	dir[dirlen] = 0;
	if (fits(snprintf(path, sizeof(path), "%s/%s", dir, f->main.debuglink), sizeof(path)) &&
	    try_debug(f, path, id, idlen))
		return;
	if (fits(snprintf(path, sizeof(path), "%s/.debug/%s", dir, f->main.debuglink),
		 sizeof(path)) &&
	    try_debug(f, path, id, idlen))
		return;
	for (size_t i = 0; i < cfg->ndebug_dirs && dir[0] == '/'; i++)
		if (fits(snprintf(path, sizeof(path), "%s%s/%s", cfg->debug_dirs[i], dir,
				  f->main.debuglink),
			 sizeof(path)) &&
		    try_debug(f, path, id, idlen))
			return;
}

void sym_file_load(sym_file *f, const sym_file_config *cfg, sym_warn_fn warn, void *warn_arg)
{
	char err[256], want[2 * STP_BUILD_ID_MAX + 1], have[2 * STP_BUILD_ID_MAX + 1];
	const char *dwarf_path = NULL;
	sym_elf *dwarf_elf = NULL;

	if (f->loaded)
		return;
	f->loaded = 1;
	f->options = cfg->options;
	if (sym_elf_open(&f->main, f->path, err, sizeof(err)) == 0) {
		f->main_ok = 1;
		if (f->want_id_len &&
		    (f->main.build_id_len != f->want_id_len ||
		     memcmp(f->main.build_id, f->want_id, f->want_id_len)))
			f->mismatch = 1;
	} else if (f->path[0] != '[') { /* [vdso] and the like are not files */
		warnf(warn, warn_arg, "%s: cannot read (%s); its frames show as module+offset",
		      f->path, err);
	}
	if (!(f->main_ok && !f->mismatch && f->main.has_dwarf && f->main.has_symtab))
		find_debug(f, cfg);
	if (f->mismatch) {
		hex(want, sizeof(want), f->want_id, f->want_id_len);
		hex(have, sizeof(have), f->main.build_id, f->main.build_id_len);
		if (f->debug_ok) {
			/* the debug file of the binary that ran: use it alone */
			f->mismatch = 0;
			sym_elf_close(&f->main);
			f->main_ok = 0;
		} else {
			warnf(warn, warn_arg,
			      "%s: build-id mismatch (trace %s, file %s): the file changed since "
			      "the run; its frames use ELF symbols only and may be wrong",
			      f->path, want, have[0] ? have : "none");
		}
	}
	if (f->debug_ok && f->debug.has_dwarf) {
		dwarf_elf = &f->debug;
		dwarf_path = f->debug_path;
	} else if (f->main_ok && !f->mismatch && f->main.has_dwarf) {
		dwarf_elf = &f->main;
		dwarf_path = f->path;
	}
	if ((f->main_ok && sym_symtab_add_elf(&f->syms, &f->main)) ||
	    (f->debug_ok && sym_symtab_add_elf(&f->syms, &f->debug)) ||
	    sym_symtab_finish(&f->syms)) {
		warnf(warn, warn_arg, "%s: out of memory reading symbols", f->path);
		sym_symtab_free(&f->syms);
	}
	if (dwarf_path && !(cfg->options & STP_SYM_NO_DWARF) && sym_dwarf_available()) {
		if (sym_elf_dwarf_sane(dwarf_elf, err, sizeof(err)))
			f->dwarf = sym_dwarf_open(dwarf_path, dwarf_elf,
						  !(cfg->options & STP_SYM_NO_DEMANGLE), err,
						  sizeof(err));
		if (!f->dwarf && dwarf_path == f->path)
			warnf(warn, warn_arg, "%s: %s; using ELF symbols only", f->path, err);
		else if (!f->dwarf)
			warnf(warn, warn_arg, "%s: debug file %s: %s; using ELF symbols only",
			      f->path, dwarf_path, err);
	}
}

static const char *symbol_name(sym_file *f, sym_symbol *sym)
{
	if (!sym->demangle_done) {
		sym->demangle_done = 1;
		if (!(f->options & STP_SYM_NO_DEMANGLE))
			sym->demangled = sym_demangle(sym->name);
	}
	return sym->demangled ? sym->demangled : sym->name;
}

int sym_file_lookup(sym_file *f, uint64_t pc, uint64_t orig_pc, stp_frame *out, int max,
		    sym_warn_fn warn, void *warn_arg)
{
	sym_dframe df[LOOKUP_FRAMES];
	sym_symbol *sym = sym_symtab_find(&f->syms, pc);
	const char *sym_name = sym ? symbol_name(f, sym) : NULL;
	uint32_t common = f->mismatch ? STP_FRAME_UNRELIABLE : 0;
	int n = 0;

	if (f->dwarf) {
		char err[256];
		int bad = 0;

		n = sym_dwarf_lookup(f->dwarf, pc, df, LOOKUP_FRAMES, &bad, err, sizeof(err));
		if (n > LOOKUP_FRAMES)
			n = LOOKUP_FRAMES;
		if (bad && !f->dwarf_warned) {
			f->dwarf_warned = 1;
			warnf(warn, warn_arg, "%s: broken DWARF (%s); some frames may lack lines",
			      f->path, err);
		}
	}
	if (n <= 0) {
		if (max > 0) {
			out[0].function = sym_name;
			out[0].function_offset = sym ? orig_pc - sym->addr : 0;
			out[0].file = NULL;
			out[0].line = out[0].column = 0;
			out[0].flags = common | (sym ? STP_FRAME_SYMTAB : 0);
		}
		return 1;
	}
	for (int j = 0; j < n && j < max; j++) {
		stp_frame *o = &out[j];

		o->function = df[j].function;
		o->function_offset = 0;
		o->file = df[j].file;
		o->line = df[j].line;
		o->column = df[j].column;
		o->flags = common | STP_FRAME_DWARF | (df[j].inlined ? STP_FRAME_INLINED : 0);
		if (j == n - 1 && sym) {
			/* the machine-level function: its ELF symbol gives the offset,
			 * and the name when DWARF has none */
			o->function_offset = orig_pc - sym->addr;
			if (!o->function) {
				o->function = sym_name;
				o->flags |= STP_FRAME_SYMTAB;
			}
		}
	}
	return n;
}

void sym_file_get_stats(const sym_file *f, sym_file_stats *st)
{
	st->loaded = f->loaded;
	st->dwarf = f->dwarf != NULL;
	st->cus = sym_dwarf_cus_loaded(f->dwarf);
	st->symbols = f->syms.n;
}
