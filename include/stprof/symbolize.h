/*
 * stprof/symbolize.h - offline symbolization of instruction pointers.
 *
 * A symbolizer is built from a trace's module map (its MODULE events) and
 * turns addresses from its stacks into function names, source files and
 * lines, including the frames of inlined calls where DWARF describes them.
 * It reads the module files as they are on disk now; it never needs the
 * profiled process.
 *
 * Where the names come from, best first:
 *   1. DWARF of the module, or of its separate debug file
 *      (/usr/lib/debug/.build-id/xx/yyyy.debug, .gnu_debuglink): function
 *      (inline chain included), file, line, column;
 *   2. the ELF symbol tables (.symtab, .dynsym): function name and offset;
 *   3. nothing: module+offset.
 * C++ names are demangled.  When the trace recorded a build-id and the file
 * on disk has another one, the module gets one warning and its frames come
 * from ELF symbols only, flagged STP_FRAME_UNRELIABLE (unless a debug file
 * with the recorded build-id is found, which is then used instead).
 *
 * Cost: nothing is read before the first lookup that lands in a module;
 * then its ELF symbols are read once, its DWARF is opened once, and each
 * compile unit's line table and function tree is parsed when an address in
 * it is first asked for.  Results are cached per address.
 *
 * Strings in returned frames stay valid until stp_sym_free().  A symbolizer
 * is not thread-safe.  docs/symbolization.md describes all of this.
 */
#ifndef STPROF_SYMBOLIZE_H
#define STPROF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "stprof/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct stp_symbolizer stp_symbolizer;

/* stp_frame.flags */
#define STP_FRAME_INLINED 0x1u    /* an inlined call; the next frame is its caller */
#define STP_FRAME_DWARF 0x2u      /* function/file/line come from DWARF */
#define STP_FRAME_SYMTAB 0x4u     /* function comes from an ELF symbol table */
#define STP_FRAME_UNRELIABLE 0x8u /* the module file is not the one that ran */

typedef struct stp_frame {
	uint64_t ip;              /* the address as given */
	const char *module;       /* path of the module holding ip, NULL if none */
	uint64_t module_offset;   /* ip - bias: the ELF virtual address (addr2line's) */
	const char *function;     /* demangled name, NULL if unknown */
	uint64_t function_offset; /* ip - start of the ELF symbol holding ip (set on
				   * the outermost frame only; 0 if no symbol) */
	const char *file;         /* source file as DWARF names it, NULL if unknown */
	uint32_t line, column;    /* 0 if unknown */
	uint32_t flags;           /* STP_FRAME_* */
} stp_frame;

/* Inline chains deeper than this are rare; a good size for `out` arrays. */
#define STP_SYM_MAX_FRAMES 16

/* Options (stp_sym_set_options). */
#define STP_SYM_NO_DWARF 0x1u    /* ELF symbols only: no lines, no inline frames */
#define STP_SYM_NO_DEMANGLE 0x2u /* keep C++ names mangled */
#define STP_SYM_NO_SYSTEM_DEBUG 0x4u /* do not search /usr/lib/debug */

stp_symbolizer *stp_sym_new(void);
void stp_sym_free(stp_symbolizer *s);
/* Options apply to modules not yet loaded (set them before looking up). */
void stp_sym_set_options(stp_symbolizer *s, unsigned options);
/* Adds a directory searched for separate debug files (DIR/.build-id/xx/
 * yyyy.debug, DIR/<module dir>/<debuglink>), before the default
 * /usr/lib/debug.  Returns 0, or -1 when out of memory. */
int stp_sym_add_debug_dir(stp_symbolizer *s, const char *dir);

/*
 * Registers a module mapped at [base, base+size) whose ELF virtual address
 * v was at run time v + bias.  build_id (may be NULL / 0 long) is what the
 * trace recorded; the file is checked against it.  A module overlapping
 * earlier ones replaces them (dlclose + dlopen at the same address).  The
 * file is not opened here.  Returns 0, or -1 on bad arguments (size 0, no
 * path, build_id_len > STP_BUILD_ID_MAX) or no memory.
 */
int stp_sym_add_module(stp_symbolizer *s, const char *path, uint64_t base, uint64_t size,
		       uint64_t bias, const uint8_t *build_id, size_t build_id_len);
/* The same from a trace's MODULE event (its path string read from r). */
int stp_sym_add_module_info(stp_symbolizer *s, const stp_reader *r, const stp_module_info *m);

/*
 * Symbolizes ip.  is_return_address: ip is where a call returns to (every
 * stack frame but an exact pc), so the call instruction at ip-1 is looked
 * up instead.  Writes up to max frames into out, innermost first: the
 * inlined calls (STP_FRAME_INLINED) and then the function that contains
 * them.  Returns the number of frames ip has (>= 1), which may exceed max
 * (as snprintf does); out[i] for i < min(result, max) are valid.  An ip in
 * no module gives one frame with module NULL.  Returns 0 only on bad
 * arguments (s NULL, max < 0, out NULL with max > 0).
 */
int stp_sym_lookup(stp_symbolizer *s, uint64_t ip, int is_return_address, stp_frame *out,
		   int max);

/* stp_sym_format flags */
#define STP_FMT_FULL_PATH 0x1u /* full source path instead of its last component */
#define STP_FMT_MODULE 0x2u    /* append " [module]" (last component) */
#define STP_FMT_ADDRESS 0x4u   /* prefix "0x<ip> " */
/*
 * Writes one frame as text, snprintf-style (returns the length it needs):
 *   func (file.c:42)              DWARF, with line
 *   func (file.c:42) [inlined]    an inlined call
 *   func+0x1a (libfoo.so)         ELF symbol only
 *   libfoo.so+0x1234              no symbol
 *   0x7f0012345678                in no module
 * and " [build-id mismatch]" after an unreliable frame.
 */
size_t stp_sym_format(const stp_frame *f, unsigned flags, char *buf, size_t len);

/* Problems met so far (a module that cannot be read, a build-id that does
 * not match, broken DWARF), one line each, at most one per module and
 * kind, in the order met.  Lookups add to them. */
size_t stp_sym_warning_count(const stp_symbolizer *s);
const char *stp_sym_warning(const stp_symbolizer *s, size_t i);

typedef struct stp_sym_stats {
	uint64_t lookups;       /* stp_sym_lookup calls */
	uint64_t cache_hits;    /* ... answered from the address cache */
	uint32_t modules;       /* modules registered (replaced ones included) */
	uint32_t files_loaded;  /* module files opened */
	uint32_t dwarf_loaded;  /* of them, with DWARF opened */
	uint32_t cus_loaded;    /* compile units parsed */
	uint64_t elf_symbols;   /* function symbols read */
} stp_sym_stats;
void stp_sym_get_stats(const stp_symbolizer *s, stp_sym_stats *out);

#ifdef __cplusplus
}
#endif
#endif
