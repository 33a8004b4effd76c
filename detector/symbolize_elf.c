/*
 * symbolize_elf.c - reading one ELF file for the symbolizer (libelf).
 *
 * Owns: opening a module or debug file read-only (mmap through libelf), and
 * reading what the symbolizer needs before any lookup: the GNU build-id
 * note, the .gnu_debuglink name, whether DWARF (.debug_info) is present and
 * whether a full .symtab is.  Function symbols are read by
 * symbolize_symtab.c through the same handle.
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

void sym_elf_close(sym_elf *e)
{
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	memset(e, 0, sizeof(*e));
	e->fd = -1;
}
