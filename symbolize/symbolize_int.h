/*
 * symbolize_int.h - internals shared by the symbolize*.c files (not public).
 *
 *   symbolize.c          the symbolizer: module map, per-file cache, address
 *                        cache, warnings, formatting
 *   symbolize_file.c     one module file: finds its ELF and debug file,
 *                        checks the build-id, holds its symbol table and DWARF
 *   symbolize_elf.c      reading one ELF file (libelf): build-id,
 *                        debuglink, sections, function symbols
 *   symbolize_symtab.c   a sorted table of function symbols, address search
 *   symbolize_dwarf.c    DWARF (libdwarf): compile units, line tables,
 *                        function and inline trees
 *   symbolize_linehdr.c  a line-table header checked before libdwarf
 *                        reads it
 *   symbolize_grow.c     the growable-array helper all of them use
 *
 * Calls run one way: symbolize.c -> symbolize_file.c -> symbolize_dwarf.c,
 * symbolize_elf.c, symbolize_symtab.c -> symbolize_grow.c; and
 * symbolize_dwarf.c -> symbolize_linehdr.c.  Nothing outside
 * symbolize/ includes this header (tests/layout checks it).
 *   symbolize_demangle.c C++ demangling (__cxa_demangle)
 *
 * Addresses inside these files are ELF virtual addresses of the module
 * ("pc"), never run-time addresses.
 */
#ifndef STPROF_SYMBOLIZE_INT_H
#define STPROF_SYMBOLIZE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <gelf.h>
#include <libelf.h>

#include "stprof/symbolize.h"

/* ---------------------------------------------------------------- demangle */

/* A malloc'd demangled copy of a C++ (Itanium ABI) name, or NULL when name
 * is not mangled or cannot be demangled. */
char *sym_demangle(const char *name);

/* ---------------------------------------------------------------- ELF */

typedef struct sym_elf {
	int fd;
	Elf *elf;
	uint16_t type;          /* ET_EXEC, ET_DYN, ... */
	uint8_t build_id[STP_BUILD_ID_MAX];
	uint32_t build_id_len;
	const char *debuglink;  /* .gnu_debuglink file name, NULL if none */
	int has_dwarf;          /* .debug_info with contents */
	int has_symtab;         /* .symtab (not only .dynsym) */
	uint64_t file_size;
	int big_endian;
	/* Set by sym_elf_dwarf_sane(): the (decompressed) line-table section
	 * libdwarf reads, NULL if none; lines_unsafe when it cannot be checked
	 * (several candidates, relocations applied to it, a DWARF package
	 * index), so no line table of the file is handed to libdwarf. */
	const unsigned char *debug_line;
	uint64_t debug_line_size;
	int lines_unsafe;
} sym_elf;

/* Opens path with libelf.  On failure returns -1 with a reason in err. */
int sym_elf_open(sym_elf *e, const char *path, char *err, size_t errlen);
void sym_elf_close(sym_elf *e);
/* Checks what libdwarf cannot be trusted to reject safely: header tables
 * and sections inside the file, sane decompressed sizes, well-formed
 * range and location list headers.  0 with a reason in why otherwise.
 * Also finds the line-table section (debug_line, lines_unsafe above). */
int sym_elf_dwarf_sane(sym_elf *e, char *why, size_t whylen);

/* The n-byte (n <= 8) unsigned integer at p, big- or little-endian; the
 * caller has checked that the n bytes are there. */
static inline uint64_t sym_get_uint(const unsigned char *p, unsigned n, int big)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[big ? i : n - 1 - i];
	return v;
}

/* 1 when the line-table header at off in the .debug_line bytes [p, p +
 * size) may be given to libdwarf (symbolize_linehdr.c). */
int sym_line_header_ok(const unsigned char *p, uint64_t size, uint64_t off, int big);

/* ---------------------------------------------------------------- symtab */

typedef struct sym_symbol {
	uint64_t addr, size;   /* size 0: unknown, up to the next symbol */
	const char *name;      /* in the ELF file's string table */
	char *demangled;       /* owned; set on first use when name is C++ */
	uint32_t score;        /* which of several names at one address wins */
	uint32_t demangle_done;
} sym_symbol;

typedef struct sym_symtab {
	sym_symbol *v;
	size_t n, cap;
	uint64_t *max_end;     /* max_end[i]: largest end among v[0..i] */
	int sorted;
} sym_symtab;

/* Appends the function symbols of e (.symtab and .dynsym). Returns 0 or -1
 * (no memory). */
int sym_symtab_add_elf(sym_symtab *t, const sym_elf *e);
/* Sorts and drops duplicate addresses (keeps the best name). */
int sym_symtab_finish(sym_symtab *t);
/* The symbol containing pc, NULL if none. */
sym_symbol *sym_symtab_find(const sym_symtab *t, uint64_t pc);
void sym_symtab_free(sym_symtab *t);

/* ---------------------------------------------------------------- DWARF */

typedef struct sym_dwarf sym_dwarf;

/* One source-level frame at a pc, as DWARF describes it. */
typedef struct sym_dframe {
	const char *function; /* NULL when DWARF has no function here */
	const char *file;
	uint32_t line, column;
	int inlined;
} sym_dframe;

/* 1 when this build can read DWARF (libdwarf was found). */
int sym_dwarf_available(void);
/* Opens the DWARF of the ELF file at path, which elf (checked by
 * sym_elf_dwarf_sane(), open until sym_dwarf_close()) has read too.  NULL
 * with a reason in err. */
sym_dwarf *sym_dwarf_open(const char *path, const sym_elf *elf, int demangle, char *err,
			  size_t errlen);
void sym_dwarf_close(sym_dwarf *d);
/* Frames at pc, innermost first, up to max; returns how many exist (0: no
 * DWARF covers pc).  Strings live as long as d.  A DWARF error sets *bad
 * (with a reason in err) and returns what was found before it. */
int sym_dwarf_lookup(sym_dwarf *d, uint64_t pc, sym_dframe *out, int max, int *bad, char *err,
		     size_t errlen);
/* Compile units parsed so far. */
uint32_t sym_dwarf_cus_loaded(const sym_dwarf *d);

/* ---------------------------------------------------------------- files */

typedef struct sym_file sym_file;

/* Where a module file's lookups go. */
typedef struct sym_file_config {
	const char *const *debug_dirs; /* searched in order */
	size_t ndebug_dirs;
	unsigned options;              /* STP_SYM_* */
} sym_file_config;

/* Warnings are reported through this callback (at most one per kind). */
typedef void (*sym_warn_fn)(void *arg, const char *msg);

/* A module file, identified by path and expected build-id; nothing is read
 * until sym_file_load(). */
sym_file *sym_file_new(const char *path, const uint8_t *build_id, size_t build_id_len);
void sym_file_free(sym_file *f);
const char *sym_file_path(const sym_file *f);
int sym_file_matches(const sym_file *f, const char *path, const uint8_t *build_id,
		     size_t build_id_len);
/* Opens the file, finds debug information, checks the build-id, reads
 * symbols.  Safe to call again (does the work once). */
void sym_file_load(sym_file *f, const sym_file_config *cfg, sym_warn_fn warn, void *warn_arg);
/* Frames at pc (an ELF virtual address; for a return address, the one
 * before it), whose symbol offsets are reported for orig_pc.  Fills the
 * function, function_offset, file, line, column and flags of up to max
 * frames; returns how many exist (>= 1).  Strings live as long as f. */
int sym_file_lookup(sym_file *f, uint64_t pc, uint64_t orig_pc, stp_frame *out, int max,
		    sym_warn_fn warn, void *warn_arg);

typedef struct sym_file_stats {
	int loaded, dwarf;
	uint32_t cus;
	uint64_t symbols;
} sym_file_stats;
void sym_file_get_stats(const sym_file *f, sym_file_stats *st);

/* Grows a realloc'd array *v of *cap elements of elem bytes to hold need
 * (doubling); -1 when out of memory (the array is left as it was). */
int stp_sym_grow_(void **v, size_t *cap, size_t need, size_t elem);

#endif
