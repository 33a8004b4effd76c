/*
 * symbolize_elf.c - reading one ELF file for the symbolizer (libelf).
 *
 * Owns: opening a module or debug file read-only (mmap through libelf), and
 * reading what the symbolizer needs before any lookup: the GNU build-id
 * note, the .gnu_debuglink name, whether DWARF (.debug_info) is present and
 * whether a full .symtab is; before DWARF is opened, the checks libdwarf
 * needs (sym_elf_dwarf_sane) and the line-table section whose headers
 * symbolize_dwarf.c has symbolize_linehdr.c check.  Both read a section's
 * bytes as libdwarf will see them, decompressed, through section_bytes().
 * Function symbols are read by symbolize_symtab.c through the same handle.
 *
 * Invariants: every byte read comes through libelf, which checks sections
 * against the file's size; strings are used only when NUL-terminated inside
 * their section.  The file stays open (and mapped) until sym_elf_close(),
 * because symbol names point into it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize_int.h"

static int elf_version_done;

static void read_build_id_note(sym_elf *e, Elf_Data *d)
{
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off, next;

	while (d && off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)d->d_buf + name_off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0 && nh.n_descsz <= STP_BUILD_ID_MAX) {
			memcpy(e->build_id, (const char *)d->d_buf + desc_off, nh.n_descsz);
			e->build_id_len = nh.n_descsz;
			return;
		}
		off = next;
	}
}

static void read_debuglink(sym_elf *e, Elf_Data *d)
{
	const char *p = d ? d->d_buf : NULL;

	/* name, NUL, padding to 4, CRC32: the name must end inside the data */
	if (p && d->d_size > 1 && memchr(p, 0, d->d_size) && p[0])
		e->debuglink = p;
}

int sym_elf_open(sym_elf *e, const char *path, char *err, size_t errlen)
{
	size_t shstrndx = 0, nphdr = 0;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	struct stat st;

	memset(e, 0, sizeof(*e));
	e->fd = -1;
	if (!elf_version_done) {
		elf_version(EV_CURRENT);
		elf_version_done = 1;
	}
	e->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	if (fstat(e->fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		sym_elf_close(e);
		return -1;
	}
	e->file_size = (uint64_t)st.st_size;
	e->elf = elf_begin(e->fd, ELF_C_READ_MMAP, NULL);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh)) {
		snprintf(err, errlen, "not an ELF file");
		sym_elf_close(e);
		return -1;
	}
	e->type = eh.e_type;
	if (elf_getshdrstrndx(e->elf, &shstrndx) != 0)
		shstrndx = 0;
	while ((scn = elf_nextscn(e->elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = shstrndx ? elf_strptr(e->elf, shstrndx, sh.sh_name) : NULL;
		if (sh.sh_type == SHT_NOTE && !e->build_id_len)
			read_build_id_note(e, elf_getdata(scn, NULL));
		else if (sh.sh_type == SHT_SYMTAB)
			e->has_symtab = 1;
		if (!name || sh.sh_type == SHT_NOBITS)
			continue;
		if (!strcmp(name, ".gnu_debuglink"))
			read_debuglink(e, elf_getdata(scn, NULL));
		else if ((!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")) &&
			 sh.sh_size > 0)
			e->has_dwarf = 1;
	}
	/* no section headers (or no note section): the PT_NOTE segments */
	if (!e->build_id_len && elf_getphdrnum(e->elf, &nphdr) == 0) {
		for (size_t i = 0; i < nphdr && !e->build_id_len; i++) {
			GElf_Phdr ph;
			Elf_Data *d;

			if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_NOTE)
				continue;
			d = elf_getdata_rawchunk(e->elf, (int64_t)ph.p_offset, ph.p_filesz,
						 ELF_T_NHDR);
			read_build_id_note(e, d);
		}
	}
	return 0;
}

/* The section's name, NULL when it has none or its header cannot be read. */
static const char *section_name(Elf *elf, size_t shstrndx, Elf_Scn *scn, GElf_Shdr *sh)
{
	if (!gelf_getshdr(scn, sh))
		return NULL;
	return elf_strptr(elf, shstrndx, sh->sh_name);
}

/* The section's contents as libdwarf sees them: decompressed (SHF_COMPRESSED,
 * or the GNU "ZLIB" form of a .zdebug_* section).  NULL when it has no bytes
 * in the file or cannot be decompressed; the caller checks d_buf. */
static Elf_Data *section_bytes(Elf *elf, size_t shstrndx, Elf_Scn *scn)
{
	GElf_Shdr sh;
	const char *n = section_name(elf, shstrndx, scn, &sh);

	if (!n || sh.sh_type == SHT_NOBITS)
		return NULL;
	if (!strncmp(n, ".zdebug", 7)) {
		if (elf_compress_gnu(scn, 0, 0) < 0)
			return NULL;
	} else if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
		return NULL;
	}
	return elf_getdata(scn, NULL);
}

/* The contents of the first section called name with bytes in the file. */
static Elf_Data *section_data(Elf *elf, const char *name)
{
	size_t shstrndx = 0;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n = section_name(elf, shstrndx, scn, &sh);

		if (n && sh.sh_type != SHT_NOBITS && !strcmp(n, name))
			return section_bytes(elf, shstrndx, scn);
	}
	return NULL;
}

/* The unit headers of a DWARF 5 .debug_rnglists / .debug_loclists: each
 * inside the section, version 5, a sane address size, its offset array
 * inside the unit, no bytes left over.  (libdwarf 20210528 frees memory
 * twice on a malformed one.) */
static int lists_ok(const sym_elf *e, const char *name, char *why, size_t whylen)
{
	Elf_Data *d = section_data(e->elf, name);
	int big = e->big_endian;
	const unsigned char *p;
	uint64_t size, pos = 0;

	if (!d)
		return 1; /* absent: nothing for libdwarf to trip on */
	p = d->d_buf;
	size = d->d_size;
	if (!p && size)
		goto bad;
	while (pos < size) {
		uint64_t len, hdr = 4, end;
		int offsize = 4;

		if (size - pos < 4)
			goto bad;
		len = sym_get_uint(p + pos, 4, big);
		if (len == 0xffffffffu) {
			if (size - pos < 12)
				goto bad;
			len = sym_get_uint(p + pos + 4, 8, big);
			hdr = 12;
			offsize = 8;
		} else if (len >= 0xfffffff0u) {
			goto bad;
		}
		if (len < 8 || len > size - pos - hdr)
			goto bad;
		end = pos + hdr + len;
		pos += hdr;
		if (sym_get_uint(p + pos, 2, big) != 5 || (p[pos + 2] != 4 && p[pos + 2] != 8) || p[pos + 3])
			goto bad;
		if (sym_get_uint(p + pos + 4, 4, big) > (len - 8) / (uint64_t)offsize)
			goto bad;
		pos = end;
	}
	return 1;
bad:
	snprintf(why, whylen, "malformed %s at offset %llu", name, (unsigned long long)pos);
	return 0;
}

/* [off, off + n * size) inside the file, without overflow. */
static int inside(uint64_t off, uint64_t n, uint64_t size, uint64_t file_size)
{
	return off <= file_size && (!size || n <= (file_size - off) / size);
}

/* The ELF structure libdwarf's own reader trusts: the header tables, every
 * section's extent, and decompressed sizes (zlib cannot expand more than
 * about 1032 to 1, so a larger claim is a lie that would make libdwarf ask
 * for terabytes). */
static int layout_ok(sym_elf *e, char *why, size_t whylen)
{
	const char *ident = elf_getident(e->elf, NULL);
	int is64 = ident && ident[EI_CLASS] == ELFCLASS64;
	size_t shnum = 0, phnum = 0, shstrndx = 0;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;

	if (!gelf_getehdr(e->elf, &eh) || elf_getshdrnum(e->elf, &shnum) ||
	    elf_getphdrnum(e->elf, &phnum) || elf_getshdrstrndx(e->elf, &shstrndx))
		goto bad;
	if (shnum && (eh.e_shentsize != (is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr)) ||
		      !inside(eh.e_shoff, shnum, eh.e_shentsize, e->file_size) ||
		      shstrndx >= shnum))
		goto bad;
	if (phnum && (eh.e_phentsize != (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)) ||
		      !inside(eh.e_phoff, phnum, eh.e_phentsize, e->file_size)))
		goto bad;
	while ((scn = elf_nextscn(e->elf, scn)) != NULL) {
		GElf_Shdr sh;
		GElf_Chdr ch;
		Elf_Data *raw;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			goto bad;
		if (sh.sh_type == SHT_NOBITS)
			continue;
		if (!inside(sh.sh_offset, 1, sh.sh_size, e->file_size))
			goto bad;
		if ((sh.sh_flags & SHF_COMPRESSED) &&
		    (!gelf_getchdr(scn, &ch) || ch.ch_size / 1100 > sh.sh_size + 4096))
			goto bad;
		name = elf_strptr(e->elf, shstrndx, sh.sh_name);
		if (name && !strncmp(name, ".zdebug", 7)) {
			/* "ZLIB" and the 8-byte big-endian size */
			raw = elf_rawdata(scn, NULL);
			if (!raw || raw->d_size < 12 || memcmp(raw->d_buf, "ZLIB", 4) ||
			    sym_get_uint((const unsigned char *)raw->d_buf + 4, 8, 1) / 1100 >
				    sh.sh_size + 4096)
				goto bad;
		}
	}
	return 1;
bad:
	snprintf(why, whylen, "malformed ELF headers");
	return 0;
}

/* The section libdwarf takes its line tables from, for
 * symbolize_linehdr.c to check each header libdwarf will read.  When that
 * cannot be known or the bytes could change after the check, lines_unsafe:
 * several candidates (.debug_line, .debug_line.dwo, .zdebug_line),
 * relocations aimed at it (libdwarf applies them to relocatable objects),
 * or a DWARF package index (which shifts each unit's offset). */
static void find_lines(sym_elf *e)
{
	size_t shstrndx = 0, index = 0;
	Elf_Scn *scn = NULL, *found = NULL;
	int candidates = 0;
	Elf_Data *d = NULL;

	e->debug_line = NULL;
	e->debug_line_size = 0;
	e->lines_unsafe = 1;
	if (elf_getshdrstrndx(e->elf, &shstrndx) != 0)
		return;
	while ((scn = elf_nextscn(e->elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n = section_name(e->elf, shstrndx, scn, &sh);

		if (!n)
			continue;
		if (!strcmp(n, ".debug_cu_index") || !strcmp(n, ".debug_tu_index"))
			return;
		if (!strcmp(n, ".debug_line") || !strcmp(n, ".debug_line.dwo") ||
		    !strcmp(n, ".zdebug_line")) {
			candidates++;
			found = scn;
			index = elf_ndxscn(scn);
		}
	}
	if (candidates > 1)
		return;
	while (found && (scn = elf_nextscn(e->elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_REL || sh.sh_type == SHT_RELA) &&
		    sh.sh_info == index)
			return;
	}
	if (found && (!(d = section_bytes(e->elf, shstrndx, found)) || (!d->d_buf && d->d_size)))
		return;
	if (d) {
		e->debug_line = d->d_buf;
		e->debug_line_size = d->d_size;
	}
	e->lines_unsafe = 0;
}

int sym_elf_dwarf_sane(sym_elf *e, char *why, size_t whylen)
{
	const char *ident = elf_getident(e->elf, NULL);

	e->big_endian = ident && ident[EI_DATA] == ELFDATA2MSB;
	if (!(layout_ok(e, why, whylen) && lists_ok(e, ".debug_rnglists", why, whylen) &&
	      lists_ok(e, ".debug_loclists", why, whylen)))
		return 0;
	find_lines(e);
	return 1;
}

void sym_elf_close(sym_elf *e)
{
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	memset(e, 0, sizeof(*e));
	e->fd = -1;
}
